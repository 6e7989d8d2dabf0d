"""ntkcond.infinite.conv_chain: the compiled route's polynomials and what it takes.

(Its kernels against the layer maps, neural-tangents and the 30-digit reference:
``tests/test_conv.py``.) Checked here: ψ = 2 asin(√u) and sin ψ − ψ cos ψ from the two
polynomials within 4 ulp of mpmath over u ∈ [0, ½] (and a planted error of one unit in the
12th digit of one coefficient fails); ``ConvChain.of`` takes chains of Conv and
leaky-family activations up to a read-out and nothing else.
"""
import math

import mpmath as mp
import numpy as np
import pytest

from ntkcond import stax
from ntkcond.infinite import conv_chain as cc


def _poly(coeffs, u):
    out = 0.0
    for c in reversed(coeffs):
        out = out * u + c
    return out


def _worst(asin_coeffs, smac_coeffs):
    worst = 0.0
    with mp.workdps(40):
        for u in np.linspace(0.0, 0.5, 1201)[1:]:
            su = math.sqrt(u)
            psi = 2 * mp.asin(mp.sqrt(mp.mpf(u)))
            smac = mp.sin(psi) - psi * mp.cos(psi)
            got_psi = 2.0 * su * _poly(asin_coeffs, u)
            got_smac = u * su * _poly(smac_coeffs, u)
            worst = max(worst, float(abs(got_psi - psi) / psi), float(abs(got_smac - smac) / smac))
    return worst


def test_polynomials_against_mpmath():
    """Within 4.5e-16 relative (4 ulp: the interpolants' 1.4e-16 and the float64 evaluation's
    square root and products; measured 3.3e-16)."""
    assert _worst(cc.ASIN_COEFFS, cc.SMAC_COEFFS) <= 4.5e-16


def test_planted_error_in_a_coefficient_fails():
    planted = list(cc.SMAC_COEFFS)
    planted[3] *= 1 + 1e-11
    assert _worst(cc.ASIN_COEFFS, planted) > 4.5e-16


def test_compiled_half_angle_equals_the_polynomials():
    """The compiled ``half_angle`` (FMA allowed) within 2 ulp of the plain evaluation."""
    from numba import njit

    half = njit(lambda lo: cc.half_angle(lo))
    for lo in (1e-300, 1e-20, 1e-8, 0.3, 0.999, 1.0):
        psi, smac = half(lo)
        u = 0.5 * lo
        assert abs(psi - 2 * math.sqrt(u) * _poly(cc.ASIN_COEFFS, u)) <= 4.5e-16 * psi
        assert abs(smac - u * math.sqrt(u) * _poly(cc.SMAC_COEFFS, u)) <= 4.5e-16 * smac


@pytest.mark.parametrize("layers, takes", [
    ([stax.Conv(1, (3, 3), padding="SAME"), stax.Relu(), stax.Flatten(), stax.Dense(1)], True),
    ([stax.Conv(1, (3, 3)), stax.LeakyRelu(-0.3), stax.Conv(1, (2, 2), strides=2), stax.Abs(),
      stax.GlobalAvgPool(), stax.Dense(1), stax.Relu(), stax.Dense(1)], True),
    ([stax.Conv(1, (3, 3), padding="SAME"), stax.Erf(), stax.Flatten(), stax.Dense(1)], False),
    ([stax.Conv(1, (3, 3), padding="SAME"), stax.Relu(), stax.AvgPool((2, 2)), stax.Flatten(),
      stax.Dense(1)], False),
    ([stax.Conv(1, (3, 3), padding="SAME"), stax.FanOut(2),
      stax.parallel(stax.Relu(), stax.Identity()), stax.FanInSum(), stax.Flatten(),
      stax.Dense(1)], False),
    ([stax.Conv(1, (7, 7)), stax.Relu(), stax.Flatten(), stax.Dense(1)], False),  # VALID 7 > 6
])
def test_what_the_compiled_route_takes(layers, takes):
    plan = cc.ConvChain.of(stax.serial(*layers).spec, (6, 6))
    assert (plan is not None) == takes
