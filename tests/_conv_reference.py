"""Extended-precision references for convolutional nets, independent of ntkcond's maps.

The textbook recursion (Arora et al. 2019, "On exact computation with an infinitely wide
neural net"; neural-tangents' conventions: NHWC, NTK parameterisation, filters averaged over
their offsets, zero padding for SAME, wrapped for CIRCULAR) on the full pixel-pair covariances
of the three image pairs (x, x), (y, y), (x, y) of one pair of images:

every entry in mpmath at ``DPS`` digits (``mp_pair``), activations through
``_family_reference.expectations`` (arc-cosine closed forms, Williams' erf, the GELU
quadrature); small images only (P² entries per layer: 8 × 8 pixels take seconds).

Nothing here carries gaps or angles; the net is read from ntkcond's layer objects only to
know which layer comes next (type, filter, stride, padding, variances, activation's name).
"""
from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np

import _family_reference as ref
from ntkcond.network import conv as CV
from ntkcond.network import layers as L

DPS = ref.DPS


def _offsets(n, k, s, padding):
    """(output positions, (k,) input index per output and offset; None outside the image)."""
    if padding == "VALID":
        out, before = (n - k) // s + 1, 0
    else:
        out = -(-n // s)
        before = max((out - 1) * s + k - n, 0) // 2
    table = []
    for o in range(out):
        row = []
        for d in range(k):
            i = s * o + d - before
            if padding == "CIRCULAR":
                i %= n
            row.append(i if 0 <= i < n else None)
        table.append(row)
    return out, table


class _Pair:
    """Pixel-pair NNGP/NTK matrices of (x, x), (y, y), (x, y): dicts key → {(p, p′): value}
    with pixels p = (h, w); after a read-out, scalars."""

    def __init__(self, nngp, ntk, shape):
        self.nngp, self.ntk, self.shape = nngp, ntk, shape


def _initial(x, y, num):
    h, w, C = x.shape
    pix = list(itertools.product(range(h), range(w)))
    imgs = {"x": x, "y": y}
    nngp, ntk = {}, {}
    for key, (a, b) in {"xx": ("x", "x"), "yy": ("y", "y"), "xy": ("x", "y")}.items():
        A, B = imgs[a], imgs[b]
        nngp[key] = {(p, r): num.dot(A[p], B[r]) / C for p in pix for r in pix}
        ntk[key] = {k: num.zero for k in nngp[key]}
    return _Pair(nngp, ntk, (h, w))


def _conv_map(m, shape, layer, num):
    (kh, kw), (sh, sw), pad = layer.filter_shape, layer.strides, layer.padding
    oh, th = _offsets(shape[0], kh, sh, pad)
    ow, tw = _offsets(shape[1], kw, sw, pad)
    out = {}
    for p in itertools.product(range(oh), range(ow)):
        for r in itertools.product(range(oh), range(ow)):
            total = num.zero
            for dh in range(kh):
                for dw in range(kw):
                    a = (th[p[0]][dh], tw[p[1]][dw])
                    b = (th[r[0]][dh], tw[r[1]][dw])
                    if None not in a and None not in b:
                        total += m[(a, b)]
            out[(p, r)] = total / (kh * kw)
    return out, (oh, ow)


def _pool_map(m, shape, layer, num):
    (kh, kw), (sh, sw), pad = layer.window_shape, layer.strides, layer.padding
    oh, th = _offsets(shape[0], kh, sh, pad)
    ow, tw = _offsets(shape[1], kw, sw, pad)
    out = {}
    for p in itertools.product(range(oh), range(ow)):
        for r in itertools.product(range(oh), range(ow)):
            total = num.zero
            for a in itertools.product(th[p[0]], tw[p[1]]):
                for b in itertools.product(th[r[0]], tw[r[1]]):
                    if None not in a and None not in b:
                        total += m[(a, b)]
            out[(p, r)] = total / (kh * kw) ** 2
    return out, (oh, ow)


def _run(layer, s, num):
    if isinstance(layer, L.Serial):
        for item in layer.layers:
            s = _run(item, s, num)
        return s
    if isinstance(layer, L.FanOut):
        return [s] * layer.num
    if isinstance(layer, L.Parallel):
        return [_run(b, t, num) for b, t in zip(layer.branches, s)]
    if isinstance(layer, L.FanInSum):
        keys = s[0].nngp
        if isinstance(s[0].nngp["xy"], dict):
            add = lambda part: {k: {e: sum(t.__dict__[part][k][e] for t in s) for e in keys[k]}  # noqa: E731
                                for k in keys}
        else:
            add = lambda part: {k: sum(t.__dict__[part][k] for t in s) for k in keys}  # noqa: E731
        return _Pair(add("nngp"), add("ntk"), s[0].shape)
    if isinstance(layer, L.Identity):
        return s
    if isinstance(layer, (CV.Conv, L.Dense)):
        w, b = num.num(layer.weight_variance), num.num(layer.bias_variance or 0.0)
        nngp, ntk, shape = {}, {}, s.shape
        for key in s.nngp:
            if isinstance(layer, CV.Conv):
                m, shape = _conv_map(s.nngp[key], s.shape, layer, num)
                t, _ = _conv_map(s.ntk[key], s.shape, layer, num)
                nngp[key] = {e: w * v + b for e, v in m.items()}
                ntk[key] = {e: nngp[key][e] + w * t[e] for e in m}
            else:
                nngp[key] = w * s.nngp[key] + b
                ntk[key] = nngp[key] + w * s.ntk[key]
        return _Pair(nngp, ntk, shape)
    if isinstance(layer, CV.AvgPool):
        nngp, ntk = {}, {}
        for key in s.nngp:
            nngp[key], shape = _pool_map(s.nngp[key], s.shape, layer, num)
            ntk[key], _ = _pool_map(s.ntk[key], s.shape, layer, num)
        return _Pair(nngp, ntk, shape)
    if isinstance(layer, CV.Flatten):
        P = s.shape[0] * s.shape[1]
        pix = list(itertools.product(range(s.shape[0]), range(s.shape[1])))
        return _Pair({k: sum(v[(p, p)] for p in pix) / P for k, v in s.nngp.items()},
                     {k: sum(v[(p, p)] for p in pix) / P for k, v in s.ntk.items()}, None)
    if isinstance(layer, CV.GlobalAvgPool):
        P = s.shape[0] * s.shape[1]
        return _Pair({k: sum(v.values()) / (P * P) for k, v in s.nngp.items()},
                     {k: sum(v.values()) / (P * P) for k, v in s.ntk.items()}, None)
    if isinstance(layer, L.Nonlinearity):
        name = layer.act.name
        diag = {"xx": "xx", "yy": "yy"}
        nngp, ntk = {}, {}
        for key in s.nngp:
            left, right = diag.get(key[0] * 2), diag.get(key[1] * 2)
            m, t = s.nngp[key], s.ntk[key]
            if isinstance(m, dict):
                nngp[key], ntk[key] = {}, {}
                for (p, r), c in m.items():
                    e, d = num.expect(name, s.nngp[left][(p, p)], s.nngp[right][(r, r)], c)
                    nngp[key][(p, r)], ntk[key][(p, r)] = e, d * t[(p, r)]
            else:
                e, d = num.expect(name, s.nngp[left], s.nngp[right], m)
                nngp[key], ntk[key] = e, d * t
        return _Pair(nngp, ntk, s.shape)
    raise TypeError(f"reference: no map for {type(layer).__name__}")


class _MP:
    zero = mp.mpf(0)

    @staticmethod
    def num(v):
        return mp.mpf(float(v))

    @staticmethod
    def dot(a, b):
        return ref._dot(a, b)

    @staticmethod
    def expect(name, q1, q2, c):
        return ref.expectations(name, q1, q2, c)


def mp_pair(spec, x, y):
    """{"xx", "yy", "xy"} → (nngp, ntk) of the net's output for images x, y (H, W, C), as
    mpmath numbers at DPS digits."""
    with mp.workdps(DPS):
        out = _run(spec, _initial(np.asarray(x, float), np.asarray(y, float), _MP), _MP)
        return {k: (out.nngp[k], out.ntk[k]) for k in out.nngp}
