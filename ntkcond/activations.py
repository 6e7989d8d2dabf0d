"""Activations of bias-free networks: ReLU, leaky ReLU and linear, as one slope α.

Every activation ntkcond knows is a leaky ReLU σ_α(z) = max(z, αz) with slope α ∈ [0, 1]:
α = 0 is ReLU and α = 1 is the identity (a linear network). Layers are norm-preserving:
each pre-activation is scaled by √c with

    c = 1 / E_{z~N(0,1)}[σ_α(z)²] = 2 / (1 + α²)                                  (1)

(c = 2 for ReLU, 1 for linear), so that E[(√c σ(z))²] = E[z²] and the kernel diagonal does not
change with depth (Liu & Hui, arXiv 2305.08813; He et al. 2015 for ReLU).

Accepted spellings of an activation (``parse_activation``):
``"relu"``, ``"linear"`` (also ``"identity"``), ``("leaky_relu", α)``, a float slope α,
and the command-line forms ``"leaky:α"`` / ``"leaky_relu:α"``.
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np

__all__ = ["Activation", "parse_activation", "parse_activations", "norm_preserving_scale"]


@dataclasses.dataclass(frozen=True)
class Activation:
    """A leaky-ReLU family activation σ(z) = max(z, slope·z), slope α ∈ [0, 1].

    Attributes:
      slope: α. 0 is ReLU, 1 is linear.
    """

    slope: float

    @property
    def name(self) -> str:
        """Canonical name: ``relu``, ``linear`` or ``leaky:α``."""
        if self.slope == 0.0:
            return "relu"
        if self.slope == 1.0:
            return "linear"
        return f"leaky:{self.slope:g}"

    @property
    def is_linear(self) -> bool:
        return self.slope == 1.0

    @property
    def scale(self) -> float:
        """c = 2 / (1 + α²), eq. (1): the norm-preserving variance factor."""
        return 2.0 / (1.0 + self.slope**2)

    def __call__(self, z):
        """σ(z) = max(z, αz), elementwise; works on numpy and jax arrays."""
        if self.slope == 1.0:
            return z
        return z * ((z > 0) + self.slope * (z <= 0))

    def __str__(self) -> str:
        return self.name


_NAMES = {"relu": 0.0, "linear": 1.0, "identity": 1.0}


def parse_activation(activation) -> Activation:
    """Turn any accepted spelling of an activation into an ``Activation``.

    Args:
      activation: ``"relu"``, ``"linear"``, ``("leaky_relu", α)``, a float α in [0, 1],
        ``"leaky:α"``, or an ``Activation``.

    Raises:
      ValueError: unknown name, or slope outside [0, 1].
      TypeError: a value of an unsupported type.
    """
    if isinstance(activation, Activation):
        return activation
    slope = None
    if isinstance(activation, str):
        key = activation.strip().lower()
        if key in _NAMES:
            slope = _NAMES[key]
        elif ":" in key and key.split(":", 1)[0] in ("leaky", "leaky_relu"):
            try:
                slope = float(key.split(":", 1)[1])
            except ValueError:
                raise ValueError(
                    f"parse_activation: expected 'leaky:<slope>' with a number, got {activation!r}"
                ) from None
        else:
            raise ValueError(
                "parse_activation: expected 'relu', 'linear', ('leaky_relu', alpha), "
                f"'leaky:<alpha>' or a float slope in [0, 1], got {activation!r}"
            )
    elif isinstance(activation, tuple) and len(activation) == 2 and activation[0] in (
        "leaky_relu",
        "leaky",
    ):
        slope = activation[1]
        if not isinstance(slope, numbers.Real) or isinstance(slope, bool):
            raise TypeError(
                f"parse_activation: expected a real slope in ('leaky_relu', alpha), got {slope!r}"
            )
    elif isinstance(activation, numbers.Real) and not isinstance(activation, bool):
        slope = activation
    elif isinstance(activation, tuple):
        raise ValueError(
            f"parse_activation: expected ('leaky_relu', alpha), got the tuple {activation!r}"
        )
    else:
        raise TypeError(
            "parse_activation: expected a str, a ('leaky_relu', alpha) tuple or a float slope, "
            f"got {type(activation).__name__}"
        )
    slope = float(slope)
    if not np.isfinite(slope) or not 0.0 <= slope <= 1.0:
        raise ValueError(f"parse_activation: expected a leaky-ReLU slope in [0, 1], got {slope!r}")
    return Activation(slope)


def parse_activations(activations, where: str) -> list[Activation]:
    """A list of activations: one spelling (a str such as "relu", or an ``Activation``) is
    one activation; otherwise an iterable of spellings (``parse_activation``). ValueError for
    none, or for the same activation twice (also spelled differently, e.g. "relu" and
    "ReLU"), naming ``where``."""
    if isinstance(activations, (str, Activation)):
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
    """c = 1/E[σ(z)²] = 2/(1 + α²) for z ~ N(0, 1): 2 for ReLU, 1 for linear. Eq. (1)."""
    return parse_activation(activation).scale
