"""The compiled layer loop of the angle recursion (``ntkcond.infinite.recursion``): every layer
after the first, for each pair alone (numba), instead of one NumPy call per operation and
layer. A deep net then costs ~30 ns a pair and layer for the kernel and ~60 ns with the
gradient angles' terms, not ~30 µs a layer of interpreter overhead: ReLU's angles converge
only algebraically (1 − cos θ_L ~ c/L²), so no fixed point shortens them, and depth 10⁶ is
computed layer by layer (0.6 s for five rows).

The state of a pair is (cos θ, u = 1 − cos θ, v = 1 + cos θ, T, R, Z); θ and s(θ) =
sin θ − θ cos θ come from min(u, v) by the half-angle polynomials of
``ntkcond.infinite.conv_chain`` (ψ = min(θ, π − θ) = 2 asin(√(lo/2)) and s(ψ), within
1.4e-16 relative; s(π − ψ) = s(ψ) + π cos ψ): no libm call and no cancellation at small
angles, so the angles keep their relative precision (within a few eps of 30-digit
references at depth 2·10⁴; the NumPy expressions it replaced drifted by up to ~2e-14·L).
No contraction into fused multiply-adds. Every pair is
computed alone, so its value does not depend on the block it is in, the depths asked for
(the loop stops at each and resumes), the order or the threads.

Per-layer parameters are arrays indexed by the layer k (the activation after hidden layer k):
w_relu/π, β, whether ġ < 0 is possible (slopes α < 0), and ``member`` (k + 1 trainable), so
that a stack mixing slopes costs nothing more.
"""
from __future__ import annotations

import math

from numba import njit

from .conv_chain import half_angle

__all__ = ["advance", "gain_sequence", "LANE_BLOCK"]

#: numba's options: numpy's error model (IEEE results, no ZeroDivisionError branches) and
#: cached on disk; no fastmath (no contraction: every vector lane and the scalar remainder
#: round alike, so a pair does not depend on where it sits in the block). ``advance`` runs
#: on the calling thread without the GIL (``nogil``): the tiles of ``ntkcond.scale`` run it
#: on their worker threads at once, as they ran NumPy's ufuncs.
_JIT = dict(error_model="numpy", cache=True)

_PI = math.pi

#: Entries per work item: their state (six float64 arrays) stays in L1 while the layers run.
LANE_BLOCK = 64


@njit(nogil=True, **_JIT)
def advance(c, u, v, T, R, Z, k0, k1, counts, w, beta, negative, member, last_only, angles):
    """Layers k0 … k1 − 1 of the angle recursion on every entry of the flat state (cos θ,
    1 − cos θ, 1 + cos θ, T, R, Z), in place (module docstring):

        θ from (u, v): ψ = min(θ, π − θ) and s(ψ) = sin ψ − ψ cos ψ by
        ``conv_chain.half_angle`` of min(u, v); s(θ) = s(ψ), or s(ψ) + π cos ψ for θ > π/2;
        σ = w_k·s(θ)   (w_k = w_relu/π of layer k),
        cos θ′ = cos θ + σ,   u′ = u − σ,   v′ = v + σ,   ġ = 1 − β_kθ,
        T′ = [k+1 ∈ S]·cos θ′ + ġ·T,
        R′ = [k+1 ∈ S]·u′ + |S ∩ [0, k]|·β_kθ + ġ·R,   Z′ likewise with v′,

    and where ġ < 0 (``negative[k]``: slopes α < 0) R′ = [k+1 ∈ S]·u′ + (count·(1 + ġ) − ġ·Z),
    Z′ = [k+1 ∈ S]·v′ + (count·(1 + ġ) − ġ·R) (``recursion.gradient_recursion``).
    ``last_only``: T′ = cos θ′ (S = {L} at every depth); ``angles`` False: R, Z untouched."""
    n = c.size
    for item in range((n + LANE_BLOCK - 1) // LANE_BLOCK):
        a = item * LANE_BLOCK
        b = min(n, a + LANE_BLOCK)
        cc, uu, vv, TT = c[a:b].copy(), u[a:b].copy(), v[a:b].copy(), T[a:b].copy()
        RR, ZZ = R[a:b].copy(), Z[a:b].copy()
        for k in range(k0, k1):
            wk, bk, count = w[k], beta[k], counts[k]
            sk = 1.0 if member[k + 1] else 0.0
            neg = negative[k]
            for j in range(b - a):
                uj, vj = uu[j], vv[j]
                small = uj <= vj
                lo = min(uj if small else vj, 1.0)
                psi, smac = half_angle(lo)
                theta = psi if small else _PI - psi
                if not small:
                    smac = smac + _PI * (1.0 - lo)
                sig = wk * smac
                cn = cc[j] + sig
                un = max(uj - sig, 0.0)
                vn = vj + sig
                if last_only:
                    TT[j] = cn
                else:
                    gap = bk * theta  # 1 − ġ(θ_k)
                    gdot = 1.0 - gap
                    TT[j] = sk * cn + gdot * TT[j]
                    if angles:
                        if neg and gdot < 0.0:
                            one_plus = 2.0 - gap
                            r, z = RR[j], ZZ[j]
                            RR[j] = sk * un + (count * one_plus - gdot * z)
                            ZZ[j] = sk * vn + (count * one_plus - gdot * r)
                        else:
                            RR[j] = sk * un + (count * gap + gdot * RR[j])
                            ZZ[j] = sk * vn + (count * gap + gdot * ZZ[j])
                cc[j], uu[j], vv[j] = cn, un, vn
        c[a:b], u[a:b], v[a:b], T[a:b], R[a:b], Z[a:b] = cc, uu, vv, TT, RR, ZZ


@njit(**_JIT)
def gain_sequence(m0, e0, readout, hidden, top, out_m, out_e):
    """G_L = s₀²·(s²E[σ²])^(L−1)·s_r²E[σ²] for L = 1 … top as (m, e), m·2^e, renormalised by
    frexp after every product (``ntkcond.network.layers.gain_product``'s order): out_m[L],
    out_e[L]. (m0, e0) is frexp(s₀²); ``readout`` = s_r²E[σ²], ``hidden`` = s²E[σ²]."""
    m, e = m0, e0
    for L in range(1, top + 1):
        mg, eg = math.frexp(m * readout)
        out_m[L] = mg
        out_e[L] = e + eg
        mp, ep = math.frexp(m * hidden)
        m, e = mp, e + ep
