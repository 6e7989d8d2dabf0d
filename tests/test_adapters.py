"""Tests of ntkcond.finite.adapters: Flax linen, Flax NNX and Equinox models as NTK-ready nets.

The reference is independent of the adapters and of ``empirical_ntk_fn``: one plain
``jax.jacrev`` of the batched model w.r.t. the flattened trainable parameters
(``jax.flatten_util.ravel_pytree``), J of shape (n, O, P), and Θ = Σ_p J J ᵀ / O.
Both are exact contractions in float64: they agree to rounding (RTOL = 1e-10 relative, the
margin of tests/test_generic.py).
"""
import json
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

from conftest import rel_err  # noqa: E402
import ntkcond  # noqa: E402

RTOL = 1e-10
F64 = jnp.float64


@pytest.fixture(autouse=True)
def _float64(x64):  # every test here runs in scoped jax float64 (conftest.x64)
    yield


def data(seed, n, d=5):
    return jax.random.normal(jax.random.PRNGKey(seed), (n, d), F64)


def reference_ntk(batched, params, x1, x2):
    """Θ(x1, x2) = (1/O) Σ_{a,p} J1[i,a,p] J2[j,a,p], J from one jacrev over the flat params."""
    flat, unravel = ravel_pytree(params)
    jac = lambda x: jax.jacrev(lambda v: batched(unravel(v), x).reshape(x.shape[0], -1))(flat)
    J1, J2 = np.asarray(jac(x1)), np.asarray(jac(x2))
    return np.einsum("iap,jap->ij", J1, J2) / J1.shape[1]


def check_ntk(net, batched, n_params, *, planted=True):
    """empirical_ntk_fn(net.apply_fn)(net.params, ·) = reference, eagerly and under jax.jit."""
    x1, x2 = data(1, 6), data(2, 4)
    assert net.n_params == n_params == ravel_pytree(net.params)[0].size
    ref, ref11 = reference_ntk(batched, net.params, x1, x2), reference_ntk(batched, net.params, x1, x1)
    fn = ntkcond.empirical_ntk_fn(net.apply_fn)
    errors = {}
    for label, f in (("eager", fn), ("jit", jax.jit(fn))):
        K12, K11 = f(net.params, x1, x2), f(net.params, x1)
        assert K12.shape == (6, 4) and K12.dtype == F64 and K11.shape == (6, 6)
        errors[label] = max(rel_err(K12, ref), rel_err(K11, ref11))
        assert errors[label] < RTOL, (label, errors[label])
    # "ntk_vp" with two rows of x2 per chunk (2 rows x O = 2 outputs x P x 8 bytes, twice)
    vp = ntkcond.empirical_ntk_fn(net.apply_fn, method="ntk_vp", memory_budget=2 * 2 * 2 * n_params * 8)
    errors["ntk_vp"] = rel_err(jax.jit(vp)(net.params, x1, x2), ref)
    assert errors["ntk_vp"] < RTOL
    assert rel_err(net.empirical_ntk(x1, x2), ref) < RTOL
    if planted:  # the check sees a missing parameter leaf: drop the last one from the reference
        leaves, treedef = jax.tree_util.tree_flatten(net.params)
        frozen = leaves[-1]
        partial = lambda p, x: batched(jax.tree_util.tree_unflatten(treedef, p + [frozen]), x)
        assert rel_err(K12, reference_ntk(partial, leaves[:-1], x1, x2)) > 1e-6
    print(f"{net.framework}: P = {n_params}, rel. errors {errors}")
    return errors


MLP_PARAMS = 5 * 8 + 8 + 8 * 8 + 8 + 8 * 2 + 2  # 5 → 8 → 8 → 2, with biases


# ------------------------------------------------------------------------------ flax linen
def linen_mlp(nn):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for width in (8, 8):
                x = nn.tanh(nn.Dense(width, param_dtype=F64)(x))
            return nn.Dense(2, param_dtype=F64)(x)

    return MLP()


def test_flax_linen_mlp_ntk_is_exact():
    nn = pytest.importorskip("flax.linen")
    module = linen_mlp(nn)
    variables = module.init(jax.random.PRNGKey(0), data(0, 1))
    net = ntkcond.from_flax(module, variables)
    assert net.framework == "flax.linen" and "flax.linen" in repr(net) and len(repr(net)) < 80
    check_ntk(net, lambda p, x: module.apply({"params": p}, x), MLP_PARAMS)


def test_flax_linen_batch_stats_are_not_parameters():
    nn = pytest.importorskip("flax.linen")

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            x = nn.Dense(8, param_dtype=F64)(x)
            x = nn.BatchNorm(use_running_average=not train, param_dtype=F64)(x)
            return nn.Dense(2, param_dtype=F64)(nn.relu(x))

    module = Net()
    variables = module.init(jax.random.PRNGKey(0), data(0, 3))
    # running statistics a training step would have left (not the trivial 0 and 1)
    stats = jax.tree_util.tree_map(lambda s: s + 0.3 * jax.random.uniform(jax.random.PRNGKey(5), s.shape, F64),
                                   variables["batch_stats"])
    variables = {"params": variables["params"], "batch_stats": stats}
    net = ntkcond.from_flax(module, variables)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(net.params)[0]]
    assert not any("mean" in p or "var" in p for p in paths), paths
    n_params = 5 * 8 + 8 + 2 * 8 + 8 * 2 + 2  # Dense, BatchNorm scale and bias, Dense
    check_ntk(net, lambda p, x: module.apply({"params": p, "batch_stats": stats}, x), n_params)
    # the statistics are used (closed over): other statistics, another kernel
    other = ntkcond.from_flax(module, {**variables, "batch_stats": jax.tree_util.tree_map(
        lambda s: 2 * s, stats)})
    x = data(3, 4)
    assert rel_err(other.empirical_ntk(x), net.empirical_ntk(x)) > 1e-3
    # training mode would update batch_stats: refused, naming the function
    train = ntkcond.from_flax(module, variables, train=True)
    with pytest.raises(ValueError, match="from_flax: module.apply failed"):
        train.empirical_ntk(x)


def test_from_flax_bad_input():
    nn = pytest.importorskip("flax.linen")
    module = linen_mlp(nn)
    variables = module.init(jax.random.PRNGKey(0), data(0, 1))
    with pytest.raises(TypeError, match="from_flax: expected module as a flax.linen.Module, got int"):
        ntkcond.from_flax(3, variables)
    with pytest.raises(TypeError, match="from_flax: expected variables as the dict"):
        ntkcond.from_flax(module, [variables])
    with pytest.raises(ValueError, match=r"from_flax: expected variables with a 'params' collection.*'Dense_0'"):
        ntkcond.from_flax(module, variables["params"])  # the params alone, not the whole dict
    bad = jax.tree_util.tree_map(lambda a: a.at[(0,) * a.ndim].set(jnp.nan), variables)
    with pytest.raises(ValueError, match=r"from_flax: expected finite variables\['params'\]\['Dense_0'\]"):
        ntkcond.from_flax(module, bad)
    # variables of another module: a ValueError naming from_flax and the paths that differ
    small = nn.Dense(3, param_dtype=F64)
    net = ntkcond.from_flax(module, small.init(jax.random.PRNGKey(0), data(0, 1)))
    with pytest.raises(ValueError, match=r"from_flax: expected variables\['params'\] of this "
                                         r"module .*unknown .*missing"):
        net.empirical_ntk(data(1, 3))
    nnx = pytest.importorskip("flax.nnx")
    with pytest.raises(TypeError, match="flax.nnx model: use ntkcond.from_nnx"):
        ntkcond.from_flax(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), variables)


# -------------------------------------------------------------------------------- flax nnx
def nnx_mlp(nnx):
    class MLP(nnx.Module):
        def __init__(self, rngs):
            kw = dict(param_dtype=F64, rngs=rngs)
            self.l1, self.l2, self.l3 = nnx.Linear(5, 8, **kw), nnx.Linear(8, 8, **kw), nnx.Linear(8, 2, **kw)

        def __call__(self, x):
            return self.l3(jnp.tanh(self.l2(jnp.tanh(self.l1(x)))))

    return MLP(nnx.Rngs(0))


def test_flax_nnx_mlp_ntk_is_exact():
    nnx = pytest.importorskip("flax.nnx")
    model = nnx_mlp(nnx)
    net = ntkcond.from_nnx(model)
    graphdef, _, rest = nnx.split(model, nnx.Param, ...)
    check_ntk(net, lambda p, x: nnx.merge(graphdef, p, rest)(x), MLP_PARAMS)


def test_flax_nnx_batch_norm_statistics_are_not_parameters():
    nnx = pytest.importorskip("flax.nnx")

    class Net(nnx.Module):
        def __init__(self, rngs):
            kw = dict(param_dtype=F64, rngs=rngs)
            self.l1, self.bn, self.l2 = nnx.Linear(5, 8, **kw), nnx.BatchNorm(8, **kw), nnx.Linear(8, 2, **kw)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.l2(self.drop(nnx.relu(self.bn(self.l1(x)))))

    model = Net(nnx.Rngs(0))
    with pytest.raises(ValueError, match="from_nnx: expected model in evaluation mode, got BatchNorm at bn"):
        ntkcond.from_nnx(model)
    model(1 + 2 * data(9, 16))  # one training-mode call moves the running statistics off 0 and 1
    model.eval()
    net = ntkcond.from_nnx(model)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(net.params)[0]]
    assert not any("mean" in p or "var" in p for p in paths), paths
    graphdef, _, rest = nnx.split(model, nnx.Param, ...)
    check_ntk(net, lambda p, x: nnx.merge(graphdef, p, rest)(x), 5 * 8 + 8 + 2 * 8 + 8 * 2 + 2)
    model.train()  # other running statistics: net keeps the state it was made with
    model(3 * data(10, 16) - 1)
    model.eval()
    x = data(3, 4)
    assert rel_err(ntkcond.from_nnx(model).empirical_ntk(x), net.empirical_ntk(x)) > 1e-3


def test_from_nnx_bad_input():
    nnx = pytest.importorskip("flax.nnx")
    with pytest.raises(TypeError, match="from_nnx: expected model as a flax.nnx.Module, got list"):
        ntkcond.from_nnx([1, 2])
    linen = pytest.importorskip("flax.linen")
    with pytest.raises(TypeError, match="flax.linen model: use ntkcond.from_flax"):
        ntkcond.from_nnx(linen.Dense(3))
    with pytest.raises(ValueError, match="from_nnx: expected a model with trainable parameters"):
        ntkcond.from_nnx(nnx.Dropout(0.5, deterministic=True))


# -------------------------------------------------------------------------------- equinox
def test_equinox_mlp_ntk_is_exact():
    eqx = pytest.importorskip("equinox")
    model = eqx.nn.MLP(5, 2, 8, 2, activation=jnp.tanh, key=jax.random.PRNGKey(0))
    model = jax.tree_util.tree_map(lambda a: a.astype(F64) if eqx.is_inexact_array(a) else a, model)
    net = ntkcond.from_equinox(model)
    assert net.framework == "equinox"
    _, static = eqx.partition(model, eqx.is_inexact_array)
    check_ntk(net, lambda p, x: jax.vmap(eqx.combine(p, static))(x), MLP_PARAMS)


def test_equinox_batch_norm_state_is_not_a_parameter():
    eqx = pytest.importorskip("equinox")

    class Net(eqx.Module):
        l1: eqx.nn.Linear
        bn: eqx.nn.BatchNorm
        l2: eqx.nn.Linear

        def __init__(self, key):
            k1, k2 = jax.random.split(key)
            self.l1 = eqx.nn.Linear(5, 8, key=k1, dtype=F64)
            self.bn = eqx.nn.BatchNorm(8, "batch", mode="ema", dtype=F64)
            self.l2 = eqx.nn.Linear(8, 2, key=k2, dtype=F64)

        def __call__(self, x, state):
            y, state = self.bn(self.l1(x), state)
            return self.l2(jax.nn.relu(y)), state

    model, state = eqx.nn.make_with_state(Net)(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="from_equinox: expected model in inference mode, got BatchNorm"):
        ntkcond.from_equinox(model, state)
    model = eqx.nn.inference_mode(model)
    with pytest.raises(ValueError, match="from_equinox: expected the state of a stateful model"):
        ntkcond.from_equinox(model)
    net = ntkcond.from_equinox(model, state)
    n_params = 5 * 8 + 8 + 2 * 8 + 8 * 2 + 2  # Linear, BatchNorm weight and bias, Linear
    _, static = eqx.partition(model, eqx.is_inexact_array)
    check_ntk(net, lambda p, x: jax.vmap(lambda xi: eqx.combine(p, static)(xi, state)[0])(x), n_params)
    # the state is used (closed over): other running statistics, another kernel
    other = jax.tree_util.tree_map(lambda s: s + 0.5, state)
    x = data(3, 4)
    assert rel_err(ntkcond.from_equinox(model, other).empirical_ntk(x), net.empirical_ntk(x)) > 1e-3


def test_from_equinox_bad_input():
    eqx = pytest.importorskip("equinox")
    model = eqx.nn.MLP(5, 2, 8, 2, key=jax.random.PRNGKey(0))
    with pytest.raises(TypeError, match="from_equinox: expected model as an equinox.Module, got function"):
        ntkcond.from_equinox(lambda x: x)
    with pytest.raises(TypeError, match=r"from_equinox: expected state as None or an eqx.nn.State .*, got dict"):
        ntkcond.from_equinox(model, {})
    with pytest.raises(ValueError, match="from_equinox: expected a model with trainable parameters"):
        ntkcond.from_equinox(eqx.nn.Lambda(jnp.tanh))
    with pytest.raises(ValueError, match="from_equinox: expected finite params"):
        ntkcond.from_equinox(eqx.tree_at(lambda m: m.layers[0].bias, model, model.layers[0].bias * jnp.inf))


def test_import_ntkcond_loads_no_model_framework():
    code = "import sys, json, ntkcond; print(json.dumps([m for m in ('flax', 'equinox') if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


@pytest.mark.slow
def test_models_page_example_prints_what_the_page_says():
    # docs/models.md: its Flax example runs as printed (a fresh interpreter: it sets jax's
    # global x64 flag), and its printed numbers match the page's to 1e-3 relative (they are
    # rounded to 4 digits; κ_eff ~ 1e3–1e6 from float64 kernels is good to ~1e-9).
    pytest.importorskip("flax.linen")
    import os
    import re

    from conftest import REPO

    with open(os.path.join(REPO, "docs", "models.md"), encoding="utf-8") as f:
        page = f.read()
    code = re.search(r"## κ_eff of a Flax MLP.*?```python\n(.*?)```", page, re.S).group(1)
    expected = re.search(r"```python\n.*?```\n.*?```text\n(.*?)```", page[page.index("## κ_eff"):], re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": REPO})
    assert out.returncode == 0, out.stderr[-2000:]
    got_lines, want_lines = out.stdout.strip().splitlines(), expected.strip().splitlines()
    assert got_lines[0] == want_lines[0] and len(got_lines) == len(want_lines)
    number = r"[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?"
    for got, want in zip(got_lines[1:-1], want_lines[1:-1]):
        a, b = (np.array(re.findall(number, s), float) for s in (got, want))
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-3, atol=0), (got, want)
    assert float(re.findall(number, got_lines[-1])[-1]) < 1e-12  # the same kernel two ways


# ------------------------------------------------------- issue 34: models that are not one
# output per example, parameters of another model, keyword arguments no method takes
def test_from_flax_refuses_keyword_arguments_and_variables_that_are_not_this_modules():
    nn = pytest.importorskip("flax.linen")

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            return nn.Dense(2, param_dtype=F64)(nn.tanh(nn.Dense(8, param_dtype=F64)(x)))

    module, x = Net(), data(0, 3)
    variables = module.init(jax.random.PRNGKey(0), x)
    with pytest.raises(TypeError, match=r"^from_flax: expected keyword arguments of "
                                        r"Net.__call__\(train\), got \['trian'\]"):
        ntkcond.from_flax(module, variables, trian=False)
    for kw in ("mutable", "rngs", "capture_intermediates"):
        with pytest.raises(ValueError, match=rf"^from_flax: expected no {kw}="):
            ntkcond.from_flax(module, variables, **{kw: True})
    assert ntkcond.from_flax(module, variables, train=False).empirical_ntk(x).shape == (3, 3)
    # a superset of the module's parameters: flax would ignore the extra ones unseen
    extra = {"params": {**variables["params"], "unused": {"kernel": jnp.ones((3, 3), F64)}}}
    with pytest.raises(ValueError, match=r"^from_flax: expected variables\['params'\] of this "
                                         r"module .* unknown \[\"\['unused'\]\['kernel'\]\"\]"):
        ntkcond.from_flax(module, extra).empirical_ntk(x)
    # another model's parameters given to this model's apply_fn
    net = ntkcond.from_flax(module, variables)
    other = nn.Dense(2, param_dtype=F64).init(jax.random.PRNGKey(1), x)["params"]
    with pytest.raises(ValueError, match=r"^from_flax: expected params of this model \(4 leaves"):
        ntkcond.empirical_ntk_fn(net.apply_fn)(other, x)
    with pytest.raises(ValueError, match=r"^from_flax: expected params of this model"):
        jax.jit(ntkcond.empirical_ntk_fn(net.apply_fn))(other, x)  # shapes: checked traced too


def test_models_that_are_not_one_output_per_example_are_refused():
    """A linen model returning one scalar per batch, an NNX model that centres its batch
    (x − x.mean(0)): each was accepted and gave the kernel of another function."""
    nn = pytest.importorskip("flax.linen")
    nnx = pytest.importorskip("flax.nnx")

    class Total(nn.Module):
        @nn.compact
        def __call__(self, x):
            return jnp.sum(nn.Dense(1, param_dtype=F64)(x))

    x = data(0, 5)
    net = ntkcond.from_flax(Total(), Total().init(jax.random.PRNGKey(0), x))
    with pytest.raises(ValueError, match=r"^empirical_ntk_fn: expected apply_fn\(params, x\) to "
                                         r"return one output per example.*got a scalar"):
        net.empirical_ntk(x)

    class Centred(nnx.Module):
        def __init__(self, rngs):
            self.l = nnx.Linear(5, 2, param_dtype=F64, rngs=rngs)

        def __call__(self, x):
            return self.l(x - x.mean(0))

    with pytest.raises(ValueError, match=r"^empirical_ntk_fn: expected apply_fn to act on the "
                                         r"examples independently"):
        ntkcond.from_nnx(Centred(nnx.Rngs(0))).empirical_ntk(x)


def test_nnx_and_equinox_apply_fns_refuse_another_models_params():
    nnx = pytest.importorskip("flax.nnx")
    eqx = pytest.importorskip("equinox")
    x = data(0, 3)
    net = ntkcond.from_nnx(nnx_mlp(nnx))
    small = ntkcond.from_nnx(nnx.Linear(5, 2, param_dtype=F64, rngs=nnx.Rngs(1)))
    with pytest.raises(ValueError, match=r"^from_nnx: expected params of this model \(6 leaves"):
        ntkcond.empirical_ntk_fn(net.apply_fn)(small.params, x)
    mlp = ntkcond.from_equinox(eqx.nn.MLP(5, 2, 8, 2, key=jax.random.PRNGKey(0)))
    wide = ntkcond.from_equinox(eqx.nn.MLP(5, 2, 9, 2, key=jax.random.PRNGKey(0)))
    with pytest.raises(ValueError, match=r"^from_equinox: expected params of this model .* "
                                         r"shapes .* where the model has \(8, 5\)"):
        ntkcond.empirical_ntk_fn(mlp.apply_fn)(wide.params, x)
