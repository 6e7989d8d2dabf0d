"""Convolutional layers (NHWC images): ``Conv``, ``AvgPool``, and the read-outs ``Flatten``
and ``GlobalAvgPool``, each carrying its kernel map on pixel(-pair) covariances
(``ntkcond.network.spatial``) and its finite-width ``init``/``apply`` (neural-tangents'
conventions: NHWC inputs, HWIO filters W ~ N(0, 1), W_std/√(k_h k_w C_in)·(x ⋆ W) + b_std·b).

Kernel maps (NTK parameterisation; neural-tangents' ``stax`` at infinite channel count):

    Conv:           Σ′ = s_w²·conv(Σ) + s_b²,  Θ′ = [trainable]·Σ′ + s_w²·conv(Θ)          (1)
    AvgPool:        Σ′ = pool(Σ),  Θ′ = pool(Θ)                                          (2)
    Flatten:        Σ_out = mean_p Σ[p, p],  Θ_out = mean_p Θ[p, p]                       (3)
    GlobalAvgPool:  Σ_out = mean_{p, p′} Σ[p, p′],  Θ_out likewise                       (4)

with conv and pool those of ``ntkcond.network.spatial`` (eq. (1) there: the filter's offsets
shared by both images; pooling's offsets independent). ``Flatten`` needs only the spatial
diagonal, so a net whose only pixel-mixing read-out is ``Flatten`` runs in diagonal mode
(no (HW)² pixel pairs); pooling needs every pixel pair (full mode, ``needs_pixel_pairs``).
After a read-out the state is the fully-connected ``PairState`` and ``Dense`` layers follow.
"""
from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from .layers import Layer, affine_kernel, check_std
from .spatial import (PADDINGS, SpatialState, conv_diag, conv_full, diag_of, mean_all,
                      mean_diag, output_size, pool_full)
from .state import PairState

__all__ = ["Conv", "AvgPool", "GlobalAvgPool", "Flatten"]


def _pair(value, name: str, where: str, allow_none: bool = False):
    """A 2-tuple of positive integers (an int is used for both)."""
    if value is None and allow_none:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        value = (value, value)
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{where}: expected {name} as two positive integers (height, width), "
                        f"got {value!r}") from None
    if len(items) != 2 or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral)
                              or v < 1 for v in items):
        raise ValueError(f"{where}: expected {name} as two positive integers (height, width), "
                         f"got {value!r}")
    return int(items[0]), int(items[1])


def _padding(value, where: str) -> str:
    if not isinstance(value, str) or value.upper() not in PADDINGS:
        raise ValueError(f"{where}: expected padding one of {', '.join(PADDINGS)}, got {value!r}")
    return value.upper()


def _spatial_out(shape, window, strides, padding, where, what):
    """The output (H′, W′) of a window over an NHWC shape, ValueError where VALID's window is
    larger than the image."""
    if len(shape) != 4:
        raise ValueError(f"{where}: expected inputs of shape (n, H, W, C) (NHWC), got shape "
                         f"{tuple(shape)}")
    out = []
    for n, k, s in zip(shape[1:3], window, strides):
        if padding == "VALID" and k > n:
            raise ValueError(f"{where}: expected a {what} no larger than the image with VALID "
                             f"padding, got {tuple(window)} on {tuple(shape[1:3])} pixels")
        out.append(output_size(int(n), k, s, padding))
    return tuple(out)


def _check_window(s, window, padding, where, what):
    """ValueError where a VALID window is larger than the images the state holds."""
    if padding != "VALID":
        return
    if isinstance(s, SpatialState):
        h, w = s.spatial_shape
    elif isinstance(s, PairState) and np.ndim(s.c) == 4:
        h, w = np.shape(s.c)[-2:]
    else:
        return  # the map names the missing pixels
    if window[0] > h or window[1] > w:
        raise ValueError(f"{where}: expected a {what} no larger than the image with VALID "
                         f"padding, got {tuple(window)} on {h} x {w} pixels")


@dataclasses.dataclass(frozen=True)
class Conv(Layer):
    """A 2-D convolution in NTK parameterisation, eq. (1) (neural-tangents' ``Conv``).

    Attributes:
      out_chan: output channels (None: infinite width only); filter_shape: (k_h, k_w);
      strides: (s_h, s_w); padding: "VALID", "SAME" or "CIRCULAR";
      weight_variance: s_w²; bias_variance: s_b² or None; trainable: W and b trained.
    """

    out_chan: int | None
    filter_shape: tuple
    strides: tuple = (1, 1)
    padding: str = "VALID"
    weight_variance: float = 1.0
    bias_variance: float | None = None
    trainable: bool = True

    spatial = True

    @classmethod
    def of_std(cls, out_chan, filter_shape, strides=None, padding="VALID", W_std=1.0,
               b_std=None, *, trainable=True, where="Conv"):
        """neural-tangents' ``Conv(out_chan, filter_shape, strides, padding, W_std, b_std)``,
        checked: filter and strides positive integers, padding one of ``PADDINGS``, stds as
        ``Dense.of_std``."""
        if out_chan is not None and (isinstance(out_chan, (bool, np.bool_))
                                     or not isinstance(out_chan, numbers.Integral) or out_chan < 1):
            raise ValueError(f"{where}: expected out_chan a positive integer, got {out_chan!r}")
        w = check_std(W_std, "W_std", where, allow_none=False, allow_zero=False)
        b = check_std(b_std, "b_std", where, allow_none=True, allow_zero=True)
        return cls(None if out_chan is None else int(out_chan),
                   _pair(filter_shape, "filter_shape", where),
                   _pair(1 if strides is None else strides, "strides", where),
                   _padding(padding, where), w * w, None if b is None else b * b, trainable)

    @property
    def homogeneous(self) -> bool:
        return not self.bias_variance

    @property
    def b_std(self):
        return None if self.bias_variance is None else math.sqrt(self.bias_variance)

    def _maps(self, full: bool, self_state: bool):
        """(pairs, rows, cols, gap) maps of ``affine_kernel`` in either mode."""
        k, st, pad = self.filter_shape, self.strides, self.padding
        if not full:
            diag = lambda a: conv_diag(a, k, st, pad)  # noqa: E731
            return diag, diag, diag, None
        axes = ((1, 2), (3, 4)) if self_state else ((2, 3), (4, 5))
        return (lambda a: conv_full(a, k, st, pad),
                lambda a: conv_diag(a, k, st, pad, axes=axes[0]),
                lambda a: conv_diag(a, k, st, pad, axes=axes[1]),
                lambda a, rows, cols: conv_full(a, k, st, pad, rows, cols))

    def kernel(self, s):
        b2 = self.bias_variance or 0.0
        _check_window(s, self.filter_shape, self.padding, "Conv", "filter")
        if isinstance(s, SpatialState):
            def apply(part, self_state):
                return affine_kernel(part, self.weight_variance, b2, self.trainable,
                                     *self._maps(True, self_state))
            return SpatialState(apply(s.pairs, False), apply(s.self1, True),
                                None if s.self2 is None else apply(s.self2, True))
        if not isinstance(s, PairState) or np.ndim(s.c) != 4:
            raise ValueError("Conv: expected image inputs (n, H, W, C) before a convolution, got a "
                             "state without pixels (a convolution after Flatten/GlobalAvgPool?)")
        return affine_kernel(s, self.weight_variance, b2, self.trainable, *self._maps(False, False))

    def output_shape(self, input_shape):
        if self.out_chan is None:
            raise ValueError("Conv: a finite-width net needs out_chan (the layer's channels), got "
                             "None")
        h, w = _spatial_out(input_shape, self.filter_shape, self.strides, self.padding, "Conv",
                            "filter")
        return (input_shape[0], h, w, self.out_chan)

    def init(self, key, input_shape):
        import jax

        shape = self.output_shape(input_shape)
        k1, k2 = jax.random.split(key)
        W = jax.random.normal(k1, tuple(self.filter_shape) + (input_shape[-1], self.out_chan))
        b = None if self.bias_variance is None else jax.random.normal(k2, (self.out_chan,))
        return shape, (W, b)

    def apply(self, params, x):
        """W_std/√(k_h k_w C_in)·(x ⋆ W) + b_std·b, the convolution as one matrix product of the
        images' patches (im2col: the k_h·k_w shifted slices of the padded images side by
        side, in HWIO's order) with W as a (k_h k_w C_in) × C_out matrix, at the highest
        precision: XLA's float64 convolution on the CPU and its derivatives are 5–80x
        slower (``benchmarks/bench_conv.py``), and the empirical NTK is made of them."""
        import jax
        import jax.numpy as jnp

        W, b = params
        (kh, kw), (sh, sw) = self.filter_shape, self.strides
        if x.ndim != 4 or tuple(W.shape[:3]) != (kh, kw, x.shape[-1]):
            raise ValueError(f"Conv: expected inputs (n, H, W, {W.shape[2]}) for filters of shape "
                             f"{tuple(W.shape)} (HWIO), got inputs of shape {tuple(x.shape)}")
        fan_in = kh * kw * x.shape[-1]
        h, w = x.shape[1:3]
        oh, ow = (output_size(h, kh, sh, self.padding), output_size(w, kw, sw, self.padding))
        if self.padding == "CIRCULAR":
            x = _wrap(x, self.filter_shape, self.strides)
        elif self.padding == "SAME":
            pads = [(0, 0)] + [_same_pads(n, k, st) for n, k, st in ((h, kh, sh), (w, kw, sw))]
            x = jnp.pad(x, pads + [(0, 0)])
        cols = [x[:, dh:dh + sh * (oh - 1) + 1:sh, dw:dw + sw * (ow - 1) + 1:sw, :]
                for dh in range(kh) for dw in range(kw)]
        patches = jnp.concatenate(cols, axis=-1)
        out = jnp.einsum("nhwk,ko->nhwo", patches, W.reshape(-1, W.shape[-1]),
                         precision=jax.lax.Precision.HIGHEST)
        out = math.sqrt(self.weight_variance / fan_in) * out
        if b is not None:
            out = out + self.b_std * b
        return out


def _same_pads(n: int, k: int, s: int) -> tuple[int, int]:
    """SAME's (before, after) on one axis (XLA's split: the extra one after)."""
    out = -(-n // s)
    total = max((out - 1) * s + k - n, 0)
    return total // 2, total - total // 2


def _wrap(x, window, strides):
    """Circular padding of NHWC images by SAME's amounts (then a VALID window)."""
    import jax.numpy as jnp

    pads = [(0, 0)] + [_same_pads(n, k, s) for n, k, s in zip(x.shape[1:3], window, strides)]
    return jnp.pad(x, pads + [(0, 0)], mode="wrap")


@dataclasses.dataclass(frozen=True)
class AvgPool(Layer):
    """Average pooling over windows, eq. (2) (neural-tangents' ``AvgPool`` with
    ``normalize_edges=False``: divided by the window size also at SAME's edges)."""

    window_shape: tuple
    strides: tuple = (1, 1)
    padding: str = "VALID"

    spatial = True

    @classmethod
    def of(cls, window_shape, strides=None, padding="VALID", where="AvgPool"):
        window = _pair(window_shape, "window_shape", where)
        return cls(window, (1, 1) if strides is None else _pair(strides, "strides", where),
                   _padding(padding, where))

    @property
    def homogeneous(self) -> bool:
        return True

    needs_pixel_pairs = True

    def kernel(self, s):
        if not isinstance(s, SpatialState):
            raise ValueError("AvgPool: expected the pixel-pair state of images (a pooling layer "
                             "before any Flatten/GlobalAvgPool)")
        _check_window(s, self.window_shape, self.padding, "AvgPool", "window")
        w, st, pad = self.window_shape, self.strides, self.padding

        def pool(a, rows=None, cols=None):
            return pool_full(a, w, st, pad, rows, cols)

        def self_gap(x: PairState, which):
            """diag of the pooled self-gap (n, H′, W′): D (which 0) or G (which 1)."""
            return diag_of(pool(x.D, x.q1, x.q2) if which == 0 else pool(x.G, x.A, x.B))

        def part(p: PairState, selves):
            first, last = selves[0], selves[-1]
            gap = np.maximum(pool(p.D, p.q1, p.q2) - 0.5 * _rows(self_gap(first, 0), p)
                             - 0.5 * _cols(self_gap(last, 0), p), 0.0)
            q1 = _rows(diag_of(pool(first.c)), p)
            q2 = _cols(diag_of(pool(last.c)), p)
            out = p.replace(q1=q1, q2=q2, c=pool(p.c), D=gap)
            if p.A is not None:
                g = None
                if p.G is not None:
                    g = np.maximum(pool(p.G, p.A, p.B) - 0.5 * _rows(self_gap(first, 1), p)
                                   - 0.5 * _cols(self_gap(last, 1), p), 0.0)
                out = out.replace(A=_rows(diag_of(pool(first.C)), p),
                                  B=_cols(diag_of(pool(last.C)), p), C=pool(p.C), G=g)
            return out.rescaled()

        selves = (s.self1,) if s.self2 is None else (s.self1, s.self2)
        return SpatialState(part(s.pairs, selves), part(s.self1, (s.self1,)),
                            None if s.self2 is None else part(s.self2, (s.self2,)))

    def output_shape(self, input_shape):
        h, w = _spatial_out(input_shape, self.window_shape, self.strides, self.padding,
                            "AvgPool", "window")
        return (input_shape[0], h, w, input_shape[-1])

    def apply(self, params, x):
        import jax

        padding = self.padding
        if padding == "CIRCULAR":
            x, padding = _wrap(x, self.window_shape, self.strides), "VALID"
        total = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1,) + self.window_shape + (1,),
                                      (1,) + self.strides + (1,), padding)
        return total / (self.window_shape[0] * self.window_shape[1])


def _rows(per_pixel, p: PairState):
    """Per-pixel values (n, H, W) shaped as the rows' variances of ``p``."""
    if p.q1.ndim == 6:  # pairs (n1, 1, H, W, 1, 1)
        return per_pixel[:, None, :, :, None, None]
    return per_pixel[:, :, :, None, None]  # selves (n, H, W, 1, 1)


def _cols(per_pixel, p: PairState):
    """Per-pixel values (n, H, W) shaped as the columns' variances of ``p``."""
    if p.q2.ndim == 6:  # pairs (1, n2, 1, 1, H, W)
        return per_pixel[None, :, None, None, :, :]
    return per_pixel[:, None, None, :, :]  # selves (n, 1, 1, H, W)


def _readout(p: PairState, mean, row_mean, col_mean, gaps) -> PairState:
    out = p.replace(q1=row_mean(p.q1), q2=col_mean(p.q2), c=mean(p.c), D=gaps[0])
    if p.A is not None:
        out = out.replace(A=row_mean(p.A), B=col_mean(p.B), C=mean(p.C), G=gaps[1])
    return out.rescaled()


@dataclasses.dataclass(frozen=True)
class Flatten(Layer):
    """The read-out that flattens pixels and channels, eq. (3): the mean of the spatial
    diagonal (neural-tangents' ``Flatten``; a following ``Dense`` sees (n, HWC) inputs)."""

    spatial = True

    @property
    def homogeneous(self) -> bool:
        return True

    def kernel(self, s):
        if isinstance(s, SpatialState):
            p = s.pairs
            n1, n2 = p.c.shape[:2]
            mean = lambda a: mean_diag(a)  # noqa: E731
            rows = lambda a: np.mean(a, axis=(2, 3)).reshape(n1, 1)  # noqa: E731
            cols = lambda a: np.mean(a, axis=(4, 5)).reshape(1, n2)  # noqa: E731
            G = None if p.G is None else mean(p.G)
            return _readout(p, mean, rows, cols, (mean(p.D), G))
        if not isinstance(s, PairState) or np.ndim(s.c) != 4:
            raise ValueError("Flatten: expected image inputs (n, H, W, C), got a state without "
                             "pixels")
        mean = lambda a: np.mean(a, axis=(-2, -1))  # noqa: E731
        G = None if s.G is None else mean(s.G)
        return _readout(s, mean, mean, mean, (mean(s.D), G))

    def output_shape(self, input_shape):
        if len(input_shape) < 2:
            raise ValueError(f"Flatten: expected a batch of arrays, got shape {tuple(input_shape)}")
        return (input_shape[0], int(np.prod(input_shape[1:])))

    def apply(self, params, x):
        return x.reshape(x.shape[0], -1)


@dataclasses.dataclass(frozen=True)
class GlobalAvgPool(Layer):
    """The read-out averaging over all pixels, eq. (4): the mean over every pixel pair
    (neural-tangents' ``GlobalAvgPool``). Its output gap is mean D(x, x′) − ½ mean D(x, x)
    − ½ mean D(x′, x′), a difference: the gradient angles of near-duplicate images after it
    are resolved like a kernel matrix's (~eps/θ²), not better."""

    spatial = True

    @property
    def homogeneous(self) -> bool:
        return True

    needs_pixel_pairs = True

    def kernel(self, s):
        if not isinstance(s, SpatialState):
            raise ValueError("GlobalAvgPool: expected the pixel-pair state of images")
        p, s1 = s.pairs, s.self1
        s2 = s1 if s.self2 is None else s.self2
        n1, n2 = p.c.shape[:2]
        gap = np.maximum(mean_all(p.D) - 0.5 * mean_all(s1.D)[:, None]
                         - 0.5 * mean_all(s2.D)[None, :], 0.0)
        out = p.replace(q1=mean_all(s1.c).reshape(n1, 1), q2=mean_all(s2.c).reshape(1, n2),
                        c=mean_all(p.c), D=gap, exact_gaps=False)
        if p.A is not None:
            G = None
            if p.G is not None:
                G = np.maximum(mean_all(p.G) - 0.5 * mean_all(s1.G)[:, None]
                               - 0.5 * mean_all(s2.G)[None, :], 0.0)
            out = out.replace(A=mean_all(s1.C).reshape(n1, 1), B=mean_all(s2.C).reshape(1, n2),
                              C=mean_all(p.C), G=G)
        return out.rescaled()

    def output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"GlobalAvgPool: expected inputs (n, H, W, C), got shape "
                             f"{tuple(input_shape)}")
        return (input_shape[0], input_shape[-1])

    def apply(self, params, x):
        return x.mean(axis=(1, 2))


