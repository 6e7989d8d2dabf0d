"""Infinite-width NNGP and NTK of MLPs with weight and bias scales, any activation of
``ntkcond.activations`` and optional residual blocks: the general layer recursion.

The network (NTK parameterisation, all weights and biases N(0, 1) and trained, width m → ∞,
s_w = ``w_std``, s_b = ``b_std``, L = ``depth`` hidden layers):

    z¹ = s_w/√d · W¹x + s_b b¹,
    z^{l+1} = s_w/√m · W^{l+1} σ(z^l) + s_b b^{l+1}                  (l = 1 … L − 1)
    f = s_w/√m · W^{L+1} σ(z^L) + s_b b^{L+1},

neural-tangents' ``stax.serial(*[Dense(m, W_std=s_w, b_std=s_b), act] * L,
Dense(1, W_std=s_w, b_std=s_b))``. Recursions (Jacot et al. 2018; Lee et al. 2019), with
M, Ṁ the dual kernels of ``ntkcond.infinite.duals`` at the layer's (Σ_ii, Σ_jj, Σ_ij):

    Σ¹ = s_w² x·x'/d + s_b²,   Θ¹ = [0 ∈ S] Σ¹
    Σ^{l+1} = s_w² M + s_b²,   Θ^{l+1} = [l ∈ S] Σ^{l+1} + s_w² Ṁ Θ^l                    (1)

for trainable layers S (0-based: 0 is W¹, b¹; L the read-out; all by default); the output
kernels of depth L are NNGP = Σ^{L+1}, NTK = Θ^{L+1}. With ``residual=β`` layers 2 … L are
residual blocks z^{l+1} = z^l + β(s_w/√m · W^{l+1} σ(z^l) + s_b b^{l+1}) (neural-tangents:
``FanOut(2)``, ``parallel(serial(act, Dense(m, W_std=β s_w, b_std=β s_b)), Identity())``,
``FanInSum()``), the first layer and the read-out as above:

    Σ^{l+1} = Σ^l + β²(s_w² M + s_b²),   Θ^{l+1} = Θ^l + β²([l ∈ S](s_w² M + s_b²) + s_w² Ṁ Θ^l).  (2)

Precision: beside each 2 × 2 block (A, B, C) (NNGP and NTK) the recursion carries its
Euclidean gap D = ½(A + B) − C ≥ 0 as a sum of non-negative terms, from D¹ = s_w²·½‖x − x'‖²/d:

    D_Σ^{l+1} = s_w² Dσ  (+ D_Σ^l, residual),
    D_Θ^{l+1} = [l ∈ S] D_Σ-term + s_w²[¼(Ṗ₁ − Ṗ₂)(A − B) + ½(Ṗ₁ + Ṗ₂) D_Θ + Dσ' C]  (3)

(Dσ, Dσ', Ṗ from ``duals``; (A, B, C) the NTK block before the step). The gradient angle
φ has 1 − cos φ = (D_Θ − ½(√A − √B)²)/√(AB) and 1 + cos φ = (√(AB) + C)/√(AB), and
φ = 2 atan2(√(1 − cos φ), √(1 + cos φ)): relative precision ~eps for near-duplicate pairs of
equal norms, and ~eps·|‖x‖ − ‖x'‖|/(‖x‖θ²) otherwise (the norms' difference enters only
through the rows' own rounding).

Every function here is a pure function of arrays (blocks broadcast: the rows' squared norms
as a column, the columns' as a row), unchecked: the public entry points of
``ntkcond.infinite.kernels`` validate.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ..activations import Net
from . import duals
from ._bivariate import angle_terms
from .trapezoid import quadrature_check

__all__ = ["net_layers", "family_recursion", "gradient_angle_terms", "check_net", "family_state",
           "geometry_blocks"]


def net_layers(net: Net):
    """(s_w² of the first and hidden layers, s_w² of the read-out, s_b²)."""
    if net.w_std is None:
        return net.act.scale, 1.0, net.b_std**2
    return net.w_std**2, net.w_std**2, net.b_std**2


def family_recursion(gram, n1, n2, gap0, depths, net: Net, layers=None,
                     angles: bool = True) -> Iterator[dict]:
    """Eqs. (1)–(3) for every depth in ``depths`` (ascending), in one forward pass.

    Args:
      gram: (n1, n2) x·x'/d; n1: (n1, 1) ‖x‖²/d; n2: (1, n2) ‖x'‖²/d;
      gap0: (n1, n2) ½‖x − x'‖²/d ≥ 0, exact for the data (no cancellation).
      depths: sorted depths L ≥ 0; net: ``Net``; layers: trainable layers (set of 0-based
        indices, None for all, "last" for S = {L} at each depth); angles: carry the gaps
        (False: kernels only, ``ntk_gap`` None).

    Yields per depth a dict with ``depth``, ``nngp``, ``ntk`` (blocks), ``ntk_diag1``,
    ``ntk_diag2`` (the NTK's diagonal for rows and columns) and ``ntk_gap`` (D_Θ).
    """
    sw2, sw2_out, sb2 = net_layers(net)
    beta2 = None if net.residual is None else net.residual**2
    last_only = layers == "last"
    member = (lambda k: True) if layers is None or last_only else (lambda k: k in layers)
    wanted = set(depths)
    # The leaky family needs its (closed-form, cheap) gaps even for kernels alone: its
    # derivative kernel depends on θ, not on cos θ, near θ = 0; GELU's (eqs. (6a)-(6b) of
    # gelu_dual) keep its large-variance kernels exact.
    gaps = angles or net.act.is_leaky or _exact_gaps_for_kernels(net.act)
    # input layer z¹
    q1, q2 = sw2 * n1 + sb2, sw2 * n2 + sb2
    c, D = sw2 * gram + sb2, sw2 * gap0
    s0 = 1.0 if member(0) else 0.0
    A, B, C, G = s0 * q1, s0 * q2, s0 * c, (s0 * D if angles else None)
    for L in range(max(depths) + 1):
        if L == 0:
            if 0 in wanted:
                if last_only:
                    yield _out(0, c, q1, q2, c, D)
                else:
                    yield _out(0, c, A, B, C, G)
            continue
        # z^L is (q, c, D); NTK of z^L is (A, B, C, G). One dual at z^L serves the read-out of
        # depth L and the next hidden step.
        M, Ds, Md, Dd = duals.dual(net.act, q1, q2, c, D, gaps=gaps)
        P1, Pd1 = duals.diagonal(net.act, q1)
        P2, Pd2 = duals.diagonal(net.act, q2)
        if L in wanted:
            s = 1.0 if (last_only or member(L)) else 0.0
            if last_only:
                yield _out(L, sw2_out * M + sb2, sw2_out * P1 + sb2, sw2_out * P2 + sb2,
                           sw2_out * M + sb2, None if Ds is None else sw2_out * Ds)
            else:
                yield _out(L, sw2_out * M + sb2,
                           *_ntk_step(A, B, C, G, sw2_out, sb2, M, Ds, Md, Dd, P1, P2, Pd1,
                                      Pd2, s))
        if L == max(depths):
            break
        s = 1.0 if member(L) else 0.0
        if beta2 is None:
            A, B, C, G = _ntk_step(A, B, C, G, sw2, sb2, M, Ds, Md, Dd, P1, P2, Pd1, Pd2, s)
            q1, q2, c = sw2 * P1 + sb2, sw2 * P2 + sb2, sw2 * M + sb2
            D = _cheap_gap(q1, q2, c) if Ds is None else sw2 * Ds
        else:
            dA, dB, dC, dG = _ntk_step(A, B, C, G, sw2, sb2, M, Ds, Md, Dd, P1, P2, Pd1, Pd2,
                                       s)
            A, B, C = A + beta2 * dA, B + beta2 * dB, C + beta2 * dC
            G = None if dG is None else G + beta2 * dG
            q1, q2 = q1 + beta2 * (sw2 * P1 + sb2), q2 + beta2 * (sw2 * P2 + sb2)
            c = c + beta2 * (sw2 * M + sb2)
            D = _cheap_gap(q1, q2, c) if Ds is None else D + beta2 * sw2 * Ds


def _exact_gaps_for_kernels(act) -> bool:
    """GELU carries its exact gaps (cheap, eqs. (6a)–(6b) of ``gelu_dual``) for kernels alone too:
    at large variances Ṁ depends on q₁q₂ − c² = (D − ½s²)(√(q₁q₂) + c), which a cheap gap
    ½(q₁ + q₂) − c resolves only to ~eps·q (~1e-11 in the NTK after 100 layers at q ~ 1e6)."""
    return not hasattr(act, "fn") and act.name == "gelu"


def _cheap_gap(q1, q2, c):
    """½(q₁ + q₂) − c ≥ 0 for kernels alone (smooth activations depend on c, not on θ)."""
    return np.maximum(0.5 * (q1 + q2) - c, 0.0)


def _ntk_step(A, B, C, G, sw2, sb2, M, Ds, Md, Dd, P1, P2, Pd1, Pd2, s):
    """One step of eq. (1)/(3): (A', B', C', D_Θ') = [s]·Σ' + s_w² Ṁ ⊙ (A, B, C)."""
    A2 = s * (sw2 * P1 + sb2) + sw2 * Pd1 * A
    B2 = s * (sw2 * P2 + sb2) + sw2 * Pd2 * B
    C2 = s * (sw2 * M + sb2) + sw2 * Md * C
    if G is None:
        return A2, B2, C2, None
    G2 = s * sw2 * Ds + sw2 * (0.25 * (Pd1 - Pd2) * (A - B) + 0.5 * (Pd1 + Pd2) * G + Dd * C)
    return A2, B2, C2, G2


def _out(L, nngp, A, B, C, G):
    return {"depth": L, "nngp": nngp, "ntk": C, "ntk_diag1": A, "ntk_diag2": B, "ntk_gap": G}


def gradient_angle_terms(A, B, C, G):
    """(1 − cos φ, 1 + cos φ) of the NTK block (A, B, C) with Euclidean gap G, eq. (3)."""
    _, um, up, _, _, _ = angle_terms(A, B, C, G)
    return um, up


def geometry_blocks(geometry):
    """(gram, n1, n2, gap0) of eq. (1)'s input layer from a ``PairGeometry`` with norms:
    ½‖x − x'‖²/d = ½(‖x‖ − ‖x'‖)²/d + ‖x‖‖x'‖/d·2 sin²(θ₀/2), exact for the data."""
    if geometry.norms1 is None:
        raise ValueError("the general recursion needs the rows' norms (PairGeometry.norms1)")
    r1 = np.asarray(geometry.norms1, dtype=np.float64)
    r2 = np.asarray(geometry.norms2, dtype=np.float64)
    d = geometry.d
    angle = np.asarray(geometry.angle)
    shape = angle.shape
    if len(shape) == 2 and shape == (r1.size, r2.size):  # a block: rows × columns
        r1c, r2r = r1[:, None], r2[None, :]
    else:  # a list of pairs: norms per pair
        r1c, r2r = r1.reshape(shape), r2.reshape(shape)
    scale = r1c * r2r / d
    dn = (r1c - r2r) / np.sqrt(d)
    gap0 = 0.5 * dn * dn + scale * (2.0 * np.sin(0.5 * angle) ** 2)
    gap0 = np.where(angle == 0, 0.5 * dn * dn, gap0)
    return scale * np.asarray(geometry.cos), r1c * r1c / d, r2r * r2r / d, gap0


def family_state(geometry, net, depths, layers, *, kernel=True, angles=False, out=None, xp=np):
    """The general net's state function for ``ntkcond.infinite.recursion.recursion``:
    yields (L, K, R, Z) per depth with K the NTK (or the NNGP for ``layers == "last"``) and
    R, Z = 1 ∓ cos φ of the gradient angle (eq. (3)), from a ``PairGeometry`` with norms."""
    if xp is not np:
        raise ValueError(
            f"activation {net.act.name!r} with w_std/b_std/residual runs on the NumPy engines "
            "only (the JAX device engine supports the bias-free leaky family)")
    blocks = geometry_blocks(geometry)
    for o in family_recursion(*blocks, depths, net, layers, angles):
        K = None
        if kernel:
            K = np.broadcast_to(o["nngp"] if layers == "last" else o["ntk"], blocks[0].shape)
            if out is not None and o["depth"] in out:
                out[o["depth"]][...] = K
                K = out[o["depth"]]
            else:
                K = np.array(K)
        R = Z = None
        if angles:
            R, Z = gradient_angle_terms(o["ntk_diag1"], o["ntk_diag2"], o["ntk"], o["ntk_gap"])
            R, Z = np.broadcast_to(R, blocks[0].shape), np.broadcast_to(Z, blocks[0].shape)
        yield o["depth"], K, R, Z


def check_net(net: Net, norms, d: int, depth: int, where: str):
    """Quadrature activations: the step-halving check of ``trapezoid.quadrature_check`` on every
    variance the diagonal recursion reaches up to ``depth`` from rows of norms ``norms``
    (ValueError naming ``where`` if it cannot reach its accuracy). Nothing for closed forms."""
    if net is None or not duals.uses_quadrature(net.act) or depth == 0:
        return
    norms = np.asarray(norms, dtype=np.float64).ravel()
    _check_quadrature(net, (None, (norms * norms / d)[:, None], np.zeros((1, 0)), None), depth,
                      where)


def _check_quadrature(net: Net, blocks, depth: int, where: str):
    if not duals.uses_quadrature(net.act) or depth == 0:
        return
    _, n1, n2, _ = blocks
    n = np.unique(np.concatenate([n1.ravel(), n2.ravel()]))
    sw2, _, sb2 = net_layers(net)
    beta2 = None if net.residual is None else net.residual**2
    q = sw2 * n + sb2
    seen = [q]
    try:
        for _ in range(depth - 1):
            P, _ = duals.diagonal(net.act, q)
            q = (sw2 * P + sb2) if beta2 is None else q + beta2 * (sw2 * P + sb2)
            seen.append(q)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    quadrature_check(net.act, np.concatenate(seen), where)
