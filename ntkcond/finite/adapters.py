"""Models people write — Flax (linen and NNX) and Equinox — as ``apply_fn(params, x)`` nets.

Each adapter splits a model into its trainable weights θ (``ModelNet.params``) and
everything else (batch-norm running statistics, RNG state, static structure), which is
closed over, so that

    Θ(x, x') = Σ_p ∂f(θ, x)/∂θ_p ∂f(θ, x')/∂θ_p    over all trainable θ_p           (1)

is ``ntkcond.empirical_ntk_fn(net.apply_fn)(net.params, x, x')``: the exact empirical NTK of
the model as it is evaluated for inference. Batch statistics are not parameters of the NTK;
a model whose batch norm or dropout is in training mode (outputs that depend on the other
examples of the batch, or on random masks) is refused: call ``model.eval()`` (NNX) or
``eqx.nn.inference_mode(model)`` (Equinox), or pass ``use_running_average=True`` /
``deterministic=True`` (linen) first.

  ``from_flax(module, variables)``  linen: θ = ``variables["params"]``; other collections
                                    (``batch_stats``, ...) are closed over.
  ``from_nnx(model)``               NNX: θ = the ``nnx.Param`` state of ``nnx.split``.
  ``from_equinox(model, state)``    Equinox: θ = the inexact (floating) arrays of the model
                                    (``eqx.is_inexact_array``); ``state`` (``eqx.nn.State``)
                                    is closed over; the model acts on one example and is
                                    ``vmap``-ed over the rows of x.

flax and equinox (the ``models`` extra) are imported only when an adapter is called.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from .._core.arrays import check_param_leaves
from .generic import empirical_ntk_fn

__all__ = ["ModelNet", "from_flax", "from_nnx", "from_equinox"]

_EXTRA = "pip install 'ntkcond[models]'"


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class ModelNet:
    """A model as ``apply_fn(params, x)`` and its trainable ``params`` (from ``from_flax``,
    ``from_nnx`` or ``from_equinox``).

    Attributes:
      apply_fn: f(params, x) → outputs (n, ...) for inputs x of shape (n, ...), examples
        independent; non-trainable state (batch statistics, RNG state) closed over.
      params: the pytree θ of trainable weights: ``empirical_ntk_fn(apply_fn)(params, x)``
        is the NTK over exactly these, eq. (1) of ``ntkcond.finite.adapters``.
      framework: "flax.linen", "flax.nnx" or "equinox".
    """

    apply_fn: Callable
    params: object
    framework: str
    _fns: dict = dataclasses.field(default_factory=dict, compare=False)

    @property
    def n_params(self) -> int:
        """The number of trainable parameters P (the Jacobian's width)."""
        import jax

        return sum(int(leaf.size) for leaf in jax.tree_util.tree_leaves(self.params))

    def __repr__(self):
        return f"ModelNet(framework={self.framework!r}, n_params={self.n_params})"

    def empirical_ntk(self, x1, x2=None, *, full_outputs=False, method="jacobian",
                      memory_budget=1 << 30):
        """``ntkcond.empirical_ntk_fn(apply_fn, ...)(params, x1, x2)``: (n1, n2) or, with
        ``full_outputs``, (n1, n2, O, O); options, dtype and errors as there."""
        key = (bool(full_outputs), method, memory_budget)
        if key not in self._fns:
            self._fns[key] = empirical_ntk_fn(self.apply_fn, method=method, full_outputs=full_outputs,
                                              memory_budget=memory_budget)
        return self._fns[key](self.params, x1, x2)


def _missing(package: str, where: str) -> ImportError:
    return ImportError(f"{where}: needs {package} ({_EXTRA})")


def _wrong_framework(model, where: str) -> str:
    """A hint naming the adapter for ``model``'s framework, if it is another one's model."""
    kind = type(model).__module__ or ""
    for prefix, hint in (("flax.nnx", "from_nnx"), ("flax.linen", "from_flax"), ("equinox", "from_equinox")):
        if kind.startswith(prefix) or any(c.__module__.startswith(prefix) for c in type(model).__mro__):
            return f" (a {prefix} model: use ntkcond.{hint})" if hint != where else ""
    return ""


def _trainable(params, where: str, name: str):
    """ValueError for no trainable parameter; the leaf checks of ``check_param_leaves``."""
    import jax

    if not jax.tree_util.tree_leaves(params):
        raise ValueError(f"{where}: expected a model with trainable parameters, got none in {name}")
    check_param_leaves(params, where, name)
    return params


def _traced(x) -> bool:
    import jax

    return isinstance(x, jax.core.Tracer)


def _signature(params):
    """[(path, shape)] of a parameter pytree: what two models' parameters must share."""
    import jax
    import numpy as np

    return [(jax.tree_util.keystr(path), tuple(np.shape(leaf)))
            for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]]


def _differences(got, want) -> str:
    """What differs between two ``_signature`` lists: unknown and missing paths, other shapes."""
    g, w = dict(got), dict(want)
    parts = [f"unknown {sorted(set(g) - set(w))[:3]}" if set(g) - set(w) else "",
             f"missing {sorted(set(w) - set(g))[:3]}" if set(w) - set(g) else "",
             "shapes " + ", ".join(f"{p} {g[p]} where the model has {w[p]}"
                                   for p in sorted(set(g) & set(w)) if g[p] != w[p])
             if any(g[p] != w[p] for p in set(g) & set(w)) else ""]
    return "; ".join(part for part in parts if part) or "another tree structure"


def _check_structure(params, reference, where: str) -> None:
    """ValueError unless ``params`` has the paths and leaf shapes of this model's own
    parameters (``reference``): another model's parameters would give a raw error deep inside
    the model, or the NTK of another function. Shapes are static, so this holds under a trace."""
    got, want = _signature(params), _signature(reference)
    if got != want:
        raise ValueError(f"{where}: expected params of this model ({len(want)} leaves, as its "
                         f".params), got another pytree ({len(got)} leaves): "
                         f"{_differences(got, want)}")


def _check_apply_kwargs(module, kwargs, where: str) -> None:
    """TypeError/ValueError for keyword arguments that ``module.apply`` would not pass to the
    method it calls, or that make it something other than a deterministic function of x."""
    import inspect

    for name, why in (("mutable", "it returns the updated collections with the output (batch "
                       "norm in training mode)"), ("rngs", "a random function of x has no NTK "
                       "(dropout: pass deterministic=True)"), ("capture_intermediates",
                       "it returns the intermediates with the output")):
        if name in kwargs:
            raise ValueError(f"{where}: expected no {name}= (the NTK is of a deterministic "
                             f"function x -> output), got {name}={kwargs[name]!r}: {why}")
    method = kwargs.get("method", None)
    target = getattr(module, method) if isinstance(method, str) else (method or module.__call__)
    call = {k: v for k, v in kwargs.items() if k != "method"}
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # a builtin or C method: nothing to check against
        return
    try:
        signature.bind_partial(None, **call)  # None: the input x
    except TypeError as err:
        names = [p for p in signature.parameters if p != "self"][1:]
        raise TypeError(f"{where}: expected keyword arguments of {type(module).__name__}."
                        f"{getattr(target, '__name__', '__call__')}({', '.join(names)}), got "
                        f"{sorted(call)}: {err}") from None


def _check_fit(module, params, x, apply_kwargs, where: str) -> None:
    """ValueError unless ``params`` has the paths and shapes ``module.init`` gives for inputs
    like x (flax ignores parameters the module never asks for: another model's variables with
    these and more would pass unseen)."""
    import jax

    key = jax.random.PRNGKey(0)
    shapes = jax.eval_shape(lambda: module.init({"params": key, "dropout": key}, x, **apply_kwargs))
    got, want = _signature(params), _signature(shapes.get("params", {}))
    if got != want:
        raise ValueError(f"{where}: expected variables['params'] of this module (module.init "
                         f"gives {len(want)} leaves for these inputs), got {len(got)}: "
                         f"{_differences(got, want)} (the variables of another model?)")


# ------------------------------------------------------------------------------ flax linen
def from_flax(module, variables, **apply_kwargs) -> ModelNet:
    """A Flax linen module and its variables as an NTK-ready ``ModelNet``, eq. (1).

    θ = ``variables["params"]``; every other collection (``batch_stats``, ``cache``, ...)
    is closed over: ``apply_fn(params, x) = module.apply({**variables, "params": params}, x,
    **apply_kwargs)``.

    Args:
      module: a ``flax.linen.Module`` acting on a batch x of shape (n, ...) row by row.
      variables: ``module.init(key, x)``'s dict (or FrozenDict) with a ``"params"``
        collection.
      **apply_kwargs: passed to ``module.apply``, e.g. ``train=False`` or
        ``use_running_average=True`` for a module with ``nn.BatchNorm``.

    Returns:
      ``ntkcond.finite.ModelNet`` (``framework="flax.linen"``): ``.apply_fn(params, x)``,
      ``.params`` (θ), ``.n_params`` and ``.empirical_ntk(x1, x2=None)``.

    Raises:
      TypeError: module not a linen Module; variables not a mapping; a keyword argument that
        the module's ``__call__`` (or ``method``) does not take.
      ValueError: no ``"params"`` collection (e.g. ``variables["params"]`` passed instead of
        the whole dict), no parameter, or a NaN/Inf/non-numeric leaf (named by its path);
        ``mutable``, ``rngs`` or ``capture_intermediates`` (not a deterministic x → output).
        From ``apply_fn``: variables that do not fit the module (checked against
        ``module.init``'s shapes on the first call with values: another model's variables,
        even a superset of this one's), params that are not this model's (paths and shapes),
        or a module that would update a collection (batch norm in training mode) or needs an
        RNG (dropout).
      ImportError: flax is not installed (the ``models`` extra).

    Example:
      >>> module = MLP()                          # a flax.linen.Module
      >>> net = ntkcond.from_flax(module, module.init(key, x))
      >>> K = ntkcond.empirical_ntk_fn(net.apply_fn)(net.params, x)
    """
    where = "from_flax"
    try:
        from flax import errors, linen
    except ImportError as e:
        raise _missing("flax", where) from e
    if not isinstance(module, linen.Module):
        raise TypeError(f"{where}: expected module as a flax.linen.Module, got "
                        f"{type(module).__name__}{_wrong_framework(module, where)}")
    if not isinstance(variables, Mapping):
        raise TypeError(f"{where}: expected variables as the dict of module.init(key, x), got "
                        f"{type(variables).__name__}")
    if "params" not in variables or not isinstance(variables["params"], Mapping):
        raise ValueError(f"{where}: expected variables with a 'params' collection (the whole "
                         f"dict of module.init(key, x)), got keys {sorted(map(str, variables))}")
    params = _trainable(variables["params"], where, "variables['params']")
    _check_apply_kwargs(module, apply_kwargs, where)
    rest = {k: v for k, v in variables.items() if k != "params"}
    fitted = []  # the variables were checked against module.init on the first concrete call

    def apply_fn(params, x):
        _check_structure(params, variables["params"], where)
        try:
            if not fitted and not _traced(x):
                _check_fit(module, variables["params"], x, apply_kwargs, where)
                fitted.append(True)
            return module.apply({**rest, "params": params}, x, **apply_kwargs)
        except errors.FlaxError as e:
            raise ValueError(f"{where}: module.apply failed with these variables (do they fit the "
                             f"module? batch norm needs use_running_average=True, dropout "
                             f"deterministic=True): {e}") from e

    return ModelNet(apply_fn, params, "flax.linen")


# -------------------------------------------------------------------------------- flax nnx
def from_nnx(model, *, trainable=None) -> ModelNet:
    """A Flax NNX module as an NTK-ready ``ModelNet``, eq. (1).

    ``graphdef, params, rest = nnx.split(model, trainable, ...)``: θ = params, the rest
    (``nnx.BatchStat``, RNG state, ...) is closed over, and ``apply_fn(params, x) =
    nnx.merge(graphdef, params, rest)(x)``; ``model`` itself is not modified.

    Args:
      model: an ``nnx.Module`` acting on a batch x of shape (n, ...) row by row, in
        evaluation mode (``model.eval()``) if it has ``nnx.BatchNorm`` or ``nnx.Dropout``.
      trainable: an NNX filter of the trainable variables; None → ``nnx.Param``.

    Returns:
      ``ntkcond.finite.ModelNet`` (``framework="flax.nnx"``): ``.apply_fn(params, x)``,
      ``.params`` (θ), ``.n_params`` and ``.empirical_ntk(x1, x2=None)``.

    Raises:
      TypeError: model not an NNX Module.
      ValueError: a BatchNorm or Dropout in training mode (named by its path); no trainable
        parameter; a NaN/Inf/non-numeric parameter (named by its path). From ``apply_fn``:
        params that are not this model's (other paths or shapes).
      ImportError: flax is not installed (the ``models`` extra).
    """
    where = "from_nnx"
    try:
        from flax import nnx
    except ImportError as e:
        raise _missing("flax", where) from e
    if not isinstance(model, nnx.Module):
        raise TypeError(f"{where}: expected model as a flax.nnx.Module, got "
                        f"{type(model).__name__}{_wrong_framework(model, where)}")
    for path, node in nnx.iter_graph(model):
        if ((isinstance(node, nnx.BatchNorm) and not node.use_running_average)
                or (isinstance(node, nnx.Dropout) and not node.deterministic)):
            raise ValueError(f"{where}: expected model in evaluation mode, got {type(node).__name__} "
                             f"at {'.'.join(map(str, path)) or 'model'} in training mode; call "
                             "model.eval() first (batch statistics are not NTK parameters)")
    graphdef, params, rest = nnx.split(model, nnx.Param if trainable is None else trainable, ...)
    params = _trainable(params, where, "params")

    reference = params

    def apply_fn(params, x):
        _check_structure(params, reference, where)
        return nnx.merge(graphdef, params, rest)(x)

    return ModelNet(apply_fn, params, "flax.nnx")


# -------------------------------------------------------------------------------- equinox
def from_equinox(model, state=None, *, trainable=None) -> ModelNet:
    """An Equinox module as an NTK-ready ``ModelNet``, eq. (1).

    ``params, static = eqx.partition(model, trainable)``: θ = params, and
    ``apply_fn(params, x) = vmap(m)(x)`` with ``m = eqx.combine(params, static)`` (Equinox
    models act on one example), or ``vmap(lambda xi: m(xi, state)[0])(x)`` with the
    ``eqx.nn.State`` closed over for a stateful model (``eqx.nn.make_with_state``).

    Args:
      model: an ``eqx.Module`` mapping one example to its output, in inference mode
        (``eqx.nn.inference_mode(model)``) if it has ``eqx.nn.BatchNorm`` or ``eqx.nn.Dropout``.
      state: None, or the ``eqx.nn.State`` of a stateful model (batch-norm statistics):
        closed over, not a parameter.
      trainable: an ``eqx.partition`` filter; None → ``eqx.is_inexact_array`` (every
        floating array of the model).

    Returns:
      ``ntkcond.finite.ModelNet`` (``framework="equinox"``): ``.apply_fn(params, x)``,
      ``.params`` (θ), ``.n_params`` and ``.empirical_ntk(x1, x2=None)``.

    Raises:
      TypeError: model not an Equinox Module; state not an ``eqx.nn.State``.
      ValueError: a BatchNorm or Dropout not in inference mode; a stateful model without
        ``state``; no trainable parameter; a NaN/Inf/non-numeric parameter (named by its path).
        From ``apply_fn``: params that are not this model's (other paths or shapes).
      ImportError: equinox is not installed (the ``models`` extra).
    """
    where = "from_equinox"
    try:
        import equinox as eqx
    except ImportError as e:
        raise _missing("equinox", where) from e
    import jax

    if not isinstance(model, eqx.Module):
        raise TypeError(f"{where}: expected model as an equinox.Module, got "
                        f"{type(model).__name__}{_wrong_framework(model, where)}")
    if state is not None and not isinstance(state, eqx.nn.State):
        raise TypeError(f"{where}: expected state as None or an eqx.nn.State (from "
                        f"eqx.nn.make_with_state), got {type(state).__name__}")
    modal = (eqx.nn.BatchNorm, eqx.nn.Dropout)
    for node in jax.tree_util.tree_leaves(model, is_leaf=lambda n: isinstance(n, modal)):
        if isinstance(node, modal) and not node.inference:
            raise ValueError(f"{where}: expected model in inference mode, got {type(node).__name__} "
                             "with inference=False; pass eqx.nn.inference_mode(model) (batch "
                             "statistics are not NTK parameters)")
    stateful = lambda n: isinstance(n, eqx.nn.StateIndex)
    if state is None and any(map(stateful, jax.tree_util.tree_leaves(model, is_leaf=stateful))):
        raise ValueError(f"{where}: expected the state of a stateful model (it has an "
                             "eqx.nn.StateIndex, e.g. BatchNorm), got state=None; pass the "
                             "state from eqx.nn.make_with_state")
    params, static = eqx.partition(model, eqx.is_inexact_array if trainable is None else trainable)
    params = _trainable(params, where, "params")

    reference = params

    def apply_fn(params, x):
        _check_structure(params, reference, where)
        m = eqx.combine(params, static)
        one = (lambda xi: m(xi)) if state is None else (lambda xi: m(xi, state)[0])
        return jax.vmap(one)(x)

    return ModelNet(apply_fn, params, "equinox")
