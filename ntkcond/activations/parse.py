"""One parser for every spelling of an activation: ``parse_activation`` (and
``parse_activations`` for lists), validated once at the public boundary.

Accepted spellings: a name of ``REGISTRY`` (``activation_names()``: relu, linear, abs, erf,
gelu, gelu_tanh, sin, tanh, softplus, silu), ``"identity"`` (linear), ``"leaky:α"`` /
``"leaky_relu:α"`` and ``("leaky_relu", α)`` with α ∈ [−1, 1], a real slope α, an activation
object (``ActivationFunction``), or an elementwise callable (checked: ``check_callable``).
"""
from __future__ import annotations

import numbers

import numpy as np

from .base import REGISTRY, ActivationFunction
from .custom import CallableActivation, check_callable
from .leaky import Activation

__all__ = ["parse_activation", "parse_activations", "activation_names", "activations_help",
           "norm_preserving_scale", "parse_unit_slope", "parse_angle_activation"]

_ALIASES = {"identity": "linear"}


def activation_names() -> tuple:
    """The registered names, in registration order (``REGISTRY``)."""
    return tuple(REGISTRY)


def activations_help() -> str:
    """The accepted spellings in words, from the registry: for help texts and errors."""
    names = [n for n in REGISTRY if REGISTRY[n].homogeneous] + ["leaky:A (slope A in [-1, 1])"]
    smooth = [n for n in REGISTRY if not REGISTRY[n].homogeneous]
    return ", ".join(names + smooth)


def _expected() -> str:
    return ("one of " + ", ".join(repr(n) for n in REGISTRY)
            + ", 'leaky:<alpha>' with alpha in [-1, 1], ('leaky_relu', alpha), a real slope, an "
            "activation object or an elementwise callable")


def parse_activation(activation, where: str | None = None) -> ActivationFunction:
    """Turn any accepted spelling of an activation into an activation object.

    Args:
      activation: a registered name (``activation_names()``), ``"identity"``, ``"leaky:α"``,
        ``("leaky_relu", α)`` or a real α (α ∈ [−1, 1]), an ``ActivationFunction``, or an
        elementwise callable (checked by ``check_callable``).
      where: the public function to name in errors (``"infinite_ntk: activation: …"``);
        None: ``parse_activation`` itself.

    Returns:
      the activation object (``Activation`` for the leaky family, ``Erf``, ``Gelu``, …,
      ``CallableActivation`` for a callable).

    Raises:
      ValueError: unknown name, slope outside [−1, 1], a callable that is not elementwise,
        not finite or identically zero.
      TypeError: a value of an unsupported type.
    """
    if where is None:
        return _parse(activation)
    try:
        return _parse(activation)
    except (TypeError, ValueError) as err:  # name the caller, not the parser
        message = str(err).removeprefix("parse_activation: ").removeprefix("Activation: ")
        raise type(err)(f"{where}: activation: {message}") from None


def _slope(value, given):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"parse_activation: expected a real slope, got {given!r}")
    value = float(value)
    if not np.isfinite(value) or not -1.0 <= value <= 1.0:
        raise ValueError(f"parse_activation: expected a leaky-ReLU slope in [-1, 1], got {given!r}")
    return Activation(value)


def _parse(activation) -> ActivationFunction:
    if isinstance(activation, ActivationFunction):
        return activation
    if isinstance(activation, str):
        key = activation.strip().lower()
        key = _ALIASES.get(key, key)
        if key in REGISTRY:
            return REGISTRY[key]
        head, sep, tail = key.partition(":")
        if sep and head in ("leaky", "leaky_relu"):
            try:
                value = float(tail)
            except ValueError:
                raise ValueError(f"parse_activation: expected 'leaky:<slope>' with a number, got "
                                 f"{activation!r}") from None
            return _slope(value, activation)
        raise ValueError(f"parse_activation: expected {_expected()}, got {activation!r}")
    if isinstance(activation, tuple):
        if len(activation) == 2 and activation[0] in ("leaky_relu", "leaky"):
            return _slope(activation[1], activation[1])
        raise ValueError(f"parse_activation: expected ('leaky_relu', alpha), got the tuple "
                         f"{activation!r}")
    if isinstance(activation, numbers.Real) and not isinstance(activation, (bool, np.bool_)):
        return _slope(activation, activation)
    if callable(activation) and not isinstance(activation, type):
        name = getattr(activation, "__name__", None) or type(activation).__name__
        check_callable(activation, name)
        return CallableActivation(activation, name)
    raise TypeError("parse_activation: expected a str, a ('leaky_relu', alpha) tuple, a real "
                    f"slope, an activation object or an elementwise callable, got "
                    f"{type(activation).__name__}")


def parse_activations(activations, where: str) -> list:
    """A list of activations: one spelling (a str such as "relu", an activation object or a
    callable) is one activation; otherwise an iterable of spellings (``parse_activation``).
    ValueError for none, or for the same activation twice (also spelled differently, e.g.
    "relu" and "ReLU"), naming ``where``."""
    if isinstance(activations, (str, ActivationFunction)) or (
            callable(activations) and not isinstance(activations, type)):
        activations = [activations]
    try:
        items = list(activations)
    except TypeError:
        raise TypeError(f"{where}: expected activations as a spelling such as 'relu' or a list of "
                        f"them, got {type(activations).__name__} {activations!r}") from None
    try:
        acts = [parse_activation(a) for a in items]
    except (TypeError, ValueError) as err:  # name the caller, not the parser
        message = str(err).removeprefix("parse_activation: ")
        raise type(err)(f"{where}: activations: {message}") from None
    if not acts:
        raise ValueError(f"{where}: expected at least one activation, got none")
    names = [a.name for a in acts]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{where}: expected each activation once, got {dup} more than once in "
                         f"{items!r}")
    return acts


def norm_preserving_scale(activation) -> float:
    """c = 1/E[σ(z)²] for z ~ N(0, 1): 2/(1 + α²) for the leaky family (2 for ReLU, 1 for
    linear and |z|), eq. (1) of ``ntkcond.activations.leaky``.

    Raises ValueError for activations that are not homogeneous (no such scale exists).
    """
    act = parse_activation(activation, "norm_preserving_scale")
    if not act.homogeneous:
        raise ValueError(f"norm_preserving_scale: activation {act.name!r} is not homogeneous; "
                         "the norm-preserving scale exists for the leaky family only")
    return act.norm_preserving_scale


def parse_unit_slope(activation, where: str = "parse_activation") -> Activation:
    """``parse_activation`` restricted to leaky slopes α ∈ [0, 1] (ReLU … linear): the range
    of the bias-free theory of Zhang, Saxe & Latham (arXiv 2406.12615)."""
    try:
        act = parse_activation(activation, where)
    except ValueError as err:
        if "slope in [-1, 1]" not in str(err):
            raise
        raise ValueError(f"{where}: expected a leaky-ReLU slope in [0, 1], got "
                         f"{activation!r}") from None
    if not isinstance(act, Activation) or not 0.0 <= act.slope <= 1.0:
        raise ValueError(f"{where}: expected a leaky-ReLU slope in [0, 1], got {act.name!r}")
    return act


def parse_angle_activation(activation, where: str) -> Activation:
    """The leaky ``Activation`` whose angle map ``activation`` has (itself for the leaky
    family, the base of a scaled one): for the routes written for bias-free homogeneous nets
    (closed-form angle maps, their certificates, power series); ValueError naming ``where``
    for an activation that is not homogeneous."""
    act = parse_activation(activation, where)
    if not act.homogeneous:
        raise ValueError(
            f"{where}: activation {act.name!r} is not homogeneous; this route covers the leaky "
            "family (relu, linear, abs, leaky:<alpha>) and its scalings only (the general "
            "kernels take any activation: ntkcond.infinite_ntk with w_std)")
    return act.angle_activation

