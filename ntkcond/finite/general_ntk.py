"""Exact finite-width NTKs of ``ntkcond.finite.models.GeneralMLP`` nets (weight and bias
stds, any activation, residual blocks) without Jacobians: the structured route of
``ntkcond.finite.empirical`` with biases.

For eq. (2) of ``ntkcond.finite.models`` with layer inputs A⁰ = x, Aⁱ = σ(zⁱ) and output
gradients Gᵢ = ∂f/∂zⁱ⁺¹ (G_L = 1), the gradients of layer i are ∂f/∂Wⁱ⁺¹ = sᵢAⁱ ⊗ Gᵢ and
∂f/∂bⁱ⁺¹ = tᵢGᵢ, so

    Θ = Σ_{i∈S} (sᵢ² AⁱA'ⁱᵀ + tᵢ² 11ᵀ) ⊙ (GᵢG'ᵢᵀ),                                       (1)

with Gᵢ from one backward pass:

    G_{L−1} = s_L W^{L+1 ᵀ} ⊙ σ'(z^L),
    G_{i−1} = [residual] Gᵢ + sᵢ (Gᵢ W^{i+1 ᵀ}) ⊙ σ'(zⁱ),                                (2)

(the identity path Gᵢ only for the residual layers i = 1 … L − 1). Runs in NumPy (float64
on the CPU) or jitted jax (``xp``), in the dtype of params and x.
"""
from __future__ import annotations

import numpy as np

__all__ = ["general_features", "general_ntk"]


def _act_fns(act, xp):
    """(σ, σ') on arrays of namespace ``xp``."""
    if xp is np:
        return act, act.derivative
    return act.jax_fn, act.jax_derivative


def general_features(net, params, x, xp=np):
    """(inputs, grads): inputs[i] = sᵢAⁱ with bias factor tᵢ, grads[i] = Gᵢ (None for the
    read-out), eqs. (1)–(2)."""
    if xp is np:
        mm = np.matmul
    else:
        import jax

        def mm(a, b):
            return xp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)
    L = net.depth
    sigma, dsigma = _act_fns(net.activation, xp)
    f = net.factors(x.shape[1])
    ws, bs = params[: L + 1], params[L + 1:]
    res = net.residual is not None
    inputs, pre = [], []
    h, z = x, None
    for i in range(L + 1):
        a = f[i][0] * h
        inputs.append(a)
        if i < L:
            step = mm(a, ws[i]) + f[i][1] * bs[i]
            z = z + step if (res and i > 0) else step
            pre.append(z)
            h = sigma(z)
    grads = [None] * (L + 1)
    g = None
    for i in range(L, 0, -1):  # G_{i−1} from G_i (G_L = 1)
        back = f[i][0] * (ws[i][:, 0][None, :] if g is None else mm(g, ws[i].T))
        new = back * dsigma(pre[i - 1])
        if g is not None and res and i < L:
            new = new + g
        g = new
        grads[i - 1] = g
    return inputs, grads, [t for _, t in f]


def general_ntk(net, params, x1, x2, layers, per_layer=False, xp=np):
    """Eq. (1) for trainable layers ``layers`` (0-based); per-layer terms stacked if
    ``per_layer``."""
    f1 = general_features(net, params, x1, xp)
    f2 = f1 if x2 is None else general_features(net, params, x2, xp)
    (a1, g1, t), (a2, g2, _) = f1, f2
    terms = []
    for i in layers:
        k = xp.matmul(a1[i], a2[i].T) + t[i] ** 2
        if g1[i] is not None:
            k = k * xp.matmul(g1[i], g2[i].T)
        terms.append(k)
    return xp.stack(terms) if per_layer else sum(terms[1:], terms[0])
