"""Networks as objects: layers that carry their infinite-width kernel maps and their
finite-width ``init``/``apply``, stacked into one object that every route evaluates.

Modules:
  ``state``   the kernel state of a block of pairs (NNGP and NTK 2 × 2 blocks, their gaps,
              the power-of-two scales carried apart);
  ``layers``  ``Dense``, ``Nonlinearity``, ``Identity``, ``FanOut``, ``FanInSum``,
              ``Parallel``, ``Serial`` (neural-tangents' layer algebra) and
              ``homogeneous_chain`` (the stacks the fast angle recursion serves);
  ``spatial`` convolutional kernel states (per pixel, or per pixel pair) and their maps;
  ``conv``    ``Conv``, ``AvgPool``, and the read-outs ``Flatten`` and ``GlobalAvgPool``;
  ``mlp``     ``MLPFamily``: the fully-connected nets of ``infinite_ntk``'s keywords at every
              depth, and ``resolve_mlp``, their one validator;
  ``cnn``     ``CNNFamily``: the convolutional nets of the sweeps (``--arch cnn``), and
              ``resolve_cnn``.

``ntkcond.stax`` wraps these layers in neural-tangents' interface; ``ntkcond.infinite.engine``
evaluates them on data.
"""
from .cnn import CNNFamily, resolve_cnn, resolve_cnns
from .conv import AvgPool, Conv, Flatten, GlobalAvgPool
from .layers import (Dense, FanInSum, FanOut, HomogeneousChain, Identity, Layer, Nonlinearity,
                     Parallel, Serial, homogeneous_chain, leaves, serial)
from .mlp import NET_KEYS, MLPFamily, NetFamily, resolve_mlp, resolve_mlps
from .spatial import SpatialState
from .state import KernelRangeError, PairState

__all__ = ["Layer", "Dense", "Conv", "AvgPool", "GlobalAvgPool", "Flatten", "SpatialState",
           "Nonlinearity", "Identity", "FanOut", "FanInSum", "Parallel", "Serial", "serial",
           "leaves", "HomogeneousChain", "homogeneous_chain", "NetFamily", "MLPFamily",
           "CNNFamily", "resolve_mlp", "resolve_mlps", "resolve_cnn", "resolve_cnns", "NET_KEYS",
           "PairState", "KernelRangeError"]
