"""The NumPy block engine of ``ntkcond.scale``: one b × b block of the infinite-width NTK, or
one block's candidate smallest angles, from row-normalised inputs: the block's
``ntkcond.infinite.geometry.block_geometry`` and ``ntkcond.infinite.recursion.recursion``
(the functions of ``infinite_ntk`` and ``gradient_angles``); this module only cuts blocks
and reduces them to minima; for convolutional nets on images, ``ImageAnglePlan`` takes a
block's angle terms from ``ntkcond.infinite.engine.sweep_images``. The sharded JAX engine
(``ntkcond.scale.sharded``) computes the same blocks on devices; ``streaming`` and
``conditioning`` drive either one.
"""
from __future__ import annotations

import math

import numpy as np

from .._core.checks import sweep_layers
from ..infinite.engine import sweep, sweep_images
from ..infinite.geometry import block_geometry
from ..infinite.recursion import PairGeometry, angle_from

#: The key of the input angle θ₀ among the targets (the others are (net name, depth)).
INPUT = "input"


def _unique_nets(nets, where) -> list:
    """``nets`` with each name once, in order; a ValueError naming ``where`` if none."""
    unique = []
    for net in nets:
        if net.name not in [b.name for b in unique]:
            unique.append(net)
    if not unique:
        raise ValueError(f"{where}: expected at least one activation, got none")
    return unique


class AnglePlan:
    """What to compute per block: the targets (net, depth) and the sweep settings.

    ``nets``: the nets (``ntkcond.network.MLPFamily``, built once by the caller), each once.
    """

    def __init__(self, depths, nets, trainable, where):
        unique = _unique_nets(nets, where)
        #: nets with biases depend on the norms: the blocks then carry ``norms``, ``d``
        self.needs_norms = any(not net.homogeneous for net in unique)
        self.norms, self.d = None, 1
        self.depths, self.layers = sweep_layers(depths, trainable, where)
        self.nets = unique
        self.nonlinear = [net for net in unique if not (net.is_linear and net.plain)]
        self.targets = [INPUT] + [(net.name, L) for net in self.nonlinear for L in self.depths]

    def block(self, xh, r0, r1, c0, c1, x=None) -> dict:
        """The candidates of one block (``numpy_angle_block``)."""
        return numpy_angle_block(xh, r0, r1, c0, c1, self, x)


class ImageAnglePlan:
    """What to compute per block for convolutional nets (``ntkcond.network.CNNFamily``, built
    once by the caller) on NHWC ``images`` (n, H, W, C, checked): every net at every depth.
    Their gradient angles are not a function of the input angle, and a linear CNN's change
    with depth (the filters mix pixels), so every net is a target (``nonlinear``); every layer
    is trained. ``block`` is the same interface as ``AnglePlan.block``."""

    needs_norms = False
    norms, d = None, 1

    def __init__(self, depths, nets, trainable, images, where):
        unique = _unique_nets(nets, where)
        self.depths, self.layers = sweep_layers(depths, trainable, where)
        if self.layers is not None:
            raise ValueError(f"{where}: convolutional nets train every layer, got trainable "
                             f"{trainable!r}")
        self.nets = self.nonlinear = unique
        self.images = images
        self.where = where
        self.targets = [INPUT] + [(net.name, L) for net in unique for L in self.depths]

    def block(self, xh, r0, r1, c0, c1, x=None) -> dict:
        """Per target, (value, i, j) of the minimum over the pairs i < j of rows r0:r1 ×
        columns c0:c1: the input angle from the flattened rows (``xh`` and ``x`` as in
        ``numpy_angle_block``), the gradient angles φ = 2 atan2(√R, √Z) of every net and depth
        from one pass of the image kernels over the block (``ntkcond.infinite.engine.
        sweep_images``; a diagonal block as one symmetric kernel)."""
        g = block_geometry(xh, xh, r0, r1, c0, c1, symmetric=True, x1=x)
        valid = (np.arange(r0, r1)[:, None] < np.arange(c0, c1)[None, :])
        out = {}
        ncols = c1 - c0
        masked = np.where(valid, g.angle, np.inf)
        k = int(np.argmin(masked))
        if math.isfinite(masked.flat[k]):
            i, j = divmod(k, ncols)
            out[INPUT] = (float(g.angle.flat[k]), r0 + i, c0 + j)
        a = self.images[r0:r1]
        b = None if (r0, r1) == (c0, c1) else self.images[c0:c1]
        for net in self.nets:
            for L, ev in sweep_images(a, net, self.depths, x2=b, where=self.where):
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(valid, ev.R / ev.Z, np.inf)  # tan²(φ/2), increasing in φ
                k = int(np.argmin(ratio))
                if ratio.flat[k] < np.inf:
                    i, j = divmod(k, ncols)
                    out[(net.name, L)] = (float(angle_from(ev.R.flat[k], ev.Z.flat[k])),
                                          r0 + i, c0 + j)
        return out


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
