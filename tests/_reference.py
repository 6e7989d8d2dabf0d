"""Extended-precision references (mpmath), independent of ntkcond's implementation.

The NTK is computed by the textbook recursion on un-normalised covariances, layer by layer,
with arccos evaluated at 60 significant digits (neural-tangents' formulation, not ntkcond's
normalised angle recursion), starting from the exact dot products of the float64 inputs: the
float64 inputs are the exact inputs. At 60 digits, acos of a cosine 1 − θ²/2 keeps ~60 − 2·|log10 θ|
digits of θ (44 at θ = 1e-8), far below float64's resolution.
"""
from __future__ import annotations

import mpmath as mp

DPS = 60


def _dot(a, b):
    return mp.fsum(mp.mpf(float(s)) * mp.mpf(float(t)) for s, t in zip(a, b))


def kernels(x, y, depth, alpha, trainable=None):
    """(nngp, ntk, cos_phi) of the output of the bias-free norm-preserving MLP, in mpmath.

    Layer weights W⁽ˡ⁾ for l = 1..L+1 have variance factor c = 2/(1+α²) for hidden layers and
    1 for the read-out; ``trainable`` is a set of 0-based layer indices (None = all).
    """
    with mp.workdps(DPS):
        a = mp.mpf(alpha)
        c = 2 / (1 + a * a)
        d = len(x)
        qx, qy, sxy = _dot(x, x) / d, _dot(y, y) / d, _dot(x, y) / d
        # Θ for the pairs (x,y), (x,x), (y,y), for the cosine of the gradient angle.
        layers = range(depth + 1) if trainable is None else trainable
        w = c if depth >= 1 else mp.mpf(1)
        sig = {"xy": w * sxy, "xx": w * qx, "yy": w * qy}
        ntk = {k: (v if 0 in layers else mp.mpf(0)) for k, v in sig.items()}
        for l in range(1, depth + 1):
            w = c if l < depth else mp.mpf(1)
            new_sig, dots = {}, {}
            for k, (p, q) in {"xy": ("xx", "yy"), "xx": ("xx", "xx"), "yy": ("yy", "yy")}.items():
                norm = mp.sqrt(sig[p] * sig[q])
                rho = sig[k] / norm
                rho = min(max(rho, mp.mpf(-1)), mp.mpf(1))
                t = mp.acos(rho)
                k1 = (mp.sin(t) + (mp.pi - t) * rho) / mp.pi
                new_sig[k] = w * norm * (a * rho + (1 - a) ** 2 / 2 * k1)
                dots[k] = w * (a + (1 - a) ** 2 * (mp.pi - t) / (2 * mp.pi))
            ntk = {k: (new_sig[k] if l in layers else 0) + dots[k] * ntk[k] for k in ntk}
            sig = new_sig
        cos_phi = ntk["xy"] / mp.sqrt(ntk["xx"] * ntk["yy"])
        return sig["xy"], ntk["xy"], cos_phi


def gradient_angle(x, y, depth, alpha, trainable=None):
    """φ in radians, via acos at 60 digits (exact to far below float64 resolution)."""
    with mp.workdps(DPS):
        _, _, cos_phi = kernels(x, y, depth, alpha, trainable)
        return mp.acos(min(cos_phi, mp.mpf(1)))


def input_angle(x, y):
    """θ in radians: atan2(√(‖x‖²‖y‖² − (x·y)²), x·y) at 60 digits from exact dot products;
    the cancellation costs 2·|log10 θ| digits (θ = 1e-17: 26 digits left)."""
    with mp.workdps(DPS):
        xy, xx, yy = _dot(x, y), _dot(x, x), _dot(y, y)
        return mp.atan2(mp.sqrt(max(xx * yy - xy * xy, mp.mpf(0))), xy)
