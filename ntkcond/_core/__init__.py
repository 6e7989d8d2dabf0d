"""Private shared internals of ntkcond: input validators (``checks``; ``arrays`` for the array
arguments of the JAX kernels), scoped float64 for JAX (``x64``), atomic file output (``io``)
and memory checks (``memory``).

Nothing here imports an ntkcond module outside ``_core``; every ntkcond layer may import
from here. The names are public within ``_core`` (``ntkcond._core.checks.as_depth``) so that no
module takes a ``_name`` from a sibling; none of them is part of the user-facing API.
"""
