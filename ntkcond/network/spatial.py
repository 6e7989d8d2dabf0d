"""Kernel states and maps of convolutional nets: per-pixel(-pair) covariances of NHWC images.

For images x, x′ (H × W pixels, C channels) a convolutional layer's pre-activations have, at
infinite width, covariances over pixel pairs: Σ(x, x′)[p, p′] for pixels p of x and p′ of x′
(the input layer: Σ⁰[p, p′] = x[p]·x′[p′]/C). Two ways to carry them:

* diagonal mode (``PairState`` with spatial axes (H, W) last): Σ(x, x′)[p, p] only, and the
  per-input variances Σ(x, x)[p, p]. Convolutions map the diagonal to itself (the same filter
  offset on both sides), activations act pixel by pixel, and ``Flatten``'s read-out averages
  the diagonal: no (HW)² pixel pairs are ever formed.
* full mode (``SpatialState``): Σ(x, x′)[p, p′] for all pixel pairs (axes (H, W, H′, W′)), and
  the self-covariances Σ(x, x)[p, p′] of each input, which pooling needs: an average pool
  mixes pixels (Σ′[p, p′] = mean over the windows' offsets δ, δ′ of Σ[p + δ, p′ + δ′]) and
  ``GlobalAvgPool`` averages all pairs.

Convolution (filter k_h × k_w, strides, padding VALID, SAME or CIRCULAR; neural-tangents'
convention: the average over the filter's offsets δ, zero outside the image for SAME, wrapped
for CIRCULAR):

    conv(Σ)[p, p′] = (1/(k_h k_w)) Σ_δ Σ[s·p + δ − a, s·p′ + δ − a]                      (1)

(a the padding before), linear, so the Euclidean gaps D = ½(q[p] + q′[p′]) − Σ[p, p′] ≥ 0 map
by the same sum of non-negative terms: near-duplicate images keep full relative precision
through convolutions and activations. Pooling mixes offsets δ ≠ δ′; its gap is
pool(D) − ½ pool(D_xx) − ½ pool(D_x′x′) (a difference: after a pooling layer near-duplicate
images' gaps carry a cancellation ~eps·q, documented in ``ntkcond.stax``).

All functions are pure NumPy on float64 arrays; spatial axes are the last 2 (diagonal
mode) or last 4 (full mode, (H, W, H′, W′)).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .state import PairState

__all__ = ["PADDINGS", "output_size", "padding_before", "conv_diag", "conv_full", "pool_full",
           "SpatialState"]

PADDINGS = ("VALID", "SAME", "CIRCULAR")


def output_size(n: int, k: int, s: int, padding: str) -> int:
    """Output length of a window k with stride s over n positions (neural-tangents')."""
    if padding == "VALID":
        return (n - k) // s + 1
    return -(-n // s)  # SAME and CIRCULAR: ⌈n/s⌉


def padding_before(n: int, k: int, s: int, padding: str) -> int:
    """Positions added before the first one (SAME/CIRCULAR: XLA's split of the total)."""
    return _pads(n, k, s, padding)[0]


def _pads(n: int, k: int, s: int, padding: str) -> tuple[int, int]:
    """(before, after) of SAME/CIRCULAR (XLA's split: the extra one after); VALID: none."""
    if padding == "VALID":
        return 0, 0
    out = -(-n // s)
    total = max((out - 1) * s + k - n, 0)
    return total // 2, total - total // 2


def _pad_axes(arr, axes, pads, circular: bool):
    """``arr`` padded on ``axes`` by ``pads`` ((before, after) each): wrapped (CIRCULAR) or
    with zeros (SAME)."""
    widths = [(0, 0)] * arr.ndim
    for a, p in zip(axes, pads):
        widths[a] = p
    if not any(p != (0, 0) for p in pads):
        return arr
    return np.pad(arr, widths, mode="wrap" if circular else "constant")


def _inside(n: int, pads) -> np.ndarray:
    """(n + before + after,) bool: which padded positions are pixels of the image."""
    return np.concatenate([np.zeros(pads[0], bool), np.ones(n, bool), np.zeros(pads[1], bool)])


def _window_sum(arr, axis: int, k: int, s: int, out: int):
    """Σ_{δ<k} arr[s·i + δ] along ``axis`` (a VALID window on an already padded axis)."""
    total = 0.0
    for d in range(k):
        idx = [slice(None)] * arr.ndim
        idx[axis] = slice(d, d + s * (out - 1) + 1, s)
        total = total + arr[tuple(idx)]
    return total


def _window_sum_pair(arr, axis: int, partner: int, k: int, s: int, out: int):
    """Σ_{δ<k} arr[s·i + δ, s·i′ + δ] on a pair of padded axes: the same offset on both."""
    total = 0.0
    for d in range(k):
        idx = [slice(None)] * arr.ndim
        idx[axis] = slice(d, d + s * (out - 1) + 1, s)
        idx[partner] = slice(d, d + s * (out - 1) + 1, s)
        total = total + arr[tuple(idx)]
    return total


def conv_diag(arr, filter_shape, strides, padding: str, axes=(-2, -1)):
    """Eq. (1) on the diagonal: per-pixel arrays with (H, W) on ``axes`` (the last 2 by
    default), padded (zeros or wrapped) then averaged over the filter's offsets."""
    ah, aw = (a % arr.ndim for a in axes)
    (kh, kw), (sh, sw) = filter_shape, strides
    h, w = arr.shape[ah], arr.shape[aw]
    ph, pw = _pads(h, kh, sh, padding), _pads(w, kw, sw, padding)
    a = _pad_axes(arr, (ah, aw), (ph, pw), padding == "CIRCULAR")
    out = _window_sum(a, ah, kh, sh, output_size(h, kh, sh, padding))
    out = _window_sum(out, aw, kw, sw, output_size(w, kw, sw, padding))
    return out / (kh * kw)


def _pad_full(arr, filter_shape, strides, padding, gap_rows=None, gap_cols=None):
    """A pair array (…, H, W, H′, W′) padded on both sides. For a gap array (``gap_rows``,
    ``gap_cols``: the rows' and columns' per-pixel variances, broadcasting as the array's
    (…, H, W, 1, 1) and (…, 1, 1, H′, W′)), SAME's pixel pairs with one side outside the
    image get ½q of the side inside (the gap of a pixel and a zero), so the gaps stay exact
    sums of non-negative terms."""
    nd = arr.ndim
    (kh, kw), (sh, sw) = filter_shape, strides
    h, w = arr.shape[nd - 4], arr.shape[nd - 3]
    ph, pw = _pads(h, kh, sh, padding), _pads(w, kw, sw, padding)
    circular = padding == "CIRCULAR"
    out = _pad_axes(arr, (nd - 4, nd - 3, nd - 2, nd - 1), (ph, pw, ph, pw), circular)
    if gap_rows is None or circular or (ph, pw) == ((0, 0), (0, 0)):
        return out
    inside = (_inside(h, ph)[:, None] & _inside(w, pw)[None, :])
    rows = _pad_axes(np.broadcast_to(gap_rows, arr.shape[:nd - 4] + (h, w, 1, 1)),
                     (nd - 4, nd - 3), (ph, pw), False)
    cols = _pad_axes(np.broadcast_to(gap_cols, arr.shape[:nd - 4] + (1, 1, h, w)),
                     (nd - 2, nd - 1), (ph, pw), False)
    r_in = inside[:, :, None, None]
    c_in = inside[None, None, :, :]
    fill = np.where(r_in & ~c_in, 0.5 * rows, 0.0) + np.where(~r_in & c_in, 0.5 * cols, 0.0)
    return out + fill


def conv_full(arr, filter_shape, strides, padding: str, gap_rows=None, gap_cols=None):
    """Eq. (1) on pixel pairs: arrays whose last 4 axes are (H, W, H′, W′), the same offset on
    both sides; for a gap array pass the rows' and columns' variances (``_pad_full``)."""
    nd = arr.ndim
    (kh, kw), (sh, sw) = filter_shape, strides
    h, w = arr.shape[nd - 4], arr.shape[nd - 3]
    a = _pad_full(arr, filter_shape, strides, padding, gap_rows, gap_cols)
    out = _window_sum_pair(a, nd - 4, nd - 2, kh, sh, output_size(h, kh, sh, padding))
    out = _window_sum_pair(out, nd - 3, nd - 1, kw, sw, output_size(w, kw, sw, padding))
    return out / (kh * kw)


def pool_full(arr, window, strides, padding: str, gap_rows=None, gap_cols=None):
    """Average pooling on pixel pairs: independent offsets on the two sides (δ, δ′), divided by
    the window size on each side (neural-tangents' ``AvgPool``, ``normalize_edges=False``);
    gap arrays as ``conv_full``."""
    nd = arr.ndim
    (kh, kw), (sh, sw) = window, strides
    h, w = arr.shape[nd - 4], arr.shape[nd - 3]
    a = _pad_full(arr, window, strides, padding, gap_rows, gap_cols)
    oh, ow = output_size(h, kh, sh, padding), output_size(w, kw, sw, padding)
    for axis, k, s, o in ((nd - 4, kh, sh, oh), (nd - 3, kw, sw, ow), (nd - 2, kh, sh, oh),
                          (nd - 1, kw, sw, ow)):
        a = _window_sum(a, axis, k, s, o)
    return a / (kh * kw) ** 2


@dataclasses.dataclass(frozen=True)
class SpatialState:
    """Full mode (module docstring): the pixel-pair state of the pairs (x, x′) and the
    self-covariances of each input.

    Attributes:
      pairs: ``PairState`` with c, D, C, G of shape (n1, n2, H, W, H, W) and q1 (n1, 1, H, W,
        1, 1), q2 (1, n2, 1, 1, H, W) (and A, B likewise): the per-pixel variances, the
        diagonals of the selves.
      self1, self2: ``PairState`` of the pairs (x, x) of each input: c (n, H, W, H, W), q1
        (n, H, W, 1, 1), q2 (n, 1, 1, H, W). ``self2`` None: x′ is x.
    """

    pairs: PairState
    self1: PairState
    self2: PairState | None = None

    @property
    def selves(self):
        return (self.self1,) if self.self2 is None else (self.self1, self.self2)

    def map(self, fn) -> "SpatialState":
        """The same pixel-wise map on every part (activations: elementwise in the pairs)."""
        return SpatialState(fn(self.pairs), fn(self.self1),
                            None if self.self2 is None else fn(self.self2))

    @property
    def layer(self) -> int:
        return self.pairs.layer

    @property
    def spatial_shape(self):
        return self.pairs.c.shape[-2:]


def diag_of(arr):
    """(…, H, W, H, W) → (…, H, W): the diagonal p = p′."""
    h, w = arr.shape[-2:]
    flat = arr.reshape(arr.shape[:-4] + (h * w, h * w))
    return np.diagonal(flat, axis1=-2, axis2=-1).reshape(arr.shape[:-4] + (h, w))


def mean_diag(arr):
    """(…, H, W, H, W) → (…): the mean over p of arr[p, p] (``Flatten``)."""
    return np.mean(diag_of(arr), axis=(-2, -1))


def mean_all(arr):
    """(…, H, W, H, W) → (…): the mean over all pixel pairs (``GlobalAvgPool``)."""
    return np.mean(arr, axis=(-4, -3, -2, -1))


def check_image_shape(shape, where: str):
    """(H, W) of an NHWC shape (n, H, W, C), else a ValueError naming ``where``."""
    if len(shape) != 4:
        raise ValueError(f"{where}: expected images of shape (n, H, W, C) (NHWC), got shape "
                         f"{tuple(shape)}")
    return int(shape[1]), int(shape[2])


def valid_conv_size(n: int, k: int, s: int, padding: str, where: str, what: str) -> int:
    """The output size, or a ValueError naming ``where`` when a VALID window is larger than
    the image."""
    if padding == "VALID" and k > n:
        raise ValueError(f"{where}: expected a {what} of at most the image's size with VALID "
                         f"padding, got {k} > {n}")
    return output_size(n, k, s, padding)


__all__ += ["diag_of", "mean_diag", "mean_all", "check_image_shape", "valid_conv_size"]
