"""The infinite-width NTK and NNGP of unit-norm inputs as power series in ρ = cos θ.

For unit-norm inputs the normalised kernels of the bias-free, norm-preserving nets of
``ntkcond.infinite.kernels`` are functions of ρ = cos θ alone,

    Θ̃(ρ) = Θ(x, x')·d / (|S|·‖x‖‖x'‖),     Σ̃(ρ) = NNGP(x, x')·d / (‖x‖‖x'‖),          (1)

normalised so that Θ̃(1) = Σ̃(1) = 1 (the kernels' diagonal is |S|‖x‖²/d and ‖x‖²/d; S the
trainable layers). Both are power series with non-negative coefficients (Nguyen, Mondelli &
Montúfar, ICML 2021; Murray, Jin, Bowman & Montúfar, ICLR 2023):

    Θ̃(ρ) = Σ_{p≥0} a_p ρ^p,   a_p ≥ 0,   Σ_p a_p = Θ̃(1) = 1,                          (2)

so the truncation after order P is bounded by its tail for every |ρ| ≤ 1:

    |Θ̃(ρ) − Σ_{p≤P} a_p ρ^p| ≤ Σ_{p>P} a_p = 1 − Σ_{p≤P} a_p.                           (3)

**Composition.** One layer of the slope-α family σ_α (``ntkcond.activations``) maps the
correlation ρ_k of the pre-activations to ρ_{k+1} = F(ρ_k) and has the derivative factor Ġ(ρ_k):

    F(ρ) = w_lin ρ + w_relu κ₁(ρ),   Ġ(ρ) = w_lin + w_relu κ₀(ρ),                         (4)
    w_lin = 2α/(1 + α²),  w_relu = (1 − α)²/(1 + α²),
    κ₀(ρ) = 1/2 + arcsin(ρ)/π,  κ₁(ρ) = (√(1 − ρ²) + ρ(π/2 + arcsin ρ))/π

(the arc-cosine kernels of degree 0 and 1, Cho & Saul 2009; ``angles`` eqs. (1)–(3) with
ρ = cos θ). With ρ_0 = ρ the NNGP is Σ̃ = ρ_L and the NTK Θ̃ = (1/|S|) Σ_{i∈S} ρ_i Π_{j≥i} Ġ(ρ_j)
(``angles`` eq. (4)), built as T_{k+1} = s·ρ_{k+1} + Ġ(ρ_k)·T_k.

Every series here is a formal power series in ρ truncated at order P, which is exact for the
coefficients up to P (no term of order > P ever feeds one of order ≤ P). The compositions
κ₀∘g and κ₁∘g of a series g = Σ g_p ρ^p (g_p ≥ 0, g(0) = g_0 ∈ [0, 1)) are computed without
one subtraction between series: with w = g² and u = (1 − w)^{-1/2},

    (1 − w) u' = ½ w' u   ⇒   u_m = Σ_{j=1}^{m} (m − j/2) w_j u_{m−j} / (m (1 − w_0)),      (5)
    (κ₀∘g)' = g' u / π,   (κ₁∘g)' = (κ₀∘g)·g'    (κ₁' = κ₀, κ₀'(ρ) = 1/(π√(1 − ρ²))),

so every coefficient is a sum of products of non-negative numbers (the constant terms
κ₀(g_0), κ₁(g_0) and 1 − w_0 = (1 − g_0)(1 + g_0) are scalars). One layer, eq. (4), is then
composed as

    I = κ₀∘g − κ₀(g_0) = ∫ g'u/π,   J = ∫ I·g'   (series without constant term),
    Ġ∘g = Ġ(g_0) + w_relu·I,   F∘g = F(g_0) + Ġ(g_0)·(g − g_0) + w_relu·J,                (5b)

(κ₁∘g = κ₁(g_0) + κ₀(g_0)(g − g_0) + J), whose scalars Ġ(g_0) = w_lin + w_relu κ₀(g_0)
≥ (1 + α)²/(2(1 + α²)) ≥ 0 and F(g_0) carry the only subtraction of the family (w_lin < 0 for
α < 0), so no series is ever subtracted from another for any α ∈ [−1, 1]. Cost O(L·P²).

**Certified enclosure.** Every series is carried as a pair of series ǧ ≤ g ≤ ĝ (coefficient
by coefficient) in ``numpy.longdouble`` (64-bit significand on x86-64, unit roundoff
u = 2⁻⁶⁴; where longdouble is double, u = 2⁻⁵³ and the enclosure widens to match), and every
step keeps the pair around the exact series of the real-number recursion: each coefficient of
(5), of the products and of the integrals is a function of the coefficients and of
1/(1 − w_0) that is non-decreasing in each of them, so the lower series is computed from the
lower inputs (and the upper bound of 1 − w_0), the upper from the upper ones, and each result
computed with k roundings on non-negative terms (relative error ≤ γ_k = ku/(1 − ku) whatever
the order of summation) is moved outward by (k + 1)u and one unit in the last place. Scalars
(1 − g_0², √, arcsin, π, w_lin, w_relu) are enclosed the same way from their monotonicity;
``arcsin`` of longdouble is trusted to 16 units in the last place (glibc documents ≤ 2 for
x86-64 ``asinl``). The scalars of (5b) with w_lin < 0 are enclosed with their absolute
rounding error, from the ends of g_0's enclosure (both are non-decreasing in g_0 where
Ġ ≥ 0, so the enclosures keep the correlation of their terms; an interval product of w_lin
and g_0 would widen by a factor 3 per layer for |z|), and every exact coefficient is ≥ 0, so
lower series are clipped at 0. The recursion (5) widens its result once, by γ_{P(P+3)}: each
u_m is ≤ P + 3 roundings on the earlier u's, which enter linearly with non-negative weights.
Rounding errors therefore cannot accumulate unseen: the enclosure
widens with the depth exactly as the arithmetic requires (for deep ReLU nets most at ρ_k(0),
which approaches 1 like 1 − O(1/k²) while its rounding grows like k·u, so 1 − w_0 loses
relative accuracy like k³u). Where the enclosure of ρ_k(0) reaches 1 the compositions are no
longer defined on it and the depth is refused with a ``ValueError`` naming the layer; a depth
and order whose cost exceeds ``MAX_COST`` is refused up front (``series_cost``).

The returned ``coefficients`` are the lower series rounded down to float64 and
``upper_coefficients`` the upper series rounded up, so for every p ≤ P

    ǎ_p ≤ a_p ≤ â_p   and (3) holds with ``tail`` = 1 − Σ ǎ_p (rounded up),                (6)

because (3) needs only 0 ≤ ǎ_p ≤ a_p: |Θ̃(ρ) − Σ ǎ_p ρ^p| ≤ Σ_{p≤P}(a_p − ǎ_p) + Σ_{p>P} a_p
= 1 − Σ ǎ_p. ``tail_lower`` = 1 − Σ â_p (rounded down, at least 0) is a lower bound on the
true tail Σ_{p>P} a_p, and ``spread`` = Σ_p (â_p − ǎ_p) (rounded up) bounds
|Σ_{p≤P} (a_p − ǎ_p) ρ^p| for |ρ| ≤ 1. ``tests/test_power_series.py`` checks the bounds
against an independent 50-digit mpmath Cauchy integral of the closed-form kernel, the sums
against ``infinite_ntk``, and the enclosure at depths 10³–10⁴ against a 40-digit mpmath run
of the same recursion (Θ̃(0) → 1/4 for deep ReLU nets).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .._core.checks import as_depth, resolve_trainable
from ..activations import parse_angle_activation

__all__ = ["PowerSeries", "ntk_power_series", "nngp_power_series", "MAX_ORDER", "MAX_COST",
           "series_cost", "max_certified_order", "check_series_cost"]

#: Largest ``order`` accepted.
MAX_ORDER = 1 << 15

#: Largest ``series_cost`` accepted: about 15 s on one core (measured ~30 ns per unit on a
#: loaded 2-core machine: 40 ms per layer at order 1024, 0.19 ms at order 10, 0.15 ms at 0).
MAX_COST = 5 * 10**8

_LD = np.longdouble
_ZERO = _LD(0)
_INF = _LD(np.inf)
_U = _LD(np.finfo(np.longdouble).epsneg)  # unit roundoff of longdouble
_PI_NEAR = _LD("3.14159265358979323846264338327950288419716939937510")
_PI = (np.nextafter(_PI_NEAR, _ZERO), np.nextafter(_PI_NEAR, _INF))  # π enclosed
_ASIN_ULPS = 16  # trusted accuracy of arcsin in longdouble (module docstring)


@dataclasses.dataclass(frozen=True, repr=False)
class PowerSeries:
    """Σ_p a_p ρ^p of a normalised kernel of unit-norm inputs (module eqs. (1)–(3), (6)).

    Attributes:
      coefficients: (order + 1,) float64 lower bounds ǎ_p ≤ a_p, all ≥ 0 (read-only: results
        are cached per (depth, activation, order, trainable)).
      upper_coefficients: (order + 1,) float64 upper bounds â_p ≥ a_p (read-only).
      tail: float upper bound on 1 − Σ_{p≤P} ǎ_p ≥ |Θ̃(ρ) − Σ ǎ_p ρ^p| for every |ρ| ≤ 1.
      tail_lower: float lower bound on the true tail Σ_{p>P} a_p (≥ 0).
      spread: Σ_p (â_p − ǎ_p), rounded up: the enclosure's total width.
      relative_error: r = max_p (â_p − ǎ_p)/â_p over the p with ǎ_p > 0, rounded up: there
        ǎ_p ≥ â_p(1 − r); a coefficient with ǎ_p = 0 (e.g. the odd ones of |z|, exactly 0) is
        known to lie in [0, â_p].
      kernel: "ntk" or "nngp"; depth, activation (canonical name), trainable (0-based layers).
    """

    coefficients: np.ndarray
    upper_coefficients: np.ndarray
    tail: float
    tail_lower: float
    spread: float
    relative_error: float
    kernel: str
    depth: int
    activation: str
    trainable: tuple

    @property
    def order(self) -> int:
        return len(self.coefficients) - 1

    def __call__(self, rho) -> np.ndarray:
        """Σ_{p≤P} ǎ_p ρ^p (Horner, float64) for an array of ρ in [−1, 1]."""
        rho = np.asarray(rho, dtype=np.float64)
        if not np.all(np.isfinite(rho)) or np.any(np.abs(rho) > 1):
            raise ValueError("PowerSeries: expected rho in [-1, 1], got values outside it")
        out = np.zeros_like(rho)
        for c in self.coefficients[::-1]:
            out = out * rho + c
        return out

    def __repr__(self) -> str:
        return (f"PowerSeries({self.kernel}, depth={self.depth}, {self.activation}, "
                f"order={self.order}, tail={self.tail:.3g}, r={self.relative_error:.1e})")


# ------------------------------------------------------------------ outward rounding, longdouble
def _down(v, k):
    """A lower bound of the exact value of v ≥ 0 computed with ≤ k roundings (relative error
    ≤ γ_k ≤ (k + 1)u): v(1 − (k + 1)u), one ulp further down, and at least 0."""
    v = np.nextafter(v * (1 - (k + 1) * _U), -_INF)
    return np.maximum(v, _ZERO)


def _up(v, k):
    """An upper bound of the exact value of v ≥ 0 computed with ≤ k roundings."""
    return np.nextafter(v * (1 + (k + 1) * _U), _INF)


def _signed(v, k):
    """(lower, upper) of a scalar of either sign computed with ≤ k roundings."""
    spread = abs(v) * ((k + 1) * _U)
    return np.nextafter(v - spread, -_INF), np.nextafter(v + spread, _INF)


def _conv(a, b, N):
    """Σ_{i+j=p} a_i b_j for p < N: every output a sum of ≤ N products of non-negative terms."""
    return np.convolve(a, b)[:N]


def _mul(a, b):
    """The truncated product of two enclosed series (pairs (lo, hi), every entry ≥ 0)."""
    N = len(a[0])
    return _down(_conv(a[0], b[0], N), N), _up(_conv(a[1], b[1], N), N)


def _integrate(c0, series):
    """c0 + ∫₀^ρ series for enclosed c0 and series: coefficient n is series_{n−1}/n."""
    N = len(series[0])
    n = np.arange(1, N, dtype=_LD)
    lo, hi = np.empty(N, dtype=_LD), np.empty(N, dtype=_LD)
    lo[0], hi[0] = c0
    lo[1:], hi[1:] = _down(series[0][:-1] / n, 1), _up(series[1][:-1] / n, 1)
    return lo, hi


def _derivative(g):
    """g' truncated to the same length (the top coefficient is lost, set to 0)."""
    N = len(g[0])
    n = np.arange(1, N, dtype=_LD)
    lo, hi = np.zeros(N, dtype=_LD), np.zeros(N, dtype=_LD)
    lo[:-1], hi[:-1] = _down(g[0][1:] * n, 1), _up(g[1][1:] * n, 1)
    return lo, hi


def _asin(x, side):
    """arcsin(x) for 0 ≤ x < 1 moved outward (``side`` −1 down, +1 up) by its trusted error."""
    v = np.arcsin(x)
    return _down(v, _ASIN_ULPS) if side < 0 else _up(v, _ASIN_ULPS)


def _signed_sum(a, b, side):
    """a + b for scalars of either sign, each the product of one rounding, moved outward
    (``side`` −1 down, +1 up) by the absolute rounding 2u(|a| + |b| + |a + b|)."""
    s = a + b
    err = 2 * _U * (abs(a) + abs(b) + abs(s))
    return np.nextafter(s - err, -_INF) if side < 0 else np.nextafter(s + err, _INF)


def _layer_constants(g0, w_lin, w_relu):
    """Enclosures of the scalars of one layer at g_0 = ρ_k(0) ∈ [lo, hi] ⊂ [0, 1):

      1 − g_0² (decreasing in g_0), κ₀(g_0), κ₁(g_0) (increasing), Ġ(g_0) = w_lin + w_relu κ₀(g_0)
      (increasing) and F(g_0) = w_lin g_0 + w_relu κ₁(g_0) (increasing where Ġ ≥ 0), eq. (4).

    Each endpoint comes from one end of g_0 and of the enclosed weights, so the enclosures keep
    the correlation of the terms (an interval product of w_lin < 0 and g_0 would not); the
    terms of 1 − g_0², κ₀, κ₁ are ≥ 0 (relative rounding), the sums with w_lin < 0 carry their
    absolute rounding."""
    lo, hi = g0
    omw = (_down((1 - hi) * (1 + hi), 3), _up((1 - lo) * (1 + lo), 3))
    k0 = (_down(0.5 + _asin(lo, -1) / _PI[1], 3), _up(0.5 + _asin(hi, 1) / _PI[0], 3))
    # κ₁(g) = (√(1 − g²) + g(π/2 + arcsin g))/π: each end at its end of g_0 (≤ 8 roundings)
    sq_lo = _down(np.sqrt(_down((1 - lo) * (1 + lo), 3)), 1)
    sq_hi = _up(np.sqrt(_up((1 - hi) * (1 + hi), 3)), 1)
    k1 = (_down((sq_lo + lo * (_PI[0] / 2 + _asin(lo, -1))) / _PI[1], 4),
          _up((sq_hi + hi * (_PI[1] / 2 + _asin(hi, 1))) / _PI[0], 4))
    gdot = (max(_signed_sum(w_lin[0], w_relu[0] * k0[0], -1), _ZERO),
            _signed_sum(w_lin[1], w_relu[1] * k0[1], 1))
    if gdot[0] >= 0 and lo >= 0:  # F increasing on [lo, hi] for every enclosed weight
        F = (_signed_sum(w_lin[0] * lo, w_relu[0] * k1[0], -1),
             _signed_sum(w_lin[1] * hi, w_relu[1] * k1[1], 1))
    else:  # the corners of the box (looser, always valid)
        F = (_signed_sum(min(w_lin[0] * lo, w_lin[0] * hi), w_relu[0] * k1[0], -1),
             _signed_sum(max(w_lin[1] * lo, w_lin[1] * hi), w_relu[1] * k1[1], 1))
    return omw, k0, k1, gdot, (max(F[0], _ZERO), F[1])


def _arc_cosine_terms(g, omw):
    """For an enclosed series g (entries ≥ 0, g_0 ⊂ [0, 1)) and 1 − g_0² ∈ omw, enclosures of
    I = κ₀∘g − κ₀(g_0) = ∫ g'u/π and J = ∫ I·g', eq. (5): series without constant term, every
    coefficient a sum of products of non-negative numbers; κ₁∘g = κ₁(g_0) + κ₀(g_0)(g − g_0) + J."""
    N = len(g[0])
    w = _mul(g, g)
    # u of eq. (5), lower and upper at once: row 0 from (w̌, 1 − ŵ_0), row 1 from (ŵ, 1 − w̌_0).
    # Each step is ≤ N + 3 roundings on non-negative terms applied to the earlier (already
    # rounded) u's, which enter linearly with non-negative weights, so by induction the computed
    # u_m is within (1 + γ_{N+3})^m ≤ 1 + γ_{N(N+3)} of the exact recursion's: widened once below.
    W = np.stack(w)
    u = np.zeros((2, N), dtype=_LD)
    u[0, 0] = 1 / np.sqrt(omw[1])
    u[1, 0] = 1 / np.sqrt(omw[0])
    denom = np.array([omw[1], omw[0]], dtype=_LD)
    half_j = np.arange(1, N, dtype=_LD) / 2
    for m in range(1, N):
        u[:, m] = np.einsum("ij,j,ij->i", W[:, 1:m + 1], m - half_j[:m], u[:, m - 1::-1]) / (m * denom)
    k = N * (N + 3) + 2  # the two roundings of u_0 included
    u = (_down(u[0], k), _up(u[1], k))
    dg = _derivative(g)
    gu = _mul(dg, u)
    zero = (_ZERO, _ZERO)
    I = _integrate(zero, (_down(gu[0] / _PI[1], 1), _up(gu[1] / _PI[0], 1)))
    J = _integrate(zero, _mul(I, dg))
    return I, J


def _affine(c, a, b, scale_b):
    """c + a + scale_b·b for an enclosed constant c (added to coefficient 0) and enclosed series
    a, b and scalar scale_b (all ≥ 0): ≤ 3 roundings per coefficient."""
    lo = a[0] + scale_b[0] * b[0]
    hi = a[1] + scale_b[1] * b[1]
    lo[0] += c[0]
    hi[0] += c[1]
    return _down(lo, 3), _up(hi, 3)


def _scaled(s, a):
    """s·a for an enclosed scalar s ≥ 0 and series a ≥ 0."""
    return _down(s[0] * a[0], 1), _up(s[1] * a[1], 1)


def series_cost(depth: int, order: int) -> int:
    """The cost of the enclosure, depth·(order + 17)·(order + 241): per layer the O(P²)
    products and a fixed overhead per coefficient (eq. (5)'s loop) and per layer, in units of
    ~30 ns (``MAX_COST``)."""
    return depth * (order + 17) * (order + 241)


def max_certified_order(depth: int) -> int:
    """The largest order whose series costs at most ``MAX_COST`` at this depth (−1 if none)."""
    if depth == 0 or series_cost(depth, MAX_ORDER) <= MAX_COST:
        return MAX_ORDER
    lo, hi = -1, MAX_ORDER
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if series_cost(depth, mid) <= MAX_COST else (lo, mid)
    return lo


def check_series_cost(depth: int, order: int, where: str) -> None:
    """ValueError when ``series_cost(depth, order)`` exceeds ``MAX_COST``."""
    cost = series_cost(depth, order)
    if cost > MAX_COST:
        fit = MAX_COST // ((order + 17) * (order + 241))
        top = max_certified_order(depth)
        lower = (f"at depth {depth} the largest order is {top}" if top >= 0 else
                 f"no order fits at depth {depth}")
        raise ValueError(
            f"{where}: expected depth·(order + 17)·(order + 241) <= {MAX_COST:.1e} (the certified "
            f"series' cost, ~30 ns per unit: about {cost * 3e-8:.0f} s here), got depth {depth} "
            f"and order {order} ({cost:.2e}); at order {order} the largest depth is {fit}, and "
            f"{lower}")


def _series(depth, activation, order, trainable, where, kernel):
    act = parse_angle_activation(activation, where)
    depth = as_depth(depth, where)
    order = as_depth(order, where, "order", maximum=MAX_ORDER)
    check_series_cost(depth, order, where)
    layers = resolve_trainable(trainable, depth, where) if kernel == "ntk" else (depth,)
    return _cached_series(depth, act, order, tuple(layers), kernel, where)


def _scalar_weights(slope):
    """Enclosures of w_lin = 2α/(1 + α²) and w_relu = (1 − α)²/(1 + α²), eq. (4)."""
    a = _LD(slope)
    if slope == 0.0:  # ReLU: w_lin = 0 and w_relu = 1 exactly
        return (_ZERO, _ZERO), (_LD(1), _LD(1))
    w_lin = _signed(2 * a / (1 + a * a), 3)
    w_relu = _signed((1 - a) ** 2 / (1 + a * a), 5)
    return w_lin, (max(w_relu[0], _ZERO), w_relu[1])


@functools.lru_cache(maxsize=64)
def _cached_series(depth, act, order, layers, kernel, where):
    """The enclosure for canonical arguments (the result is immutable: read-only arrays)."""
    member = set(layers)
    N = order + 1
    g = np.zeros(N, dtype=_LD)
    if N > 1:
        g[1] = 1  # ρ_0 = ρ
    g = (g, g.copy())
    zero = np.zeros(N, dtype=_LD)
    T = (g[0].copy(), g[1].copy()) if 0 in member else (zero, zero.copy())
    if act.is_linear:  # ρ_{k+1} = ρ_k, Ġ = 1: T = |{i ∈ S}|·ρ, exact
        T = (g[0] * len(member), g[1] * len(member))
    else:
        w_lin, w_relu = _scalar_weights(act.slope)
        for k in range(depth):
            if g[1][0] >= 1:
                raise ValueError(
                    f"{where}: cannot certify the series at depth {depth}: from layer {k} on, "
                    f"the rounding enclosure of ρ_{k}(0) = {float(g[0][0]):.17g} reaches 1, where "
                    f"the arc-cosine compositions are singular (order {order}); the largest "
                    f"certified depth at this order is {k}")
            omw, _, _, gdot0, F0 = _layer_constants((g[0][0], g[1][0]), w_lin, w_relu)
            I, J = _arc_cosine_terms(g, omw)
            zero = (np.zeros(N, dtype=_LD), np.zeros(N, dtype=_LD))
            gdot = _affine(gdot0, zero, I, w_relu)  # Ġ∘g = Ġ(g_0) + w_relu·I
            rest = (g[0].copy(), g[1].copy())  # g − g_0
            rest[0][0] = rest[1][0] = 0
            # F∘g = F(g_0) + Ġ(g_0)·(g − g_0) + w_relu·J: no subtraction for any α
            g_new = _affine(F0, _scaled(gdot0, rest), J, w_relu)
            T = _mul(gdot, T)
            if k + 1 in member:
                T = (_down(T[0] + g_new[0], 1), _up(T[1] + g_new[1], 1))
            g = g_new
    if kernel == "ntk":
        count = _LD(len(layers))
        lo, hi = _down(T[0] / count, 1), _up(T[1] / count, 1)
    else:
        lo, hi = g
    return _result(lo, hi, kernel, depth, act, layers)


def _result(lo, hi, kernel, depth, act, layers):
    """Round the longdouble enclosure outward to float64, eq. (6), and the tails."""
    N = len(lo)
    lower = np.maximum(np.nextafter(lo.astype(np.float64), -np.inf), 0.0)
    upper = np.nextafter(hi.astype(np.float64), np.inf)
    total = np.sum(lower.astype(_LD))  # within γ_N of the exact sum; rounded outward below
    tail = max(float(np.nextafter(float(1 - total * (1 - (N + 1) * _U)), np.inf)), 0.0)
    upper_total = np.sum(upper.astype(_LD)) * (1 + (N + 1) * _U)
    tail_lower = max(float(np.nextafter(float(1 - upper_total), -np.inf)), 0.0)
    # each difference and the sum in longdouble: within γ_{N+1} of the exact width
    width = np.sum(upper.astype(_LD) - lower.astype(_LD)) * (1 + (N + 2) * _U)
    spread = float(np.nextafter(float(width), np.inf))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(lower > 0, (upper - lower) / upper, 0.0)
    relative_error = float(np.nextafter(float(np.max(rel)) * (1 + 4 * 2.0**-53), np.inf))
    lower.setflags(write=False)
    upper.setflags(write=False)
    return PowerSeries(coefficients=lower, upper_coefficients=upper, tail=tail,
                       tail_lower=tail_lower, spread=spread, relative_error=relative_error,
                       kernel=kernel, depth=depth, activation=act.name, trainable=tuple(layers))


def ntk_power_series(depth: int, activation="relu", *, order: int, trainable="all") -> PowerSeries:
    """Certified bounds on the coefficients a_0…a_P of the normalised infinite-width NTK
    Θ̃(ρ) = Σ a_p ρ^p, eq. (2).

    Θ̃(ρ) = Θ(x, x')·d/(|S|‖x‖‖x'‖) at cos θ = ρ, normalised to Θ̃(1) = 1 (the diagonal
    of ``ntkcond.infinite.kernels.infinite_ntk`` is |S|‖x‖²/d). Composed through the depth from
    the arc-cosine kernels' series, eqs. (4)–(5), as a rigorous enclosure in longdouble (module
    docstring, eq. (6)): ``coefficients`` ≤ a_p ≤ ``upper_coefficients`` at every depth
    accepted, and ``tail`` bounds the truncation error for every |ρ| ≤ 1, eq. (3). A linear
    net has the single coefficient a_1 = 1.

    Args:
      depth: hidden layers L ≥ 0 (at most ``ntkcond._core.checks.MAX_DEPTH``; see Raises).
      activation: a positively homogeneous activation, any spelling accepted by
        ``ntkcond.activations.parse_angle_activation`` (the leaky family relu, linear, abs,
        leaky:α and its scalings; the series is that of its angle map).
      order: P ≥ 0, at most ``MAX_ORDER``; cost O(L·P²).
      trainable: "all", "first", "last" or 0-based layer indices, as ``infinite_ntk``.

    Returns:
      ``PowerSeries`` with ``kernel="ntk"``.

    Raises:
      ValueError: ``series_cost(depth, order)`` > ``MAX_COST`` (~15 s); a depth where the
        rounding enclosure of ρ_k(0) reaches 1 (module docstring); an activation that is not
        homogeneous; order or trainable out of range.
      TypeError: depth or order not an integer.

    Examples:
      >>> import ntkcond
      >>> s = ntkcond.ntk_power_series(1, order=4)   # one ReLU layer: a₀ … a₄
      >>> s.coefficients.round(6)
      array([0.159155, 0.5     , 0.238732, 0.      , 0.033157])
    """
    return _series(depth, activation, order, trainable, "ntk_power_series", "ntk")


def nngp_power_series(depth: int, activation="relu", *, order: int) -> PowerSeries:
    """Certified bounds on the coefficients of the normalised NNGP Σ̃(ρ) = ρ_L = Σ a_p ρ^p,
    eqs. (1)–(4), (6).

    Σ̃(ρ) = NNGP(x, x')·d/(‖x‖‖x'‖) at cos θ = ρ (``infinite_nngp``), Σ̃(1) = 1. As
    ``ntk_power_series`` otherwise (arguments, errors).
    """
    return _series(depth, activation, order, "last", "nngp_power_series", "nngp")
