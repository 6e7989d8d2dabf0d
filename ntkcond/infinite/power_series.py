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
κ₀∘g and κ₁∘g of a series g = Σ g_p ρ^p (g_p ≥ 0, g(0) < 1) are computed without one
subtraction between series: with w = g² and u = (1 − w)^{-1/2},

    (1 − w) u' = ½ w' u   ⇒   u_m = Σ_{j=1}^{m} (m − j/2) w_j u_{m−j} / (m (1 − w_0)),      (5)
    (κ₀∘g)' = g' u / π,   (κ₁∘g)' = (κ₀∘g)·g'    (κ₁' = κ₀, κ₀'(ρ) = 1/(π√(1 − ρ²))),

so every coefficient is a sum of products of non-negative numbers (the constant terms
κ₀(g_0), κ₁(g_0) and 1 − w_0 = (1 − g_0)(1 + g_0) are scalars). Cost O(L·P²).

**Arithmetic and error bound.** The series are carried in ``numpy.longdouble`` (64-bit
significand on x86-64; unit roundoff u = 2⁻⁶⁴; where longdouble is double, u = 2⁻⁵³ and the
bound below grows to match). Because no step subtracts, relative errors only add along each
chain of operations: the recurrence (5) chains at most P steps of at most P + 4 roundings,
and relative errors of w_j enter u_m at most m times (u_m is a polynomial of degree ≤ m in the
w_j with non-negative coefficients, times (1 − w_0)^{-(m+1/2)}, whose relative error is
amplified by w_0/(1 − w_0)). A first-order bound r = 4·Σ_k (P + 10)²·u·(2 + 2/(1 − g_0,k²))
over the layers k (a factor 4 of safety) covers this, and the returned coefficients are
lowered by it, ǎ_p = â_p(1 − r) rounded down to float64, so that

    ǎ_p ≤ a_p ≤ ǎ_p·(1 + 2r) + 2⁻¹⁰⁷⁴  and (3) holds with ``tail`` = 1 − Σ ǎ_p (rounded up),

because (3) needs only 0 ≤ ǎ_p ≤ a_p: |Θ̃(ρ) − Σ ǎ_p ρ^p| ≤ Σ_{p≤P}(a_p − ǎ_p) + Σ_{p>P} a_p
= 1 − Σ ǎ_p. ``tail_lower`` = 1 − Σ ǎ_p(1 + 2r) (rounded down, at least 0) is a lower bound on
the true tail Σ_{p>P} a_p. ``tests/test_power_series.py`` checks the coefficients against an
independent 50-digit mpmath Cauchy integral of the closed-form kernel and the sums against
``infinite_ntk``. On x86-64 r is 1.5e-13 at P = 400, L = 1 and 2.3e-12 at L = 10 (2.3e-10 at
P = 4096, L = 10).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .._core.checks import as_depth, resolve_trainable
from ..activations import parse_angle_activation

__all__ = ["PowerSeries", "ntk_power_series", "nngp_power_series", "MAX_ORDER"]

#: Largest ``order`` accepted: the cost is O(depth·order²) longdouble operations
#: (~2 s at order 4096, depth 10).
MAX_ORDER = 1 << 15

_LD = np.longdouble
_PI = _LD("3.14159265358979323846264338327950288419716939937510")
_U = float(np.finfo(np.longdouble).epsneg)  # unit roundoff of longdouble
_SAFETY = 4.0


@dataclasses.dataclass(frozen=True, repr=False)
class PowerSeries:
    """Σ_p a_p ρ^p of a normalised kernel of unit-norm inputs (module eqs. (1)–(3)).

    Attributes:
      coefficients: (order + 1,) float64 lower bounds ǎ_p ≤ a_p, all ≥ 0 (read-only: results
        are cached per (depth, activation, order, trainable)).
      tail: float upper bound on 1 − Σ_{p≤P} ǎ_p ≥ |Θ̃(ρ) − Σ ǎ_p ρ^p| for every |ρ| ≤ 1.
      tail_lower: float lower bound on the true tail Σ_{p>P} a_p (≥ 0).
      relative_error: r, with a_p ≤ ǎ_p(1 + 2r) + 2⁻¹⁰⁷⁴.
      kernel: "ntk" or "nngp"; depth, activation (canonical name), trainable (0-based layers).
    """

    coefficients: np.ndarray
    tail: float
    tail_lower: float
    relative_error: float
    kernel: str
    depth: int
    activation: str
    trainable: tuple

    @property
    def order(self) -> int:
        return len(self.coefficients) - 1

    @property
    def upper_coefficients(self) -> np.ndarray:
        """(order + 1,) float64 upper bounds on a_p: ǎ_p(1 + 2r) rounded up, plus 2⁻¹⁰⁷⁴."""
        up = self.coefficients * (1.0 + 2.0 * self.relative_error)
        return np.nextafter(np.nextafter(up, np.inf), np.inf)

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


def _integrate(c0, series):
    """c0 + ∫₀^ρ series: coefficient n of the result is series_{n−1}/n."""
    out = np.empty(len(series), dtype=_LD)
    out[0] = c0
    out[1:] = series[:-1] / np.arange(1, len(series), dtype=_LD)
    return out


def _derivative(series):
    """g' truncated to the same length (the top coefficient is lost, set to 0)."""
    out = np.zeros(len(series), dtype=_LD)
    out[:-1] = series[1:] * np.arange(1, len(series), dtype=_LD)
    return out


def _mul(a, b):
    return np.convolve(a, b)[: len(a)]


def _arc_cosine_compositions(g):
    """(κ₀∘g, κ₁∘g, amplification) for a series g with g_p ≥ 0 and g_0 < 1, eq. (5)."""
    N = len(g)
    g0 = g[0]
    one_minus_w0 = (1 - g0) * (1 + g0)
    w = _mul(g, g)
    u = np.zeros(N, dtype=_LD)
    u[0] = 1 / np.sqrt(one_minus_w0)
    denom = one_minus_w0
    half_j = np.arange(1, N, dtype=_LD) / 2
    for m in range(1, N):
        weights = (m - half_j[:m]) * w[1:m + 1]  # (m − j/2)·w_j, j = 1..m, all ≥ 0
        u[m] = np.dot(weights, u[m - 1::-1]) / (m * denom)
    dg = _derivative(g)
    asin0 = np.arcsin(g0)
    k0 = _integrate(_LD(0.5) + asin0 / _PI, _mul(dg, u) / _PI)
    k1 = _integrate((np.sqrt(one_minus_w0) + g0 * (_PI / 2 + asin0)) / _PI, _mul(k0, dg))
    return k0, k1, float(2 + 2 / one_minus_w0)


def _series(depth, activation, order, trainable, where, kernel):
    act = parse_angle_activation(activation, where)
    depth = as_depth(depth, where)
    order = as_depth(order, where, "order", maximum=MAX_ORDER)
    layers = resolve_trainable(trainable, depth, where) if kernel == "ntk" else (depth,)
    return _cached_series(depth, act, order, tuple(layers), kernel)


@functools.lru_cache(maxsize=64)
def _cached_series(depth, act, order, layers, kernel):
    """The series for canonical arguments (the result is immutable: read-only coefficients)."""
    member = set(layers)
    N = order + 1
    a = _LD(act.slope)
    w_lin, w_relu = 2 * a / (1 + a * a), (1 - a) ** 2 / (1 + a * a)
    g = np.zeros(N, dtype=_LD)
    if N > 1:
        g[1] = 1  # ρ_0 = ρ
    T = g.copy() if 0 in member else np.zeros(N, dtype=_LD)
    rel = 0.0
    for k in range(depth):
        if act.is_linear:  # ρ_{k+1} = ρ_k, Ġ = 1: exact
            gdot = np.zeros(N, dtype=_LD)
            gdot[0] = 1
            g_new = g
        else:
            k0, k1, amp = _arc_cosine_compositions(g)
            gdot = w_relu * k0
            gdot[0] += w_lin
            g_new = w_lin * g + w_relu * k1
            rel += (N + 10) ** 2 * _U * amp
        T = _mul(gdot, T)
        if k + 1 in member:
            T = T + g_new
        g = g_new
    rel *= _SAFETY
    if kernel == "ntk":
        coef = T / _LD(len(layers))
    else:
        coef = g
    lowered = (coef * (1 - _LD(rel))).astype(np.float64)  # round to nearest, then down:
    lowered = np.maximum(np.nextafter(lowered, 0.0), 0.0)  # ≤ the longdouble value
    total = np.sum(lowered.astype(_LD))  # exact to ~N·u_ld; rounded outward below
    tail = float(1 - total * (1 - _LD(N) * _U))
    tail = float(np.nextafter(max(tail, 0.0), np.inf))
    upper_total = total * (1 + _LD(2 * rel)) * (1 + _LD(N) * _U) + _LD(N) * _LD(2.0**-1074)
    tail_lower = max(float(np.nextafter(float(1 - upper_total), -np.inf)), 0.0)
    lowered.setflags(write=False)
    return PowerSeries(coefficients=lowered, tail=tail, tail_lower=tail_lower,
                       relative_error=float(rel), kernel=kernel, depth=depth,
                       activation=act.name, trainable=tuple(layers))


def ntk_power_series(depth: int, activation="relu", *, order: int, trainable="all") -> PowerSeries:
    """Coefficients a_0…a_P of the normalised infinite-width NTK Θ̃(ρ) = Σ a_p ρ^p, eq. (2).

    Θ̃(ρ) = Θ(x, x')·d/(|S|‖x‖‖x'‖) at cos θ = ρ, normalised to Θ̃(1) = 1 (the diagonal
    of ``ntkcond.infinite.kernels.infinite_ntk`` is |S|‖x‖²/d). Composed through the depth from
    the arc-cosine kernels' series, eqs. (4)–(5), in longdouble with a first-order error bound
    (module docstring): the coefficients returned are rigorous lower bounds, non-negative,
    and ``tail`` bounds the truncation error for every |ρ| ≤ 1, eq. (3). A linear net has the
    single coefficient a_1 = 1.

    Args:
      depth: hidden layers L ≥ 0.
      activation: any spelling accepted by ``ntkcond.activations.parse_activation``.
      order: P ≥ 0, at most ``MAX_ORDER``; cost O(L·P²).
      trainable: "all", "first", "last" or 0-based layer indices, as ``infinite_ntk``.

    Returns:
      ``PowerSeries`` with ``kernel="ntk"``.

    Examples:
      >>> import ntkcond
      >>> s = ntkcond.ntk_power_series(1, order=4)   # one ReLU layer: a₀ … a₄
      >>> s.coefficients.round(6)
      array([0.159155, 0.5     , 0.238732, 0.      , 0.033157])
    """
    return _series(depth, activation, order, trainable, "ntk_power_series", "ntk")


def nngp_power_series(depth: int, activation="relu", *, order: int) -> PowerSeries:
    """Coefficients of the normalised NNGP Σ̃(ρ) = ρ_L = Σ a_p ρ^p, eqs. (1)–(4).

    Σ̃(ρ) = NNGP(x, x')·d/(‖x‖‖x'‖) at cos θ = ρ (``infinite_nngp``), Σ̃(1) = 1. As
    ``ntk_power_series`` otherwise.
    """
    return _series(depth, activation, order, "last", "nngp_power_series", "nngp")
