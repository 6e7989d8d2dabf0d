"""The compiled fast path of convolutional nets: a chain of ``Conv`` layers and activations of
the leaky family (ReLU, linear, |·|, leaky slopes) up to a ``Flatten`` or ``GlobalAvgPool``
read-out, evaluated pair by pair in compiled loops (numba) that keep each pair's pixel state in
cache and never form the network's temporaries.

The equations are those of the layer maps (``ntkcond.network.conv`` eq. (1),
``ntkcond.network.spatial`` eq. (1), ``ntkcond.activations.leaky`` eq. (2)): per pixel (pair)
and layer ℓ,

    conv:   c′ = s_w²·conv(c) + s_b²,  D′ = s_w²·conv(D),  C′ = [trainable]·c′ + s_w²·conv(C),
            G′ = [trainable]·D′ + s_w²·conv(G)
    leaky:  u₋ = 1 − cos θ = (D − ½s²)/√(q₁q₂), u₊ = 1 + cos θ (``ntkcond.activations.
            _bivariate``), ψ = min(θ, π − θ) from lo = min(u₋, u₊) = 1 − cos ψ,
            k = lo − (2/π)(sin ψ − ψ cos ψ),
            M = a²c + b²√(q₁q₂)(1 − k),  D′ = a²D + b²(½s² + √(q₁q₂)k),
            C′ = (a² + b²(1 − 2θ/π))·C,  G′ = (a² + b²)·G + (2/π)b²θ·C

with s = √q₁ − √q₂. ψ = 2 asin(√u) and sin ψ − ψ cos ψ, u = lo/2 ∈ [0, ½], are √u and u√u
times two polynomials in u (``ASIN_COEFFS``, ``SMAC_COEFFS``: Chebyshev interpolants of degree
20 and 18, within 1.2e-16 and 1.4e-16 relative, checked against mpmath by the tests): no
cancellation at small angles, one square root, no branch, so that the compiler vectorises the
loops (8 pairs per 512-bit vector: ``LANES`` column images per work item). The filter sums are
the layer maps' (the same order), scaled by s_w²/k in one product (the layer maps divide by k,
then multiply by s_w²: a last-bit difference); a·b + c may be fused (FMA). Each stage of a work
item is stored padded for the convolution that reads it (``_layouts``), so every filter sum,
weight map and dual runs over contiguous rows; an activation right after a convolution is
applied in the same pass, and the 3 × 3 stride-1 filter in the same loop (``_taps3_dual_row``). The
loops are written without branches inside them, and none writes four arrays it does not read
(the compiler vectorises neither). The pooling route (``GlobalAvgPool``: every pixel pair of
a pair of images) keeps a stage read by a 3 × 3, stride-1 SAME convolution padded for it in one
of two buffers, reading one and writing the other (``_taps3_pairs``: for each output row the
filter's row sums once, then per row pixel its column sums, the weight map and the dual in one
loop over the row pixel's whole run of column pixels); the first convolution writes its rows
there from the images' patches (``_first_conv``), and a stage read out is summed while in
cache (the last never stored). The per-image diagonals
(variances q and Θ(x, x) per pixel, at every stage) come first from a cheap pass over the
images; the pairs then carry only their own c, D, C (and G for gradient angles).

``ConvChain.of(network)`` recognises the nets this path takes (``None`` for any other:
pooling inside the chain, other activations, residual branches take the layer maps). The
engine (``ntkcond.infinite.engine.evaluate_images``) uses it where the per-image diagonals stay
within [2^−RANGE_BITS, 2^RANGE_BITS] (the layer maps' power-of-two rescaling is then never
triggered); the layers after the read-out run as layer maps on the resulting ``PairState``.
The two routes agree to ~1e-15 of the scale (``tests/test_conv.py``).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..activations.leaky import Activation
from ..network.conv import Conv, Flatten, GlobalAvgPool
from ..network.layers import Identity, Nonlinearity, leaves
from ..network.spatial import output_size, padding_before
from ..network.state import PairState

__all__ = ["ConvChain", "Images", "RANGE_BITS", "half_angle"]

#: The compiled route runs where every per-image diagonal stays within
#: [2^−RANGE_BITS, 2^RANGE_BITS] (zeros allowed): the layer maps' rescaling (``RESCALE_BITS``)
#: would not act there.
RANGE_BITS = 200

_CONV, _LEAKY = 0, 1

#: The first convolution's gaps are recomputed as sums of squares where the Gram form's gap
#: is below this fraction of ½(|π|² + |π′|²) (near-duplicate patches).
REFINE = 1e-3

#: Column images per work item of the diagonal mode (one 512-bit vector of float64).
LANES = 8


@dataclasses.dataclass(frozen=True)
class ConvChain:
    """The compiled plan of a net ``(Conv | leaky activation | Identity)* → read-out → rest``.

    Attributes:
      iops: (n_ops, 12) int64 rows: kind (0 conv, 1 leaky), k_h, k_w, s_h, s_w, padding before
        (h, w), circular, H_in, W_in, H_out, W_out.
      fops: (n_ops, 5) float64 rows: s_w², s_b², trainable, a², b².
      readout: the ``Flatten`` or ``GlobalAvgPool`` layer.
      rest: the layers after the read-out (a tuple; they act on a ``PairState``).
      image_shape: (H, W) of the inputs.
    """

    iops: np.ndarray
    fops: np.ndarray
    readout: object
    rest: tuple
    image_shape: tuple

    @classmethod
    def of(cls, network, image_shape) -> "ConvChain | None":
        """The plan of ``network`` on (H, W) images, or None where the net is not such a chain
        (or a VALID window does not fit: the layer maps then raise the error)."""
        layers = leaves(network)
        h, w = image_shape
        iops, fops = [], []
        for k, layer in enumerate(layers):
            if isinstance(layer, (Flatten, GlobalAvgPool)):
                return cls(np.array(iops, np.int64).reshape(-1, 12),
                           np.array(fops, np.float64).reshape(-1, 5), layer,
                           tuple(layers[k + 1:]), (int(image_shape[0]), int(image_shape[1])))
            if isinstance(layer, Identity):
                continue
            if isinstance(layer, Conv):
                (kh, kw), (sh, sw), pad = layer.filter_shape, layer.strides, layer.padding
                if pad == "VALID" and (kh > h or kw > w):
                    return None
                oh, ow = output_size(h, kh, sh, pad), output_size(w, kw, sw, pad)
                iops.append((_CONV, kh, kw, sh, sw, padding_before(h, kh, sh, pad),
                             padding_before(w, kw, sw, pad), pad == "CIRCULAR", h, w, oh, ow))
                fops.append((layer.weight_variance, layer.bias_variance or 0.0,
                             float(layer.trainable), 0.0, 0.0))
                h, w = oh, ow
            elif isinstance(layer, Nonlinearity) and isinstance(layer.act, Activation):
                a, b = layer.act.ab
                iops.append((_LEAKY, 0, 0, 0, 0, 0, 0, 0, h, w, h, w))
                fops.append((0.0, 0.0, 0.0, a * a, b * b))
            else:
                return None
        return None

    @property
    def pools(self) -> bool:
        """The read-out averages every pixel pair (``GlobalAvgPool``: full mode)."""
        return isinstance(self.readout, GlobalAvgPool)

    def diagonals(self, x):
        """(q, A): each image's per-pixel variance and NTK diagonal after every stage,
        (n, n_ops + 1, P_max) float64 (stage 0 the input)."""
        return _selves(np.ascontiguousarray(x, dtype=np.float64), self.iops, self.fops)

    def pair_buffer_bytes(self, threads: int) -> int:
        """Bytes of the pooling route's per-thread buffers (``_full_items``: the pixel-pair
        state, the padded and the partly summed arrays) for ``threads`` threads."""
        pmax = self.max_pixels
        tmax, padmax, rowmax, colmax, longmax, strided = _full_sizes(self.iops)
        floats = ((8 if strided else 4) * pmax * pmax + 2 * 4 * padmax + 5 * longmax
                  + 4 * colmax * rowmax + tmax + 8 * pmax + 4 * rowmax)
        return 8 * floats * threads

    @staticmethod
    def in_range(*arrays) -> bool:
        """Every value finite and 0 or within [2^−RANGE_BITS, 2^RANGE_BITS]."""
        lo, hi = 2.0 ** -RANGE_BITS, 2.0 ** RANGE_BITS
        for a in arrays:
            if not np.all(np.isfinite(a)):
                return False
            pos = a[a > 0]
            if pos.size and (pos.min() < lo or pos.max() > hi):
                return False
        return True

    @property
    def stages(self) -> int:
        """Stages of the chain (the input and one after each operation)."""
        return len(self.iops) + 1

    def pixels(self, stage: int) -> int:
        """Pixels per image at ``stage``."""
        if stage == 0:
            return self.image_shape[0] * self.image_shape[1]
        return int(self.iops[stage - 1, 10] * self.iops[stage - 1, 11])

    @property
    def max_pixels(self) -> int:
        """The most pixels per image at any stage (P_max of ``diagonals``' arrays)."""
        return max(self.pixels(stage) for stage in range(self.stages))

    def image_bytes(self, shape, *, columns: bool = False) -> int:
        """Bytes of ``prepare``'s arrays for images of ``shape`` (n, H, W, C): the images, q,
        A and their roots per stage and pixel, and (``columns``, diagonal mode) the column
        layout's copies of the images and roots."""
        n, h, w, ch = (int(v) for v in shape)
        pmax = self.max_pixels
        floats = n * (h * w * ch + 4 * self.stages * pmax)
        if columns and not self.pools:
            floats += -(-n // LANES) * LANES * (h * w * ch + 2 * self.stages * pmax)
        return 8 * floats

    def prepare(self, x, *, columns: bool = False) -> "Images":
        """``x`` (n, H, W, C) ready for ``tile`` and ``selves``: its ``diagonals`` and their
        roots, computed once for every block they take part in; ``columns``: also the
        diagonal mode's column layout (``Images.lanes``)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        q, a = self.diagonals(x)
        s, inv = _roots(q)
        lanes = _column_layout(x, s, inv) if columns and not self.pools else None
        return Images(x, q, a, s, inv, lanes)

    def tile(self, side1: "Images", side2: "Images", *, upper: bool, angles: bool,
             stages=None):
        """The read-out means (n1, n2, len(stages), 4) of c, D, C, G of every pair
        (x1[i], x2[j]) of the images of ``side1`` and ``side2`` (``prepare``) at each of
        ``stages`` (default: the last), over the spatial diagonal (``Flatten``) or over every
        pixel pair (``GlobalAvgPool``); ``upper``: side2 begins with side1's images and only
        j ≥ i is computed (the rest left 0). G is 0 unless ``angles``."""
        stages, cap = self._captures(stages)
        n1, n2 = len(side1.x), len(side2.x)
        if self.pools:
            rows, cols = np.triu_indices(n1, m=n2) if upper else np.indices((n1, n2))
            rows, cols = rows.ravel().astype(np.int64), cols.ravel().astype(np.int64)
            sums = _full_items(side1.x, side2.x, rows, cols, self.iops, self.fops, side1.q,
                               side1.a, side1.s, side1.inv, side2.q, side2.a, side2.s,
                               side2.inv, bool(angles), cap, len(stages), get_num_threads())
            out = np.zeros((n1, n2, len(stages), 4))
            out[rows, cols] = sums
            return out
        lanes = side2.lanes
        xg, sg, ig = _column_layout(side2.x, side2.s, side2.inv) if lanes is None else lanes
        rows, groups = _items(n1, n2, upper)
        return _diag_items(side1.x, xg, rows, groups, n2, upper, self.iops, self.fops, side1.s,
                           side1.inv, sg, ig, bool(angles), cap, len(stages), get_num_threads())

    def selves(self, side: "Images", *, angles: bool, stages=None):
        """The read-out means (n, len(stages), 4) of the pairs (x[i], x[i]) of ``side``'s
        images (``prepare``)."""
        stages, cap = self._captures(stages)
        if self.pools:
            idx = np.arange(len(side.x), dtype=np.int64)
            return _full_items(side.x, side.x, idx, idx, self.iops, self.fops, side.q, side.a,
                               side.s, side.inv, side.q, side.a, side.s, side.inv, bool(angles),
                               cap, len(stages), get_num_threads())
        out = np.empty((len(side.x), len(stages), 4))
        for k, stage in enumerate(stages):  # Flatten: the per-image diagonals' means
            P = self.pixels(stage)
            out[:, k, 0] = np.mean(side.q[:, stage, :P], axis=1)
            out[:, k, 1] = 0.0
            out[:, k, 2] = np.mean(side.a[:, stage, :P], axis=1)
            out[:, k, 3] = 0.0
        return out

    def readout_state(self, sums, selves1, selves2, *, angles: bool):
        """The ``PairState`` after the read-out from ``tile``'s means of one stage (n1, n2, 4)
        and ``selves``' of both sides ((n, 4) each): ``Flatten`` (eq. (3)) keeps the exact
        gaps; ``GlobalAvgPool`` (eq. (4)) forms mean D(x, x′) − ½ mean D(x, x) − ½ mean
        D(x′, x′) as its layer map does."""
        q1, q2 = selves1[:, 0][:, None], selves2[:, 0][None, :]
        A, B = selves1[:, 2][:, None], selves2[:, 2][None, :]
        D, G = sums[..., 1], sums[..., 3]
        if self.pools:
            D = np.maximum(D - 0.5 * selves1[:, 1][:, None] - 0.5 * selves2[:, 1][None, :], 0.0)
            G = np.maximum(G - 0.5 * selves1[:, 3][:, None] - 0.5 * selves2[:, 3][None, :], 0.0)
        return PairState(q1, q2, sums[..., 0], D, A, B, sums[..., 2], G if angles else None,
                         exact_gaps=not self.pools, layer=self.layers)

    @property
    def layers(self) -> int:
        """Weight layers in the chain (the state's ``layer`` count after it)."""
        return int(np.sum(self.iops[:, 0] == _CONV)) if len(self.iops) else 0

    def _captures(self, stages):
        stages = (self.stages - 1,) if stages is None else tuple(int(s) for s in stages)
        cap = np.full(self.stages, -1, np.int64)
        for k, stage in enumerate(stages):
            cap[stage] = k
        return stages, cap


@dataclasses.dataclass(frozen=True)
class Images:
    """Images prepared for ``ConvChain.tile`` (``ConvChain.prepare``); ``images[a:b]`` the
    images a … b − 1 (views; the column layout kept where a is a multiple of LANES and b the
    end).

    Attributes:
      x: (n, H, W, C) float64, C-contiguous.
      q, a: the per-pixel variances and NTK diagonals after every stage
        (``ConvChain.diagonals``), (n, stages, P_max).
      s, inv: √q and 1/√q (0 where q = 0).
      lanes: None, or the diagonal mode's column layout: the images in groups of LANES (the
        last padded with copies of the last image), the lane axis last: (x (G, C, P·LANES),
        s and inv (G, stages, P_max, LANES)).
    """

    x: np.ndarray
    q: np.ndarray
    a: np.ndarray
    s: np.ndarray
    inv: np.ndarray
    lanes: tuple | None = None

    def __getitem__(self, k: slice) -> "Images":
        lo, hi, step = k.indices(len(self.x))
        if step != 1:
            raise ValueError(f"Images[{k}]: expected a slice of consecutive images")
        lanes = None
        if self.lanes is not None and lo % LANES == 0 and hi == len(self.x):
            g = lo // LANES
            lanes = (self.lanes[0][g:], self.lanes[1][g:], self.lanes[2][g:])
        return Images(self.x[lo:hi], self.q[lo:hi], self.a[lo:hi], self.s[lo:hi],
                      self.inv[lo:hi], lanes)


def _column_layout(x, s, inv):
    """``Images.lanes`` of images x (n, H, W, C) with roots s, inv (n, stages, P_max)."""
    xg = _grouped(np.moveaxis(x.reshape(len(x), -1, x.shape[-1]), 2, 1), 0)  # (G, C, P, L)
    return xg.reshape(xg.shape[0], xg.shape[1], -1), _grouped(s, 0), _grouped(inv, 0)


def _roots(Q):
    """(√Q, 1/√Q with 0 where Q = 0)."""
    S = np.sqrt(Q)
    with np.errstate(divide="ignore"):
        inv = np.where(S > 0, 1.0 / np.where(S > 0, S, 1.0), 0.0)
    return S, inv


def _grouped(a, axis: int):
    """Images (axis 0 of ``a``) in groups of LANES, the lane axis last and the group axis at
    ``axis``: (n, *rest) → (G, *rest, LANES) (axis 0) or (rest[0], G, *rest[1:], LANES)
    (axis 1), C-contiguous; the last group padded with copies of the last image."""
    n = a.shape[0]
    G = -(-n // LANES)
    if G * LANES > n:
        a = np.concatenate([a, np.repeat(a[-1:], G * LANES - n, axis=0)])
    a = a.reshape((G, LANES) + a.shape[1:])
    a = np.moveaxis(a, 1, -1)  # (G, *rest, LANES)
    if axis == 1:
        a = np.moveaxis(a, 0, 1)
    return np.ascontiguousarray(a)


def _items(n1: int, n2: int, upper: bool):
    """Work items (i, g): row image i and the column images g·LANES … g·LANES + LANES − 1
    (``upper``: the rows up to the group's last image), group by group: items that follow
    one another, on both threads, read the same column group's images and √q (about 0.8 MB),
    which then come from cache."""
    G = -(-n2 // LANES)
    rows, groups = [], []
    for g in range(G):
        rs = np.arange(min(n1, (g + 1) * LANES) if upper else n1)
        rows.append(rs)
        groups.append(np.full(rs.size, g))
    return (np.concatenate(rows).astype(np.int64), np.concatenate(groups).astype(np.int64))


# ----------------------------------------------------------------------------------------------
# Compiled kernels. numba compiles them on first use (cached on disk); error_model="numpy" lets
# divisions vectorise (IEEE results, no ZeroDivisionError branches).

from llvmlite import ir  # noqa: E402
from numba import get_num_threads, njit, prange, types  # noqa: E402,F401
from numba.extending import intrinsic  # noqa: E402

_PI = math.pi
_TWO_OVER_PI = 2.0 / math.pi

#: numba's options for every kernel here: numpy's error model (IEEE results, no
#: ZeroDivisionError branches, so divisions vectorise), cached on disk, and a·b + c fused
#: into one rounding (FMA) where the compiler can: a last-bit difference from the layer
#: maps, never a loss of accuracy.
_JIT = dict(error_model="numpy", cache=True, fastmath={"contract"})


# asin(√u)/√u on u ∈ [0, ½] (max error 1.2e-16 relative, checked against mpmath by the tests):
# Chebyshev interpolation of degree 20 in monomial form, lowest first.
ASIN_COEFFS = (1.0, 0.16666666666666616, 0.075000000000152, 0.04464285712523146,
               0.03038194552436468, 0.022372118687437575, 0.017353770558111315,
               0.01394720494599378, 0.011778012699157943, 0.00758177172566054,
               0.02446902457333711, -0.08458119964926274, 0.41616195625122965,
               -1.4218180318389972, 3.878312067627145, -8.097162378402428, 12.830658050319302,
               -14.884387574231052, 11.99054929620933, -6.008042872156452, 1.4326072705765098)
(_A0, _A1, _A2, _A3, _A4, _A5, _A6, _A7, _A8, _A9, _A10, _A11, _A12, _A13, _A14, _A15, _A16,
 _A17, _A18, _A19, _A20) = ASIN_COEFFS


# (sin ψ − ψ cos ψ)/u^{3/2} with ψ = 2 asin(√u), u ∈ [0, ½] (max error 1.4e-16 relative,
# checked against mpmath by the tests): degree-18 Chebyshev interpolation, monomial form.
SMAC_COEFFS = (2.6666666666666665, 0.2666666666666642, 0.08571428571487523,
               0.03968253962674129, 0.022095962378004076, 0.013767398176619932,
               0.009256499967550243, 0.006547959577044505, 0.005105142618584343,
               0.0018974993755190102, 0.013290595138962497, -0.04258875759914789,
               0.15013277875291267, -0.36861586305266997, 0.6907166883722825,
               -0.9288105281041379, 0.8630607609425247, -0.49408507840869326,
               0.13562081833841125)
(_M0, _M1, _M2, _M3, _M4, _M5, _M6, _M7, _M8, _M9, _M10, _M11, _M12, _M13, _M14, _M15, _M16,
 _M17, _M18) = SMAC_COEFFS


@njit(inline="always", **_JIT)
def half_angle(lo):
    """(ψ, sin ψ − ψ cos ψ) for the angle ψ ∈ [0, π/2] with 1 − cos ψ = lo ∈ [0, 1]:
    ψ = 2 asin(√u), u = lo/2, as √u times a polynomial in u, and sin ψ − ψ cos ψ as u√u
    times another (no cancellation, no other square root)."""
    u = 0.5 * lo
    su = math.sqrt(u)
    p = (((((((((((((((((((_A20 * u + _A19) * u + _A18) * u + _A17) * u + _A16) * u + _A15)
                       * u + _A14) * u + _A13) * u + _A12) * u + _A11) * u + _A10) * u + _A9)
                 * u + _A8) * u + _A7) * u + _A6) * u + _A5) * u + _A4) * u + _A3) * u + _A2)
         * u + _A1) * u + _A0
    m = (((((((((((((((((_M18 * u + _M17) * u + _M16) * u + _M15) * u + _M14) * u + _M13) * u
                    + _M12) * u + _M11) * u + _M10) * u + _M9) * u + _M8) * u + _M7) * u + _M6)
              * u + _M5) * u + _M4) * u + _M3) * u + _M2) * u + _M1) * u + _M0
    return 2.0 * su * p, u * su * m


@njit(inline="always", **_JIT)
def _leaky(sq1, is1, sq2, is2, c, D, C, G, a2, b2):
    """One entry of the leaky dual, (c′, D′, C′, G′), from the pre-activations' √q and 1/√q
    (0 for q = 0) of both sides. (G′ is always formed: a caller that has no use for it does
    not store it, and the compiler drops it. A flag here would leave a branch in the loops,
    which then do not vectorise.)"""
    s = sq1 - sq2
    r = sq1 * sq2
    ir = is1 * is2
    pos = r > 0
    um = min(max((D - 0.5 * s * s) * ir, 0.0), 2.0) if pos else 0.0
    up = min(max((r + c) * ir, 0.0), 2.0) if pos else 2.0
    small = um <= up
    lo = min(um if small else up, 1.0)
    near, smac = half_angle(lo)
    theta = near if small else _PI - near
    omk = lo - _TWO_OVER_PI * smac
    M = a2 * c + b2 * r * (1.0 - omk)
    gap = a2 * D + b2 * (0.5 * s * s + r * omk)
    Cn = (a2 + b2 * (1.0 - _TWO_OVER_PI * theta)) * C
    Gn = (a2 + b2) * G + (_TWO_OVER_PI * b2 * theta) * C
    return M, gap, Cn, Gn


@njit(**_JIT)
def _conv1(src, h, w, kh, kw, sh, sw, ph, pw, circ, oh, ow, pad, tmp, dst):
    """Eq. (1) on one per-pixel array (h·w,) → (oh·ow,): padded, summed over the filter's rows
    then columns (the layer maps' order: 0 + a₀ + a₁ + …), divided by k_h·k_w."""
    hp = (oh - 1) * sh + kh
    wp = (ow - 1) * sw + kw
    for y in range(hp):
        sy = y - ph
        row = y * wp
        if circ:
            for x in range(wp):
                pad[row + x] = src[(sy % h) * w + ((x - pw) % w)]
        elif 0 <= sy < h:
            inner = min(w, wp - pw)
            for x in range(pw):
                pad[row + x] = 0.0
            for x in range(inner):
                pad[row + pw + x] = src[sy * w + x]
            for x in range(pw + inner, wp):
                pad[row + x] = 0.0
        else:
            for x in range(wp):
                pad[row + x] = 0.0
    for y in range(oh):
        row = y * wp
        for x in range(wp):
            tmp[row + x] = 0.0
        for d in range(kh):
            src_row = (sh * y + d) * wp
            for x in range(wp):
                tmp[row + x] += pad[src_row + x]
    inv = float(kh * kw)
    for y in range(oh):
        row = y * ow
        for x in range(ow):
            dst[row + x] = 0.0
        for d in range(kw):
            base = y * wp + d
            for x in range(ow):
                dst[row + x] += tmp[base + sw * x]
        for x in range(ow):
            dst[row + x] = dst[row + x] / inv


@njit(**_JIT)
def _selves(x, iops, fops):
    n, h, w, ch = x.shape
    nops = iops.shape[0]
    pmax = h * w
    for o in range(nops):
        pmax = max(pmax, (iops[o, 7] * 0 + iops[o, 10]) * iops[o, 11])
    Q = np.zeros((n, nops + 1, pmax))
    A = np.zeros((n, nops + 1, pmax))
    hpmax = 1
    for o in range(nops):
        hp = (iops[o, 10] - 1) * iops[o, 3] + iops[o, 1]
        wp = (iops[o, 11] - 1) * iops[o, 4] + iops[o, 2]
        hpmax = max(hpmax, hp * wp)
    for i in prange(n):
        pad = np.empty(hpmax)
        tmp = np.empty(hpmax)
        buf = np.empty(pmax)
        for p in range(h * w):
            t = 0.0
            for k in range(ch):
                v = x[i, p // w, p % w, k]
                t += v * v
            Q[i, 0, p] = t / ch
        for o in range(nops):
            hin, win, hout, wout = iops[o, 8], iops[o, 9], iops[o, 10], iops[o, 11]
            if iops[o, 0] == _CONV:
                sw2, sb2, tr = fops[o, 0], fops[o, 1], fops[o, 2]
                _conv1(Q[i, o], hin, win, iops[o, 1], iops[o, 2], iops[o, 3], iops[o, 4],
                       iops[o, 5], iops[o, 6], iops[o, 7], hout, wout, pad, tmp, buf)
                for p in range(hout * wout):
                    Q[i, o + 1, p] = sw2 * buf[p] + sb2
                _conv1(A[i, o], hin, win, iops[o, 1], iops[o, 2], iops[o, 3], iops[o, 4],
                       iops[o, 5], iops[o, 6], iops[o, 7], hout, wout, pad, tmp, buf)
                for p in range(hout * wout):
                    A[i, o + 1, p] = sw2 * buf[p] + tr * Q[i, o + 1, p]
            else:
                m = fops[o, 3] + fops[o, 4]
                for p in range(hout * wout):
                    Q[i, o + 1, p] = m * Q[i, o, p]
                    A[i, o + 1, p] = m * A[i, o, p]
    return Q, A


@njit(**_JIT)
def _add(dst, src):
    """dst += src (equal sizes)."""
    for t in range(dst.size):
        dst[t] += src[t]


@njit(**_JIT)
def _affine(n, sw2, sb2, tr, bc, bD, bC, bG, c, D, C, G, angles):
    """The weight layer's map after its filter sums: c = s_w²·Σc + s_b², D = s_w²·ΣD,
    C = s_w²·ΣC + [trainable]·c, G = s_w²·ΣG + [trainable]·D."""
    for k in range(n):
        cn = sw2 * bc[k] + sb2
        dn = sw2 * bD[k]
        c[k] = cn
        D[k] = dn
        C[k] = sw2 * bC[k] + tr * cn
        G[k] = (sw2 * bG[k] + tr * dn) if angles else 0.0


#: Pixels summed plainly before a partial sum joins the total (two-level summation:
#: error ≲ (BLOCK + P/BLOCK)·eps of Σ|a| instead of P·eps).
BLOCK = 32


@njit(**_JIT)
def _layouts(iops, h, w):
    """How the diagonal mode stores each stage s of a work item: (stages, 7) int64 rows
    (H, W, top, left, padded height, padded width, circular). A stage read by a convolution is
    stored padded for it (its zeros written once, never overwritten; CIRCULAR's wrap copied in
    after each write): pixel (y, x), lane l at ((y + top)·padded width + x + left)·LANES + l.
    Any other stage is stored plainly (no padding)."""
    ns = iops.shape[0] + 1
    lay = np.zeros((ns, 7), np.int64)
    for s in range(ns):
        H = h if s == 0 else iops[s - 1, 10]
        W = w if s == 0 else iops[s - 1, 11]
        top, left, HP, WP, circ = 0, 0, H, W, 0
        if s < ns - 1 and iops[s, 0] == _CONV:
            top, left, circ = iops[s, 5], iops[s, 6], iops[s, 7]
            HP = max((iops[s, 10] - 1) * iops[s, 3] + iops[s, 1], top + H)
            WP = max((iops[s, 11] - 1) * iops[s, 4] + iops[s, 2], left + W)
        lay[s, 0], lay[s, 1], lay[s, 2], lay[s, 3] = H, W, top, left
        lay[s, 4], lay[s, 5], lay[s, 6] = HP, WP, circ
    return lay


@njit(**_JIT)
def _clear_border(buf, lay):
    """Zeros in every component's cells of layout ``lay`` outside the image (the padding),
    where a buffer held another layout before; the image's cells are all written after."""
    L = LANES
    H, W, top, left, HP, WP = lay[0], lay[1], lay[2], lay[3], lay[4], lay[5]
    for f in range(4):
        a = buf[f]
        for yy in range(HP):
            if top <= yy < top + H:  # the row's left and right padding
                a[yy * WP * L:(yy * WP + left) * L] = 0.0
                a[(yy * WP + left + W) * L:(yy + 1) * WP * L] = 0.0
            else:
                a[yy * WP * L:(yy + 1) * WP * L] = 0.0


@njit(**_JIT)
def _hold(buf, held, b, lay, s):
    """Buffer b of a work item about to receive stage s: its padding zeroed
    (``_clear_border``) unless it already holds a stage of the same layout; held[b] = s."""
    if held[b] < 0 or not np.array_equal(lay[held[b]], lay[s]):
        _clear_border(buf[b], lay[s])
    held[b] = s


@njit(**_JIT)
def _wrap(buf, lay, nc):
    """CIRCULAR's padding of a stage (layout ``lay``): every cell outside the image a copy of
    the pixel it wraps to."""
    L = LANES
    H, W, top, left, HP, WP = lay[0], lay[1], lay[2], lay[3], lay[4], lay[5]
    for f in range(nc):
        a = buf[f]
        for yy in range(HP):
            y = (yy - top) % H
            inside_row = top <= yy < top + H
            for xx in range(WP):
                if inside_row and left <= xx < left + W:
                    continue
                x = (xx - left) % W
                src = ((y + top) * WP + x + left) * L
                dst = (yy * WP + xx) * L
                for l in range(L):
                    a[dst + l] = a[src + l]


@njit(**_JIT)
def _diag_capture(out, i, g, n2, upper, slot, buf, lay, nc, acc, sums):
    """The read-out means of a work item's stage (stored as ``lay`` in ``buf``) into
    out[i, j, slot] (lanes j ≥ i where ``upper``): per component (the first ``nc``; G 0 where
    ``nc`` = 3) and lane the mean over the pixels, two-level: each column's sum over the rows
    (into acc, W·LANES: one contiguous add per row), then the columns' (error ≲ (H + W)·eps
    of Σ|a|)."""
    L = LANES
    H, W, top, left, WP = lay[0], lay[1], lay[2], lay[3], lay[5]
    RW = W * L
    col = acc[:RW]
    for f in range(4):
        for l in range(L):
            sums[f, l] = 0.0
    for f in range(nc):
        a = buf[f]
        col[:] = 0.0
        for y in range(H):
            b = ((y + top) * WP + left) * L
            row = a[b:b + RW]
            for e in range(RW):
                col[e] += row[e]
        for x in range(W):
            for l in range(L):
                sums[f, l] += col[x * L + l]
    for l in range(L):
        j = g * L + l
        if j < n2 and (j >= i or not upper):
            for f in range(4):
                out[i, j, slot, f] = sums[f, l] / (H * W)


@njit(inline="always", **_JIT)
def _weights(sc, sD, sC, sG, scale, sb2, tr):
    """The weight layer's map of a pixel's filter sums Σ (eq. (1)): c = (s_w²/k)·Σc + s_b²,
    D = (s_w²/k)·ΣD, C = (s_w²/k)·ΣC + [trainable]·c, G = (s_w²/k)·ΣG + [trainable]·D."""
    cn = scale * sc + sb2
    dn = scale * sD
    return cn, dn, scale * sC + tr * cn, scale * sG + tr * dn


@njit(inline="always", **_JIT)
def _taps3(r0, r1, r2, e):
    """The 3 × 3 filter sum at flat offset e of three padded rows: each column's rows, then
    the columns (the order of the general path's sums)."""
    return ((r0[e] + r1[e] + r2[e]) + (r0[e + LANES] + r1[e + LANES] + r2[e + LANES])
            + (r0[e + 2 * LANES] + r1[e + 2 * LANES] + r2[e + 2 * LANES]))


@njit(**_JIT)
def _taps3_row(src, ib, WPL, RO, nc, O):
    """``_conv_row``'s 3 × 3, stride-1 filter sums of the first ``nc`` components (the padded
    rows of ``src`` from flat offset ib) into O: c, D and C in one loop, G in another."""
    c0, c1, c2 = src[0, ib:ib + WPL], src[0, ib + WPL:ib + 2 * WPL], src[0, ib + 2 * WPL:]
    d0, d1, d2 = src[1, ib:ib + WPL], src[1, ib + WPL:ib + 2 * WPL], src[1, ib + 2 * WPL:]
    e0, e1, e2 = src[2, ib:ib + WPL], src[2, ib + WPL:ib + 2 * WPL], src[2, ib + 2 * WPL:]
    oc, oD, oC = O[0], O[1], O[2]
    for e in range(RO):
        oc[e] = _taps3(c0, c1, c2, e)
        oD[e] = _taps3(d0, d1, d2, e)
        oC[e] = _taps3(e0, e1, e2, e)
    if nc == 4:
        g0, g1, g2 = src[3, ib:ib + WPL], src[3, ib + WPL:ib + 2 * WPL], src[3, ib + 2 * WPL:]
        oG = O[3]
        for e in range(RO):
            oG[e] = _taps3(g0, g1, g2, e)


@njit(**_JIT)
def _taps3_dual_row(src, ib, WPL, RO, scale, sb2, tr, s1, i1, s2, i2, a2, b2, dst, ob):
    """The hot case of ``_conv_row`` in one loop: a 3 × 3, stride-1 convolution's filter sums
    of c, D and C (no G), its weight map and the leaky dual after it, into ``dst`` from flat
    offset ob (the other arguments as ``_finish_row``'s)."""
    c0, c1, c2 = src[0, ib:ib + WPL], src[0, ib + WPL:ib + 2 * WPL], src[0, ib + 2 * WPL:]
    d0, d1, d2 = src[1, ib:ib + WPL], src[1, ib + WPL:ib + 2 * WPL], src[1, ib + 2 * WPL:]
    e0, e1, e2 = src[2, ib:ib + WPL], src[2, ib + WPL:ib + 2 * WPL], src[2, ib + 2 * WPL:]
    dc, dD, dC = dst[0, ob:ob + RO], dst[1, ob:ob + RO], dst[2, ob:ob + RO]
    for e in range(RO):
        c, D, C, _ = _weights(_taps3(c0, c1, c2, e), _taps3(d0, d1, d2, e),
                              _taps3(e0, e1, e2, e), 0.0, scale, sb2, tr)
        dc[e], dD[e], dC[e], _ = _leaky(s1[e], i1[e], s2[e], i2[e], c, D, C, 0.0, a2, b2)


@njit(**_JIT)
def _act_in_place(c, D, C, G, s1, i1, s2, i2, a2, b2):
    """The leaky dual (``_leaky``) of a row's four components in place (the loop that keeps G:
    reads and writes at the same offsets, so it vectorises where a copy to a fourth array
    does not)."""
    for e in range(c.size):
        c[e], D[e], C[e], G[e] = _leaky(s1[e], i1[e], s2[e], i2[e], c[e], D[e], C[e], G[e], a2,
                                        b2)


@njit(**_JIT)
def _conv_row(src, li, dst, lo, y, op, fop, act, s1, i1, s2, i2, a2, b2, nc, T, O):
    """Output row y of a convolution (``op``: its iops row; ``fop``: its fops row) of a work
    item's stage in ``src`` (layout ``li``, padded for it) into ``dst`` (layout ``lo``):
    eq. (1)'s filter sums of the first ``nc`` components, the weight map (``_weights``) and,
    where ``act``, the leaky dual after it (s1, i1: the row image's √q and 1/√q in every lane,
    s2, i2: the column images', flat over the row's (x, lane)). A 3 × 3, stride-1 filter
    with the dual and no G runs all of it in one loop (``_taps3_dual_row``, the hot case);
    otherwise the filter sums go into O (``_taps3_row``, or each column's rows into T, then
    the columns), then ``_finish_row``."""
    L = LANES
    kh, kw, sh, sw = op[1], op[2], op[3], op[4]
    ow = op[11]
    RO = ow * L
    WPL = li[5] * L
    scale = fop[0] / (kh * kw)
    ob = ((y + lo[2]) * lo[5] + lo[3]) * L
    taps3 = kh == 3 and kw == 3 and sh == 1 and sw == 1
    if taps3 and act and nc == 3:
        _taps3_dual_row(src, y * WPL, WPL, RO, scale, fop[1], fop[2], s1, i1, s2, i2, a2, b2,
                        dst, ob)
        return
    if taps3:
        _taps3_row(src, y * WPL, WPL, RO, nc, O)
    for f in range(nc if not taps3 else 0):
        o = O[f]
        t = T[f]
        for d in range(kh):
            row = src[f, (sh * y + d) * WPL:(sh * y + d + 1) * WPL]
            if d == 0:
                for e in range(WPL):
                    t[e] = row[e]
            else:
                for e in range(WPL):
                    t[e] += row[e]
        for e in range(RO):
            o[e] = 0.0
        for d in range(kw):
            if sw == 1:
                td = t[d * L:]
                for e in range(RO):
                    o[e] += td[e]
            else:
                for x in range(ow):
                    b = (sw * x + d) * L
                    for l in range(L):
                        o[x * L + l] += t[b + l]
    _finish_row(O, RO, nc, scale, fop[1], fop[2], act, s1, i1, s2, i2, a2, b2, dst, ob)


@njit(**_JIT)
def _finish_row(O, RO, nc, scale, sb2, tr, act, s1, i1, s2, i2, a2, b2, dst, ob):
    """The weight map (``_weights``) of a row's filter sums O of the first ``nc`` components
    (G: 4) into ``dst`` from flat offset ``ob``, through the leaky dual (``_leaky``) where
    ``act``: without G in one loop; with G, the weight map, then G's, then the dual in place
    (no loop stores to four arrays, and none branches inside: they vectorise)."""
    oc, oD, oC, oG = O[0], O[1], O[2], O[3]
    dc, dD, dC, dG = dst[0, ob:ob + RO], dst[1, ob:ob + RO], dst[2, ob:ob + RO], dst[3, ob:ob + RO]
    if act and nc == 3:
        for e in range(RO):
            c, D, C, _ = _weights(oc[e], oD[e], oC[e], 0.0, scale, sb2, tr)
            dc[e], dD[e], dC[e], _ = _leaky(s1[e], i1[e], s2[e], i2[e], c, D, C, 0.0, a2, b2)
        return
    for e in range(RO):
        dc[e], dD[e], dC[e], _ = _weights(oc[e], oD[e], oC[e], 0.0, scale, sb2, tr)
    if nc == 4:
        for e in range(RO):
            dG[e] = scale * oG[e] + tr * dD[e]
    if act:
        _act_in_place(dc, dD, dC, dG, s1, i1, s2, i2, a2, b2)


@njit(**_JIT)
def _act_row(src, li, dst, lo, y, s1, i1, s2, i2, a2, b2, nc):
    """Row y of the leaky dual (``_leaky``) of a work item's stage in ``src`` (layout ``li``)
    into ``dst`` (layout ``lo``); s1, i1, s2, i2 as ``_conv_row``'s; G only where ``nc`` = 4."""
    L = LANES
    RO = li[1] * L
    ib = ((y + li[2]) * li[5] + li[3]) * L
    ob = ((y + lo[2]) * lo[5] + lo[3]) * L
    sc, sD, sC, sG = src[0, ib:ib + RO], src[1, ib:ib + RO], src[2, ib:ib + RO], src[3, ib:ib + RO]
    dc, dD, dC, dG = dst[0, ob:ob + RO], dst[1, ob:ob + RO], dst[2, ob:ob + RO], dst[3, ob:ob + RO]
    if nc == 4:  # copied, then in place (``_act_in_place``)
        dc[:] = sc
        dD[:] = sD
        dC[:] = sC
        dG[:] = sG
        _act_in_place(dc, dD, dC, dG, s1, i1, s2, i2, a2, b2)
        return
    for e in range(RO):
        dc[e], dD[e], dC[e], _ = _leaky(s1[e], i1[e], s2[e], i2[e], sc[e], sD[e], sC[e], 0.0,
                                        a2, b2)


@intrinsic
def _splat(typingctx, out, k, v):
    """out[k:k + LANES] = v as one vector store (a broadcast, then a 512-bit store: numba does
    not run LLVM's SLP vectoriser, which would otherwise merge LANES scalar stores). No bounds
    check: the caller's (``_lanes``); ``out`` a C-contiguous float64 vector."""
    if not (isinstance(out, types.Array) and out.ndim == 1 and out.layout == "C"
            and out.dtype == types.float64):
        return None

    def codegen(context, builder, signature, args):
        a, i, x = args
        data = context.make_array(signature.args[0])(context, builder, a).data
        vec = ir.VectorType(ir.DoubleType(), LANES)
        undef, i32 = ir.Constant(vec, ir.Undefined), ir.IntType(32)
        one = builder.insert_element(undef, x, ir.Constant(i32, 0))
        splat = builder.shuffle_vector(one, undef,
                                       ir.Constant(ir.VectorType(i32, LANES), [0] * LANES))
        builder.store(splat, builder.bitcast(builder.gep(data, [i], inbounds=True),
                                             vec.as_pointer()), align=8)
        return context.get_dummy_value()
    return types.void(out, k, v), codegen


@njit(**_JIT)
def _lanes(a, out):
    """out[x·LANES + l] = a[x] for every lane l (a row image's values beside the lanes), one
    vector store per x (``_splat``)."""
    if out.size < a.size * LANES:
        raise ValueError("_lanes: out is shorter than LANES values per value of a")
    for x in range(a.size):
        _splat(out, x * LANES, a[x])


@njit(**_JIT)
def _input_row(bX, X2, y, w, dst, lo):
    """Row y of stage 0 of a work item into ``dst`` (layout ``lo``): the input covariances
    c = x·x′/C and gaps D = ½|x − x′|²/C of every pixel and lane (bX: row y of the row image's
    channels in every lane, (C, W·LANES); X2: the column images', (C, pixels·LANES)); C = G = 0
    (the input's NTK)."""
    L = LANES
    ch = bX.shape[0]
    RW = w * L
    b = ((y + lo[2]) * lo[5] + lo[3]) * L
    cv, dv = dst[0, b:b + RW], dst[1, b:b + RW]
    Cv, Gv = dst[2, b:b + RW], dst[3, b:b + RW]
    for e in range(RW):
        cv[e] = 0.0
        dv[e] = 0.0
        Cv[e] = 0.0
        Gv[e] = 0.0
    for z in range(ch):
        u, v = bX[z, :RW], X2[z, y * RW:(y + 1) * RW]
        for e in range(RW):
            cv[e] += u[e] * v[e]
            dv[e] += (u[e] - v[e]) * (u[e] - v[e])
    for e in range(RW):
        cv[e] = cv[e] / ch
        dv[e] = 0.5 * dv[e] / ch


@njit(parallel=True, **_JIT)
def _diag_items(x1, x2g, rows, groups, n2, upper, iops, fops, S1, I1, S2g, I2g, angles,
                cap, ncap, threads):
    """The diagonal mode's read-out means for work items (i, g): row image x1[i] against the
    LANES column images of group g (x2g: (groups, channels, pixels·LANES); S2g, I2g: their √q
    and 1/√q, (groups, stages, pixels, LANES)). A work item's stage is, per component (c, D, C,
    G), one flat array of (pixel, lane) values stored as ``_layouts`` says (padded for the
    convolution that reads it), so that every filter sum and dual runs over contiguous rows
    (``_conv_row``, ``_act_row``) and vectorises; an activation right after a convolution is
    applied in the same pass unless its input stage is read out. Returns (n1, n2, ncap, 4):
    the means of c, D, C, G over the pixels of each captured stage (stage s in slot
    cap[s] ≥ 0; ``upper``: j ≥ i only)."""
    L = LANES
    n1, h, w, ch = x1.shape
    nops = iops.shape[0]
    lay = _layouts(iops, h, w)
    smax, wmax = 1, 1
    for s in range(nops + 1):
        smax = max(smax, lay[s, 4] * lay[s, 5] * L)
        wmax = max(wmax, lay[s, 5] * L)
    nc = 4 if angles else 3
    K = rows.size
    out = np.zeros((n1, n2, ncap, 4))
    threads = max(1, min(threads, K))
    for thread in prange(threads):  # one set of buffers per thread, items dealt in turn
        buf = np.zeros((2, 4, smax))
        held = np.full(2, -1, np.int64)         # the stage whose layout each buffer holds
        bS, bI = np.empty(wmax), np.empty(wmax)   # a row of the row image's √q, 1/√q per lane
        bX = np.empty((ch, w * L))                # a row of its channels per lane
        T, O = np.zeros((4, wmax)), np.zeros((4, wmax))
        acc, sums = np.empty(wmax), np.empty((4, L))
        for k in range(thread, K, threads):
            i, g = rows[k], groups[k]
            cur = 0
            l0 = lay[0]
            _hold(buf, held, 0, lay, 0)
            for y in range(h):  # stage 0: the input covariances and gaps
                for z in range(ch):
                    _lanes(x1[i, y, :, z], bX[z])
                _input_row(bX, x2g[g], y, w, buf[0], l0)
            if l0[6]:
                _wrap(buf[0], l0, nc)
            if cap[0] >= 0:
                _diag_capture(out, i, g, n2, upper, cap[0], buf[0], l0, nc, acc, sums)
            o = 0
            while o < nops:
                fused = (iops[o, 0] == _CONV and o + 1 < nops and iops[o + 1, 0] == _LEAKY
                         and cap[o + 1] < 0)
                s = o + 2 if fused else o + 1   # the stage this pass writes
                q = o + 1 if fused else o       # the activation's op, if any
                nxt = 1 - cur
                _hold(buf, held, nxt, lay, s)
                RO = iops[o, 11] * L
                a2, b2 = fops[q, 3], fops[q, 4]
                for y in range(iops[o, 10]):
                    r = y * RO
                    if fused or iops[o, 0] == _LEAKY:
                        ow = iops[o, 11]
                        _lanes(S1[i, q, y * ow:(y + 1) * ow], bS)
                        _lanes(I1[i, q, y * ow:(y + 1) * ow], bI)
                    s2 = S2g[g, q].reshape(-1)[r:r + RO]
                    i2 = I2g[g, q].reshape(-1)[r:r + RO]
                    if iops[o, 0] == _CONV:
                        _conv_row(buf[cur], lay[o], buf[nxt], lay[s], y, iops[o], fops[o], fused,
                                  bS[:RO], bI[:RO], s2, i2, a2, b2, nc, T, O)
                    else:
                        _act_row(buf[cur], lay[o], buf[nxt], lay[s], y, bS[:RO], bI[:RO], s2,
                                 i2, a2, b2, nc)
                cur = nxt
                if lay[s, 6]:
                    _wrap(buf[cur], lay[s], nc)
                if cap[s] >= 0:
                    _diag_capture(out, i, g, n2, upper, cap[s], buf[cur], lay[s], nc,
                                  acc, sums)
                o = s
    return out


@njit(**_JIT)
def _dual_row(n, sq1, is1, sq2, is2, c, D, C, G, a2, b2, angles):
    """The leaky dual on n entries in place: one row pixel (√q, 1/√q scalars) against n
    column pixels (flat arrays)."""
    for k in range(n):
        M, gap, Cn, Gn = _leaky(sq1, is1, sq2[k], is2[k], c[k], D[k], C[k], G[k], a2, b2)
        c[k] = M
        D[k] = gap
        C[k] = Cn
        G[k] = Gn if angles else 0.0


@njit(**_JIT)
def _row_pair_sums(src, fr, fc, gap, h, w, P, a, a2, in_a, in_a2, wp, pw, circ, row):
    """row[x″·wp + x‴] += the padded pixel pair ((a, x″ − pw), (a2, x‴ − pw)) of the
    pixel-pair array src (P = h·w per side): the value where both pixels are inside, for a gap
    array (``gap``) ½q of the side inside where one is (fr, fc: ½q of the rows' and columns'
    pixels), 0 where both are outside (nothing added). CIRCULAR: wrapped, always inside."""
    for xx in range(wp):
        b = xx - pw
        if circ:
            b = b % w
        inside = in_a and 0 <= b < w
        t = row[xx * wp:(xx + 1) * wp]
        if inside and in_a2:
            base = (a * w + b) * P + a2 * w
            if circ:
                for xx2 in range(wp):
                    t[xx2] += src[base + (xx2 - pw) % w]
                continue
            lo = min(pw, wp)
            hi = min(pw + w, wp)
            if gap:
                v = fr[a * w + b]
                for xx2 in range(lo):
                    t[xx2] += v
                for xx2 in range(hi, wp):
                    t[xx2] += v
            _add(t[lo:hi], src[base + lo - pw:base + hi - pw])
        elif inside and gap:  # the column side's row is outside: its pixel is a zero
            v = fr[a * w + b]
            for xx2 in range(wp):
                t[xx2] += v
        elif in_a2 and gap:  # the row side is outside, the column side inside where it is
            for xx2 in range(wp):
                b2 = xx2 - pw
                if circ:
                    b2 = b2 % w
                if 0 <= b2 < w:
                    t[xx2] += fc[a2 * w + b2]


@njit(**_JIT)
def _conv_pair_rows(src, dst, fr, fc, gap, h, w, kh, kw, sh, sw, ph, pw, circ, oh, ow, y, y2,
                    T):
    """Eq. (1) of ``ntkcond.network.spatial`` on one output row pair (y, y2) of a pixel-pair
    array: T (wp, wp) = Σ over the filter's rows of the padded row pairs (``_row_pair_sums``),
    then dst[(y, x), (y2, x′)] = Σ over its columns of T[s·x + δ, s·x′ + δ], divided by
    k_h·k_w — the layer maps' sums in their order (the padding's zeros skipped, which adds
    nothing), a block of (wp)² values in cache instead of padded copies of the whole array."""
    P = h * w
    Pout = oh * ow
    wp = (ow - 1) * sw + kw
    Tb = T[:wp * wp]
    Tb[:] = 0.0
    for d in range(kh):
        a = sh * y + d - ph
        a2 = sh * y2 + d - ph
        if circ:
            a, a2 = a % h, a2 % h
        in_a, in_a2 = 0 <= a < h, 0 <= a2 < h
        if in_a or in_a2:
            _row_pair_sums(src, fr, fc, gap, h, w, P, a, a2, in_a, in_a2, wp, pw, circ, Tb)
    inv = float(kh * kw)
    for x in range(ow):
        base = (y * ow + x) * Pout + y2 * ow
        out = dst[base:base + ow]
        out[:] = 0.0
        for d in range(kw):
            r0 = (sw * x + d) * wp + d
            if sw == 1:
                _add(out, Tb[r0:r0 + ow])
            else:
                for x2 in range(ow):
                    out[x2] += Tb[r0 + sw * x2]
        for x2 in range(ow):
            out[x2] = out[x2] / inv


@njit(**_JIT)
def _pad_pair_array(src, fr, fc, gap, h, w, ph, pw, hp, wp, Pad):
    """The pixel-pair array src (h, w, h, w) padded to (hp, wp, hp, wp) as the layer maps pad
    it (``ntkcond.network.spatial._pad_full``): the image's pixel pairs copied in
    (``_copy_pairs``), the rest as ``_pad_border`` writes it."""
    _copy_pairs(src, Pad, h, w, ph, pw, hp, wp, True)
    _pad_border(Pad, fr, fc, gap, h, w, ph, pw, hp, wp)


@njit(**_JIT)
def _copy_pairs(plain, Pad, h, w, ph, pw, hp, wp, into_pad):
    """The image's pixel pairs between a plain pixel-pair array (h, w, h, w) and a padded one
    (hp, wp, hp, wp; the image's pairs from (ph, pw) on both sides): into Pad where
    ``into_pad``, else out of it into ``plain``."""
    P = h * w
    WP = hp * wp
    for a in range(h):
        for b in range(w):
            row = Pad[((a + ph) * wp + b + pw) * WP:((a + ph) * wp + b + pw + 1) * WP]
            base = (a * w + b) * P
            for a2 in range(h):
                o = (a2 + ph) * wp + pw
                if into_pad:
                    row[o:o + w] = plain[base + a2 * w:base + (a2 + 1) * w]
                else:
                    plain[base + a2 * w:base + (a2 + 1) * w] = row[o:o + w]


@njit(**_JIT)
def _pad_border(Pad, fr, fc, gap, h, w, ph, pw, hp, wp):
    """The cells of a padded pixel-pair array (hp, wp, hp, wp; the image's pixel pairs from
    (ph, pw) on both sides) where a pixel of the pair is outside the image: zeros, and for a
    gap array ½q of the side inside (fr, fc: ½q of the rows' and the columns' pixels); the
    image's pixel pairs are left as they are."""
    WP = hp * wp
    for a in range(hp):
        ra = a - ph
        for b in range(wp):
            rb = b - pw
            row = Pad[(a * wp + b) * WP:(a * wp + b + 1) * WP]
            if 0 <= ra < h and 0 <= rb < w:  # the row pixel inside: its ½q where the column's
                v = fr[ra * w + rb] if gap else 0.0  # pixel is outside
                for t in range(ph * wp):
                    row[t] = v
                for a2 in range(ph, ph + h):
                    for t in range(a2 * wp, a2 * wp + pw):
                        row[t] = v
                    for t in range(a2 * wp + pw + w, (a2 + 1) * wp):
                        row[t] = v
                for t in range((ph + h) * wp, WP):
                    row[t] = v
            else:  # the row pixel outside: the column pixel's ½q where it is inside
                row[:] = 0.0
                if gap:
                    for a2 in range(h):
                        o = (a2 + ph) * wp + pw
                        row[o:o + w] = fc[a2 * w:(a2 + 1) * w]


@njit(**_JIT)
def _rows3(a, b, c, o):
    """o = a + b + c, cell by cell (a 3 × 3 filter's sum over its rows)."""
    for e in range(o.size):
        o[e] = a[e] + b[e] + c[e]


@njit(inline="always", **_JIT)
def _cols3(t0, t1, t2, e):
    """A 3 × 3 filter sum at cell e from its columns' row sums (``_rows3``: column δx of the
    filter one cell further): ``_taps3``'s order."""
    return (t0[e] + t1[e + 1]) + t2[e + 2]


@njit(**_JIT)
def _taps3_pairs(src, dst, hp, wp, oh, ow, scale, sb2, tr, nc, act, s1, i1, s2, i2, a2, b2, T,
                 capture, keep, sums, acc):
    """A 3 × 3, stride-1 SAME convolution of a pixel-pair state padded for it (src (nc, …),
    each component (hp, wp, hp, wp) with one cell of padding on every side, as
    ``_pad_pair_array`` writes it) into dst in the same layout, output row pixel (y, x) into
    dst's (y + 1, x + 1). Eq. (1)'s filter sums, separably: for output row y, each padded
    column xx's sum over the filter's rows, T[f, xx] = Σ_δy src[f, (y + δy, xx), · + δy·wp]
    (``_rows3``: every source row read once per output row), then per row pixel the sum over
    its columns (``_cols3``), the weight map (``_weights``) and, where ``act``, the leaky dual
    after it (s1, i1: √q, 1/√q of the row image's output pixels; s2, i2: the column image's,
    in the padded layout's row stride wp). Each row pixel's outputs are one run of
    n = (oh − 1)·wp + ow cells, the padding columns between the image's rows included (their
    values meaningless, overwritten by ``_pad_border`` or never read): loops without a
    branch, which the compiler vectorises. Without G and with the dual, all of it in one loop
    (the hot case); otherwise the weight map of c, D, C, then G's
    (G = (s_w²/k)·ΣG + [trainable]·D), then the dual in place. T: (4, wp, n + 2) scratch.

    Where ``capture``, each row pixel's outputs are summed while in cache (``_image_sum``, as
    ``_pair_mean`` sums) into sums (2, 4): the totals and the current block's, for the
    stage's means; unless ``keep``, the rows go to a scratch run at dst's start instead (a
    stage only read out, never stored)."""
    WP = hp * wp
    n = (oh - 1) * wp + ow
    m = n + 2
    d = wp * WP + wp  # one filter row further on both sides
    for y in range(oh):
        for xx in range(wp):
            r = (y * wp + xx) * WP
            for f in range(nc):
                a = src[f]
                _rows3(a[r:r + m], a[r + d:r + d + m], a[r + 2 * d:r + 2 * d + m], T[f, xx, :m])
        for x in range(ow):
            p = y * ow + x
            ob = ((y + 1) * wp + x + 1) * WP + wp + 1 if keep else 0
            sq1, is1 = s1[p], i1[p]
            dc, dD, dC = dst[0, ob:ob + n], dst[1, ob:ob + n], dst[2, ob:ob + n]
            dG = dst[nc - 1, ob:ob + n]
            if act and nc == 3:
                c0, c1, c2 = T[0, x], T[0, x + 1], T[0, x + 2]
                d0, d1, d2 = T[1, x], T[1, x + 1], T[1, x + 2]
                e0, e1, e2 = T[2, x], T[2, x + 1], T[2, x + 2]
                for e in range(n):
                    c, D, C, _ = _weights(_cols3(c0, c1, c2, e), _cols3(d0, d1, d2, e),
                                          _cols3(e0, e1, e2, e), 0.0, scale, sb2, tr)
                    dc[e], dD[e], dC[e], _ = _leaky(sq1, is1, s2[e], i2[e], c, D, C, 0.0, a2, b2)
            else:
                _weights_row(T, x, scale, sb2, tr, nc, act, sq1, is1, s2, i2, a2, b2, dc, dD, dC,
                             dG)
            if capture:
                for f in range(nc):
                    sums[1, f] += _image_sum(dst[f, ob:ob + n], oh, ow, wp, acc)
                if (p + 1) % BLOCK == 0:
                    for f in range(nc):
                        sums[0, f] += sums[1, f]
                        sums[1, f] = 0.0


@njit(**_JIT)
def _weights_row(T, x, scale, sb2, tr, nc, act, sq1, is1, s2, i2, a2, b2, dc, dD, dC, dG):
    """``_taps3_pairs``' other cases on row pixel x's run (its columns' row sums in T): the
    weight map of c, D, C, then G's, then (``act``) the dual in place."""
    n = dc.size
    c0, c1, c2 = T[0, x], T[0, x + 1], T[0, x + 2]
    d0, d1, d2 = T[1, x], T[1, x + 1], T[1, x + 2]
    e0, e1, e2 = T[2, x], T[2, x + 1], T[2, x + 2]
    for e in range(n):
        dc[e], dD[e], dC[e], _ = _weights(_cols3(c0, c1, c2, e), _cols3(d0, d1, d2, e),
                                          _cols3(e0, e1, e2, e), 0.0, scale, sb2, tr)
    if nc == 4:
        g0, g1, g2 = T[3, x], T[3, x + 1], T[3, x + 2]
        for e in range(n):
            dG[e] = scale * _cols3(g0, g1, g2, e) + tr * dD[e]
    if act:
        _dual_row(n, sq1, is1, s2, i2, dc, dD, dC, dG, a2, b2, nc == 4)


@njit(**_JIT)
def _image_sum(a, h, w, wp, acc):
    """Σ of one row pixel's image cells in a run at row stride wp (h rows of w cells): each
    column x′'s sum over the rows (into acc, w cells: a loop the compiler vectorises), then
    over x′."""
    acc[:w] = a[:w]
    for y2 in range(1, h):
        r = a[y2 * wp:y2 * wp + w]
        for e in range(w):
            acc[e] += r[e]
    total = 0.0
    for e in range(w):
        total += acc[e]
    return total


@njit(inline="always", **_JIT)
def _same3(iops, o):
    """Operation o is a 3 × 3, stride-1 SAME convolution (its output the input's size, one
    cell of padding on every side): ``_taps3_pairs``' case."""
    return (iops[o, 0] == _CONV and iops[o, 1] == 3 and iops[o, 2] == 3 and iops[o, 3] == 1
            and iops[o, 4] == 1 and iops[o, 7] == 0 and iops[o, 10] == iops[o, 8]
            and iops[o, 11] == iops[o, 9])


@njit(**_JIT)
def _at_stride(a, h, w, wp, out):
    """out[y·wp + x] = a[y·w + x] (a per-pixel array in a padded layout's row stride; the
    cells x ≥ w zero)."""
    out[:] = 0.0
    for y in range(h):
        out[y * wp:y * wp + w] = a[y * w:(y + 1) * w]


@njit(**_JIT)
def _conv_pairs_all(Pads, hp, wp, kh, kw, oh, ow, TL, outP, state, sw2, sb2, tr, nc, act, a2, b2,
                    s1, i1, s2, i2, angles):
    """A stride-1 convolution (any k_h × k_w, not CIRCULAR) of the nc components at once
    (Pads (nc, …): each padded as ``_pad_pair_array`` writes it), row pixel by row pixel:
    each output row's sums over the filter's rows in TL, then over its columns, and with
    ``act`` the leaky dual of the activation that follows on each row pixel's new values while
    they are in cache (s1, i1: √q, 1/√q of the row image's output pixels; s2, i2 the column
    image's), into ``state`` (4, P²): c, D, C, G in turn (C's and G's trained terms read the
    new c and D). (The 3 × 3 SAME filter takes ``_taps3_pairs`` instead.)"""
    WP = hp * wp
    run = oh * wp
    Pout = oh * ow
    inv = float(kh * kw)
    stride = run + kw
    for y in range(oh):
        for f in range(nc):
            for xx in range(wp):
                t = TL[f, xx * stride:xx * stride + run]
                base = ((y * wp) + xx) * WP
                t[:] = Pads[f, base:base + run]
                for d in range(1, kh):
                    b = ((y + d) * wp + xx) * WP + d * wp
                    _add(t, Pads[f, b:b + run])
        for x in range(ow):
            base = (y * ow + x) * Pout
            for f in range(nc):
                o = outP[:run]
                o[:] = TL[f, x * stride:x * stride + run]
                for d in range(1, kw):
                    td = TL[f, (x + d) * stride + d:(x + d) * stride + d + run - d]
                    _add(o[:run - d], td)
                add = sb2 if f == 0 else 0.0
                tf = tr if f >= 2 else 0.0
                prev = state[0 if f == 2 else 1, base:base + Pout]
                dst = state[f, base:base + Pout]
                for y2 in range(oh):
                    seg = dst[y2 * ow:(y2 + 1) * ow]
                    pv = prev[y2 * ow:(y2 + 1) * ow]
                    src = o[y2 * wp:y2 * wp + ow]
                    for x2 in range(ow):
                        seg[x2] = sw2 * (src[x2] / inv) + add + tf * pv[x2]
            if act:
                _dual_row(Pout, s1[y * ow + x], i1[y * ow + x], s2, i2,
                          state[0, base:base + Pout], state[1, base:base + Pout],
                          state[2, base:base + Pout], state[3, base:base + Pout], a2, b2, angles)


@njit(**_JIT)
def _pair_mean(a, h, w, ph, pw, hp, wp, acc):
    """The mean over every pixel pair of a pixel-pair array (h, w, h, w) stored padded as
    (hp, wp, hp, wp), the image's pairs from (ph, pw) on both sides (plainly: hp, wp = h, w
    and ph = pw = 0): per row pixel each column x′'s sum over the column image's rows (into
    acc: ``_image_sum``), then over x′; the row pixels' totals in blocks of BLOCK
    (error ≲ (h + w + BLOCK + hw/BLOCK)·eps of Σ|a|)."""
    WP = hp * wp
    total = 0.0
    part = 0.0
    for p in range(h * w):
        base = ((p // w + ph) * wp + p % w + pw) * WP + ph * wp + pw
        part += _image_sum(a[base:], h, w, wp, acc)
        if (p + 1) % BLOCK == 0:
            total += part
            part = 0.0
    return (total + part) / (h * w * h * w)


@njit(**_JIT)
def _full_capture(out, k, slot, arr, nc, h, w, ph, pw, hp, wp, acc):
    """The means over every pixel pair of the current stage's c, D, C (and G where nc = 4; 0
    otherwise) into out[k, slot], from arr (≥ nc, …) in ``_pair_mean``'s layout."""
    for f in range(4):
        out[k, slot, f] = _pair_mean(arr[f], h, w, ph, pw, hp, wp, acc) if f < nc else 0.0


@njit(**_JIT)
def _patches(x, kh, kw, sh, sw, ph, pw, circ, oh, ow, out, sq):
    """out[p] = the k_h·k_w·C patch of image x (h, w, C) under output pixel p (SAME's zeros,
    CIRCULAR's wrap), sq[p] = |out[p]|²."""
    h, w, ch = x.shape
    for y in range(oh):
        for xo in range(ow):
            p = y * ow + xo
            t = 0
            s = 0.0
            for dh in range(kh):
                a = sh * y + dh - ph
                for dw in range(kw):
                    b = sw * xo + dw - pw
                    if circ:
                        a2, b2 = a % h, b % w
                        inside = True
                    else:
                        a2, b2 = a, b
                        inside = 0 <= a < h and 0 <= b < w
                    for z in range(ch):
                        v = x[a2, b2, z] if inside else 0.0
                        out[p, t] = v
                        s += v * v
                        t += 1
            sq[p] = s


@njit(**_JIT)
def _first_conv(xi, xj, iops, fops, pi, pjt, ni, nj, act, a2, b2, s1, i1, s2, i2, dst, nc,
                ph, pw, hp, wp, spare):
    """The state after the first convolution of a pair of images, straight from their patches
    (the input covariances x[p]·x′[p′]/C summed over the filter's offsets are the patches' dot
    products): c = s_w²·(πᵢ[p]·πⱼ[p′])/(kC) + s_b², D = s_w²·½|πᵢ[p] − πⱼ[p′]|²/(kC) (a sum of
    squares where ½(|πᵢ|² + |πⱼ|²) − πᵢ·πⱼ falls below ``REFINE`` of ½(|πᵢ|² + |πⱼ|²): the
    gap exact for near-duplicate patches; its one-sided fills are the zeros in the patches),
    C = [trainable]·c, G = [trainable]·D (the NTK of the input is 0; G only where nc = 4);
    where ``act``, the leaky dual after it (s1, i1: √q and 1/√q of the row image's output
    pixels; s2, i2: the column image's, at dst's row stride wp). Into the first ``nc``
    components of dst in ``_pair_mean``'s layout (ph, pw, hp, wp), each row pixel's cells as
    one run of (oh − 1)·wp + ow (the padding columns between the image's rows included: their
    values meaningless, as ``_taps3_pairs``'). pjt, nj: (kc, ≥ hp·wp), (≥ hp·wp) scratch;
    spare: a scratch run for G where nc = 3."""
    kh, kw, sh, sw, pad_h, pad_w, circ = (iops[0, 1], iops[0, 2], iops[0, 3], iops[0, 4],
                                          iops[0, 5], iops[0, 6], iops[0, 7])
    oh, ow = iops[0, 10], iops[0, 11]
    P = oh * ow
    WP = hp * wp
    n = (oh - 1) * wp + ow
    kc = pi.shape[1]
    sw2, sb2, tr = fops[0, 0], fops[0, 1], fops[0, 2]
    _patches(xi, kh, kw, sh, sw, pad_h, pad_w, circ, oh, ow, pi, ni)
    pj = np.empty((P, kc))
    nj0 = np.empty(P)
    _patches(xj, kh, kw, sh, sw, pad_h, pad_w, circ, oh, ow, pj, nj0)
    pjt[:, :n] = 0.0  # transposed, at the row stride wp: the products below run over p′
    nj[:n] = 0.0
    for r in range(P):
        e = (r // ow) * wp + r % ow
        nj[e] = nj0[r]
        for t in range(kc):
            pjt[t, e] = pj[r, t]
    scale = sw2 / kc
    for p in range(P):
        base = ((p // ow + ph) * wp + p % ow + pw) * WP + ph * wp + pw
        crow, drow, Crow = dst[0, base:base + n], dst[1, base:base + n], dst[2, base:base + n]
        Grow = dst[3, base:base + n] if nc == 4 else spare[:n]
        crow[:] = 0.0
        for t in range(kc):
            u = pi[p, t]
            v = pjt[t, :n]
            for r in range(n):
                crow[r] += u * v[r]
        half_i = 0.5 * ni[p]
        small = False
        for r in range(n):
            mean = half_i + 0.5 * nj[r]
            gap = mean - crow[r]
            drow[r] = gap
            small = small or gap < REFINE * mean
        if small:  # near-duplicate patches: the gap as a sum of squares
            for r in range(n):
                mean = half_i + 0.5 * nj[r]
                if drow[r] < REFINE * mean:
                    g = 0.0
                    for t in range(kc):
                        e = pi[p, t] - pjt[t, r]
                        g += e * e
                    drow[r] = 0.5 * g
        for r in range(n):
            crow[r] = scale * crow[r] + sb2
            drow[r] = scale * max(drow[r], 0.0)
        for r in range(n):  # (one loop per array written: each vectorises)
            Crow[r] = tr * crow[r]
        for r in range(n):
            Grow[r] = tr * drow[r]
        if act:
            _dual_row(n, s1[p], i1[p], s2, i2, crow, drow, Crow, Grow, a2, b2, nc == 4)


@njit(**_JIT)
def _full_sizes(iops):
    """The sizes of ``_full_items``' buffers: (a filter's padded row pairs, a padded
    pixel-pair array, a padded image, a padded row, a long run of rows), each the largest
    over the chain's convolutions, and whether a convolution takes the strided (or CIRCULAR)
    path, whose sums need a second pixel-pair state."""
    tmax, padmax, rowmax, colmax, longmax = 1, 1, 1, 1, 1
    strided = False
    for o in range(iops.shape[0]):
        if iops[o, 0] == _CONV:
            wp = (iops[o, 11] - 1) * iops[o, 4] + iops[o, 2]
            hp = (iops[o, 10] - 1) * iops[o, 3] + iops[o, 1]
            tmax = max(tmax, wp * wp)
            padmax = max(padmax, (hp * wp) ** 2)
            rowmax = max(rowmax, hp * wp)
            colmax = max(colmax, wp)
            longmax = max(longmax, wp * (iops[o, 10] * wp + iops[o, 2]))
            strided = strided or iops[o, 3] != 1 or iops[o, 4] != 1 or iops[o, 7] != 0
    return tmax, padmax, rowmax, colmax, longmax, strided


@njit(parallel=True, **_JIT)
def _full_items(x1, x2, rows, cols, iops, fops, Q1, A1, S1, I1, Q2, A2, S2, I2, angles,
                cap, ncap, threads):
    """The full mode's read-out sums for the pairs (x1[rows[k]], x2[cols[k]]): each pair's
    pixel-pair state (P, P) through the chain, then the mean over every pixel pair of c, D, C,
    G (``GlobalAvgPool``) at each captured stage (slot cap[s] ≥ 0). Q/A: per-image variances
    and NTK diagonals per stage (for SAME's one-sided gap fills); S/I: √q and 1/√q. Returns
    (K, ncap, 4)."""
    n1, h, w, ch = x1.shape
    P0 = h * w
    nops = iops.shape[0]
    pmax = S1.shape[2]
    tmax, padmax, rowmax, colmax, longmax, strided = _full_sizes(iops)
    K = rows.size
    out = np.zeros((K, ncap, 4))
    # the first convolution straight from patches unless the input stage itself is read out
    patches = nops > 0 and iops[0, 0] == _CONV and cap[0] < 0
    threads = max(1, min(threads, K))
    nc = 4 if angles else 3  # the components carried: c, D, C (and G for angles)
    for thread in prange(threads):
        n = pmax * pmax
        state = np.zeros((4, n))
        c, D, C, G = state[0], state[1], state[2], state[3]
        nb = n if strided else 1  # the strided path's sums (``_conv_pair_rows``)
        bc, bD, bC, bG = np.empty(nb), np.empty(nb), np.empty(nb), np.zeros(nb)
        T = np.empty(tmax)
        xjt = np.empty((ch, P0))
        P1 = iops[0, 10] * iops[0, 11] if nops else 1
        kc = iops[0, 1] * iops[0, 2] * ch if nops else 1
        pi, pjt = np.empty((P1, kc)), np.empty((kc, rowmax))
        ni, nj = np.empty(P1), np.empty(rowmax)
        Pads = np.empty((2, 4 if angles else 3, padmax))  # two: read one, write the other
        s2p, i2p = np.zeros(rowmax), np.zeros(rowmax)
        T3 = np.empty((4, colmax, rowmax))  # the 3 × 3 path's row sums (``_taps3_pairs``)
        spare = np.empty(rowmax)  # ``_first_conv``'s G without angles
        sums = np.zeros((2, 4))  # ``_taps3_pairs``' read-out sums
        acc = np.empty(pmax)  # ``_pair_mean``'s column sums
        TL3 = np.zeros((4 if angles else 3, longmax))
        outP = np.empty(longmax)
        half_r, half_c = np.empty(pmax), np.empty(pmax)
        halfA_r, halfA_c = np.empty(pmax), np.empty(pmax)
        for k in range(thread, K, threads):
            i, j = rows[k], cols[k]
            first = 0
            skip = -1  # an activation already applied with the operation before it
            # where the current stage is: Pads[cur] (padded, for the 3 × 3 path) or state
            cur, padded = 0, False
            held = -1  # the operation whose input Pads[cur] holds (its padding still to fill)
            done = -1  # a stage read out with the operation that wrote it
            if patches:  # the first convolution from the images' patches (``_first_conv``),
                # the activation after it fused unless the convolution's stage is read out
                act = nops > 1 and iops[1, 0] == _LEAKY and cap[1] < 0
                q = 1 if act else 0
                oh, ow = iops[0, 10], iops[0, 11]
                padded = q + 1 < nops and _same3(iops, q + 1)
                hp1, wp1, pad1 = (oh + 2, ow + 2, 1) if padded else (oh, ow, 0)
                _at_stride(S2[j, q], oh, ow, wp1, s2p)
                _at_stride(I2[j, q], oh, ow, wp1, i2p)
                _first_conv(x1[i], x2[j], iops, fops, pi, pjt, ni, nj, act, fops[q, 3],
                            fops[q, 4], S1[i, q], I1[i, q], s2p, i2p, Pads[cur] if padded
                            else state, nc, pad1, pad1, hp1, wp1, spare)
                if padded:  # in the next convolution's layout, its padding still to fill
                    held = q + 1
                first = 1
                if act:
                    skip = 1
                if cap[1] >= 0:  # (then not act)
                    _full_capture(out, k, cap[1], Pads[cur] if padded else state, nc, oh, ow,
                                  pad1, pad1, hp1, wp1, acc)
            xi = x1[i].reshape(P0, ch)
            xj = x2[j].reshape(P0, ch)
            for z in range(ch if not patches else 0):  # the column image's channels as rows
                for r in range(P0):
                    xjt[z, r] = xj[r, z]
            for p in range(P0 if not patches else 0):
                crow = c[p * P0:(p + 1) * P0]
                drow = D[p * P0:(p + 1) * P0]
                crow[:] = 0.0
                drow[:] = 0.0
                for z in range(ch):
                    u = xi[p, z]
                    v = xjt[z, :P0]
                    for r in range(P0):
                        crow[r] += u * v[r]
                        drow[r] += (u - v[r]) * (u - v[r])
                for r in range(P0):
                    crow[r] = crow[r] / ch
                    drow[r] = 0.5 * drow[r] / ch
            if not patches:
                C[:] = 0.0
                G[:] = 0.0
            if cap[0] >= 0:
                _full_capture(out, k, cap[0], state, nc, h, w, 0, 0, h, w, acc)
            for o in range(first, nops):
                hin, win, hout, wout = iops[o, 8], iops[o, 9], iops[o, 10], iops[o, 11]
                Pin, P = hin * win, hout * wout
                if o != skip and iops[o, 0] == _CONV:
                    kh, kw, sh, sw = iops[o, 1], iops[o, 2], iops[o, 3], iops[o, 4]
                    ph, pw, circ = iops[o, 5], iops[o, 6], iops[o, 7]
                    for p in range(Pin):  # the gaps' one-sided fills: ½q (½Θ) of the side inside
                        half_r[p] = 0.5 * Q1[i, o, p]
                        half_c[p] = 0.5 * Q2[j, o, p]
                        halfA_r[p] = 0.5 * A1[i, o, p]
                        halfA_c[p] = 0.5 * A2[j, o, p]
                    if sh == 1 and sw == 1 and not circ:  # padded once, then long runs
                        hp = hout + kh - 1
                        wp = wout + kw - 1
                        src = Pads[cur]
                        for f in range(nc):  # padded: copied in, unless held padded already
                            fr = half_r if f == 1 else halfA_r
                            fc = half_c if f == 1 else halfA_c
                            if held == o:
                                _pad_border(src[f], fr, fc, f == 1 or f == 3, hin, win, ph, pw,
                                            hp, wp)
                            else:
                                _pad_pair_array(state[f], fr, fc, f == 1 or f == 3, hin, win,
                                                ph, pw, hp, wp, src[f])
                        # the activation after it, fused, unless its stage is read out
                        act = o + 1 < nops and iops[o + 1, 0] == _LEAKY and cap[o + 1] < 0
                        q = o + 1 if act else o
                        held = -1
                        padded = False
                        if _same3(iops, o):  # into the other padded buffer, in its layout
                            _at_stride(S2[j, q], hout, wout, wp, s2p)
                            _at_stride(I2[j, q], hout, wout, wp, i2p)
                            # read out while in cache; stored only where read after
                            capture = cap[q + 1] >= 0
                            keep = q + 1 < nops
                            sums[:] = 0.0
                            _taps3_pairs(src, Pads[1 - cur], hp, wp, hout, wout, fops[o, 0] / 9.0,
                                         fops[o, 1], fops[o, 2], nc, act, S1[i, q], I1[i, q],
                                         s2p, i2p, fops[q, 3], fops[q, 4], T3, capture, keep,
                                         sums, acc)
                            if capture:
                                for f in range(4):
                                    out[k, cap[q + 1], f] = (sums[0, f] + sums[1, f]) / (P * P)
                                done = q + 1
                            cur = 1 - cur
                            padded = True
                            if q + 1 < nops and _same3(iops, q + 1):
                                held = q + 1  # the next convolution reads it there
                            elif q + 1 < nops:  # the next operation reads it from state
                                for f in range(nc):
                                    _copy_pairs(state[f], Pads[cur, f], hout, wout, 1, 1, hp,
                                                wp, False)
                                padded = False
                        else:
                            _conv_pairs_all(src, hp, wp, kh, kw, hout, wout, TL3, outP, state,
                                            fops[o, 0], fops[o, 1], fops[o, 2], nc, act,
                                            fops[q, 3], fops[q, 4], S1[i, q], I1[i, q],
                                            S2[j, q], I2[j, q], angles)
                        if act:
                            skip = o + 1
                    else:
                        for y in range(hout):  # row pairs in turn: each block in cache
                            for y2 in range(hout):
                                for f in range(nc):
                                    src = c if f == 0 else (D if f == 1 else (C if f == 2 else G))
                                    dst = bc if f == 0 else (bD if f == 1 else (bC if f == 2
                                                                                 else bG))
                                    fr = half_r if f == 1 else halfA_r
                                    fc = half_c if f == 1 else halfA_c
                                    _conv_pair_rows(src, dst, fr, fc, f == 1 or f == 3, hin,
                                                    win, kh, kw, sh, sw, ph, pw, circ, hout, wout,
                                                    y, y2, T)
                        _affine(P * P, fops[o, 0], fops[o, 1], fops[o, 2], bc, bD, bC, bG, c, D,
                                C, G, angles)
                        held = -1
                        padded = False
                elif o != skip:
                    a2, b2 = fops[o, 3], fops[o, 4]
                    s2, i2 = S2[j, o], I2[j, o]
                    for p in range(P):
                        _dual_row(P, S1[i, o, p], I1[i, o, p], s2, i2, c[p * P:(p + 1) * P],
                                  D[p * P:(p + 1) * P], C[p * P:(p + 1) * P],
                                  G[p * P:(p + 1) * P], a2, b2, angles)
                if cap[o + 1] < 0 or done == o + 1:  # none, or read out already
                    continue
                pad = 1 if padded else 0  # (padded: the 3 × 3 path's layout)
                _full_capture(out, k, cap[o + 1], Pads[cur] if padded else state, nc, hout, wout,
                              pad, pad, hout + 2 * pad, wout + 2 * pad, acc)
    return out
