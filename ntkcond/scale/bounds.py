"""Certified bounds on λmin, λmax and κ of the infinite-width NTK of a whole data set, in the
time of a few GEMMs, without the n × n kernel or an eigendecomposition.

Bias-free nets (``ntkcond.infinite.kernels``): Θ(x, x') = ‖x‖‖x'‖|S|/d · Θ̃(cos θ), i.e.

    Θ = D Θ̃ D,   D = diag(‖x_i‖ √(|S|/d)),   Θ̃ = Σ_p a_p G̃^{∘p}                        (1)

with G̃ the cosine Gram matrix of the rows, G̃^{∘p} its Hadamard powers and a_p ≥ 0 the power
series of ``ntkcond.infinite.power_series`` (Nguyen, Mondelli & Montúfar, ICML 2021; Murray,
Jin, Bowman & Montúfar, ICLR 2023).

**λmin from below.** Every G̃^{∘p} is PSD (Schur product theorem) with unit diagonal, and by
Gershgorin λmin(G̃^{∘p}) ≥ 1 − R_p, R_p = max_i Σ_{j≠i} |G̃_ij|^p, which falls with p. So for any
split P, Θ̃ ⪰ Σ_{p≥P} a_p G̃^{∘p} and

    λmin(Θ̃) ≥ Σ_{p=0}^{P_max} a_p·max(0, 1 − R_p) + t·max(0, 1 − R_{P_max+1}),            (2)

t ≤ Σ_{p>P_max} a_p the series' tail (``tail_lower``): the best split is to keep every p
whose Gershgorin bound is positive (the terms below it are bounded by 0). Then
λmin(Θ) ≥ min_i D_i²·λmin(Θ̃); the weighted form λmin(D G̃^{∘p} D) ≥ min_i D_i(D_i − Σ_{j≠i}
D_j|G̃_ij|^p) is used as well and the larger bound kept.

**λmax.** From above, Gershgorin on (1) with |Θ̃(ρ)| ≤ Σ_p a_p|ρ|^p:
λmax ≤ max_i D_i Σ_j D_j Σ_p a_p |G̃_ij|^p. From below, the Rayleigh quotient of the all-ones
vector, 1ᵀΘ1/n = Σ_p a_p (D1)ᵀG̃^{∘p}(D1)/n, whose every term is ≥ 0 (PSD), so dropping or
lowering terms keeps it a lower bound: the even p always (entries |G̃_ij|^p ≥ 0), the odd p
too when every cosine is certified ≥ 0; and λmax ≥ max_i D_i².

**Exponent grid.** R_p and the row sums are evaluated on a grid q ∈ {0, 1, 2, 3, 4, 6, 8, 12,
16, 32, 64, …} (one elementwise multiply per point), and for p between grid points the
monotonicity of |ρ|^p in p is used: |ρ|^p ≤ |ρ|^{q⁻} (q⁻ ≤ p, for the upper bounds and for R_p)
and |ρ|^p ≥ |ρ|^{q⁺} (q⁺ ≥ p, for the Rayleigh lower bound).

**Rounding (rigorous for the float64 data).** The rows are normalised in float64 and G̃ is
screened in float64 GEMM blocks (upper triangle, row blocks); with u = 2⁻⁵³, γ_k = ku/(1 − ku),
η = ``ntkcond.infinite.extremes.norm_excess`` (|‖x̂_i‖² − 1| ≤ η) and ε₂ = 4u + 4u², every
computed ĉ_ij satisfies |cos θ_ij| ≤ |ĉ_ij| + E with

    E = γ_d(1 + η)(1 + ε₂)/(1 − η) + (1 + γ_d)(ε₂ + η)/(1 − η) + ε₂                        (3)

(γ_d(1 + η): the GEMM's error for any summation order; x̂_i = x_i(1 + δ)/s_i componentwise,
|δ| ≤ u, and the norm ratio via η), and |cos θ_ij| ≥ |ĉ_ij| − E. Upper bounds then use
c⁺ = min(1, |ĉ| + E) and the Rayleigh bound (c⁺)^q − 2qE ≤ (c⁻)^q. Every further step
multiplies or adds non-negative numbers, whose computed values are within a factor
(1 ± γ_k) of the exact ones for k the number of roundings on the longest chain (q − 1 for a
power by squaring, the block length for a BLAS sum, d + 4 for D); the bounds are moved outward
by those factors (and by n·2⁻¹⁰⁷⁴ for underflow). The series coefficients are ǎ_p ≤ a_p ≤
â_p (``PowerSeries``: ``coefficients`` and ``upper_coefficients``, a rigorous enclosure at
every depth ``ntk_power_series`` accepts). E ≈ (d + 5)u ≈ 9e-14 for MNIST (d = 784).

**Blocks.** Row blocks of ``block`` rows go round-robin to one worker thread per CPU (BLAS at
one thread each); each GEMM block of block × 2048 is processed in 64-row sub-blocks that stay
in cache, and the workers' sums and extreme pairs are merged at the end.

**λmin from above** (Liu & Hui, arXiv 2305.08813, Prop. 4.1): Cauchy interlacing on the 2 × 2
principal submatrices of the closest and the nearest-antipodal pairs (the pairs of largest
|cos θ|, found in the same GEMM blocks by ``ntkcond.infinite.extremes``), computed exactly with
``ntkcond.infinite.kernels.infinite_ntk`` on those rows and
``ntkcond.spectrum.lambda_min_upper_bound``; and λmin ≤ min_i D_i².

**κ as measured.** ``conditioning(infinite_ntk(x)).kappa`` is computed from a float64 kernel
(entries within ε_K·D_iD_j of Θ_ij, ε_K = 16(L + 2)·eps: ``infinite_ntk``'s recursion, whose
error is relative to the diagonal scale) by ``eigvalsh`` (backward error ≤ 4n·eps·‖K‖₂), so its
eigenvalues lie within δ = ε_K·tr Θ + 4n·eps·λmax⁺ of the exact ones (Weyl; ‖E‖₂ ≤ ‖E‖_F ≤
ε_K Σ_i D_i²). The bracket is widened by δ, and ``upper`` is ∞ unless
λmin⁻ − δ exceeds ``conditioning``'s cutoff n·eps·(λmax⁺ + δ) (below it, κ may read ∞).

**Linear nets** have Θ = |S|·XXᵀ/d exactly: the bounds come from the eigenvalues of the
smaller Gram matrix (XᵀX when n > d, where λmin = 0 and κ = ∞ exactly), with its rounding
(γ_m·tr(XXᵀ) + 4k·eps·λmax, Weyl) as δ; κ_eff is bracketed the same way (its null space is
that of X).
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import time

import numpy as np

from .._core.checks import as_block, as_data, as_depth, resolve_trainable
from .._core.threads import cpu_count, single_threaded_blas
from ..activations import parse_angle_activation
from ..infinite.extremes import ExtremeSearch, extreme_pairs, norm_excess
from ..infinite.geometry import normalised_rows, scaled_rows
from ..infinite.kernels import infinite_ntk
from ..infinite.power_series import (MAX_COST, MAX_ORDER, check_series_cost,
                                     max_certified_order, ntk_power_series)
from ..spectrum import lambda_min_upper_bound

__all__ = ["LambdaMinBound", "ConditionBounds", "Separation", "lambda_min_lower_bound",
           "condition_number_bounds", "data_separation", "exponent_grid"]

_U = 2.0**-53
_EPS = 2.0**-52
_TINY = 2.0**-1074
_COLUMN_BLOCK = 2048
_SUB_ROWS = 64  # 64 × 2048 float64 = 1 MiB: the powers of a sub-block stay in L2
DEFAULT_ORDER = 1024


def _gamma(k: float) -> float:
    k = float(k)
    return k * _U / (1.0 - k * _U)


def exponent_grid(top: int) -> list[int]:
    """The exponents q at which Hadamard powers are evaluated: 0, 1, 2, 3, 4, 6, 8, 12, 16,
    then doubling, up to the largest grid point ≤ ``top`` (module docstring)."""
    grid = [q for q in (0, 1, 2, 3, 4, 6, 8, 12, 16) if q <= top]
    q = 32
    while q <= top:
        grid.append(q)
        q *= 2
    return grid


@dataclasses.dataclass(frozen=True)
class _Scan:
    grid: list
    row_sums: np.ndarray  # (G, n): upper bounds on Σ_{j≠i} |cos θ_ij|^q
    weighted: np.ndarray  # (G, n): upper bounds on Σ_{j≠i} D_j |cos θ_ij|^q (computed D)
    weighted2: np.ndarray  # (G, n): upper bounds on Σ_{j≠i} D_j² |cos θ_ij|^q
    weighted_lo: np.ndarray  # (G, n): lower bounds on Σ_{j≠i} D_j |cos θ_ij|^q
    weighted2_lo: np.ndarray  # (G, n): lower bounds on Σ_{j≠i} D_j² |cos θ_ij|^q
    closest: tuple
    farthest: tuple
    min_cos: float  # certified lower bound on min cos θ_ij
    E: float
    d_round: int  # roundings in D_i = ‖x_i‖√(|S|/d): relative error ≤ γ_{d_round}
    seconds: float


def _power_sums(A, r0, c0, grid, recipe, E, weights, acc, acc_lo) -> None:
    """Add one block's Σ_j w_j A_ij^q (rows) and Σ_i w_i A_ij^q (columns) for every grid point
    q and the weights w = 1, D, D² to ``acc``, and the same lowered by 2qE·Σw to ``acc_lo``.
    A: (r, c) bounds c⁺ on |cos θ| of the pairs (r0 + i, c0 + j), 0 where j ≤ i."""
    r, c = A.shape
    wr, wc = weights[c0:c0 + c], weights[r0:r0 + r]
    sum_r, sum_c = wr.sum(axis=0), wc.sum(axis=0)
    powers = {1: A}
    for k, q in enumerate(grid):
        if q == 0:
            P = (A > 0).astype(np.float64)  # |cos|^0 = 1 on the pairs j > i (A ≥ E > 0 there)
        elif q == 1:
            P = A
        else:
            a, b = recipe[q]
            P = np.multiply(powers[a], powers[b])
            powers[q] = P
        rs, cs = (P @ wr).T, wc.T @ P  # (3, r), (3, c)
        acc[:, k, r0:r0 + r] += rs
        acc[:, k, c0:c0 + c] += cs
        # (c⁺)^q − 2qE ≤ (c⁻)^q ≤ |cos θ|^q: lower bounds of the weighted sums
        acc_lo[:, k, r0:r0 + r] += rs[1:] - (2 * q * E) * sum_r[1:, None]
        acc_lo[:, k, c0:c0 + c] += cs[1:] - (2 * q * E) * sum_c[1:, None]


def _scan(xh, D, top, block, x) -> _Scan:
    """One pass over the upper triangle of the Gram matrix in float64 GEMM blocks: the row
    sums of the Hadamard powers on ``exponent_grid(top)`` and the extreme pairs."""
    start = time.perf_counter()
    n, d = xh.shape
    eta = norm_excess(xh)
    if not eta < 0.5:
        raise ValueError(f"condition_number_bounds: expected unit rows, got norm excess {eta}")
    gd = _gamma(d)
    e2 = 4 * _U + 4 * _U * _U
    E = (gd * (1 + eta) * (1 + e2) / (1 - eta) + (1 + gd) * (e2 + eta) / (1 - eta) + e2)
    E = E * (1 + 16 * _U) + _TINY
    grid = exponent_grid(top)
    G = len(grid)
    # how each grid point is made from earlier ones (by one multiply): q = a + b
    recipe = {}
    for q in grid[2:]:
        a = max(p for p in grid if 0 < p <= q // 2 and (q - p) in grid)
        recipe[q] = (a, q - a)
    weights = np.stack([np.ones(n), D, D * D], axis=1)  # (n, 3)
    starts = list(range(0, n, block))
    workers = max(1, min(cpu_count(), len(starts)))

    def work(w):
        # row blocks w, w + workers, …: interleaved, so the shrinking triangle rows balance
        acc = np.zeros((3, G, n))  # Σ_{j≠i} w_j c⁺_ij^q for the weights w = 1, D, D²
        acc_lo = np.zeros((2, G, n))  # lowered by 2qE·Σw: lower bounds, for w = D, D²
        search = ExtremeSearch(xh, x=x)
        for r0 in starts[w::workers]:
            r1 = min(n, r0 + block)
            rows = xh[r0:r1]
            for c0 in range(r0, n, _COLUMN_BLOCK):
                c1 = min(n, c0 + _COLUMN_BLOCK)
                C = rows @ xh[c0:c1].T  # one large GEMM block
                search.add_block(C, r0, c0)
                A = np.abs(C, out=C)
                A += E
                np.minimum(A, 1.0, out=A)
                if c0 < r1:  # the block meets the diagonal: keep j > i only
                    A[np.arange(r0, r1)[:, None] >= np.arange(c0, c1)[None, :]] = 0.0
                for s0 in range(0, r1 - r0, _SUB_ROWS):  # powers in cache-sized sub-blocks
                    s1 = min(r1 - r0, s0 + _SUB_ROWS)
                    _power_sums(A[s0:s1], r0 + s0, c0, grid, recipe, E, weights, acc, acc_lo)
        search.flush()
        return acc, acc_lo, (search.result() if search.close[1] >= 0 else None)

    if workers == 1:
        parts = [work(0)]
    else:
        with single_threaded_blas(), concurrent.futures.ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(work, range(workers)))
    acc = sum(p[0] for p in parts)
    acc_lo = sum(p[1] for p in parts)
    found = [p[2] for p in parts if p[2] is not None]
    closest = min(f.closest for f in found)
    far = min((-f.farthest[0], f.farthest[1], f.farthest[2]) for f in found)
    farthest = (-far[0], far[1], far[2])
    screen_min = min(f.screen_min for f in found)
    # outward rounding: powers by squaring (≤ q − 1 roundings), sums of ≤ n terms in BLAS and
    # in the accumulation across blocks; underflowed terms add at most n·2⁻¹⁰⁷⁴·max w
    up = np.array([1 + _gamma(q + 2 * n + 8) for q in grid])[None, :, None]
    lo = np.array([1 - _gamma(q + 2 * n + 8) for q in grid])[None, :, None]
    wmax = np.array([1.0, float(D.max()), float(D.max()) ** 2])[:, None, None]
    upper = acc * up + n * _TINY * wmax
    lower = np.maximum(acc_lo * lo - n * _TINY * wmax[1:], 0.0)
    return _Scan(grid=grid, row_sums=upper[0], weighted=upper[1], weighted2=upper[2],
                 weighted_lo=lower[0], weighted2_lo=lower[1],
                 closest=closest, farthest=farthest,
                 min_cos=float(screen_min - E), E=E, d_round=d + 8,
                 seconds=time.perf_counter() - start)


def _grid_index(grid, p, above):
    """Index of q⁻(p) (largest grid point ≤ p) or q⁺(p) (smallest ≥ p; None beyond)."""
    g = np.asarray(grid)
    if above:
        k = int(np.searchsorted(g, p, side="left"))
        return k if k < len(g) else None
    return int(np.searchsorted(g, p, side="right")) - 1


@dataclasses.dataclass(frozen=True)
class LambdaMinBound:
    """A certified lower bound on λmin of the infinite-width NTK of x, eq. (2).

    Attributes:
      value: λmin(Θ) ≥ value (units of the kernel); 0 where the bound proves nothing.
      normalised: λmin(Θ̃) ≥ normalised (unit-diagonal kernel Θ̃ = D⁻¹ΘD⁻¹).
      split: the smallest p whose Gershgorin term is positive (every p ≥ split contributes);
        None where none does.
      order: the series order P_max used; tail: the tail mass t credited in eq. (2).
      margin: E, the bound on |ĉ − cos θ| of the screened cosines, eq. (3).
      seconds: wall time.
    """

    value: float
    normalised: float
    split: int | None
    order: int
    tail: float
    margin: float
    seconds: float


@dataclasses.dataclass(frozen=True)
class ConditionBounds:
    """Certified brackets of κ = λmax/λmin of the infinite-width NTK of x (module docstring).

    Attributes:
      lower, upper: lower ≤ ``conditioning(infinite_ntk(x, ...)).kappa`` ≤ upper (∞: λmin may
        read 0).
      lower_eff, upper_eff: the same for κ_eff where the null space is known (linear nets: that
        of X; otherwise κ_eff = κ when the λmin bound proves full rank, else (1, ∞)).
      lambda_max_lower, lambda_max_upper: bounds on λmax of the exact kernel (Rayleigh quotient
        of 1 and max Θ_ii; Gershgorin).
      lambda_min_lower, lambda_min_upper: bounds on λmin of the exact kernel (power series,
        eq. (2); Prop. 4.1 at the extreme pairs).
      rounding: δ, the allowance for the float64 kernel and eigvalsh (added outward).
      The λ's and δ are in the kernel's units; they are computed for the rows scaled by one
      power of two (κ is scale-invariant, so x of any finite scale, 1e±200 included, gets its
      bracket) and scaled back, outward: a lower bound beyond float64's range reads as the
      largest float64, an upper bound as ``inf``.
      closest, farthest: (θ, i, j) in radians, the extreme input-angle pairs.
      split, order: as ``LambdaMinBound``.
      seconds: {"series", "scan", "pairs", "total"} wall times.
    """

    lower: float
    upper: float
    lower_eff: float
    upper_eff: float
    lambda_max_lower: float
    lambda_max_upper: float
    lambda_min_lower: float
    lambda_min_upper: float
    rounding: float
    closest: tuple
    farthest: tuple
    split: int | None
    order: int
    seconds: dict

    @property
    def ratio(self) -> float:
        """upper / lower (∞ where upper is)."""
        return self.upper / self.lower


def _checked(x, depth, activation, trainable, order, block, where):
    x = as_data(x, where, "x")
    if x.shape[0] < 2:
        raise ValueError(f"{where}: expected n >= 2 rows, got shape {x.shape}")
    act = parse_angle_activation(activation, where)
    depth = as_depth(depth, where)
    layers = resolve_trainable(trainable, depth, where)
    series = not act.is_linear and depth > 0  # else the bounds need no series
    if order is None:
        order = min(DEFAULT_ORDER, max_certified_order(depth)) if series else DEFAULT_ORDER
        if order < 0:
            raise ValueError(
                f"{where}: expected a depth whose certified power series fits the cost bound "
                f"(ntkcond.infinite.power_series.MAX_COST) at some order, got depth {depth}; "
                f"the largest depth is {MAX_COST // (17 * 241)} (at order 0)")
    else:
        order = as_depth(order, where, "order", maximum=MAX_ORDER)
        if series:
            check_series_cost(depth, order, where)
    block = as_block(block, where, 2)
    return x, act, depth, layers, order, block


def _lambda_min_terms(scan, series, D):
    """(λmin(Θ) lower bound, normalised bound, split), eq. (2): per p the best of four
    Gershgorin forms for λmin(D G̃^{∘p} D), i.e. Gershgorin on S⁻¹ D G̃^{∘p} D S for S = D⁻¹, 1, D
    — min_i D_i²(1 − Σ_{j≠i}|G̃_ij|^p) (and its weaker min D²·(1 − R_p)),
    min_i D_i(D_i − Σ_{j≠i} D_j|G̃_ij|^p) and min_i (D_i² − Σ_{j≠i} D_j²|G̃_ij|^p)."""
    grid, a = scan.grid, series.coefficients
    g = 1 + _gamma(scan.d_round)
    D_lo = D / g
    R = scan.row_sums.max(axis=1)  # ≥ R_q
    normalised_q = np.maximum(1.0 - R, 0.0) * (1 - _gamma(4))
    forms = np.stack([
        normalised_q * float(np.min(D_lo)) ** 2,
        np.min(D_lo * D_lo * (1.0 - scan.row_sums), axis=1) * (1 - _gamma(4)),  # D⁻¹-similar rows
        np.min(D_lo * (D_lo - scan.weighted * g), axis=1),
        np.min(D_lo * D_lo - scan.weighted2 * g * g, axis=1),
    ])
    per_q = np.maximum(forms.max(axis=0), 0.0) * (1 - _gamma(8))
    norm_terms, terms, split = [], [], None
    for p in range(series.order + 2):
        k = _grid_index(grid, p, above=False)
        mass = a[p] if p <= series.order else series.tail_lower
        norm_terms.append(mass * normalised_q[k])
        terms.append(mass * per_q[k])
        if split is None and per_q[k] > 0 and mass > 0:
            split = p
    normalised = math.fsum(norm_terms) * (1 - _gamma(len(norm_terms) + 4))
    value = math.fsum(terms) * (1 - _gamma(len(terms) + 4))
    return value, normalised, split


def _scaled_norms(x):
    """(‖x_i‖·2^(−s), s) with s such that the largest lies in [0.5, 1): the bounds are computed
    for the kernel of x·2^(−s) (every λ scales by 4^(−s), κ not at all), so no scale of x can
    overflow or underflow them; ``_unscale`` restores the units. Each norm is computed on its
    row scaled by its own power of two (``scaled_rows``) and then scaled exactly (a row more
    than 2^1022 times shorter than the longest underflows; κ is then beyond float64 anyway)."""
    xs, e = scaled_rows(x)
    norms = np.linalg.norm(xs, axis=1)
    _, top = np.frexp(norms)
    s = int(np.max(e + top))
    with np.errstate(under="ignore"):
        return np.ldexp(norms, e - s), s


def _unscale(value: float, s: int, up: bool) -> float:
    """value·4^s, rounded outward: an upper bound that overflows is ``inf``, a lower bound that
    overflows the largest float64; an upper bound that underflows the smallest subnormal."""
    if not math.isfinite(value) or value == 0:
        return value
    with np.errstate(over="ignore", under="ignore"):
        out = float(np.ldexp(value, 2 * s))
    if math.isinf(out) and not up:
        return float(np.finfo(np.float64).max)
    if up and abs(out) < 2.0**-1022:
        return float(np.nextafter(out, math.inf))
    if not up and 0 < abs(out) < 2.0**-1022:
        return float(np.nextafter(out, -math.inf))
    return out


def _prepare(x, layers, order, block, act, depth, trainable, where):
    """(series, D of x·2^(−s), scan, seconds of the series, s): eq. (1) for the scaled rows."""
    xh, _ = normalised_rows(x, where, "x")  # zero rows refused before the series' cost
    norms, s = _scaled_norms(x)
    t0 = time.perf_counter()
    series = ntk_power_series(depth, act, order=order, trainable=trainable)
    t_series = time.perf_counter() - t0
    D = norms * math.sqrt(len(layers) / x.shape[1])
    scan = _scan(xh, D, order + 1, block, x)
    return series, D, scan, t_series, s


def lambda_min_lower_bound(x, *, depth: int, activation="relu", trainable="all",
                           order: int | None = None, block: int = 512) -> LambdaMinBound:
    """A certified lower bound on λmin of the infinite-width NTK Θ of the rows of x, eq. (2).

    Schur + Gershgorin on the power series Θ̃ = Σ a_p G̃^{∘p}, the best split, and the diagonal
    scaling Θ = DΘ̃D (module docstring), from one pass of float64 GEMM blocks over the upper
    triangle of the Gram matrix with every rounding accounted for, eq. (3): the bound holds in
    exact arithmetic for the float64 data. No n × n array is formed: each worker thread (one
    per CPU) holds one block × 2048 GEMM block and its (5, grid, n) sums; memory
    O(workers·(block·2048 + 5·grid·n) + n·d). Rows need not be normalised. It is positive only when high Hadamard powers
    of G̃ become diagonally dominant (no duplicates, and enough series order: the series mass
    beyond ``order`` is credited with R at the largest grid point ≤ order + 1).

    Args:
      x: (n, d) rows, n ≥ 2, no zero rows.
      depth, activation, trainable: as ``ntkcond.infinite.kernels.infinite_ntk``.
      order: series order P_max (default 1024, or the largest order whose certified series
        costs at most ``power_series.MAX_COST`` at this depth when that is less:
        ``max_certified_order``; cost O(depth·order²) for the series).
      block: rows per GEMM block.

    Returns:
      ``LambdaMinBound``.
    """
    where = "lambda_min_lower_bound"
    start = time.perf_counter()
    x, act, depth, layers, order, block = _checked(x, depth, activation, trainable, order, block, where)
    series, D, scan, _, s = _prepare(x, layers, order, block, act, depth, trainable, where)
    value, normalised, split = _lambda_min_terms(scan, series, D)
    return LambdaMinBound(value=_unscale(value, s, up=False), normalised=normalised,
                          split=split, order=order,
                          tail=series.tail_lower, margin=scan.E,
                          seconds=time.perf_counter() - start)


def _pair_upper(x, pair, depth, act, trainable, s):
    """λmin ≤ Prop. 4.1 of the pair's 2 × 2 kernel, for the rows x·2^(−s) (``_prepare``)."""
    _, i, j = pair
    with np.errstate(under="ignore"):
        rows = np.ldexp(x[[i, j]], -s)
    K = infinite_ntk(rows, depth=depth, activation=act, trainable=trainable)
    bound = lambda_min_upper_bound(K)[0]
    lam_plus = float(np.trace(K))
    return bound + 16 * (depth + 2) * _EPS * lam_plus


def _lambdas_in_units(lmax_lo, lmax_up, lmin_lo, lmin_up, delta, s) -> dict:
    """The λ bounds and the rounding δ of the kernel of x·2^(−s), in the units of x's kernel."""
    return {"lambda_max_lower": _unscale(lmax_lo, s, up=False),
            "lambda_max_upper": _unscale(lmax_up, s, up=True),
            "lambda_min_lower": _unscale(lmin_lo, s, up=False),
            "lambda_min_upper": _unscale(lmin_up, s, up=True),
            "rounding": _unscale(delta, s, up=True)}


def _kappa_bracket(lmax_lo, lmax_up, lmin_lo, lmin_up, delta, n):
    lower = max(lmax_lo - delta, 0.0) / (lmin_up + delta)
    cutoff = n * _EPS * (lmax_up + delta)
    den = lmin_lo - delta
    upper = (lmax_up + delta) / den if den > cutoff else math.inf
    return lower * (1 - _gamma(4)), upper * (1 + _gamma(4))


def _linear_bounds(x, layers, depth, start, where):
    """Linear nets: Θ = |S|·XXᵀ/d; eigenvalues of the smaller Gram matrix (module docstring),
    of the rows x·2^(−s) (``_scaled_norms``), the λ's returned in the units of x."""
    normalised_rows(x, where, "x")  # zero rows refused, as for the other activations
    s = _scaled_norms(x)[1]
    with np.errstate(under="ignore"):
        x = np.ldexp(x, -s)
    n, d = x.shape
    scale = len(layers) / d
    small = x.T @ x if n > d else x @ x.T
    k, m = small.shape[0], (n if n > d else d)
    lam = np.linalg.eigvalsh(small) * scale
    lmax = float(lam[-1])
    trace = float(np.einsum("ij,ij->", x, x)) * scale
    delta_gram = _gamma(m + 2) * trace * (1 + _gamma(d + 2)) + 4 * k * _EPS * lmax
    # the float kernel of infinite_ntk (entries within 16·(L + 2)·eps of the diagonal scale,
    # ‖E‖₂ ≤ that · tr Θ) and eigvalsh's backward error, as for the other activations
    delta = (delta_gram + 16 * (depth + 2) * _EPS * trace * (1 + _gamma(d + 2))
             + 4 * n * _EPS * (lmax + delta_gram))
    lmax_lo, lmax_up = lmax - delta_gram, lmax + delta_gram
    if n > d:
        lmin_lo, lmin_up = 0.0, 0.0
    else:
        lmin_lo, lmin_up = max(float(lam[0]) - delta_gram, 0.0), float(lam[0]) + delta_gram
    lower, upper = _kappa_bracket(lmax_lo, lmax_up, lmin_lo, lmin_up, delta, n)
    # κ_eff: the smallest eigenvalue above the cutoff n·eps·λmax of conditioning
    cutoff_hi = n * _EPS * (lmax_up + delta)
    cutoff_lo = n * _EPS * max(lmax_lo - delta, 0.0)
    nonzero = lam[lam - delta > cutoff_hi]
    ambiguous = np.any((lam + delta > cutoff_lo) & (lam - delta <= cutoff_hi))
    if nonzero.size and not ambiguous:
        lower_eff, upper_eff = _kappa_bracket(lmax_lo, lmax_up, float(nonzero[0]) - delta_gram,
                                              float(nonzero[0]) + delta_gram, delta, 0)
    else:
        lower_eff, upper_eff = 1.0, math.inf
    return ConditionBounds(
        lower=lower, upper=upper, lower_eff=lower_eff, upper_eff=upper_eff,
        **_lambdas_in_units(lmax_lo, lmax_up, lmin_lo, lmin_up, delta, s),
        closest=(math.nan, -1, -1),
        farthest=(math.nan, -1, -1), split=1, order=1,
        seconds={"series": 0.0, "scan": time.perf_counter() - start, "pairs": 0.0,
                 "total": time.perf_counter() - start})


def condition_number_bounds(x, *, depth: int, activation="relu", trainable="all",
                            order: int | None = None, block: int = 512) -> ConditionBounds:
    """Certified bracket lower ≤ κ ≤ upper of κ = ``conditioning(infinite_ntk(x)).kappa``.

    One pass of float64 GEMM blocks over the Gram matrix gives the power-series λmin bound
    (eq. (2), as ``lambda_min_lower_bound``), the Gershgorin λmax bound, the Rayleigh quotient
    of the all-ones vector and the extreme pairs for Prop. 4.1; the bracket is widened by the
    float64 kernel's and eigvalsh's rounding (module docstring). Linear nets use the smaller
    Gram matrix instead (exact spectrum, rounding bounded).

    Args:
      x: (n, d) rows, n ≥ 2, no zero rows.
      depth, activation, trainable: as ``ntkcond.infinite.kernels.infinite_ntk``.
      order: series order (default as ``lambda_min_lower_bound``).
      block: rows per GEMM block.

    Returns:
      ``ConditionBounds``.

    Examples:
      >>> import numpy as np, ntkcond
      >>> x = np.random.default_rng(0).standard_normal((64, 16))
      >>> b = ntkcond.condition_number_bounds(x, depth=3)
      >>> kappa = ntkcond.conditioning(ntkcond.infinite_ntk(x, depth=3)).kappa
      >>> bool(b.lower <= kappa <= b.upper)
      True
    """
    where = "condition_number_bounds"
    start = time.perf_counter()
    x, act, depth, layers, order, block = _checked(x, depth, activation, trainable, order, block, where)
    n = x.shape[0]
    if act.is_linear or depth == 0:
        return _linear_bounds(x, layers, depth, start, where)
    series, D, scan, t_series, s = _prepare(x, layers, order, block, act, depth, trainable, where)
    grid = scan.grid
    lmin_lo, _, split = _lambda_min_terms(scan, series, D)
    g = 1 + _gamma(scan.d_round)
    D_up, D_lo = D * g, D / g
    # λmax ≤ max_i (|Θ|v)_i / v_i for v = 1 and v = D (Collatz–Wielandt; Gershgorin for v = 1),
    # |Θ̃_ij| ≤ Σ_q A_q |G̃_ij|^q with A_q the series mass sent to grid point q ≤ p
    a_up = series.upper_coefficients
    A_up = np.zeros(len(grid))
    for p in range(series.order + 1):
        A_up[_grid_index(grid, p, above=False)] += a_up[p]
    A_up[_grid_index(grid, series.order + 1, above=False)] += series.tail
    A_up *= 1 + _gamma(series.order + 4)
    rounding = 1 + _gamma(len(grid) + 8)
    by_ones = D_up * (D_up + (A_up @ scan.weighted) * g) * rounding
    by_norms = (D_up * D_up + (A_up @ scan.weighted2) * g * g) * rounding
    lmax_up = float(min(by_ones.max(), by_norms.max()))
    # λmax ≥ vᵀΘv/vᵀv for v = 1 and v = D: Σ_p a_p (D∘v)ᵀG̃^{∘p}(D∘v)/vᵀv, every term ≥ 0 (PSD).
    # Each term is lowered: for even p (or every p where all cosines are ≥ 0) by the lower sums
    # at q⁺ ≥ p; otherwise (odd p, cosines of both signs, and the tail) by diag − Σ|off| at q⁻
    all_nonneg = scan.min_cos >= 0
    a_lo = series.coefficients
    quotients = []
    for v_w, lo_sums, up_sums, v_up, vv in (
            (D_lo, scan.weighted_lo, scan.weighted, D_up, float(n)),
            (D_lo ** 2, scan.weighted2_lo, scan.weighted2 * g, D_up ** 2, float(np.sum(D_up * D_up)))):
        # v = 1: Σ_i D_i (D_i + Σ_{j≠i} D_j c^p);  v = D: Σ_i D_i² (D_i² + Σ_{j≠i} D_j² c^p)
        diag = float(np.sum(v_w * v_w)) * (1 - _gamma(n + 8))
        off_abs = [float(v_up @ up_sums[k]) * g * (1 + _gamma(n + 4)) for k in range(len(grid))]
        terms = []
        for p in range(series.order + 2):
            mass = a_lo[p] if p <= series.order else series.tail_lower
            if mass == 0:
                continue
            if p <= series.order and (p % 2 == 0 or all_nonneg):
                k = _grid_index(grid, p, above=True)
                off = 0.0 if k is None else float(v_w @ lo_sums[k]) / (g * g) * (1 - _gamma(n + 4))
                terms.append(mass * (diag + max(off, 0.0)))
            else:
                terms.append(mass * max(diag - off_abs[_grid_index(grid, p, above=False)], 0.0))
        quotients.append(math.fsum(terms) * (1 - _gamma(len(terms) + 4)) / (vv * (1 + _gamma(n + 4))))
    lmax_lo = max(max(quotients), float(np.max(D_lo)) ** 2 * (1 - _gamma(4)))  # ≥ max Θ_ii
    # λmin ≤ Prop 4.1 at the extreme pairs, and ≤ min Θ_ii
    t0 = time.perf_counter()
    lmin_up = min(_pair_upper(x, scan.closest, depth, act, trainable, s),
                  _pair_upper(x, scan.farthest, depth, act, trainable, s),
                  float(np.min(D_up)) ** 2 * (1 + _gamma(4)))
    t_pairs = time.perf_counter() - t0
    eps_k = 16 * (depth + 2) * _EPS
    trace = float(np.sum(D_up * D_up)) * (1 + _gamma(n + 4))
    delta = eps_k * trace + 4 * n * _EPS * lmax_up
    lower, upper = _kappa_bracket(lmax_lo, lmax_up, lmin_lo, lmin_up, delta, n)
    full_rank = math.isfinite(upper)
    lower_eff, upper_eff = (lower, upper) if full_rank else (1.0, math.inf)
    return ConditionBounds(
        lower=lower, upper=upper, lower_eff=lower_eff, upper_eff=upper_eff,
        **_lambdas_in_units(lmax_lo, lmax_up, lmin_lo, lmin_up, delta, s),
        closest=scan.closest, farthest=scan.farthest,
        split=split, order=order,
        seconds={"series": t_series, "scan": scan.seconds, "pairs": t_pairs,
                 "total": time.perf_counter() - start})


@dataclasses.dataclass(frozen=True)
class Separation:
    """The separation δ of the unit-normalised rows (Karhadkar, Murray & Montúfar 2024).

    Attributes:
      delta: δ = min_{i≠j} min(‖x̂_i − x̂_j‖, ‖x̂_i + x̂_j‖) = 2 sin(θ*/2), θ* = min(θ_lo, π − θ_hi).
      closest: (θ_lo, i, j): the smallest input angle (radians) and its pair.
      antipodal: (θ_hi, i, j): the largest input angle and its pair (nearest antipodal).
      seconds: wall time.
    """

    delta: float
    closest: tuple
    antipodal: tuple
    seconds: float


def data_separation(x, *, block: int = 1024) -> Separation:
    """δ-separation of the rows of x: the closest and the nearest-antipodal pairs in GEMM time.

    ‖x̂_i − x̂_j‖ = 2 sin(θ_ij/2) and ‖x̂_i + x̂_j‖ = 2 cos(θ_ij/2), so δ is set by the smallest
    and the largest input angle, found over all pairs in float64 GEMM blocks with an exact
    recheck (``ntkcond.infinite.extremes.extreme_pairs``; angles exact for the float64 data).

    Args:
      x: (n, d) rows, n ≥ 2, no zero rows (any norms: δ is of the normalised rows).
      block: rows per GEMM block.
    """
    where = "data_separation"
    start = time.perf_counter()
    x = as_data(x, where, "x")
    if x.shape[0] < 2:
        raise ValueError(f"{where}: expected n >= 2 rows, got shape {x.shape}")
    block = as_block(block, where, 2)
    xh, _ = normalised_rows(x, where, "x")
    ext = extreme_pairs(xh, block=block, x=x)
    theta = min(ext.closest[0], math.pi - ext.farthest[0])
    return Separation(delta=2.0 * math.sin(0.5 * theta), closest=ext.closest,
                      antipodal=ext.farthest, seconds=time.perf_counter() - start)
