"""Extended-precision references (mpmath) for MLPs with w_std, b_std, residual blocks and any
activation, independent of ntkcond's implementation.

The textbook recursion on un-normalised covariances (Jacot et al. 2018; Lee et al. 2019),
layer by layer, for a pair of rows: each layer's Gaussian expectations at ``DPS`` digits, from
the exact dot products of the float64 inputs. Nothing here carries gaps or angles: cosines
come straight from the kernels, which at 30 digits still resolve 1 − cos φ ≈ 1e-12 to ~18
digits. Expectations:

* leaky family a·z + b·|z| and ReLU: the arc-cosine closed form (Cho & Saul 2009) with acos;
* erf: Williams' arcsin form (1998) and its derivative kernel (4/π)/√det(I + 2Σ);
* sin: e^{−(q₁+q₂)/2} sinh c, and cosh c for the derivative cos;
* GELU: the trapezoidal rule over z₁ of σ(u) times the closed-form Gaussian average over z₂
  (E[YΦ(Y)], E[Φ(Y)] and E[Yφ(Y)] for Y ~ N(m, s²));
* anything else (tanh, softplus, SiLU): the 2-D trapezoidal rule at ``DPS`` digits (in
  python-flint's arb where installed: mpmath is ~20x slower) with a step fine enough for
  ``DPS`` digits (checked against mpmath's own quadrature in the tests); 1-D on the diagonal.
"""
from __future__ import annotations

import mpmath as mp

DPS = 30


def _dot(a, b):
    return mp.fsum(mp.mpf(float(s)) * mp.mpf(float(t)) for s, t in zip(a, b))


def _phi(t):
    return mp.exp(-t * t / 2) / mp.sqrt(2 * mp.pi)


def _Phi(t):
    return mp.ncdf(t)


SMOOTH = {
    "tanh": (mp.tanh, lambda t: 1 / mp.cosh(t) ** 2),
    "softplus": (lambda t: mp.log1p(mp.exp(t)), lambda t: 1 / (1 + mp.exp(-t))),
    "silu": (lambda t: t / (1 + mp.exp(-t)),
             lambda t: 1 / (1 + mp.exp(-t)) + t * mp.exp(-t) / (1 + mp.exp(-t)) ** 2),
    "gelu": (lambda t: t * _Phi(t), lambda t: _Phi(t) + t * _phi(t)),
    "erf": (mp.erf, lambda t: 2 / mp.sqrt(mp.pi) * mp.exp(-t * t)),
    "sin": (mp.sin, mp.cos),
    "mish": (lambda t: t * mp.tanh(mp.log1p(mp.exp(t))),
             lambda t: (mp.tanh(mp.log1p(mp.exp(t)))
                        + t * (1 - mp.tanh(mp.log1p(mp.exp(t))) ** 2) / (1 + mp.exp(-t)))),
}


def _slope(name):
    if name == "relu":
        return mp.mpf(0)
    if name == "abs":
        return mp.mpf(-1)
    if name == "linear":
        return mp.mpf(1)
    if name.startswith("leaky:"):
        return mp.mpf(name.split(":")[1])
    return None


def _trapezoid_nodes(qm):
    """Trapezoid nodes and weights for N(0, 1) on [−cut, cut]; the error ~e^{-2πτ/h} =
    e^{-π²/(h√q)} for tanh's poles at ±iπ/(2√q) is below 10^{-DPS-3} (entire integrands
    converge faster)."""
    h = mp.pi**2 / (mp.log(10) * (DPS + 3)) / mp.sqrt(qm)
    cut = mp.sqrt(2 * DPS * mp.log(10)) + 2
    n = int(cut / h) + 1
    zs = [k * h for k in range(-n, n + 1)]
    return zs, [h * _phi(z) for z in zs]


def _arb_fns(name):
    from flint import arb

    one = arb(1)
    if name == "tanh":
        return (lambda t: t.tanh(), lambda t: one / t.cosh() ** 2)
    if name == "softplus":
        return (lambda t: (one + t.exp()).log(), lambda t: one / (one + (-t).exp()))
    if name == "silu":
        sig = (lambda t: one / (one + (-t).exp()))
        return (lambda t: t * sig(t), lambda t: sig(t) + t * sig(t) * (one - sig(t)))
    if name == "mish":
        th = (lambda t: (one + t.exp()).log().tanh())
        sig = (lambda t: one / (one + (-t).exp()))
        return (lambda t: t * th(t), lambda t: th(t) + t * (one - th(t) ** 2) * sig(t))
    raise KeyError(name)


def trapezoid2(name, which, q1, q2, c):
    """E[f(u) f(v)] (``which`` 0: σ, 1: σ') for (u, v) ~ N(0, [[q1, c], [c, q2]]) by the
    trapezoidal rule in z at ``DPS`` digits (python-flint's arb, else mpmath: slow)."""
    a = mp.sqrt(q1)
    b1 = c / a
    b2 = mp.sqrt(max(q2 - c * c / q1, mp.mpf(0)))
    zs, ws = _trapezoid_nodes(max(q1, q2, mp.mpf(1)))
    try:
        from flint import arb, ctx
    except ImportError:  # pragma: no cover - mpmath fallback
        f = SMOOTH[name][which]
        total = mp.mpf(0)
        for z1, w1 in zip(zs, ws):
            total += w1 * f(a * z1) * mp.fsum(w2 * f(b1 * z1 + b2 * z2) for z2, w2 in zip(zs, ws))
        return total
    old = ctx.prec
    ctx.prec = int(DPS * 3.33) + 16
    try:
        conv = (lambda v: arb(mp.nstr(v, DPS + 10)))
        f = _arb_fns(name)[which]
        A, B1, B2 = conv(a), conv(b1), conv(b2)
        Z, W = [conv(z) for z in zs], [conv(w) for w in ws]
        B2Z = [B2 * z for z in Z]
        total = arb(0)
        for z1, w1 in zip(Z, W):
            m = B1 * z1
            inner = arb(0)
            for bz, w2 in zip(B2Z, W):
                inner += w2 * f(m + bz)
            total += w1 * f(A * z1) * inner
        return mp.mpf(total.mid().str(DPS + 5, radius=False))
    finally:
        ctx.prec = old


def diagonal1(name, q):
    """(E[σ(u)²], E[σ'(u)²]) for u ~ N(0, q) by the 1-D trapezoidal rule (mpmath)."""
    f, fd = SMOOTH[name]
    zs, ws = _trapezoid_nodes(max(q, mp.mpf(1)))
    a = mp.sqrt(q)
    return (mp.fsum(w * f(a * z) ** 2 for z, w in zip(zs, ws)),
            mp.fsum(w * fd(a * z) ** 2 for z, w in zip(zs, ws)))


def _gelu_inner(m, s):
    """E[YΦ(Y)], E[Φ(Y) + Yφ(Y)] for Y ~ N(m, s²)."""
    t2 = 1 + s * s
    t = mp.sqrt(t2)
    k = m / t
    e_phi_cdf = _Phi(k)
    e_y_cdf = m * _Phi(k) + s * s * _phi(k) / t
    e_y_pdf = m / t2 * _phi(k) / t
    return e_y_cdf, e_phi_cdf + e_y_pdf


def _gelu_pair(q1, q2, c):
    a = mp.sqrt(q1)
    b1 = c / a
    b2 = mp.sqrt(max(q2 - c * c / q1, mp.mpf(0)))
    f, fd = SMOOTH["gelu"]

    zs, ws = _trapezoid_nodes(max(q1, q2, mp.mpf(1)))
    m0 = m1 = mp.mpf(0)
    for z, w in zip(zs, ws):
        g, gd = _gelu_inner(b1 * z, b2)
        m0 += w * f(a * z) * g
        m1 += w * fd(a * z) * gd
    return m0, m1


def gelu_closed_form(q1, q2, c):
    """GELU's (M, Ṁ, M̈) in mpmath at the working precision: Tsuchida et al.'s closed form
    (eq. (6) of ntkcond.activations.gelu) and M̈ = E[σ''(u)σ''(v)] of its eq. (6a), derived
    from Gaussian integrals independently of the package (checked against quadrature in
    tests/test_gelu_dual.py); valid at any variance (the trapezoid needs ~√q nodes)."""
    p1p2 = (1 + q1) * (1 + q2)
    d2 = p1p2 - c * c
    d = mp.sqrt(d2)
    psi = mp.atan2(c, d)
    M = c / 4 + ((c * c + q1 * q2 * d2) / (p1p2 * d) + c * psi) / (2 * mp.pi)
    Md = (mp.mpf(1) / 4 + psi / (2 * mp.pi)
          + c / (2 * mp.pi * d) * (1 / d2 + (1 - q1 * q2) / p1p2 + 1))
    S11, S22, S12 = (q1 + q1 * q2 - c * c) / d2, (q2 + q1 * q2 - c * c) / d2, c / d2
    Mdd = (4 - 2 * (S11 + S22) + S11 * S22 + 2 * S12 * S12) / (2 * mp.pi * d)
    return M, Md, Mdd


def expectations(name, q1, q2, c):
    """(E[σ(u)σ(v)], E[σ'(u)σ'(v)]) for (u, v) ~ N(0, [[q1, c], [c, q2]]), mpmath."""
    alpha = _slope(name)
    if alpha is not None:
        a, b = (1 + alpha) / 2, (1 - alpha) / 2
        r = mp.sqrt(q1 * q2)
        rho = min(max(c / r, mp.mpf(-1)), mp.mpf(1))
        t = mp.acos(rho)
        e_abs = r * (2 * mp.sin(t) + (mp.pi - 2 * t) * rho) / mp.pi
        return a * a * c + b * b * e_abs, a * a + b * b * (1 - 2 * t / mp.pi)
    if name == "erf":
        det = (1 + 2 * q1) * (1 + 2 * q2) - 4 * c * c
        return (2 / mp.pi * mp.asin(2 * c / mp.sqrt((1 + 2 * q1) * (1 + 2 * q2))),
                4 / mp.pi / mp.sqrt(det))
    if name == "sin":
        e = mp.exp(-(q1 + q2) / 2)
        return e * mp.sinh(c), e * mp.cosh(c)
    if name == "gelu":
        return _gelu_pair(q1, q2, c)
    if q1 == q2 == c:
        return diagonal1(name, q1)
    return trapezoid2(name, 0, q1, q2, c), trapezoid2(name, 1, q1, q2, c)


def kernels(x, y, depths, name, w_std, b_std, residual=None):
    """{L: (nngp, ntk, cos φ, ntk_xx, ntk_yy)} of the depth-L MLP's output for rows x, y and
    every L in ``depths``, in mpmath.

    The network of ``ntkcond.network.mlp`` eq. (1): Dense(W_std=w_std,
    b_std=b_std) layers, residual blocks z + β·Dense(σ(z)) for layers 2 … L if ``residual``.
    """
    if isinstance(depths, int):
        depths = [depths]
    out = {}
    with mp.workdps(DPS):
        sw2, sb2 = mp.mpf(w_std) ** 2, mp.mpf(b_std) ** 2
        beta2 = None if residual is None else mp.mpf(residual) ** 2
        d = len(x)
        keys = {"xy": ("xx", "yy"), "xx": ("xx", "xx"), "yy": ("yy", "yy")}
        g = {"xy": _dot(x, y) / d, "xx": _dot(x, x) / d, "yy": _dot(y, y) / d}
        sig = {k: sw2 * v + sb2 for k, v in g.items()}
        ntk = dict(sig)

        def record(layer, s, t):
            if layer in depths:
                out[layer] = (s["xy"], t["xy"], t["xy"] / mp.sqrt(t["xx"] * t["yy"]),
                              t["xx"], t["yy"])

        record(0, sig, ntk)
        for layer in range(1, max(depths) + 1):
            ex = {}
            for k, (p, q) in keys.items():
                ex[k] = expectations(name, sig[p], sig[q], sig[k])
            block = {k: sw2 * ex[k][0] + sb2 for k in keys}
            step = {k: block[k] + sw2 * ex[k][1] * ntk[k] for k in keys}
            record(layer, block, step)  # the read-out after `layer` hidden layers
            if beta2 is not None:
                sig = {k: sig[k] + beta2 * block[k] for k in keys}
                ntk = {k: ntk[k] + beta2 * step[k] for k in keys}
            else:
                sig, ntk = block, step
    return out
