"""Certificates that the gradient angle φ_L(θ) has no interior minimum in θ ∈ [0, π].

At infinite width the gradient angle of a pair depends on its input angle θ only,
cos φ = T(θ)/|S| (``angles`` eq. (4)), with

    T(θ) = Σ_{i∈S} cos θ_i · Π_{j=i}^{L−1} ġ(θ_j),   θ_0 = θ, θ_{k+1} = g(θ_k),   ġ(t) = 1 − βt,

S the trainable layers (0 = W⁽¹⁾, L = read-out) and β = (1 − α)²/(π(1 + α²)). φ is a
decreasing function of T, so "φ rises then falls" is "T falls then rises". The pairs route
(``ntkcond.infinite.extremes``) needs only the consequence

    (★)  θ_lo ≤ θ ≤ θ_hi  ⇒  φ(θ) ≥ min(φ(θ_lo), φ(θ_hi)),

for θ_lo, θ_hi the smallest and largest input angles of a data set: then the smallest gradient
angle over all pairs is attained at the closest or the farthest pair.

**Proofs.** (a) Linear nets, and depth 0 for any activation: φ = θ. (b) ``trainable="last"``:
φ = θ_L = g^L(θ), and g is increasing (cos g(t) = κ(t) with κ'(t) = −ġ(t) sin t ≤ 0).
(c) On [0, π/2], for every α ∈ [0, 1], depth and trainable set: g(t) ≤ t (cos g(t) − cos t =
(1 − α)²(sin t − t cos t)/(π(1 + α²)) ≥ 0), so every θ_i ≤ θ ≤ π/2; each term of T is then a
product of non-negative, non-increasing functions of θ (cos θ_i ≥ 0; ġ(θ_j) ≥ 1 − βπ ≥ 0), so
T is non-increasing and φ non-decreasing on [0, π/2]. (d) ReLU (α = 0) with 0 ∉ S, on [0, π]:
κ₁ ≥ 0 gives θ_i ≤ g(π) = π/2 for i ≥ 1, and (c)'s argument applies to every term.

**Verified part.** Otherwise (θ ∈ [π/2, π] with 0 ∈ S, or leaky ReLU with hidden layers in S)
no proof is known, and [π/2, π] is cut into ``cells`` equal cells on which interval arithmetic
encloses T, T' and T'' (forward-mode derivatives of the recursion:
θ'_{k+1} = g'(θ_k)θ'_k with g'(t) = ġ(t) sin t / sin g(t), T'_{k+1} = −s sin θ_{k+1} θ'_{k+1}
− βθ'_k T_k + ġ(θ_k) T'_k, and one more derivative for T''). θ_k is increasing in θ, so its
range over a cell is [θ_k(a), θ_k(b)]; every other quantity is evaluated with interval
operations. A cell is "−" if T' < 0 on it (φ increasing), "+" if T' > 0. With q₁ the end of the
leading run of "−" cells and q₂ the start of the trailing run of "+" cells:
  φ is non-decreasing on [0, q₁] (proof (c) on [0, π/2]) and non-increasing on [q₂, π];
  if T'' > 0 on every cell of the gap [q₁, q₂], T' increases there from ≤ 0 to ≥ 0 and
  changes sign once: φ is **unimodal** on [0, π] (kind "unimodal");
  otherwise the gap's cells are split in 16 and recomputed (3 rounds at most), and if that
  does not settle it, ``floor`` is a lower bound of φ on the gap (from the cells' upper bounds
  of T; kind "floor"): (★) then holds for data with θ_hi ≤ q₁, or θ_lo ≥ q₂, or
  min(φ(θ_lo), φ(θ_hi)) ≤ floor (``Certificate.covers``), since a pair inside [q₁, q₂] has
  φ ≥ floor, one left of q₁ has φ ≥ φ(θ_lo) and one right of q₂ has φ ≥ φ(θ_hi).
Measured (512 cells): ReLU and leaky ReLU (α = 0.2, 0.5, 0.9), trainable "all", "first",
{0, 1} and {1, 2}, every depth 1…1000 is "unimodal" (0.8–2.7 s per setting for all 1000 depths
on a loaded 2-core machine, once per process). A planted non-unimodal T is refused
(``tests/test_unimodal.py``).

**Rounding.** Interval endpoints are widened after every operation: by 8 units in the last
place (2⁻⁵⁰ relative) after +, −, ×, ÷ (each correctly rounded, error ≤ 2⁻⁵³), by 2⁻⁴⁶ after
sin and cos (libm/SIMD error ≤ 4 ulp), and by 2⁻⁴⁴ after one float64 evaluation of the layer
map g (cancellation-free, ``ntkcond.infinite.recursion.layer_step``; its error against 50-digit mpmath is
≤ 2⁻⁵⁰ on [0, π], ``tests/test_unimodal.py``). β is enclosed with a 2⁻⁴⁶ margin. So the
enclosures contain the exact T, T', T'' of the real-number recursion, under the stated libm
accuracy; ``floor`` is shaved by a further 2⁻⁴⁰ relative.

**Cost bound.** The verified part costs O(cells · L) interval operations (one pass of the
interval recursion from depth 0 to the largest L asked, refinements included): measured
~8 µs per cell and layer on a loaded 2-core machine, against ~0.25 µs per pair and layer for
the plain recursion over pairs (``CELL_LAYER_COST`` = 32 pair-layers). With ``max_cost``
(in pair-layers: the caller's alternative, the recursion over all its pairs, costs pairs · L)
``certify`` skips a verification that would cost more, and more than that of depth 1000
(``ALWAYS_AFFORDABLE``: 1–3 s once per process), and returns kind "unverified" for those
depths (proof (c) only: φ non-decreasing on [0, π/2]), so the caller takes the cheaper route:
a 30 × 3 Gaussian at depth 10⁵ (435 pairs, input angles above π/2) goes to the recursion
instead of a ~400 s certificate. Without ``max_cost`` the verified part may cost at most
``DEFAULT_MAX_COST`` (depth 10⁴ at 512 cells, ~10 s): deeper depths are refused with a
``ValueError`` (measured 1.2 s at depth 1000 and 3.8 s at 3000, load 5 on 2 cores), never run
for minutes unasked.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import threading

import numpy as np

from .._core.checks import sweep_layers
from ..activations import parse_angle_activation
from .recursion import angle_from, derivative_slope, layer_step

__all__ = ["Certificate", "certify", "enclose_recursion", "sign_pattern_certificate",
           "verification_cost", "ALWAYS_AFFORDABLE", "DEFAULT_MAX_COST"]

#: Cells on [π/2, π] for the verified part.
DEFAULT_CELLS = 512

#: Cost of one cell and layer of the verified part, in pair-layers of the plain recursion
#: (module docstring, "Cost bound").
CELL_LAYER_COST = 32

#: Verification cost (pair-layers) always spent whatever ``max_cost``: 512 cells to depth 1000,
#: 1–3 s once per process, so the pairs route stays certified for every depth ≤ 1000.
ALWAYS_AFFORDABLE = CELL_LAYER_COST * DEFAULT_CELLS * 1000

#: The most ``certify`` spends without a ``max_cost``: 512 cells to depth 10⁴ (~10 s on a loaded
#: 2-core machine); beyond, it refuses the depths instead of running for minutes (pass
#: ``max_cost`` to get kind "unverified" there, or ``max_cost=math.inf`` to run it anyway).
DEFAULT_MAX_COST = CELL_LAYER_COST * DEFAULT_CELLS * 10**4

_REL_OP = 2.0**-50  # after +, −, ×, ÷: 8 u, u = 2^-53 the float64 unit roundoff
_REL_LIBM = 2.0**-46  # after sin, cos
_REL_MAP = 2.0**-44  # after one float64 layer map g
_TINY = 1e-300  # absorbs underflow to 0
_SHAVE = 2.0**-40  # relative margin on floor and on the values compared with it
_ROUNDS = 3  # refinements of the gap cells
_SPLIT = 16  # sub-cells per refined cell

_HALF_PI = math.pi / 2


@dataclasses.dataclass(frozen=True)
class Certificate:
    """What is known about φ_L(θ) on [0, π] for one (activation, depth, trainable set).

    Attributes:
      activation: canonical activation name; depth: L; trainable: as given.
      kind: "proof" (analytic, module docstring (a)–(d): φ non-decreasing on [0, π], or φ = θ),
        "unimodal" (proof on [0, π/2] + verified cells on [π/2, π]), "floor" (verified
        except a gap around the maximum, bounded below by ``floor``) or "unverified" (the
        verification was skipped for its cost, ``certify``'s ``max_cost``: proof (c) on
        [0, π/2] only).
      increasing_until: q₁, radians: φ non-decreasing on [0, q₁].
      decreasing_from: q₂, radians: φ non-increasing on [q₂, π].
      floor: lower bound of φ on [q₁, q₂] in radians (inf when unimodal or q₁ ≥ q₂).
      cells: cells used on [π/2, π] (0 for proofs).
    """

    activation: str
    depth: int
    trainable: object
    kind: str
    increasing_until: float
    decreasing_from: float
    floor: float
    cells: int

    @property
    def unimodal(self) -> bool:
        return self.kind in ("proof", "unimodal")

    def covers(self, theta_lo: float, theta_hi: float, phi_lo: float, phi_hi: float) -> bool:
        """Whether (★) holds for input angles in [θ_lo, θ_hi] (radians) with φ(θ_lo) = phi_lo,
        φ(θ_hi) = phi_hi (float64 values, compared with a 2⁻⁴⁰ relative margin)."""
        if self.unimodal or theta_hi <= self.increasing_until or theta_lo >= self.decreasing_from:
            return True
        return min(phi_lo, phi_hi) * (1.0 + _SHAVE) <= self.floor


# ---------------------------------------------------------------------------------------------
# Interval arithmetic on (lo, hi) pairs of numpy arrays, widened outward after every operation.


def _out(lo, hi, rel=_REL_OP):
    return lo - rel * np.abs(lo) - _TINY, hi + rel * np.abs(hi) + _TINY


def _add(a, b):
    return _out(a[0] + b[0], a[1] + b[1])


def _sub(a, b):
    return _out(a[0] - b[1], a[1] - b[0])


def _mul(a, b):
    p = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return _out(np.minimum(np.minimum(p[0], p[1]), np.minimum(p[2], p[3])),
                np.maximum(np.maximum(p[0], p[1]), np.maximum(p[2], p[3])))


def _scale(s: float, a):
    """s·a for an exact non-negative scalar s (0 or 1 here: exact)."""
    return s * a[0], s * a[1]


def _recip_pos(b):
    """1/b for b > 0."""
    return _out(1.0 / b[1], 1.0 / b[0])


def _cos(t):
    """cos on t ⊂ [0, π] (decreasing there)."""
    return _out(np.cos(t[1]), np.cos(t[0]), _REL_LIBM)


def _sin(t):
    """sin on t ⊂ [0, π]: increasing up to π/2, decreasing after."""
    sl, sh = np.sin(t[0]), np.sin(t[1])
    top = (t[0] <= _HALF_PI) & (t[1] >= _HALF_PI)
    lo, hi = _out(np.minimum(sl, sh), np.where(top, 1.0, np.maximum(sl, sh)), _REL_LIBM)
    return np.maximum(lo, 0.0), np.minimum(hi, 1.0)


def _layer_map(t, act):
    """g on t ⊂ [0, π], g increasing: [g(lo), g(hi)] from float64 evaluations, widened."""
    lo = layer_step(t[0], np.cos(t[0]), act)[0]
    hi = layer_step(t[1], np.cos(t[1]), act)[0]
    lo, hi = _out(lo, hi, _REL_MAP)
    return np.clip(lo, 0.0, math.pi), np.clip(hi, 0.0, math.pi)


def enclose_recursion(lo, hi, act, member, max_depth):
    """Yields (L, T, T', T'', count) per depth 0…max_depth, each an interval over the cells
    [lo, hi] ⊂ [0, π] (arrays). ``member(k)``: layer k is trainable."""
    one = (np.ones_like(lo), np.ones_like(lo))
    zero = (np.zeros_like(lo), np.zeros_like(lo))
    beta = derivative_slope(act)
    B = _out(np.float64(beta), np.float64(beta), _REL_LIBM)  # β's float64 value: ≤ 6u off
    th = (lo, hi)
    dth, d2th = one, zero
    c, s_ = _cos(th), _sin(th)
    s = 1.0 if member(0) else 0.0
    T = _scale(s, c)
    dT = _scale(s, (-s_[1], -s_[0]))
    d2T = _scale(s, (-c[1], -c[0]))
    count = s
    yield 0, T, dT, d2T, count
    for k in range(max_depth):
        gdot = _sub(one, _mul(B, th))  # ġ(θ_k) = 1 − βθ_k
        th1 = _layer_map(th, act)
        c1, s1 = _cos(th1), _sin(th1)
        inv_s1 = _recip_pos(s1)
        gp = _mul(_mul(gdot, s_), inv_s1)  # g'(θ_k) = ġ sin θ_k / sin θ_{k+1}
        # g'' = [(−β sin t + ġ cos t) sin g − ġ sin t cos g · g'] / sin² g
        num = _sub(_mul(_sub(_mul(gdot, c), _mul(B, s_)), s1), _mul(_mul(_mul(gdot, s_), c1), gp))
        gpp = _mul(num, _mul(inv_s1, inv_s1))
        dth1 = _mul(gp, dth)
        d2th1 = _add(_mul(gpp, _mul(dth, dth)), _mul(gp, d2th))
        s = 1.0 if member(k + 1) else 0.0
        T1 = _add(_scale(s, c1), _mul(gdot, T))
        dT1 = _sub(_mul(gdot, dT), _add(_scale(s, _mul(s1, dth1)), _mul(B, _mul(dth, T))))
        curv = _add(_mul(c1, _mul(dth1, dth1)), _mul(s1, d2th1))
        d2T1 = _sub(_mul(gdot, d2T),
                    _add(_add(_scale(s, curv), _mul(B, _mul(d2th, T))),
                         _mul(_scale(2.0, B), _mul(dth, dT))))
        th, dth, d2th, c, s_ = th1, dth1, d2th1, c1, s1
        T, dT, d2T = T1, dT1, d2T1
        count += s
        yield k + 1, T, dT, d2T, count


def sign_pattern_certificate(edges, T, dT, d2T, count):
    """Unimodality of φ = arccos(T/count) from interval enclosures on cells (module docstring).

    Assumes φ non-decreasing left of ``edges[0]`` (proof (c) when edges[0] ≤ π/2).

    Args:
      edges: (N + 1,) increasing cell edges, radians.
      T, dT, d2T: (lo, hi) pairs of (N,) arrays enclosing T, T', T'' on each cell.
      count: |S| > 0.

    Returns:
      (increasing_until q₁, decreasing_from q₂, unimodal, floor): φ non-decreasing on
      [.., q₁], non-increasing on [q₂, edges[-1]]; unimodal when the gap's cells all have
      T'' > 0; floor a lower bound of φ on the gap (inf if empty or unimodal), radians.
    """
    edges = np.asarray(edges, dtype=np.float64)
    n_cells = edges.size - 1
    neg = np.asarray(dT[1]) < 0
    pos = np.asarray(dT[0]) > 0
    prefix = n_cells if neg.all() else int(np.argmin(neg))
    suffix = n_cells - prefix if pos[prefix:].all() else int(np.argmin(pos[::-1]))
    q1, q2 = float(edges[prefix]), float(edges[n_cells - suffix])
    gap = slice(prefix, n_cells - suffix)
    if prefix + suffix >= n_cells or bool(np.all(np.asarray(d2T[0])[gap] > 0)):
        return q1, max(q1, q2), True, math.inf
    t_hi = np.clip(np.asarray(T[1])[gap], -count, count)
    floor = float(np.min(angle_from(count - t_hi, count + t_hi))) * (1.0 - _SHAVE)
    return q1, q2, False, floor


# ---------------------------------------------------------------------------------------------

_CACHE: dict = {}
_LOCK = threading.Lock()


def _proof(act, depth, layers) -> bool:
    """Cases (a), (b), (d) of the module docstring; ``layers`` as from ``sweep_layers``."""
    if act.is_linear or depth == 0 or layers == "last":
        return True
    return act.slope == 0.0 and layers is not None and 0 not in layers


def verification_cost(activation, depths, trainable="all", *, cells: int = DEFAULT_CELLS) -> int:
    """Pair-layers (``CELL_LAYER_COST`` per cell and layer) that ``certify`` would spend on the
    verified part for these depths: 0 when every depth is proved or already cached."""
    act = parse_angle_activation(activation, "verification_cost")
    depths, layers = sweep_layers(depths, trainable, "verification_cost")
    todo = [L for L in depths if not _proof(act, L, layers)]
    key = (act.slope, None if layers is None else tuple(sorted(layers)), cells)
    with _LOCK:
        known = _CACHE.get(key, {})
    if all(L in known for L in todo):
        return 0
    return CELL_LAYER_COST * cells * max(todo)


def certify(activation, depths, trainable="all", *, cells: int = DEFAULT_CELLS,
            max_cost: float | None = None) -> tuple[Certificate, ...]:
    """Certificates of (★) for φ_L, one per depth (ascending), module docstring.

    Depths that need the verified part share one pass of the interval recursion (cost
    O(cells · max depth), ~1–3 s for 512 cells and depth 1000), cached per process.

    Args:
      activation: any spelling of ``parse_activation``.
      depths: iterable of depths L ≥ 0.
      trainable: "all", "first", "last" or 0-based layer indices (valid for every depth).
      cells: cells on [π/2, π].
      max_cost: skip the verified part when it would cost more than this many pair-layers
        (a real number >= 0; ``math.inf``: never) and more than ``ALWAYS_AFFORDABLE`` (depth
        1000 at 512 cells; ``verification_cost``; module docstring, "Cost bound"): those depths
        get kind "unverified". None: the verified part may cost up to ``DEFAULT_MAX_COST``
        (depth 10⁴ at 512 cells, ~10 s) and depths beyond are refused.

    Returns:
      tuple of ``Certificate``, depths ascending.

    Raises:
      ValueError: max_cost None and a verified part costing more than ``DEFAULT_MAX_COST``
        (e.g. depth 10⁵, ~2 minutes); max_cost NaN or negative; cells < 1; bad depths,
        trainable or activation. TypeError: max_cost not a real number.
    """
    where = "certify"
    act = parse_angle_activation(activation, "certify")
    depths, layers = sweep_layers(depths, trainable, where)
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 1:
        raise ValueError(f"{where}: expected cells as an integer >= 1, got {cells!r}")
    if max_cost is not None:
        if isinstance(max_cost, (bool, np.bool_)) or not isinstance(max_cost, numbers.Real):
            raise TypeError(f"{where}: expected max_cost as a number of pair-layers >= 0 (or "
                            f"None), got {type(max_cost).__name__} {max_cost!r}")
        if not max_cost >= 0:  # NaN too
            raise ValueError(f"{where}: expected max_cost >= 0 pair-layers (math.inf: no bound), "
                             f"got {max_cost!r}")
    else:
        cost = verification_cost(act, depths, trainable, cells=cells)
        if cost > DEFAULT_MAX_COST:
            deepest = max(L for L in depths if not _proof(act, L, layers))
            raise ValueError(
                f"{where}: expected depths whose verified part costs at most DEFAULT_MAX_COST = "
                f"{DEFAULT_MAX_COST:.3g} pair-layers (depth "
                f"{DEFAULT_MAX_COST // (CELL_LAYER_COST * cells)} at {cells} cells, ~10 s), got "
                f"depth {deepest} ({cost:.3g}, ~{cost / DEFAULT_MAX_COST * 10:.0f} s); pass "
                "max_cost to bound it (kind 'unverified' beyond) or max_cost=math.inf to run it")
    out = {}
    todo = []
    for L in depths:
        if _proof(act, L, layers):
            out[L] = Certificate(act.name, L, trainable, "proof", math.pi, math.pi, math.inf, 0)
        else:
            todo.append(L)
    if (todo and max_cost is not None and verification_cost(act, todo, trainable, cells=cells)
            > max(max_cost, ALWAYS_AFFORDABLE)):
        for L in todo:
            out[L] = Certificate(act.name, L, trainable, "unverified", _HALF_PI, math.pi,
                                 -math.inf, 0)
        todo = []
    if todo:
        key = (act.slope, None if layers is None else tuple(sorted(layers)), cells)
        with _LOCK:
            known = _CACHE.get(key, {})
            if any(L not in known for L in todo):
                known = dict(known)
                known.update(_verify(act, layers, max(todo), cells))
                _CACHE[key] = known
        for L in todo:
            q1, q2, unimodal, floor, used = known[L]
            out[L] = Certificate(act.name, L, trainable, "unimodal" if unimodal else "floor",
                                 q1, q2, floor, used)
    return tuple(out[L] for L in depths)


def _verify(act, layers, max_depth, cells):
    """{L: (q₁, q₂, unimodal, floor)} for L = 1…max_depth on [π/2, π].

    Cells in the gap of a depth that is not yet unimodal are split into ``_SPLIT`` and
    recomputed (for every depth, in one more pass over the new cells only), up to
    ``_ROUNDS`` times.
    """
    member = (lambda k: True) if layers is None else (lambda k: k in layers)
    edges = np.linspace(_HALF_PI, math.pi, cells + 1)
    lo, hi = edges[:-1], edges[1:]
    enc = _enclosures(lo, hi, act, member, max_depth)
    found = {L: sign_pattern_certificate(edges, *enc[L]) for L in enc}
    for _ in range(_ROUNDS):
        bad = [L for L, r in found.items() if not r[2]]
        if not bad:
            break
        mark = np.zeros(lo.size, dtype=bool)
        for L in bad:
            q1, q2 = found[L][:2]
            mark |= (lo >= q1) & (hi <= q2)
        parts = [np.linspace(lo[i], hi[i], _SPLIT + 1) for i in np.flatnonzero(mark)]
        sub_lo = np.concatenate([p[:-1] for p in parts])
        sub_hi = np.concatenate([p[1:] for p in parts])
        sub = _enclosures(sub_lo, sub_hi, act, member, max_depth)
        order = np.argsort(np.concatenate([lo[~mark], sub_lo]), kind="stable")
        splice = functools.partial(_splice, keep=~mark, order=order)
        lo, hi = splice(lo, sub_lo), splice(hi, sub_hi)
        edges = np.append(lo, hi[-1])
        for L in enc:
            (T, dT, d2T, count), (sT, sdT, sd2T, _) = enc[L], sub[L]
            enc[L] = ((None, splice(T[1], sT[1])), (splice(dT[0], sdT[0]), splice(dT[1], sdT[1])),
                      (splice(d2T[0], sd2T[0]), None), count)
        for L in bad:
            found[L] = sign_pattern_certificate(edges, *enc[L])
    cells_used = lo.size
    return {L: r + (cells_used,) for L, r in found.items()}


def _splice(old, new, *, keep, order):
    """The kept cells of ``old`` and the new ones, in the order of their left edges."""
    return np.concatenate([old[keep], new])[order]


def _enclosures(lo, hi, act, member, max_depth):
    """{L: (T, T', T'', count)} for L ≥ 1, keeping only the bounds the certificate reads."""
    out = {}
    for L, T, dT, d2T, count in enclose_recursion(lo, hi, act, member, max_depth):
        if L >= 1:
            out[L] = ((None, T[1]), dT, (d2T[0], None), count)
    return out
