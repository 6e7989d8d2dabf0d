"""The NumPy block engine of ``ntkcond.scale``: one b × b block of the infinite-width NTK, or
one block's candidate smallest angles, from row-normalised inputs: the block's
``ntkcond.infinite.geometry.block_geometry`` and ``ntkcond.infinite.recursion.recursion``
(the functions of ``infinite_ntk`` and ``gradient_angles``); this module only cuts blocks
and reduces them to minima. The sharded JAX engine
(``ntkcond.scale.sharded``) computes the same blocks on devices; ``streaming`` and
``conditioning`` drive either one.
"""
from __future__ import annotations

import math

import numpy as np

from .._core.checks import sweep_layers
from ..infinite.engine import sweep
from ..infinite.geometry import block_geometry
from ..infinite.recursion import PairGeometry, angle_from

#: The key of the input angle θ₀ among the targets (the others are (net name, depth)).
INPUT = "input"


class AnglePlan:
    """What to compute per block: the targets (net, depth) and the sweep settings.

    ``nets``: the nets (``ntkcond.network.MLPFamily``, built once by the caller), each once.
    """

    def __init__(self, depths, nets, trainable, where):
        unique = []
        for net in nets:
            if net.name not in [b.name for b in unique]:
                unique.append(net)
        if not unique:
            raise ValueError(f"{where}: expected at least one activation, got none")
        #: nets with biases depend on the norms: the blocks then carry ``norms``, ``d``
        self.needs_norms = any(not net.homogeneous for net in unique)
        self.norms, self.d = None, 1
        self.depths, self.layers = sweep_layers(depths, trainable, where)
        self.nets = unique
        self.nonlinear = [net for net in unique if not (net.is_linear and net.plain)]
        self.targets = [INPUT] + [(net.name, L) for net in self.nonlinear for L in self.depths]


def block_candidates(angle, cos, valid, r0, c0, plan: AnglePlan, geometry=None) -> dict:
    """Per target, (value, i, j) of the block minimum, numpy; ``valid`` masks pairs i < j.
    ``geometry``: the block's geometry with norms, for the general nets of the plan."""
    out = {}
    ncols = angle.shape[1]

    def argmin(values):
        k = int(np.argmin(values))
        i, j = divmod(k, ncols)
        return k, r0 + i, c0 + j

    masked = np.where(valid, angle, np.inf)
    k, i, j = argmin(masked)
    if math.isfinite(masked.flat[k]):
        out[INPUT] = (float(angle.flat[k]), i, j)
    unit = PairGeometry(angle, cos)
    for net in plan.nonlinear:
        g = unit if net.homogeneous else geometry
        for L, _, R, Z in sweep(g, net, plan.depths, plan.layers, kernel=False, angles=True):
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(valid, R / Z, np.inf)  # tan²(φ/2), increasing in φ
            k, i, j = argmin(ratio)
            if ratio.flat[k] < np.inf:
                out[(net.name, L)] = (float(angle_from(R.flat[k], Z.flat[k])), i, j)
    return out


def numpy_angle_block(xh, r0, r1, c0, c1, plan: AnglePlan, x=None) -> dict:
    """Candidates of the block rows r0:r1 × columns c0:c1 (only pairs i < j).

    ``x``: the rows xh was normalised from; with them the pairs near 0 or π are exact for the
    data (``ntkcond.infinite.geometry.unit_geometry``).
    """
    g = block_geometry(xh, xh, r0, r1, c0, c1, symmetric=True, x1=x, norms1=plan.norms,
                       norms2=plan.norms, d=plan.d)
    angle, cos = g.angle, g.cos
    valid = (np.arange(r0, r1)[:, None] < np.arange(c0, c1)[None, :])
    return block_candidates(angle, cos, valid, r0, c0, plan, g if plan.needs_norms else None)


def merge_candidates(best: dict, cand: dict) -> None:
    """Keep the smaller (value, i, j) per target: lexicographic, so ties go to row-major first."""
    for key, item in cand.items():
        if key not in best or item < best[key]:
            best[key] = item


def numpy_kernel_blocks(xh, norms, d, r0, r1, c0, c1, net, depths, layers, x=None):
    """{L: K[r0:r1, c0:c1]} for every depth, as ``infinite_ntk`` computes each entry
    (``x``: the rows xh was normalised from, as in ``numpy_angle_block``)."""
    geometry = block_geometry(xh, xh, r0, r1, c0, c1, symmetric=True, x1=x, norms1=norms,
                              norms2=norms, d=d)
    return {L: K for L, K, _, _ in sweep(geometry, net, depths, layers, overwrite=True)}
