"""Networks as objects: layers that carry their infinite-width kernel maps and their
finite-width ``init``/``apply``, stacked into one object that every route evaluates.

Modules:
  ``state``   the kernel state of a block of pairs (NNGP and NTK 2 × 2 blocks, their gaps,
              the power-of-two scales carried apart);
  ``layers``  ``Dense``, ``Nonlinearity``, ``Identity``, ``FanOut``, ``FanInSum``,
              ``Parallel``, ``Serial`` (neural-tangents' layer algebra) and
              ``homogeneous_chain`` (the stacks the fast angle recursion serves);
  ``mlp``     ``MLPFamily``: the fully-connected nets of ``infinite_ntk``'s keywords at every
              depth, and ``resolve_mlp``, their one validator.

``ntkcond.stax`` wraps these layers in neural-tangents' interface; ``ntkcond.infinite.engine``
evaluates them on data.
"""
from .layers import (Dense, FanInSum, FanOut, HomogeneousChain, Identity, Layer, Nonlinearity,
                     Parallel, Serial, homogeneous_chain, leaves, serial)
from .mlp import NET_KEYS, MLPFamily, resolve_mlp, resolve_mlps
from .state import KernelRangeError, PairState

__all__ = ["Layer", "Dense", "Nonlinearity", "Identity", "FanOut", "FanInSum", "Parallel",
           "Serial", "serial", "leaves", "HomogeneousChain", "homogeneous_chain", "MLPFamily",
           "resolve_mlp", "resolve_mlps", "NET_KEYS", "PairState", "KernelRangeError"]
