"""The smooth activations without closed forms (ntkcond.activations.smooth): tanh, softplus,
SiLU, Mish. Their σ′ and σ″ against jax's derivatives of their jax form (1e-13), and their
dual kernels (Mehler's series, the trapezoid's small gaps) against the 30-digit reference
(tests/_family_reference.py) to 1e-13 of √(P₁P₂) (kernels) and 1e-11 (gaps); each reaches
the public kernels by its registered name."""
import mpmath as mp
import numpy as np
import pytest

import _family_reference as ref
import ntkcond
from ntkcond.activations import REGISTRY, parse_activation

NAMES = ["tanh", "softplus", "silu", "mish"]


@pytest.mark.parametrize("name", NAMES)
def test_derivatives_are_those_of_the_jax_form(name):
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    act = parse_activation(name)
    z = np.linspace(-8, 8, 33)
    with x64():
        jz = jnp.asarray(z)
        f = act.jax_fn
        d1 = np.asarray(jax.vmap(jax.grad(f))(jz))
        d2 = np.asarray(jax.vmap(jax.grad(jax.grad(f)))(jz))
        assert np.allclose(act(z), np.asarray(f(jz)), rtol=1e-14, atol=1e-15)
    assert np.allclose(act.derivative(z), d1, rtol=1e-13, atol=1e-14)
    assert np.allclose(act.second_derivative(z), d2, rtol=1e-12, atol=1e-13)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mish"])
@pytest.mark.parametrize("q1, q2, rho", [(1.3, 0.7, 0.4), (2.0, 2.0 * (1 + 1e-7), 1 - 3e-12)])
def test_dual_kernels_against_the_reference(name, q1, q2, rho):
    with mp.workdps(ref.DPS):
        Q1, Q2 = mp.mpf(q1), mp.mpf(q2)
        C = mp.sqrt(Q1 * Q2) * mp.mpf(rho)
        m, md = ref.expectations(name, Q1, Q2, C)
        p1, pd1 = ref.expectations(name, Q1, Q1, Q1)
        p2, pd2 = ref.expectations(name, Q2, Q2, Q2)
        gap, gapd = (p1 + p2) / 2 - m, (pd1 + pd2) / 2 - md
        D = (Q1 + Q2) / 2 - C
    M, G, Md, Gd = parse_activation(name).dual(np.float64(q1), np.float64(q2), np.float64(float(C)),
                                               np.float64(float(D)))
    assert abs(M - float(m)) <= 1e-13 * float(mp.sqrt(p1 * p2))
    assert abs(Md - float(md)) <= 1e-13 * float(mp.sqrt(pd1 * pd2))
    assert abs(G - float(gap)) <= 1e-11 * float(gap)
    assert abs(Gd - float(gapd)) <= 1e-11 * float(gapd)


def test_every_smooth_activation_reaches_the_kernels_by_its_name():
    x = np.random.default_rng(0).standard_normal((6, 4))
    for name in NAMES:
        assert REGISTRY[name].name == name and not REGISTRY[name].closed_form
        K = ntkcond.infinite_ntk(x, depth=2, activation=name, w_std=1.4, b_std=0.1)
        S = ntkcond.stax.serial(ntkcond.stax.Dense(8, W_std=1.4, b_std=0.1),
                                ntkcond.stax.Elementwise(REGISTRY[name].jax_fn),
                                ntkcond.stax.Dense(8, W_std=1.4, b_std=0.1),
                                ntkcond.stax.Elementwise(REGISTRY[name].jax_fn),
                                ntkcond.stax.Dense(1, W_std=1.4, b_std=0.1))
        # the same function through a callable: the same kernel to the series' 1e-13
        assert np.max(np.abs(S.kernel_fn(x, None, "ntk") - K)) <= 1e-12 * np.max(np.diag(K))
