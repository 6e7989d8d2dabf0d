"""The infinite-width kernel state a layer map acts on: for every pair (x, x′) of a block, the
2 × 2 NNGP block and the 2 × 2 NTK block, each with its Euclidean gap, and the power-of-two
scales carried apart from them.

NNGP (the pre-activations' covariance): variances q₁ = Σ(x, x), q₂ = Σ(x′, x′), covariance
c = Σ(x, x′) and gap D = ½(q₁ + q₂) − c ≥ 0. NTK: A = Θ(x, x), B = Θ(x′, x′), C = Θ(x, x′)
and gap G = ½(A + B) − C ≥ 0. The gaps are carried as sums of non-negative terms (never formed
as differences) where the layer maps can do so (``exact_gaps``): they hold 1 − cos θ (and
1 − cos φ) to full relative precision at small angles, which the angles need, and the
leaky family's and GELU's kernels need too.

Scale apart from shape: the true blocks are 2^e times the stored ones, e = ``nngp_exp`` for
(q₁, q₂, c, D) and ``ntk_exp`` for (A, B, C, G). Layer maps keep the stored blocks within
[2^−``RESCALE_BITS``, 2^``RESCALE_BITS``] by exact power-of-two rescaling
(``PairState.rescaled``), so underflow and overflow of the raw kernel never reach the
angles (Θ of a deep erf net grows like (s_w²Ṗ)^L; a bias-free net scales like Π s_w²); a
map that needs the true NNGP (a non-homogeneous activation) materialises it
(``PairState.true_nngp``) and raises ``KernelRangeError`` where it leaves float64's range.

Shapes broadcast: a block of pairs has q₁ (n₁, 1), q₂ (1, n₂) and c, D (n₁, n₂); a list of
pairs has (k,) everywhere; the NTK blocks likewise. Pure: layer maps return new states.
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["PairState", "KernelRangeError", "RESCALE_BITS"]

#: Stored blocks are rescaled by a power of two when their largest diagonal leaves
#: [2^-RESCALE_BITS, 2^RESCALE_BITS] (exact: the stored values keep every bit).
RESCALE_BITS = 256


class KernelRangeError(ValueError):
    """A kernel (or the NNGP a non-homogeneous activation needs) leaves float64's range."""


@dataclasses.dataclass(frozen=True)
class PairState:
    """NNGP and NTK blocks of a set of pairs (module docstring).

    Attributes:
      q1, q2, c, D: the NNGP block (stored; true = 2^nngp_exp × stored).
      A, B, C, G: the NTK block (stored; true = 2^ntk_exp × stored); None where the NTK is not
        tracked; G None where its gap is not.
      exact_gaps: D and G are carried without cancellation (False: D may be the cheap
        ½(q₁ + q₂) − c of a smooth activation, and G is None).
      nngp_exp, ntk_exp: the carried power-of-two exponents.
      layer: how many weight layers (``Dense``) the state has passed, for messages.
    """

    q1: object
    q2: object
    c: object
    D: object
    A: object = None
    B: object = None
    C: object = None
    G: object = None
    exact_gaps: bool = True
    nngp_exp: int = 0
    ntk_exp: int = 0
    layer: int = 0

    @property
    def tracks_ntk(self) -> bool:
        return self.A is not None

    def replace(self, **changes) -> "PairState":
        return dataclasses.replace(self, **changes)

    def rescaled(self) -> "PairState":
        """The same state with each block's stored values rescaled by a power of two where
        the largest diagonal entry left [2^−RESCALE_BITS, 2^RESCALE_BITS] (exact)."""
        state = self
        e = _exponent(state.q1, state.q2)
        if e:
            state = state.replace(q1=np.ldexp(state.q1, -e), q2=np.ldexp(state.q2, -e),
                                  c=np.ldexp(state.c, -e), D=np.ldexp(state.D, -e),
                                  nngp_exp=state.nngp_exp + e)
        if state.A is not None:
            e = _exponent(state.A, state.B)
            if e:
                state = state.replace(
                    A=np.ldexp(state.A, -e), B=np.ldexp(state.B, -e), C=np.ldexp(state.C, -e),
                    G=None if state.G is None else np.ldexp(state.G, -e),
                    ntk_exp=state.ntk_exp + e)
        return state

    def true_nngp(self, where: str = "the NNGP") -> "PairState":
        """The state with the NNGP block materialised (nngp_exp = 0); ``KernelRangeError``
        where it leaves float64's normal range (the activation that needs it cannot be
        evaluated there)."""
        if self.nngp_exp == 0:
            return self
        e = self.nngp_exp
        q1, q2 = _ldexp_checked(self.q1, e, where), _ldexp_checked(self.q2, e, where)
        with np.errstate(over="ignore", under="ignore"):
            return self.replace(q1=q1, q2=q2, c=np.ldexp(self.c, e), D=np.ldexp(self.D, e),
                                nngp_exp=0)

    def nngp(self, where: str = "the NNGP"):
        """The true NNGP covariance block 2^nngp_exp·c (``KernelRangeError`` out of range)."""
        return _true(self.c, self.q1, self.q2, self.nngp_exp, where)

    def ntk(self, where: str = "the NTK"):
        """The true NTK block 2^ntk_exp·C (``KernelRangeError`` out of range)."""
        return _true(self.C, self.A, self.B, self.ntk_exp, where)


def _exponent(d1, d2) -> int:
    """The power of two to divide by (0 when the largest diagonal is in range)."""
    peak = max(float(np.max(d1, initial=0.0)), float(np.max(d2, initial=0.0)))
    if peak == 0.0 or not np.isfinite(peak):
        return 0
    e = int(np.frexp(peak)[1])
    return e if abs(e) > RESCALE_BITS else 0


def _ldexp_checked(a, e, where):
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(a, e)
    peak = float(np.max(a, initial=0.0))
    if peak > 0 and (not np.all(np.isfinite(out)) or float(np.max(out)) < np.finfo(np.float64).tiny):
        side = "above 1.8e308" if not np.all(np.isfinite(out)) else "below 2.2e-308"
        raise KernelRangeError(f"{where} leaves float64's range ({side}: about 2^{e} times "
                               f"{peak:.3g})")
    return out


def _true(block, d1, d2, e, where):
    if e == 0:
        return block
    _ldexp_checked(d1, e, where)
    _ldexp_checked(d2, e, where)
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(block, e)
