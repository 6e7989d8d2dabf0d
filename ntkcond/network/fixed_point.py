"""Deep nets past the fixed point of their layer map: the remaining layers in closed form.

A net of identical blocks (``MLPFamily``: σ then a hidden ``Dense``, or the residual block of
both) maps the ``PairState`` of z^l to that of z^{l+1}. The NNGP block (q₁, q₂, c, D) maps on
its own; the NTK block Θ = (A, B, C, G) maps linearly in Θ given the NNGP block
(``ntkcond.network.layers`` eqs. (1)–(2)): with the NNGP block N_l,

    Θ_{l+1} = a(N_l) + M(N_l)·Θ_l,                                                       (1)

a = the trainable layers' Σ terms, M the products of s_w², Ṗ, Ṁ and Dσ′. M has one structure
for every block: A′, B′ and C′ each depend on their own component only, G′ on all four,

    M = [[m_A, 0, 0, 0], [0, m_B, 0, 0], [0, 0, m_C, 0], [g_A, g_B, g_C, g_G]].

**Fixed point.** When the stored NNGP block of z^{l₀+1} equals that of z^{l₀} bit for bit
(the same arrays and power-of-two exponent; ``settled``), every later block computes the
same float64 N, hence the same a and M: the remaining layers are the linear recursion (1)
with constant coefficients, and Θ_{l₀+n} = Mⁿ Θ_{l₀} + (Σ_{k<n} M^k) a. One relaxation: in
the chaotic phase of an odd activation the covariance c decays geometrically to 0 and
reaches it bit for bit only by underflow (~7800 layers for erf at w_std = 1.5, ~13 000 for
tanh); a c with |c| ≤ 2⁻⁶⁴·√(q₁q₂) at l₀ and l₀ + 1 counts as settled (q₁, q₂ and
D = ½(q₁ + q₂) − c are then bit for bit fixed already: erf settles at l₀ ≈ 410, tanh at
1060). The later c's lie in [−|c_{l₀}|, |c_{l₀}|], so the coefficients that depend on c (the
Σ term c′ in a_C, Ṁ in m_C, Dσ′ in g_C, all smooth in c) are frozen within ~2⁻⁶⁴ of the
diagonal's scale: C and G move by at most ~2⁻⁶⁴/(1 − ρ) of the diagonal, ρ < 1 the ratio of
C's growth to the diagonal's, far below a kernel entry's rounding (a few eps of the
diagonal). The gaps D and G are never relaxed: they carry the small angles' precision.

**Decaying gap.** In the ordered phase (c → q: the two inputs' representations merge) q₁,
q₂ and c settle bit for bit, but the gap D keeps decaying geometrically, D_{l+1} = ρD_l, to
0 bit for bit only by underflow (~3400 layers for erf at w_std = 1, b_std = 0.3; ~5700 for
tanh with biases at 30 ms a layer). Once D ≤ ``GAP_BELOW``·√(q₁q₂) = 2⁻⁵⁰ of the diagonal
and its ratio repeats within ``RATIO_ULPS`` ulps over two blocks (``decaying_gap``), a
smooth activation's dual is linear in D to float64 precision (its corrections are
O(D/q)): D joins eq. (1) as a fifth component, D_{l+n} = ρⁿD_l, and G's terms driven by it
(the Σ term's gap and Dσ′·C, both ∝ D) enter G's row as ν·D at this layer's C (C has
converged with D, to the same relative order). The map built at z^l must predict z^{l+2}
within ``PREDICTS`` (``AffineMap.predicts``): the leaky family's kink fails that (its
Dσ′ = 2b²θ/π ∝ √D), and those nets run their layers until D is 0 bit for bit. The closed
form's Dρⁿ carries ρ's rounding n times: ≲ n·4 ulps relative, before D underflows
(n ≲ 745/|ln ρ|).

Smooth activations in the ordered or chaotic phase get to either in tens to about a thousand
layers, so a net of depth 10⁶ costs what those layers cost.

a and M are read off the block itself (``AffineMap.probe``): a is the block's NTK for Θ = 0;
the columns of M are its NTK for the unit components with the block's Dense layers untrained
(the same products without the Σ terms: no subtraction). ``AffineMap.advance`` raises the map
to the n-th power by squaring (log₂ n structured products per pair, the powers cached)
and applies the powers of the set bits of n, lowest first; every power and every vector
carries one power-of-two exponent for the block, renormalised after each product, so a
kernel that grows like (s_w²Ṗ)ⁿ never overflows before the engine reads it
(``PairState``'s exponents, as the layer maps do).

Accuracy. The closed form and the layer-by-layer products differ by rounding only: each
product rounds once per layer in the loop and once per squaring here, so both are within
~n·eps relative of the exact recursion (1) with the stored float64 a and M (n the layers
past l₀); the angles R = 1 − cos φ, Z = 1 + cos φ inherit that relative error.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .state import PairState

__all__ = ["AffineMap", "settled", "decaying_gap", "SETTLED_COVARIANCE", "GAP_BELOW",
           "RATIO_ULPS"]

_NTK = ("A", "B", "C", "G")


#: A decaying gap joins the linear recursion once it is below this fraction of √(q₁q₂) and its
#: ratio D_{l+1}/D_l repeats within ``RATIO_ULPS`` ulps (module docstring, "Decaying gap").
GAP_BELOW = 2.0**-50
RATIO_ULPS = 4
#: ... and the map built at z^l predicts z^{l+2} within this (``AffineMap.predicts``).
PREDICTS = 2.0**-40

#: A covariance below this fraction of √(q₁q₂) has decayed past float64's resolution of the
#: diagonal (module docstring, "Fixed point").
SETTLED_COVARIANCE = 2.0**-64


def _bits(x):
    return np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)


def settled(a: PairState, b: PairState) -> bool:
    """The NNGP block of ``b`` (z^{l+1}) is that of ``a`` (z^l) for every later block: q₁,
    q₂, D, the exponent and the gap tracking equal bit for bit, and c equal bit for bit or,
    pair by pair, both |c| ≤ ``SETTLED_COVARIANCE``·√(q₁q₂) (module docstring)."""
    if a.nngp_exp != b.nngp_exp or a.exact_gaps != b.exact_gaps:
        return False
    for name in ("q1", "q2", "D"):
        x, y = _bits(getattr(a, name)), _bits(getattr(b, name))
        if x.shape != y.shape or not np.array_equal(x, y):
            return False
    ca, cb = np.asarray(a.c, dtype=np.float64), np.asarray(b.c, dtype=np.float64)
    if ca.shape != cb.shape:
        return False
    with np.errstate(all="ignore"):
        bound = SETTLED_COVARIANCE * np.sqrt(np.asarray(a.q1) * np.asarray(a.q2))
        small = (np.abs(ca) <= bound) & (np.abs(cb) <= bound)
    return bool(np.all((_bits(ca) == _bits(cb)) | small))


def decaying_gap(a: PairState, b: PairState, c: PairState):
    """ρ = D_{l+1}/D_l pair by pair where z^l, z^{l+1}, z^{l+2} (``a``, ``b``, ``c``) are in
    the decaying-gap regime (module docstring, "Decaying gap"), else None: q₁, q₂, c, the
    exponent and the gap tracking settled across both blocks, D ≤ ``GAP_BELOW``·√(q₁q₂)
    and not yet 0, and its ratio the same in both blocks within ``RATIO_ULPS`` (0 ↦ 0)."""
    if not (a.exact_gaps == b.exact_gaps == c.exact_gaps and a.nngp_exp == b.nngp_exp
            == c.nngp_exp):
        return None
    for name in ("q1", "q2", "c"):
        x, y, z = (_bits(getattr(s, name)) for s in (a, b, c))
        if not (x.shape == y.shape == z.shape and np.array_equal(x, y) and np.array_equal(y, z)):
            return None
    D0, D1, D2 = (np.asarray(s.D, dtype=np.float64) for s in (a, b, c))
    if not (D0.shape == D1.shape == D2.shape) or np.array_equal(_bits(D1), _bits(D2)):
        return None
    with np.errstate(all="ignore"):
        small = D1 <= GAP_BELOW * np.sqrt(np.asarray(b.q1) * np.asarray(b.q2))
        zero = (D0 == 0) & (D1 == 0) & (D2 == 0)
        live = (D0 > 0) & (D1 > 0) & (D2 > 0)
        r01, r12 = D1 / D0, D2 / D1
        same = np.abs(r12 - r01) <= RATIO_ULPS * np.finfo(np.float64).eps * r12
    if not np.all(zero | (live & small & same & np.isfinite(r12))):
        return None
    return np.where(live, r01, 0.0)


def _ratio(state: PairState, name: str, exp: int):
    """The true value of an NTK component in units of 2^exp."""
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(np.asarray(getattr(state, name), dtype=np.float64), state.ntk_exp - exp)


def _renormalised(parts):
    """(parts / 2^e, e): the largest finite |entry| of all parts in [0.5, 1) (e = 0 if all
    are 0). Pairs are independent: a non-finite entry stays in its own pair, as it would
    through the layer maps."""
    peak = 0.0
    for p in parts:
        if p is not None:
            a = np.abs(p)
            peak = max(peak, float(np.max(a, where=np.isfinite(a), initial=0.0)))
    if peak == 0.0:
        return parts, 0
    e = int(np.frexp(peak)[1])
    with np.errstate(under="ignore"):
        return [None if p is None else np.ldexp(p, -e) for p in parts], e


# A structured matrix is a list (m_A, m_B, m_C, g_G, ρ, g_A, g_B, g_C, ν): the diagonal for
# (A, B, C, G, D) and G's row (g_A, g_B, g_C, ·, ν); entries None where the component is not
# carried (G untracked; D constant). Vectors are lists (A, B, C, G, D).

def _product(x, y):
    """The structured product x·y (apply y, then x)."""
    out = [x[0] * y[0], x[1] * y[1], x[2] * y[2], None, None, None, None, None, None]
    if x[4] is not None:
        out[4] = x[4] * y[4]
    if x[3] is not None:
        out[3] = x[3] * y[3]
        out[5] = x[5] * y[0] + x[3] * y[5]
        out[6] = x[6] * y[1] + x[3] * y[6]
        out[7] = x[7] * y[2] + x[3] * y[7]
        if x[4] is not None:
            out[8] = x[8] * y[4] + x[3] * y[8]
    return out


def _apply(m, v):
    """m·v for a structured matrix and an (A, B, C, G, D) vector."""
    out = [m[0] * v[0], m[1] * v[1], m[2] * v[2], None, None]
    if m[4] is not None:
        out[4] = m[4] * v[4]
    if m[3] is not None:
        G = m[5] * v[0] + m[6] * v[1] + m[7] * v[2] + m[3] * v[3]
        out[3] = G if m[4] is None else G + m[8] * v[4]
    return out


def _scaled_sum(x, ex, y, ey):
    """(x·2^ex + y·2^ey) as (parts, exponent), renormalised; y may be None (absent)."""
    if y is None:
        parts, e = _renormalised(x)
        return parts, ex + e
    f = max(ex, ey)
    with np.errstate(under="ignore"):
        parts = [None if a is None else np.ldexp(a, ex - f) + (0.0 if b is None else
                                                                np.ldexp(b, ey - f))
                 for a, b in zip(x, y)]
    out, e = _renormalised(parts)
    return out, f + e


@dataclasses.dataclass
class AffineMap:
    """Eq. (1) with constant coefficients past a fixed point (module docstring).

    Attributes:
      fixed: the state at l₀ (its NNGP block the fixed point, or its values with the gap D
        decaying; its NTK block Θ_{l₀}).
      matrix: the structured matrix (true ratios; ρ, ν None without a decaying gap).
      offset: (a_A, a_B, a_C, a_G, None) in units of 2^unit (None where nothing is trained).
      unit: the offsets' power-of-two exponent (the NNGP block's: D is in its units).
    """

    fixed: PairState
    matrix: list
    offset: list | None
    unit: int
    _powers: list = dataclasses.field(default_factory=list)

    @classmethod
    def probe(cls, state: PairState, block, untrained, decay=None) -> "AffineMap":
        """a and M of the block (a callable ``PairState → PairState``; ``untrained``: the same
        block with no Dense layer trained) at the NNGP block of ``state``. ``decay``: the
        gap's ratio ρ per pair (``decaying_gap``): D joins the recursion (module docstring,
        "Decaying gap"), with G's D-driven terms (the Σ term's gap and Dσ′·C, both ∝ D) as
        ν·D at this layer's C."""
        unit = state.nngp_exp
        tracks_gap = state.G is not None

        def probe(step, values):
            shapes = [np.shape(getattr(state, n)) for n in _NTK]
            parts = {n: (None if n == "G" and not tracks_gap else
                         np.full(shape, value, dtype=np.float64))
                     for n, shape, value in zip(_NTK, shapes, values)}
            return step(state.replace(**parts, ntk_exp=unit))

        zero = probe(block, (0.0, 0.0, 0.0, 0.0))
        offset = [None if n == "G" and not tracks_gap else _ratio(zero, n, unit) for n in _NTK]
        cols = [probe(untrained, tuple(float(i == k) for i in range(4)))
                for k in range(4 if tracks_gap else 3)]
        matrix = [_ratio(cols[0], "A", unit), _ratio(cols[1], "B", unit),
                  _ratio(cols[2], "C", unit), None, None, None, None, None, None]
        if tracks_gap:
            matrix[3] = _ratio(cols[3], "G", unit)
            matrix[5:8] = [_ratio(cols[k], "G", unit) for k in range(3)]
        if decay is not None:
            D = np.asarray(state.D, dtype=np.float64)
            matrix[4] = np.asarray(decay, dtype=np.float64)
            if tracks_gap:
                driven = matrix[7] * _ratio(state, "C", unit) + offset[3]
                with np.errstate(all="ignore"):
                    matrix[8] = np.where(D > 0, driven / D, 0.0)
                matrix[7] = np.zeros_like(matrix[7])
                offset[3] = np.zeros_like(offset[3])
        offset.append(None if decay is None else np.zeros(np.shape(state.D)))
        if all(not np.any(o) for o in offset if o is not None):
            offset = None
        return cls(state, matrix, offset, unit)

    def predicts(self, state: PairState, n: int) -> bool:
        """``advance(n)`` agrees with ``state`` (the layer maps' z^{l₀+n}): A, B, C within
        ``PREDICTS`` of the largest diagonal entry, G and D pair by pair within ``PREDICTS``
        of themselves — the check that the recursion is linear in a decaying gap (it is not
        where Dσ′ ∝ θ ∝ √D: the leaky family's kink)."""
        got = self.advance(n)
        for names, exp in ((("A", "B", "C"), "ntk_exp"), (("G",), "ntk_exp"), (("D",), "nngp_exp")):
            for name in names:
                want, have = getattr(state, name), getattr(got, name)
                if want is None and have is None:
                    continue
                if want is None or have is None:
                    return False
                with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                    w = np.ldexp(np.asarray(want, dtype=np.float64), getattr(state, exp))
                    h = np.ldexp(np.asarray(have, dtype=np.float64), getattr(got, exp))
                    if name in ("A", "B", "C"):
                        scale = max(float(np.max(np.abs(np.ldexp(np.asarray(getattr(state, d)),
                                                                   state.ntk_exp)),
                                                 initial=0.0)) for d in ("A", "B"))
                    else:
                        scale = np.abs(w)
                    if not np.all(np.abs(h - w) <= PREDICTS * scale + np.finfo(np.float64).tiny):
                        return False
        return True

    def _power(self, j: int):
        """(P, pe, S, se): M^(2^j) = P·2^pe and Σ_{k<2^j} M^k = S·2^se (cached)."""
        while len(self._powers) <= j:
            if not self._powers:
                one = [None if m is None else np.full(np.shape(m), float(i < 5))
                       for i, m in enumerate(self.matrix)]
                P, pe = _renormalised([None if m is None else np.array(m, dtype=np.float64)
                                       for m in self.matrix])
                self._powers.append((P, pe, one, 0))
                continue
            P, pe, S, se = self._powers[-1]
            P2, e2 = _renormalised(_product(P, P))
            S2, f2 = _scaled_sum(S, se, _product(P, S), pe + se)
            self._powers.append((P2, 2 * pe + e2, S2, f2))
        return self._powers[j]

    def advance(self, n: int) -> PairState:
        """The state n ≥ 0 blocks after l₀: the settled NNGP values, D_{l₀+n} = ρⁿD_{l₀}
        with a decaying gap (else D_{l₀}), Θ_{l₀+n} by eq. (1)."""
        s = self.fixed
        x = [None if getattr(s, k) is None else np.asarray(getattr(s, k), dtype=np.float64)
             for k in _NTK]
        ex = s.ntk_exp
        gap = self.matrix[4] is not None
        with np.errstate(under="ignore", over="ignore"):
            x.append(np.ldexp(np.asarray(s.D, dtype=np.float64), s.nngp_exp - ex) if gap
                     else None)
        j = 0
        while n >> j:
            if (n >> j) & 1:
                P, pe, S, se = self._power(j)
                moved = _apply(P, x)
                if self.offset is None:
                    x, e = _renormalised(moved)
                    ex = ex + pe + e
                else:
                    x, ex = _scaled_sum(moved, ex + pe, _apply(S, self.offset), se + self.unit)
            j += 1
        changes = dict(A=x[0], B=x[1], C=x[2], G=x[3], ntk_exp=ex, layer=s.layer + n)
        if gap:
            with np.errstate(under="ignore", over="ignore"):
                changes["D"] = np.ldexp(x[4], ex - s.nngp_exp)
        return s.replace(**changes).rescaled()
