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
from ..activations import Net, parse_activation
from ..infinite.geometry import block_geometry
from ..infinite.recursion import PairGeometry, angle_from, recursion

#: The key of the input angle θ₀ among the targets (the others are (activation, depth)).
INPUT = "input"


class AnglePlan:
    """What to compute per block: the targets (activation, depth) and the recursion settings."""

    def __init__(self, depths, activations, trainable, where, family=None):
        from ..activations import Net, resolve_net

        acts = []
        for a in activations:
            act = a if isinstance(a, Net) else parse_activation(a)
            if family is not None and not isinstance(act, Net):
                act = resolve_net(act, *family, where) or act
            if act.name not in [b.name for b in acts]:
                acts.append(act)
        #: general nets (``ntkcond.activations.Net``) need the rows' norms: ``norms``, ``d``
        self.nets = any(isinstance(a, Net) for a in acts)
        self.norms, self.d = None, 1
        if not acts:
            raise ValueError(f"{where}: expected at least one activation, got none")
        self.depths, self.layers = sweep_layers(depths, trainable, where)
        self.activations = acts
        self.nonlinear = [a for a in acts if not a.is_linear]
        self.targets = [INPUT] + [(a.name, L) for a in self.nonlinear for L in self.depths]


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
    for act in plan.nonlinear:
        g = geometry if isinstance(act, Net) else unit
        for L, _, R, Z in recursion(g, act, plan.depths, plan.layers, kernel=False,
                                    angles=True):
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(valid, R / Z, np.inf)  # tan²(φ/2), increasing in φ
            k, i, j = argmin(ratio)
            if ratio.flat[k] < np.inf:
                out[(act.name, L)] = (float(angle_from(R.flat[k], Z.flat[k])), i, j)
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
    return block_candidates(angle, cos, valid, r0, c0, plan, g if plan.nets else None)


def merge_candidates(best: dict, cand: dict) -> None:
    """Keep the smaller (value, i, j) per target: lexicographic, so ties go to row-major first."""
    for key, item in cand.items():
        if key not in best or item < best[key]:
            best[key] = item


def numpy_kernel_blocks(xh, norms, d, r0, r1, c0, c1, act, depths, layers, x=None):
    """{L: K[r0:r1, c0:c1]} for every depth, as ``infinite_ntk`` computes each entry
    (``x``: the rows xh was normalised from, as in ``numpy_angle_block``)."""
    geometry = block_geometry(xh, xh, r0, r1, c0, c1, symmetric=True, x1=x, norms1=norms,
                              norms2=norms, d=d)
    return {L: K for L, K, _, _ in recursion(geometry, act, depths, layers, overwrite=True)}
