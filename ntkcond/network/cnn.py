"""The convolutional nets of the sweeps: ``CNNFamily`` (one activation, a read-out, a filter
size, weight and bias stds, every depth), built once at the public boundary by its validator
``resolve_cnn``.

The net of depth L on NHWC images (NTK parameterisation, neural-tangents' ``stax``; C channels
in every hidden layer, C → ∞ for the kernels; k × k filters, stride 1, SAME padding):

    stax.serial(*[Conv(C, (k, k), padding="SAME", W_std=s_w, b_std=s_b), σ] * L,
                Flatten() | GlobalAvgPool(), Dense(1, W_std=s_r, b_std=s_b))          (1)

``w_std=None`` is the norm-preserving choice of Liu & Hui, as for ``MLPFamily``: hidden
layers s_w² = c = 1/E[σ(z)²] (2/(1 + α²) for the leaky family), read-out s_r² = 1; otherwise
s_r = s_w. L = 0 is the read-out on the images themselves: with ``Flatten`` the linear model
x·x′/(HWC) of the fully-connected nets, with ``GlobalAvgPool`` the model of the
channel-means (a kernel of rank ≤ C). Every layer is trained.
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from ..activations import ActivationFunction, parse_activation
from .conv import Conv, Flatten, GlobalAvgPool
from .layers import Dense, Nonlinearity, Serial, check_std
from .mlp import KEYWORDS, NetFamily

__all__ = ["CNNFamily", "READOUTS", "resolve_cnn"]

#: The read-outs, by the name the flags and records use.
READOUTS = {"flatten": Flatten, "gap": GlobalAvgPool}


@dataclasses.dataclass(frozen=True)
class CNNFamily(NetFamily):
    """The convolutional nets of eq. (1) at every depth (module docstring). Build with
    ``resolve_cnn``.

    Attributes:
      act: the activation object; readout: "flatten" or "gap"; filter: k (k × k filters);
      w_std: s_w, or None for the norm-preserving net; b_std: s_b ≥ 0 (0: no biases).
    """

    act: ActivationFunction
    readout: str = "flatten"
    filter: int = 3
    w_std: float | None = None
    b_std: float = 0.0

    takes_images = True

    @property
    def homogeneous(self) -> bool:
        """Bias-free with a positively homogeneous activation."""
        return not self.b_std and self.act.homogeneous

    @property
    def is_linear(self) -> bool:
        return self.homogeneous and self.act.is_linear

    #: no residual blocks; not a fully-connected angle chain (those routes do not apply)
    plain = True
    angle_chain = False

    @property
    def name(self) -> str:
        """e.g. ``relu,arch=cnn,readout=gap,filter=3`` (w_std, b_std appended when set)."""
        return ",".join([self.act.name] + [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                           for k, v in self.options().items()])

    def options(self) -> dict:
        """What records and config.json carry: arch, readout, filter, and w_std/b_std when
        set."""
        out = {"arch": "cnn", "readout": self.readout, "filter": self.filter}
        if self.w_std is not None:
            out["w_std"] = self.w_std
        if self.b_std:
            out["b_std"] = self.b_std
        return out

    def hidden_variance(self) -> float:
        """s_w² of the convolutions: w_std², or c (exactly) for the norm-preserving net."""
        return self.act.norm_preserving_scale if self.w_std is None else self.w_std**2

    def readout_variance(self) -> float:
        """s_r² of the read-out: w_std², or 1 for the norm-preserving net."""
        return 1.0 if self.w_std is None else self.w_std**2

    def network(self, depth: int, width=None) -> Serial:
        """The layer stack of the depth-``depth`` net, eq. (1); ``width`` the channels C of
        the finite net (None: infinite width only)."""
        b = self.b_std**2 if self.b_std else None
        conv = Conv(width, (self.filter, self.filter), (1, 1), "SAME", self.hidden_variance(), b)
        stack = [conv, Nonlinearity(self.act)] * depth
        stack += [READOUTS[self.readout](),
                  Dense(None if width is None else 1, self.readout_variance(), b)]
        return Serial(tuple(stack))

    def with_activation(self, act) -> "CNNFamily":
        return resolve_cnn(act, self.w_std, self.b_std, readout=self.readout,
                           filter=self.filter, where="CNNFamily")


def resolve_cnn(activation, w_std=None, b_std=None, *, readout="flatten", filter=3,
                where: str, names: dict = KEYWORDS) -> CNNFamily:
    """The one validator of a convolutional net (eq. (1)): the ``CNNFamily``.

    Args:
      activation: any spelling of ``parse_activation``.
      w_std, b_std: as ``resolve_mlp``.
      readout: "flatten" or "gap"; filter: k ≥ 1 (k × k filters).
      where: the public function (or command flag group) to name in errors; names: what the
        options are called in messages.

    Raises:
      TypeError/ValueError naming ``where`` and the argument.
    """
    act = parse_activation(activation, where)
    w = check_std(w_std, names["w_std"], where, allow_none=True, allow_zero=False)
    b = check_std(b_std, names["b_std"], where, allow_none=True, allow_zero=True) or 0.0
    if readout not in READOUTS:
        raise ValueError(f"{where}: expected {names.get('readout', 'readout')} one of "
                         f"{', '.join(READOUTS)}, got {readout!r}")
    if isinstance(filter, (bool, np.bool_)) or not isinstance(filter, numbers.Integral) \
            or filter < 1:
        raise ValueError(f"{where}: expected {names.get('filter', 'filter')} a positive integer "
                         f"(k × k filters), got {filter!r}")
    if w is None and not act.homogeneous:
        raise ValueError(
            f"{where}: activation {act.name!r} is not homogeneous, so there is no "
            f"norm-preserving default; pass {names['w_std']} (e.g. {names['example']})")
    return CNNFamily(act, readout, int(filter), w, b)


def resolve_cnns(activations, w_std=None, b_std=None, *, readout="flatten", filter=3,
                 where: str, names: dict = KEYWORDS) -> list:
    """``resolve_cnn`` of each activation (``parse_activations``: each once)."""
    from ..activations import parse_activations

    return [resolve_cnn(a, w_std, b_std, readout=readout, filter=filter, where=where,
                        names=names) for a in parse_activations(activations, where)]


__all__ += ["resolve_cnns"]
