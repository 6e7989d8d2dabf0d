"""An independent route to the infinite-width kernels for the claim checks: the Gaussian
expectations of each layer by numerical quadrature, never through the arc-cosine closed forms
of ``ntkcond.infinite`` (so a planted error in those cannot hide in both sides of a check).

For unit-variance pre-activations u, v with correlation ρ = cos θ, write u = r cos t,
v = r cos(t − θ) (polar coordinates of a standard Gaussian in the plane). The slope-α
activation σ is positively homogeneous of degree 1 and σ' of degree 0, so the radial integrals
are ∫₀^∞ r³e^{−r²/2} dr = 2 and ∫₀^∞ r e^{−r²/2} dr = 1, and

    E[σ(u)σ(v)]   = (1/π)  ∫₀^{2π} σ(cos t) σ(cos(t − θ)) dt,
    E[σ'(u)σ'(v)] = (1/2π) ∫₀^{2π} σ'(cos t) σ'(cos(t − θ)) dt,

1-D integrals of piecewise-smooth functions whose kinks (cos t = 0, cos(t − θ) = 0) are passed
to ``scipy.integrate.quad`` as break points: ~1e-15 absolute. With c = 2/(1 + α²) the
normalised maps are cos g(θ) = c·E[σ(u)σ(v)] and ġ(θ) = c·E[σ'(u)σ'(v)], and the NTK of a
pair of unit inputs follows from the layer recursion T_{k+1} = s·cos θ_{k+1} + ġ(θ_k)·T_k
(Liu & Hui, arXiv 2305.08813; Jacot et al. 2018).
"""
from __future__ import annotations

import functools
import math

import numpy as np

_PI = math.pi

#: Closed forms against this route (kernels, angles, layer maps): measured ≤ 2e-15 relative at
#: L ≤ 10; a 1% error in any of them is 1e8 times this.
QUADRATURE_TOL = 1e-10


def _sigma(z, slope):
    return z if z > 0 else slope * z


def _dsigma(z, slope):
    return 1.0 if z > 0 else slope


def _breaks(theta):
    pts = {0.5 * _PI, 1.5 * _PI, (theta + 0.5 * _PI) % (2 * _PI), (theta + 1.5 * _PI) % (2 * _PI)}
    return sorted(p for p in pts if 0.0 < p < 2 * _PI)


def _integral(f, theta):
    import warnings

    from scipy.integrate import IntegrationWarning, quad

    edges = [0.0] + _breaks(theta) + [2 * _PI]
    with warnings.catch_warnings():  # pieces smooth to rounding: quad may call 1e-15 "roundoff"
        warnings.simplefilter("ignore", IntegrationWarning)
        return _sum_pieces(quad, f, edges)


def _sum_pieces(quad, f, edges):
    return math.fsum(quad(f, a, b, epsabs=1e-15, epsrel=1e-13, limit=200)[0]
                     for a, b in zip(edges[:-1], edges[1:]) if b > a)


def layer_cos(theta: float, slope: float = 0.0) -> float:
    """cos g(θ) = c·E[σ(u)σ(v)] by quadrature (θ in radians)."""
    c = 2.0 / (1.0 + slope * slope)
    val = _integral(lambda t: _sigma(math.cos(t), slope) * _sigma(math.cos(t - theta), slope), theta)
    return c * val / _PI


def layer_derivative(theta: float, slope: float = 0.0) -> float:
    """ġ(θ) = c·E[σ'(u)σ'(v)] by quadrature (θ in radians)."""
    c = 2.0 / (1.0 + slope * slope)
    val = _integral(lambda t: _dsigma(math.cos(t), slope) * _dsigma(math.cos(t - theta), slope), theta)
    return c * val / (2 * _PI)


def pair_ntk(theta: float, depth: int, slope: float = 0.0, trainable=None) -> float:
    """Normalised NTK Θ̃(θ) = (1/|S|) Σ_{i∈S} cos θ_i Π_{j≥i} ġ(θ_j) of two unit inputs at angle
    θ, every layer's maps by quadrature; S = all layers (None) or 0-based indices."""
    layers = set(range(depth + 1)) if trainable is None else set(trainable)
    angle = float(theta)
    cos = math.cos(angle)
    T = cos if 0 in layers else 0.0
    for k in range(depth):
        gdot = layer_derivative(angle, slope)
        cos = min(1.0, max(-1.0, layer_cos(angle, slope)))
        angle = math.acos(cos)  # angles here are well inside (0, π): acos is accurate enough
        T = gdot * T + (cos if k + 1 in layers else 0.0)
    return T / len(layers)


def pair_gradient_angle(theta: float, depth: int, slope: float = 0.0) -> float:
    """φ(θ, L) = arccos Θ̃(θ) (all layers) by quadrature, radians."""
    return math.acos(min(1.0, max(-1.0, pair_ntk(theta, depth, slope))))


def kernel_rel_diff(infinite_ntk, depth, thetas=(0.3, 1.2, 2.4), slope=0.0, trainable=None) -> float:
    """max relative difference of ``infinite_ntk`` (normalised) from ``pair_ntk`` at the angles."""
    worst = 0.0
    for theta in thetas:
        x = np.array([[1.0, 0.0], [math.cos(theta), math.sin(theta)]])
        kw = {} if trainable is None else {"trainable": trainable}
        act = "relu" if slope == 0.0 else ("leaky_relu", slope)
        K = np.asarray(infinite_ntk(x, depth=depth, activation=act, **kw))
        value = K[0, 1] / math.sqrt(K[0, 0] * K[1, 1])
        ref = pair_ntk(theta, depth, slope, trainable)
        worst = max(worst, abs(value - ref) / abs(ref))
    return worst


# ------------------------------------------------------------------------------------------
# Nets with biases and smooth activations: composite Gauss–Legendre in the Cholesky frame
# ------------------------------------------------------------------------------------------
#
# The activations are written out here (scipy's erf and normal CDF, numpy's tanh), never taken
# from ntkcond.activations, so an error in their dual kernels cannot hide on both sides. For a
# centred Gaussian pair with Var u = q₁, Var v = q₂, Cov(u, v) = c, write u = √q₁ z₁ and
# v = (c/√q₁) z₁ + √(q₂ − c²/q₁) z₂ with z₁, z₂ independent standard normals; E[f(u)g(v)] is
# then a sum over the product of the rule ``normal_rule`` with itself (terms whose weight is
# below 1e-26 dropped): Gauss–Legendre with 20 nodes on each unit panel of [−10, 10], times the
# normal density (nodes whose weight is below 1e-22 dropped). erf, GELU and tanh are analytic
# in a strip about the real axis (tanh's poles at Im z = π/(2√q)), so each panel converges
# geometrically: against 30-digit mpmath the 1-D expectations E[σ(√q z)²] and E[σ′(√q z)²]
# are within 4.3e-15 relative at q = 0.1, 1, 4, 11 and 1.6e-13 at q = 16 (measured; 2.5e-12
# for tanh′ at q = 20, as the poles close in; ``tests/test_liu_hui.py`` holds q ≤ 16 to
# 1e-12). The claims keep every variance entering a smooth activation at most
# ``RULE_MAX_VARIANCE`` and report the largest they met.

#: The largest variance at which the rule is held to 1e-12 (``tests/test_liu_hui.py``).
RULE_MAX_VARIANCE = 16.0


@functools.lru_cache(maxsize=1)
def normal_rule() -> tuple:
    """(nodes, weights) of ∫ f(z) φ(z) dz, φ the standard normal density (module comment)."""
    g, w = np.polynomial.legendre.leggauss(20)
    edges = np.linspace(-10.0, 10.0, 21)
    lo, hi = edges[:-1, None], edges[1:, None]
    z = (0.5 * (hi - lo) * g + 0.5 * (hi + lo)).ravel()
    weights = (0.5 * (hi - lo) * w).ravel() * np.exp(-0.5 * z * z) / math.sqrt(2 * _PI)
    keep = weights > 1e-22
    return z[keep], weights[keep]


def _gelu(z):
    from scipy.special import ndtr

    return z * ndtr(z)


def _gelu_prime(z):
    from scipy.special import ndtr

    return ndtr(z) + z * np.exp(-0.5 * z * z) / math.sqrt(2 * _PI)


def _erf(z):
    from scipy.special import erf

    return erf(z)


def _erf_prime(z):
    return 2.0 / math.sqrt(_PI) * np.exp(-z * z)


def _tanh_prime(z):
    return 1.0 - np.tanh(z) ** 2


#: σ and σ' of the smooth activations the claims check, written out independently.
SMOOTH = {"erf": (_erf, _erf_prime), "gelu": (_gelu, _gelu_prime), "tanh": (np.tanh, _tanh_prime)}


def pair_expectation(f, g, q1: float, q2: float, c: float) -> float:
    """E[f(u)g(v)] for the centred Gaussian pair (q₁, q₂, c) above, on ``normal_rule``²."""
    z1, z2, w = _product_rule()
    a = math.sqrt(q1)
    b = c / a
    s = math.sqrt(max(q2 - b * b, 0.0))
    return float(np.dot(w, f(a * z1) * g(b * z1 + s * z2)))


@functools.lru_cache(maxsize=1)
def _product_rule() -> tuple:
    """(z₁, z₂, w) of ``normal_rule`` × ``normal_rule``, terms of weight ≤ 1e-26 dropped."""
    z, w = normal_rule()
    ww = np.outer(w, w)
    keep = ww > 1e-26
    z1, z2 = np.broadcast_to(z[:, None], ww.shape), np.broadcast_to(z[None, :], ww.shape)
    return z1[keep].copy(), z2[keep].copy(), ww[keep].copy()


def diagonal_expectation(f, q: float) -> float:
    """E[f(u)²] for u ~ N(0, q), on ``normal_rule``."""
    z, w = normal_rule()
    return float(np.sum(w * f(math.sqrt(q) * z) ** 2))


def smooth_duals(name: str, q1: float, q2: float, c: float) -> tuple:
    """(M, Ṁ, P₁, Ṗ₁, P₂, Ṗ₂) of the smooth activation ``name`` (a key of ``SMOOTH``):
    M = E[σ(u)σ(v)], Ṁ = E[σ'(u)σ'(v)], Pᵢ = E[σ(uᵢ)²], Ṗᵢ = E[σ'(uᵢ)²]."""
    f, df = SMOOTH[name]
    return (pair_expectation(f, f, q1, q2, c), pair_expectation(df, df, q1, q2, c),
            diagonal_expectation(f, q1), diagonal_expectation(df, q1),
            diagonal_expectation(f, q2), diagonal_expectation(df, q2))


def leaky_duals(slope: float, q1: float, q2: float, c: float) -> tuple:
    """The same six expectations for σ = max(z, αz): degree-1 homogeneity reduces them to the
    unit-variance polar integrals above (``layer_cos``, ``layer_derivative``, which carry the
    factor 2/(1 + α²)): M = √(q₁q₂)·cos g(θ)/c_α, Ṁ = ġ(θ)/c_α, Pᵢ = qᵢ/c_α, Ṗᵢ = 1/c_α with
    cos θ = c/√(q₁q₂) and c_α = 2/(1 + α²)."""
    scale = 2.0 / (1.0 + slope * slope)
    r = math.sqrt(q1 * q2)
    theta = math.acos(min(1.0, max(-1.0, c / r)))
    return (r * layer_cos(theta, slope) / scale, layer_derivative(theta, slope) / scale,
            q1 / scale, 1.0 / scale, q2 / scale, 1.0 / scale)


def activation_duals(activation: str):
    """The function (q₁, q₂, c) → six expectations of ``smooth_duals`` or ``leaky_duals`` for
    "relu", "leaky:α" or a key of ``SMOOTH``."""
    if activation in SMOOTH:
        return lambda q1, q2, c: smooth_duals(activation, q1, q2, c)
    slope = 0.0 if activation == "relu" else float(activation.split(":", 1)[1])
    return lambda q1, q2, c: leaky_duals(slope, q1, q2, c)


def pair_ntk_general(x1, x2, depths, activation: str, w_std: float, b_std: float) -> tuple:
    """({L: (Θ(x₁, x₁), Θ(x₂, x₂), Θ(x₁, x₂))}, the largest variance entering σ) of the
    fully-connected net with every layer's
    weight std ``w_std`` and bias std ``b_std`` (NTK parameterisation, every layer trained,
    ``ntkcond.network.mlp`` eq. (1)) at each depth in ``depths``, from the layer recursion

        q′ = s_w²·P + s_b²,  c′ = s_w²·M + s_b²,  Θ′ = c′ + s_w²·Ṁ·Θ  (and Θᵢᵢ′ = qᵢ′ + s_w²Ṗᵢ·Θᵢᵢ)

    starting from q = s_w²‖x‖²/d + s_b², c = s_w²x·x′/d + s_b², Θ = c (Jacot et al. 2018;
    Lee et al. 2019), every expectation by ``activation_duals``."""
    x1, x2 = np.asarray(x1, np.float64), np.asarray(x2, np.float64)
    d = x1.size
    sw2, sb2 = w_std * w_std, b_std * b_std
    duals = activation_duals(activation)
    q1 = sw2 * float(x1 @ x1) / d + sb2
    q2 = sw2 * float(x2 @ x2) / d + sb2
    c = sw2 * float(x1 @ x2) / d + sb2
    t1, t2, t12 = q1, q2, c
    out = {0: (t1, t2, t12)} if 0 in depths else {}
    top = 0.0
    for L in range(1, max(depths) + 1):
        top = max(top, q1, q2)
        M, Md, P1, Pd1, P2, Pd2 = duals(q1, q2, c)
        q1, q2, c = sw2 * P1 + sb2, sw2 * P2 + sb2, sw2 * M + sb2
        t1, t2, t12 = q1 + sw2 * Pd1 * t1, q2 + sw2 * Pd2 * t2, c + sw2 * Md * t12
        if L in depths:
            out[L] = (t1, t2, t12)
    return out, top
