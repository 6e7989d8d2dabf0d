"""Closest and farthest pairs in angle over all pairs of rows, in the time of one GEMM, and the
smallest infinite-width gradient angle read off them.

**Why two pairs suffice.** At infinite width the gradient angle of a pair is φ_L(θ), a function
of its input angle θ alone (``angles`` eq. (4)). Wherever φ_L has no interior minimum on
[θ_lo, θ_hi] — θ_lo, θ_hi the smallest and largest input angles of the data — the smallest
gradient angle over all pairs is min(φ_L(θ_lo), φ_L(θ_hi)), at the closest or the farthest pair,
for every depth, activation and trainable set at once. ``ntkcond.infinite.unimodal`` proves or
verifies this per (activation, depth, trainable set); targets it does not cover are left to the
recursion over all pairs (the callers' fallback).

**Screening.** With x̂ the float64 unit rows (``normalised_rows``), pairs i < j are visited in
b × b blocks of the upper triangle of the Gram matrix x̂x̂ᵀ (numpy: one GEMM per b × 4b),
keeping the running maximum and minimum of the screened cosine ĉ_ij and every pair within
``margin`` of them; those candidates are then recomputed exactly (``kahan_angles``,
θ̃ = 2 atan2(‖x̂_i − x̂_j‖, ‖x̂_i + x̂_j‖) in float64) and the smallest / largest θ̃ taken.

**Margin (rigorous).** u = 2⁻⁵³; γ_k = k·u'/(1 − k·u') for a unit roundoff u'; N_i = ‖x̂_i‖²
(exact), η = max_i |N_i − 1|, bounded from the float64 squared norms s_i through
|s_i − N_i| ≤ γ_d N_i. For every pair, with c = x̂_iᵀx̂_j (exact) and θ* the exact angle that
Kahan's formula computes (cos θ* = c/M, M = (N_i + N_j)/2):
  |ĉ − c|          ≤ E_s = γ_d(1 + η) for float64 screening (any summation order, FMA or not);
                     [γ_d(v)(1 + v)² + 2v + v²](1 + η) for float32 (v = 2⁻²⁴: rows rounded to
                     float32, float32 accumulation at HIGHEST precision);
  |c − cos θ*|     ≤ E_n = η(1 + η)/(1 − η);
  |cos θ̃ − cos θ*| ≤ |θ̃ − θ*| ≤ E_k = (d + 32)u  (relative error ≤ (d/2 + 2.1)u of the two
                     float64 norms, which moves atan2 by ≤ that · sin θ*, plus atan2's ≤ 4 ulp).
So |ĉ − cos θ̃| ≤ E = E_s + E_n + E_k for every pair, and the pair with the smallest θ̃ (largest
cos θ̃) has ĉ ≥ max ĉ − 2E: keeping every pair with ĉ ≥ (running max) − ``margin``,
margin = 4E (a factor 2 of safety, which also covers the rounding of the threshold itself),
keeps it, and keeps every pair tied with it. For MNIST (d = 784) margin = 1.1e-12 in float64
and 1.9e-4 in float32. Likewise for the largest θ̃ with the minimum of ĉ.

**Ties.** The closest pair is the lexicographic minimum of (θ̃_ij, i, j) over all pairs i < j —
the smallest rechecked angle, then the lowest (i, j) in row-major order, as the recursion
route — and the farthest the minimum of (−θ̃_ij, i, j). Because every pair within the margin is
rechecked with the same elementwise formula, this does not depend on blocking, order or backend.
Pairs whose angles differ only in the last bits (not exactly equal) may still come out
differently in the recursion route, whose Gram-route angles away from 0 and π carry ~1e-16/sin θ
of rounding.

Memory is O(b² + n·d) plus the candidates (a handful; in pathological data with many pairs
within the margin, at most ``_PENDING_CAP`` before they are rechecked and reduced to the best).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._core.checks import as_block, as_data, sweep_layers
from ..activations import parse_angle_activation
from .recursion import angle_from, gradient_recursion
from .geometry import kahan_angles
from .unimodal import certify

__all__ = [
    "ExtremePairs",
    "ExtremeSearch",
    "extreme_pairs",
    "norm_excess",
    "numpy_extreme_row",
    "screening_margin",
    "smallest_from_extremes",
]

_U64 = 2.0**-53
_U32 = 2.0**-24
_PENDING_CAP = 1 << 20  # candidate pairs held before an exact recheck reduces them
_COLUMN_BLOCKS = 4  # numpy sweep: b × 4b GEMMs
SAFETY = 2.0  # margin = 2·SAFETY·E
_HALF_PI = math.pi / 2  # float64 π/2 is below the true π/2: proof (c) of ``unimodal`` holds


def _gamma(k: int, u: float) -> float:
    return k * u / (1.0 - k * u)


def norm_excess(xh) -> float:
    """η: a rigorous bound on max_i |‖x̂_i‖² − 1| for float64 rows x̂ (module docstring)."""
    d = xh.shape[1]
    g = _gamma(d, _U64)
    s = np.einsum("ij,ij->i", xh, xh)
    eta = max(float(np.max(s)) / (1.0 - g) - 1.0, 1.0 - float(np.min(s)) / (1.0 + g))
    return max(eta, 0.0) * (1.0 + 4 * _U64) + 4 * _U64


def screening_margin(d: int, eta: float, dtype: str = "float64") -> float:
    """margin = 2·SAFETY·(E_s + E_n + E_k) for unit rows of dimension d (module docstring).

    Args:
      d: dimension of the rows; eta: ``norm_excess`` of the float64 rows (< 1/2);
      dtype: "float64" or "float32", the precision of the screening GEMM.
    """
    if not 0.0 <= eta < 0.5:
        raise ValueError(f"screening_margin: expected 0 <= eta < 0.5 (unit rows), got {eta!r}")
    if dtype == "float64":
        e_s = _gamma(d, _U64) * (1.0 + eta)
    elif dtype == "float32":
        v = _U32
        e_s = (_gamma(d, v) * (1.0 + v) ** 2 + 2.0 * v + v * v) * (1.0 + eta)
    else:
        raise ValueError(f"screening_margin: expected dtype 'float64' or 'float32', got {dtype!r}")
    e_n = eta * (1.0 + eta) / (1.0 - eta)
    e_k = (d + 32) * _U64
    return 2.0 * SAFETY * (e_s + e_n + e_k)


@dataclasses.dataclass(frozen=True)
class ExtremePairs:
    """Closest and farthest pairs in angle of the rows of x (rechecked angles, radians).

    Attributes:
      n, d: shape of the data.
      closest: (θ_lo, i, j), i < j: the smallest angle and its pair (ties: lowest (i, j)).
      farthest: (θ_hi, i, j): the largest angle and its pair (ties: lowest (i, j)).
      screen_max, screen_min: extreme screened cosines; margin: the screening margin.
    """

    n: int
    d: int
    closest: tuple[float, int, int]
    farthest: tuple[float, int, int]
    screen_max: float
    screen_min: float
    margin: float


class ExtremeSearch:
    """Running closest/farthest pair over screened cosine blocks (module docstring).

    Feed it blocks (``add_block``) or device-reduced block summaries (``add_summary``), call
    ``flush`` to recheck the pending candidates exactly, and ``result`` at the end. ``state`` /
    ``from_state`` serialise it (JSON-safe) for checkpoints.
    """

    def __init__(self, xh, *, dtype: str = "float64", margin: float | None = None, x=None):
        self.xh, self.x = xh, x  # x: the rows xh came from; with it the recheck is exact for x
        self.n, self.d = xh.shape
        self.dtype = dtype
        if margin is None:
            margin = screening_margin(self.d, norm_excess(xh), dtype)
            if x is not None:  # exact angles of x differ from Kahan's on xh by ≤ ~eps in cos
                margin += 4 * float(np.finfo(np.float64).eps)
        self.margin = margin
        self.hi, self.lo = -math.inf, math.inf
        self.close = (math.inf, -1, -1)  # (θ̃, i, j)
        self.far = (math.inf, -1, -1)  # (−θ̃, i, j)
        self._pending_hi: list = []
        self._pending_lo: list = []
        self._pending = 0

    # -- feeding ---------------------------------------------------------------------------

    def add_block(self, G, r0: int, c0: int) -> None:
        """Screened cosines G (rows r0.., columns c0..) of one block; only pairs i < j count."""
        nr, nc = G.shape
        valid = None
        if c0 < r0 + nr:  # the block reaches the diagonal
            valid = (np.arange(r0, r0 + nr)[:, None] < np.arange(c0, c0 + nc)[None, :])
            first = np.flatnonzero(valid.ravel())
            if first.size == 0:
                return
            G = np.where(valid, G, G.flat[first[0]])  # a valid value: neutral for max and min
        bmax, bmin = float(G.max()), float(G.min())
        if bmax >= self.hi - self.margin:
            self.hi = max(self.hi, bmax)
            self._take(G, valid, r0, c0, G >= self.hi - self.margin, self._pending_hi)
        if bmin <= self.lo + self.margin:
            self.lo = min(self.lo, bmin)
            self._take(G, valid, r0, c0, G <= self.lo + self.margin, self._pending_lo)
        if self._pending > _PENDING_CAP:
            self.flush()

    def _take(self, G, valid, r0, c0, mask, pending):
        if valid is not None:
            mask &= valid
        k = np.flatnonzero(mask.ravel())
        i, j = np.divmod(k, G.shape[1])
        pending.append((i + r0, j + c0, G.ravel()[k]))
        self._pending += k.size

    def add_summary(self, bmax, bmin, rows_hi, cols_hi, cos_hi, rows_lo, cols_lo, cos_lo) -> None:
        """A block reduced elsewhere: its extreme screened cosines and the pairs it kept
        (those within ``margin`` of max(running, block) extremes). bmax = −inf: no valid pair."""
        if not math.isfinite(bmax):
            return
        self.hi, self.lo = max(self.hi, float(bmax)), min(self.lo, float(bmin))
        self._pending_hi.append((np.asarray(rows_hi, np.int64), np.asarray(cols_hi, np.int64),
                                 np.asarray(cos_hi, np.float64)))
        self._pending_lo.append((np.asarray(rows_lo, np.int64), np.asarray(cols_lo, np.int64),
                                 np.asarray(cos_lo, np.float64)))
        self._pending += len(rows_hi) + len(rows_lo)
        if self._pending > _PENDING_CAP:
            self.flush()

    # -- exact recheck ---------------------------------------------------------------------

    def flush(self) -> None:
        """Recheck the pending candidates still within the margin; keep the best of each side."""
        for pending, side in ((self._pending_hi, "hi"), (self._pending_lo, "lo")):
            if not pending:
                continue
            rows = np.concatenate([p[0] for p in pending]).astype(np.int64)
            cols = np.concatenate([p[1] for p in pending]).astype(np.int64)
            cos = np.concatenate([p[2] for p in pending])
            pending.clear()
            keep = cos >= self.hi - self.margin if side == "hi" else cos <= self.lo + self.margin
            rows, cols = rows[keep], cols[keep]
            if rows.size == 0:
                continue
            theta = kahan_angles(self.xh, self.xh, rows, cols, x1=self.x)
            key = theta if side == "hi" else -theta
            k = np.lexsort((cols, rows, key))[0]
            cand = (float(key[k]), int(rows[k]), int(cols[k]))
            if side == "hi":
                self.close = min(self.close, cand)
            else:
                self.far = min(self.far, cand)
        self._pending = 0

    def result(self) -> ExtremePairs:
        self.flush()
        if self.close[1] < 0:
            raise ValueError("ExtremeSearch.result: expected at least one pair, got none")
        return ExtremePairs(
            n=self.n, d=self.d, closest=self.close,
            farthest=(-self.far[0], self.far[1], self.far[2]),
            screen_max=self.hi, screen_min=self.lo, margin=self.margin,
        )

    # -- checkpoints -----------------------------------------------------------------------

    def state(self) -> dict:
        """JSON-safe state after ``flush`` (floats round-trip exactly through JSON)."""
        self.flush()
        return {"hi": self.hi, "lo": self.lo, "close": list(self.close), "far": list(self.far),
                "margin": self.margin}

    def restore(self, state: dict) -> None:
        self.hi, self.lo = float(state["hi"]), float(state["lo"])
        self.close = (float(state["close"][0]), int(state["close"][1]), int(state["close"][2]))
        self.far = (float(state["far"][0]), int(state["far"][1]), int(state["far"][2]))


def numpy_extreme_row(search: ExtremeSearch, I: int, block: int, columns=None) -> None:
    """Block row I (rows I·b…(I+1)·b, columns from I·b on, or the columns [c_lo, c_hi) of
    ``columns``) of the float64 Gram matrix, in GEMMs of b × 4b (fewer, larger BLAS calls;
    32 MB for b = 1024)."""
    xh, n = search.xh, search.n
    r0, r1 = I * block, min(n, (I + 1) * block)
    lo, hi = (r0, n) if columns is None else columns
    rows = xh[r0:r1]
    for c0 in range(lo, hi, _COLUMN_BLOCKS * block):
        c1 = min(hi, c0 + _COLUMN_BLOCKS * block)
        search.add_block(rows @ xh[c0:c1].T, r0, c0)


def extreme_pairs(xh, *, block: int = 1024, x=None) -> ExtremePairs:
    """Closest and farthest pairs in angle of float64 unit rows xh, in float64 GEMM blocks.

    Args:
      xh: (n, d) unit rows (``geometry.normalised_rows``), n ≥ 2.
      block: block size b.
      x: optional (n, d) rows xh was normalised from: the candidates are then rechecked with
        ``geometry.exact_angles`` (exact for the data) instead of Kahan's formula on xh.
    """
    where = "extreme_pairs"
    xh = as_data(xh, where, "xh")
    if xh.shape[0] < 2:
        raise ValueError(f"{where}: expected xh with n >= 2 rows (pairs), got shape {xh.shape}")
    eta = norm_excess(xh)
    if not eta < 0.5:
        raise ValueError(f"{where}: expected unit rows xh (geometry.normalised_rows), got squared "
                         f"norms that differ from 1 by up to {eta:.3g}")
    block = as_block(block, where, 2)
    if x is not None:
        x = as_data(x, where, "x")
        if x.shape != xh.shape:
            raise ValueError(f"{where}: expected x of the shape of xh {xh.shape} (the rows xh was "
                             f"normalised from), got {x.shape}")
    search = ExtremeSearch(xh, x=x)
    for I in range(-(-xh.shape[0] // block)):
        numpy_extreme_row(search, I, block)
    return search.result()


def _check_extremes(ext, where: str) -> None:
    """TypeError/ValueError unless ``ext`` is an ``ExtremePairs`` whose angles are finite,
    in [0, π], ordered θ_lo ≤ θ_hi, with pairs 0 ≤ i < j < n."""
    if not isinstance(ext, ExtremePairs):
        raise TypeError(f"{where}: expected ext as an ExtremePairs (extreme_pairs), got "
                        f"{type(ext).__name__}")
    for name, (theta, i, j) in (("closest", ext.closest), ("farthest", ext.farthest)):
        ok_pair = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (i, j))
        if not (isinstance(theta, (float, int, np.floating)) and 0.0 <= theta <= math.pi):
            raise ValueError(f"{where}: expected ext.{name} with an angle in [0, pi] radians, got "
                             f"{theta!r}")
        if not (ok_pair and 0 <= i < j < ext.n):
            raise ValueError(f"{where}: expected ext.{name} with a pair 0 <= i < j < n = {ext.n}, "
                             f"got ({i!r}, {j!r})")
    if ext.closest[0] > ext.farthest[0]:
        raise ValueError(f"{where}: expected ext.closest's angle <= ext.farthest's, got "
                         f"{ext.closest[0]!r} > {ext.farthest[0]!r} (not the extremes of one data set)")


def smallest_from_extremes(ext: ExtremePairs, activation, depths, trainable="all") -> dict:
    """{L: (φ, i, j) or None}: the smallest gradient angle over all pairs, per depth, from the
    closest and farthest pairs; None where (★) is not certified for these data (then the
    caller runs the recursion over all pairs).

    φ_L is evaluated at θ_lo and θ_hi with the recursion (``gradient_recursion``, as every route
    does), and the result is the smaller (φ, i, j) of the two. (★) holds by proof (c) of
    ``unimodal`` when θ_hi ≤ π/2, else per ``unimodal.certify(...)[L].covers``, the
    certificate bounded by the cost of the recursion over all pairs (``max_cost``).

    Args:
      ext: ``ExtremePairs`` of the data.
      activation, depths, trainable: as ``unimodal.certify``.
    """
    _check_extremes(ext, "smallest_from_extremes")
    act = parse_angle_activation(activation, "smallest_from_extremes")
    depths, layers = sweep_layers(depths, trainable, "smallest_from_extremes")
    (t_lo, i0, j0), (t_hi, i1, j1) = ext.closest, ext.farthest
    if act.is_linear:
        return {L: (t_lo, i0, j0) for L in depths}
    angle = np.array([t_lo, t_hi])
    phis = {L: angle_from(R, Z) for L, _, R, Z, _ in
            gradient_recursion(angle, np.cos(angle), depths, act, layers)}
    # the certificate only where it is cheaper than the recursion over all pairs (its cost
    # bound: ``unimodal``, "Cost bound"); else "unverified" and the caller's recursion
    budget = ext.n * (ext.n - 1) // 2 * max(depths)
    certs = None
    if t_hi > _HALF_PI:
        certs = {c.depth: c for c in certify(act, depths, trainable, max_cost=budget)}
    out = {}
    for L in depths:
        p_lo, p_hi = float(phis[L][0]), float(phis[L][1])
        if certs is None or certs[L].covers(t_lo, t_hi, p_lo, p_hi):
            out[L] = min((p_lo, i0, j0), (p_hi, i1, j1))
        else:
            out[L] = None
    return out
