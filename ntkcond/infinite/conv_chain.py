"""The compiled fast path of convolutional nets: a chain of ``Conv`` layers and activations of
the leaky family (ReLU, linear, |·|, leaky slopes) up to a ``Flatten`` or ``GlobalAvgPool``
read-out, evaluated pair by pair in compiled loops (numba) that keep each pair's pixel state in
cache and never form the network's temporaries.

The equations are those of the layer maps (``ntkcond.network.conv`` eq. (1),
``ntkcond.network.spatial`` eq. (1), ``ntkcond.activations.leaky`` eq. (2)): per pixel (pair)
and layer ℓ,

    conv:   c′ = s_w²·conv(c) + s_b²,  D′ = s_w²·conv(D),  C′ = [trainable]·c′ + s_w²·conv(C),
            G′ = [trainable]·D′ + s_w²·conv(G)
    leaky:  θ = 2 atan(√(min(u₋, u₊)/max(u₋, u₊))) (or π minus it), u∓ = 1 ∓ cos θ from the gap
            (``ntkcond.activations._bivariate``), M = a²c + b²√(q₁q₂)(1 − k),
            D′ = a²D + b²(½s² + √(q₁q₂)k), C′ = (a² + b²(1 − 2θ/π))·C, G′ = (a² + b²)·G + 2b²θ/π·C

(1 − k = cos of the nearer of θ, π − θ plus 2(sin − angle·cos)/π of it, ``sin_minus_angle_cos``'s
series below 1 rad). The arctangent is fdlibm's (error < 1 ulp) written without branches, so
that the compiler vectorises the loop; everything else is the layer maps' arithmetic in the
same order. The per-image diagonals (variances q and Θ(x, x) per pixel, at every stage) come
first from a cheap pass over the images; the pairs then need only their own c, D, C, G.

``ConvChain.of(network)`` recognises the nets this path takes (``None`` for any other:
pooling inside the chain, other activations, residual branches take the layer maps). The
engine (``ntkcond.infinite.engine.evaluate_images``) uses it where the per-image diagonals stay
within [2^−RANGE_BITS, 2^RANGE_BITS] (the layer maps' power-of-two rescaling is then never
triggered, so both routes compute the same numbers); the layers after the read-out run as
layer maps on the resulting ``PairState``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..activations.leaky import SMC_COEFFS, SMC_SERIES_BELOW, Activation
from ..network.conv import Conv, Flatten, GlobalAvgPool
from ..network.layers import Identity, Nonlinearity, leaves
from ..network.spatial import output_size, padding_before
from ..network.state import PairState

__all__ = ["ConvChain", "RANGE_BITS"]

#: The compiled route runs where every per-image diagonal stays within
#: [2^−RANGE_BITS, 2^RANGE_BITS] (zeros allowed): the layer maps' rescaling (``RESCALE_BITS``)
#: would not act there.
RANGE_BITS = 200

_CONV, _LEAKY = 0, 1

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

    def tile(self, x1, x2, diag1, diag2, *, upper: bool, angles: bool, stages=None):
        """The read-out means (n1, n2, len(stages), 4) of c, D, C, G of every pair
        (x1[i], x2[j]) at each of ``stages`` (default: the last), over the spatial diagonal
        (``Flatten``) or over every pixel pair (``GlobalAvgPool``); ``upper``: x2 is x1 and
        only j ≥ i is computed (the rest left 0). ``diag1``, ``diag2``: the ``diagonals`` of
        x1 and x2; G is 0 unless ``angles``."""
        stages, cap = self._captures(stages)
        x1 = np.ascontiguousarray(x1, dtype=np.float64)
        x2 = np.ascontiguousarray(x2, dtype=np.float64)
        n1, n2 = len(x1), len(x2)
        S1, I1 = _roots(diag1[0])
        S2, I2 = _roots(diag2[0])
        if self.pools:
            rows, cols = np.triu_indices(n1, m=n2) if upper else np.indices((n1, n2))
            rows, cols = rows.ravel().astype(np.int64), cols.ravel().astype(np.int64)
            sums = _full_items(x1, x2, rows, cols, self.iops, self.fops, diag1[0], diag1[1], S1,
                               I1, diag2[0], diag2[1], S2, I2, bool(angles), cap, len(stages),
                               get_num_threads())
            out = np.zeros((n1, n2, len(stages), 4))
            out[rows, cols] = sums
            return out
        rows, groups = _items(n1, n2, upper)
        x2g = _grouped(x2.reshape(n2, -1, x2.shape[-1]), 0)        # (G, P, C, LANES)
        return _diag_items(x1, x2g, rows, groups, n2, upper, self.iops, self.fops, S1, I1,
                           _grouped(S2, 1), _grouped(I2, 1), bool(angles), cap, len(stages),
                           get_num_threads())

    def selves(self, x, diag, *, angles: bool, stages=None):
        """The read-out means (n, len(stages), 4) of the pairs (x[i], x[i])."""
        stages, cap = self._captures(stages)
        x = np.ascontiguousarray(x, dtype=np.float64)
        S, I = _roots(diag[0])
        idx = np.arange(len(x), dtype=np.int64)
        if self.pools:
            return _full_items(x, x, idx, idx, self.iops, self.fops, diag[0], diag[1], S, I,
                               diag[0], diag[1], S, I, bool(angles), cap, len(stages),
                               get_num_threads())
        out = np.empty((len(x), len(stages), 4))
        for k, stage in enumerate(stages):  # Flatten: the per-image diagonals' means
            P = self.pixels(stage)
            out[:, k, 0] = np.mean(diag[0][:, stage, :P], axis=1)
            out[:, k, 1] = 0.0
            out[:, k, 2] = np.mean(diag[1][:, stage, :P], axis=1)
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
    (``upper``: the groups from the one holding i)."""
    G = -(-n2 // LANES)
    rows, groups = [], []
    for i in range(n1):
        gs = np.arange(i // LANES if upper else 0, G)
        rows.append(np.full(gs.size, i))
        groups.append(gs)
    return (np.concatenate(rows).astype(np.int64), np.concatenate(groups).astype(np.int64))


# ----------------------------------------------------------------------------------------------
# Compiled kernels. numba compiles them on first use (cached on disk); error_model="numpy" lets
# divisions vectorise (IEEE results, no ZeroDivisionError branches).

from numba import get_num_threads, njit, prange  # noqa: E402,F401

_SMC_BELOW = float(SMC_SERIES_BELOW)
_PI = math.pi


# sin θ − θ cos θ's Taylor coefficients (``SMC_COEFFS``) as compile-time constants, highest first.
(_S13, _S12, _S11, _S10, _S9, _S8, _S7, _S6, _S5, _S4, _S3, _S2, _S1) = SMC_COEFFS[::-1]


@njit(inline="always", error_model="numpy", cache=True)
def _smac(angle, sin_angle, cos_angle):
    """sin θ − θ cos θ (the 13-term series below 1 rad, else the direct form)."""
    t = angle * angle
    series = ((((((((((((_S13 * t + _S12) * t + _S11) * t + _S10) * t + _S9) * t + _S8) * t
                     + _S7) * t + _S6) * t + _S5) * t + _S4) * t + _S3) * t + _S2) * t + _S1)
    series = series * angle * t
    direct = sin_angle - angle * cos_angle
    return series if angle < _SMC_BELOW else direct


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


@njit(inline="always", error_model="numpy", cache=True)
def _half_angle(lo):
    """The angle ψ ∈ [0, π/2] with 1 − cos ψ = lo ∈ [0, 1]: 2 asin(√(lo/2)) (polynomial)."""
    u = 0.5 * lo
    p = (((((((((((((((((((_A20 * u + _A19) * u + _A18) * u + _A17) * u + _A16) * u + _A15)
                       * u + _A14) * u + _A13) * u + _A12) * u + _A11) * u + _A10) * u + _A9)
                 * u + _A8) * u + _A7) * u + _A6) * u + _A5) * u + _A4) * u + _A3) * u + _A2)
         * u + _A1) * u + _A0
    return 2.0 * math.sqrt(u) * p


@njit(inline="always", error_model="numpy", cache=True)
def _leaky(sq1, is1, sq2, is2, c, D, C, G, a2, b2, angles):
    """One entry of the leaky dual, (c′, D′, C′, G′), from the pre-activations' √q and 1/√q
    (0 for q = 0) of both sides."""
    s = sq1 - sq2
    r = sq1 * sq2
    ir = is1 * is2
    pos = r > 0
    um = min(max((D - 0.5 * s * s) * ir, 0.0), 2.0) if pos else 0.0
    up = min(max((r + c) * ir, 0.0), 2.0) if pos else 2.0
    small = um <= up
    lo = um if small else up
    near = _half_angle(min(lo, 1.0))
    theta = near if small else _PI - near
    sin_t = math.sqrt(um * up)
    omk = lo - 2.0 * _smac(near, sin_t, 1.0 - lo) / _PI
    M = a2 * c + b2 * r * (1.0 - omk)
    gap = a2 * D + b2 * (0.5 * s * s + r * omk)
    Cn = (a2 + b2 * (1.0 - 2.0 * theta / _PI)) * C
    Gn = ((a2 + b2) * G + (2.0 * b2 * theta / _PI) * C) if angles else 0.0
    return M, gap, Cn, Gn


@njit(error_model="numpy", cache=True)
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


@njit(error_model="numpy", cache=True)
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


@njit(inline="always", error_model="numpy", cache=True)
def _mean(a, n):
    """Σ a[:n]/n, compensated (Neumaier)."""
    s = 0.0
    comp = 0.0
    for k in range(n):
        v = a[k]
        t = s + v
        if abs(s) >= abs(v):
            comp += (s - t) + v
        else:
            comp += (v - t) + s
        s = t
    return (s + comp) / n


@njit(error_model="numpy", cache=True)
def _add(dst, src):
    """dst += src (equal sizes)."""
    for t in range(dst.size):
        dst[t] += src[t]


@njit(error_model="numpy", cache=True)
def _conv_block(src, h, w, V, kh, kw, sh, sw, ph, pw, circ, oh, ow, tmp, dst):
    """Eq. (1) (``ntkcond.network.spatial``) on an array (h, w, V) flattened: V values per
    pixel (LANES pairs of one component in the diagonal mode, a row of pixel pairs in the full
    mode), summed over the filter's rows then its columns (0 + a₀ + a₁ + …, the terms outside
    a SAME image being zeros: the layer maps' sums, bit for bit) into dst (oh, ow, V), divided
    by k_h·k_w. The loops run over contiguous slices (indices from ``range``: no negative-index
    handling), so that they vectorise."""
    R = w * V
    for y in range(oh):
        trow = tmp[y * R:(y + 1) * R]
        trow[:] = 0.0
        for d in range(kh):
            sy = sh * y + d - ph
            if circ:
                sy = sy % h
            elif sy < 0 or sy >= h:
                continue
            _add(trow, src[sy * R:(sy + 1) * R])
    inv = float(kh * kw)
    RO = ow * V
    for y in range(oh):
        drow = dst[y * RO:(y + 1) * RO]
        trow = tmp[y * R:(y + 1) * R]
        drow[:] = 0.0
        for d in range(kw):
            if sw == 1 and not circ:
                shift = d - pw
                x0 = max(0, -shift)
                x1 = min(ow, w - shift)
                if x1 > x0:
                    _add(drow[x0 * V:x1 * V], trow[(x0 + shift) * V:(x1 + shift) * V])
            else:
                for x in range(ow):
                    sx = sw * x + d - pw
                    if circ:
                        sx = sx % w
                    elif sx < 0 or sx >= w:
                        continue
                    _add(drow[x * V:(x + 1) * V], trow[sx * V:(sx + 1) * V])
        for t in range(RO):
            drow[t] = drow[t] / inv


@njit(error_model="numpy", cache=True)
def _dual_flat(n, sq1, is1, sq2, is2, c, D, C, G, a2, b2, angles):
    """The leaky dual on n entries in place (every argument a flat array of n values)."""
    for k in range(n):
        M, gap, Cn, Gn = _leaky(sq1[k], is1[k], sq2[k], is2[k], c[k], D[k], C[k], G[k], a2, b2,
                                angles)
        c[k] = M
        D[k] = gap
        C[k] = Cn
        G[k] = Gn


@njit(error_model="numpy", cache=True)
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


@njit(error_model="numpy", cache=True)
def _block_means(c, D, C, G, n, out):
    """out[f, l] = mean over pixels p < n of component f (c, D, C, G) of lane l, each array
    (pixels, LANES) flattened, summed in blocks of BLOCK pixels."""
    L = LANES
    part = np.empty(L)
    for f in range(4):
        arr = (c if f == 0 else (D if f == 1 else (C if f == 2 else G)))[:n * L].reshape(n, L)
        for l in range(L):
            out[f, l] = 0.0
        for b0 in range(0, n, BLOCK):
            for l in range(L):
                part[l] = 0.0
            for p in range(b0, min(n, b0 + BLOCK)):
                for l in range(L):
                    part[l] += arr[p, l]
            for l in range(L):
                out[f, l] += part[l]
        for l in range(L):
            out[f, l] = out[f, l] / n


@njit(error_model="numpy", cache=True)
def _diag_capture(out, i, g, n2, upper, slot, c, D, C, G, P, sums):
    """The read-out means of a work item's current stage into out[i, j, slot] (lanes j)."""
    L = LANES
    _block_means(c, D, C, G, P, sums)
    for l in range(L):
        j = g * L + l
        if j < n2 and (j >= i or not upper):
            for f in range(4):
                out[i, j, slot, f] = sums[f, l]


@njit(parallel=True, error_model="numpy", cache=True)
def _diag_items(x1, x2g, rows, groups, n2, upper, iops, fops, S1, I1, S2g, I2g, angles,
                cap, ncap, threads):
    """The diagonal mode's read-out means for work items (i, g): row image x1[i] against the
    LANES column images of group g (x2g: (groups, pixels, channels, LANES); S2g, I2g: their √q
    and 1/√q, (stages, groups, pixels, LANES)). Each component (c, D, C, G) of a work item is
    an array (pixels, LANES), C-contiguous, indexed by ``range`` variables only (no
    negative-index handling: the loops vectorise). Returns (n1, n2, 4): the means of c, D, C,
    G over the last stage's pixels (``upper``: j ≥ i only)."""
    L = LANES
    n1, h, w, ch = x1.shape
    P0 = h * w
    nops = iops.shape[0]
    pmax = S1.shape[2]
    tmax = 1
    for o in range(nops):
        tmax = max(tmax, iops[o, 10] * iops[o, 9])
    K = rows.size
    out = np.zeros((n1, n2, ncap, 4))
    threads = max(1, min(threads, K))
    for thread in prange(threads):  # one set of buffers per thread, items dealt in turn
        n = pmax * L
        c, D, C, G = np.empty(n), np.empty(n), np.empty(n), np.zeros(n)
        bc, bD, bC, bG = np.empty(n), np.empty(n), np.empty(n), np.zeros(n)
        s1, i1 = np.empty(n), np.empty(n)
        tmp = np.empty(tmax * L)
        sums = np.empty((4, L))
        for k in range(thread, K, threads):
            i, g = rows[k], groups[k]
            X2 = x2g[g]
            xi = x1[i].reshape(P0, ch)
            cv = c[:P0 * L].reshape(P0, L)
            dv = D[:P0 * L].reshape(P0, L)
            for p in range(P0):
                for l in range(L):
                    cv[p, l] = 0.0
                    dv[p, l] = 0.0
                for z in range(ch):
                    u = xi[p, z]
                    for l in range(L):
                        v = X2[p, z, l]
                        cv[p, l] += u * v
                        dv[p, l] += (u - v) * (u - v)
                for l in range(L):
                    cv[p, l] = cv[p, l] / ch
                    dv[p, l] = 0.5 * dv[p, l] / ch
            C[:] = 0.0
            G[:] = 0.0
            if cap[0] >= 0:
                _diag_capture(out, i, g, n2, upper, cap[0], c, D, C, G, P0, sums)
            for o in range(nops):
                hin, win, hout, wout = iops[o, 8], iops[o, 9], iops[o, 10], iops[o, 11]
                P = hout * wout
                if iops[o, 0] == _CONV:
                    kh, kw, sh, sw = iops[o, 1], iops[o, 2], iops[o, 3], iops[o, 4]
                    ph, pw, circ = iops[o, 5], iops[o, 6], iops[o, 7]
                    _conv_block(c, hin, win, L, kh, kw, sh, sw, ph, pw, circ, hout, wout, tmp, bc)
                    _conv_block(D, hin, win, L, kh, kw, sh, sw, ph, pw, circ, hout, wout, tmp, bD)
                    _conv_block(C, hin, win, L, kh, kw, sh, sw, ph, pw, circ, hout, wout, tmp, bC)
                    if angles:
                        _conv_block(G, hin, win, L, kh, kw, sh, sw, ph, pw, circ, hout, wout,
                                    tmp, bG)
                    _affine(P * L, fops[o, 0], fops[o, 1], fops[o, 2], bc, bD, bC, bG, c, D, C,
                            G, angles)
                else:
                    r1, r2 = S1[i, o], I1[i, o]
                    v1 = s1[:P * L].reshape(P, L)
                    v2 = i1[:P * L].reshape(P, L)
                    for p in range(P):  # the row image's values in every lane (flat loop)
                        a, b = r1[p], r2[p]
                        for l in range(L):
                            v1[p, l] = a
                            v2[p, l] = b
                    _dual_flat(P * L, s1, i1, S2g[o, g].reshape(-1), I2g[o, g].reshape(-1),
                               c, D, C, G, fops[o, 3], fops[o, 4], angles)
                if cap[o + 1] >= 0:
                    _diag_capture(out, i, g, n2, upper, cap[o + 1], c, D, C, G, P, sums)
    return out


@njit(error_model="numpy", cache=True)
def _dual_row(n, sq1, is1, sq2, is2, c, D, C, G, a2, b2, angles):
    """The leaky dual on n entries in place: one row pixel (√q, 1/√q scalars) against n
    column pixels (flat arrays)."""
    for k in range(n):
        M, gap, Cn, Gn = _leaky(sq1, is1, sq2[k], is2[k], c[k], D[k], C[k], G[k], a2, b2, angles)
        c[k] = M
        D[k] = gap
        C[k] = Cn
        G[k] = Gn


@njit(error_model="numpy", cache=True)
def _pad_pairs(src, h, w, hp, wp, ph, pw, circ, fill_r, fill_c, pad):
    """A pixel-pair array (h, w, h, w) padded on both sides to (hp, wp, hp, wp): wrapped
    (``circ``), else zeros, except that a pair with one side inside the image gets that side's
    ``fill_r[p]`` / ``fill_c[p′]`` (½q for a gap: the gap of a pixel and a zero)."""
    P = h * w
    WP = hp * wp
    for y in range(hp):
        sy = y - ph
        for x in range(wp):
            sx = x - pw
            row = pad[(y * wp + x) * WP:(y * wp + x + 1) * WP]
            if circ:
                r = (sy % h) * w + (sx % w)
                for y2 in range(hp):
                    s2 = (y2 - ph) % h
                    for x2 in range(wp):
                        row[y2 * wp + x2] = src[r * P + s2 * w + (x2 - pw) % w]
                continue
            r_in = 0 <= sy < h and 0 <= sx < w
            r = sy * w + sx
            for y2 in range(hp):
                s2 = y2 - ph
                for x2 in range(wp):
                    t2 = x2 - pw
                    c_in = 0 <= s2 < h and 0 <= t2 < w
                    if r_in and c_in:
                        row[y2 * wp + x2] = src[r * P + s2 * w + t2]
                    elif r_in:
                        row[y2 * wp + x2] = fill_r[r]
                    elif c_in:
                        row[y2 * wp + x2] = fill_c[s2 * w + t2]
                    else:
                        row[y2 * wp + x2] = 0.0


@njit(error_model="numpy", cache=True)
def _conv_pairs(pad, hp, wp, kh, kw, sh, sw, oh, ow, tmp, dst):
    """Eq. (1) on a padded pixel-pair array (hp, wp, hp, wp): the same filter offset on both
    sides, summed over the filter's rows then its columns (the layer maps' order), into dst
    (oh, ow, oh, ow), divided by k_h·k_w. tmp holds (oh, wp, oh, wp)."""
    WP = hp * wp
    TW = oh * wp
    for y in range(oh):
        for x in range(wp):
            trow = tmp[(y * wp + x) * TW:(y * wp + x + 1) * TW]
            trow[:] = 0.0
            for d in range(kh):
                prow = pad[((sh * y + d) * wp + x) * WP:((sh * y + d) * wp + x + 1) * WP]
                for y2 in range(oh):
                    a = trow[y2 * wp:(y2 + 1) * wp]
                    b = prow[(sh * y2 + d) * wp:(sh * y2 + d + 1) * wp]
                    _add(a, b)
    OW = oh * ow
    inv = float(kh * kw)
    for y in range(oh):
        for x in range(ow):
            drow = dst[(y * ow + x) * OW:(y * ow + x + 1) * OW]
            drow[:] = 0.0
            for d in range(kw):
                trow = tmp[(y * wp + sw * x + d) * TW:(y * wp + sw * x + d + 1) * TW]
                for y2 in range(oh):
                    a = drow[y2 * ow:(y2 + 1) * ow]
                    if sw == 1:
                        _add(a, trow[y2 * wp + d:y2 * wp + d + ow])
                    else:
                        for x2 in range(ow):
                            a[x2] += trow[y2 * wp + sw * x2 + d]
            for t in range(OW):
                drow[t] = drow[t] / inv


@njit(error_model="numpy", cache=True)
def _sum_all(a, n):
    """Σ a[:n] in blocks of BLOCK·BLOCK (two-level summation)."""
    total = 0.0
    step = BLOCK * BLOCK
    for b0 in range(0, n, step):
        part = 0.0
        for t in range(b0, min(n, b0 + step)):
            part += a[t]
        total += part
    return total


@njit(error_model="numpy", cache=True)
def _full_capture(out, k, slot, c, D, C, G, N):
    """The means over every pixel pair of the current stage into out[k, slot]."""
    out[k, slot, 0] = _sum_all(c, N) / N
    out[k, slot, 1] = _sum_all(D, N) / N
    out[k, slot, 2] = _sum_all(C, N) / N
    out[k, slot, 3] = _sum_all(G, N) / N


@njit(parallel=True, error_model="numpy", cache=True)
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
    hpmax = 1
    tmax = 1
    for o in range(nops):
        if iops[o, 0] == _CONV:
            hp = (iops[o, 10] - 1) * iops[o, 3] + iops[o, 1]
            wp = (iops[o, 11] - 1) * iops[o, 4] + iops[o, 2]
            hpmax = max(hpmax, (hp * wp) ** 2)
            tmax = max(tmax, (iops[o, 10] * wp) ** 2)
    K = rows.size
    out = np.zeros((K, ncap, 4))
    threads = max(1, min(threads, K))
    for thread in prange(threads):
        n = pmax * pmax
        c, D, C, G = np.empty(n), np.empty(n), np.empty(n), np.zeros(n)
        bc, bD, bC, bG = np.empty(n), np.empty(n), np.empty(n), np.zeros(n)
        pad = np.empty(hpmax)
        tmp = np.empty(tmax)
        half_r, half_c = np.empty(pmax), np.empty(pmax)
        zeros = np.zeros(pmax)
        for k in range(thread, K, threads):
            i, j = rows[k], cols[k]
            xi = x1[i].reshape(P0, ch)
            xj = x2[j].reshape(P0, ch)
            for p in range(P0):
                crow = c[p * P0:(p + 1) * P0]
                drow = D[p * P0:(p + 1) * P0]
                for r in range(P0):
                    t = 0.0
                    g = 0.0
                    for z in range(ch):
                        u = xi[p, z]
                        v = xj[r, z]
                        t += u * v
                        g += (u - v) * (u - v)
                    crow[r] = t / ch
                    drow[r] = 0.5 * g / ch
            C[:] = 0.0
            G[:] = 0.0
            if cap[0] >= 0:
                _full_capture(out, k, cap[0], c, D, C, G, P0 * P0)
            for o in range(nops):
                hin, win, hout, wout = iops[o, 8], iops[o, 9], iops[o, 10], iops[o, 11]
                Pin, P = hin * win, hout * wout
                if iops[o, 0] == _CONV:
                    kh, kw, sh, sw = iops[o, 1], iops[o, 2], iops[o, 3], iops[o, 4]
                    ph, pw, circ = iops[o, 5], iops[o, 6], iops[o, 7]
                    hp = (hout - 1) * sh + kh
                    wp = (wout - 1) * sw + kw
                    for f in range(4 if angles else 3):
                        src = c if f == 0 else (D if f == 1 else (C if f == 2 else G))
                        dst = bc if f == 0 else (bD if f == 1 else (bC if f == 2 else bG))
                        fr, fc = zeros, zeros
                        if f == 1 or f == 3:  # the gaps: ½q (½Θ) of the side inside
                            Qr = Q1[i, o] if f == 1 else A1[i, o]
                            Qc = Q2[j, o] if f == 1 else A2[j, o]
                            for p in range(Pin):
                                half_r[p] = 0.5 * Qr[p]
                                half_c[p] = 0.5 * Qc[p]
                            fr, fc = half_r, half_c
                        _pad_pairs(src, hin, win, hp, wp, ph, pw, circ, fr, fc, pad)
                        _conv_pairs(pad, hp, wp, kh, kw, sh, sw, hout, wout, tmp, dst)
                    _affine(P * P, fops[o, 0], fops[o, 1], fops[o, 2], bc, bD, bC, bG, c, D, C,
                            G, angles)
                else:
                    a2, b2 = fops[o, 3], fops[o, 4]
                    s2, i2 = S2[j, o], I2[j, o]
                    for p in range(P):
                        _dual_row(P, S1[i, o, p], I1[i, o, p], s2, i2, c[p * P:(p + 1) * P],
                                  D[p * P:(p + 1) * P], C[p * P:(p + 1) * P],
                                  G[p * P:(p + 1) * P], a2, b2, angles)
                if cap[o + 1] >= 0:
                    _full_capture(out, k, cap[o + 1], c, D, C, G, P * P)
    return out
