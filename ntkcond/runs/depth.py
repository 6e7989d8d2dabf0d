"""The condition-number-against-depth measurement of Liu & Hui (arXiv 2305.08813, Fig. 2–3).

For each batch of inputs, depth L and activation, the NTK Θ of the bias-free net is computed
and summarised by one record (a dict with the keys below, a contract other tools read):

  dataset, split, batch_index, n, depth, activation, width ("inf" or int), seed (None at
  infinite width), trainable, lambda_max, lambda_min_nonzero, rank, kappa_eff, kappa (None
  when the kernel is numerically singular: κ = ∞), precision_limited, min_grad_angle_deg,
  min_grad_angle_pair ([i, j] as indices into the data set), min_input_angle_deg, seconds.

The nets are network objects (``ntkcond.network.MLPFamily``, one per activation, built once
by the caller: ``ntkcond.network.resolve_mlps``); with a net other than the norm-preserving
bias-free one every record also carries the options that are set (``MLPFamily.options``:
``w_std``, ``b_std``, ``residual``); records of the default net do not, so they stay
byte-for-byte what they were.

``runs.cond_vs_depth`` runs these over the batches of a data set as a resumable run, and
aggregates, tabulates and draws them.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._core.checks import as_count, resolve_trainable
from .._core.threads import blas_threads, ordered_map
from .._core.x64 import x64
from ..infinite.geometry import pair_geometry
from ..infinite.kernels import sweep_geometry, sweep_images_of
from ..network import NET_KEYS, MLPFamily, NetFamily
from ..spectrum import (
    ScaledKernel,
    argmin_upper,
    checked_kernel,
    conditioning_core,
    lambda_min_upper_bound_core,
    pairwise_angles_core,
    resolve_tolerances,
    scale_trusted,
)

EPS64 = float(np.finfo(np.float64).eps)

__all__ = ["RECORD_KEYS", "NET_KEYS", "spectrum_record", "scaled_record",
           "check_spectrum_fields", "check_nonzero_rows",
           "iter_infinite_batch", "iter_finite_batch", "measure_infinite_batch",
           "measure_finite_batch", "finite_net", "finite_ntk", "cnn_params"]

RECORD_KEYS = (
    "dataset",
    "split",
    "batch_index",
    "n",
    "depth",
    "activation",
    "width",
    "seed",
    "trainable",
    "lambda_max",
    "lambda_min_nonzero",
    "rank",
    "kappa_eff",
    "kappa",
    "precision_limited",
    "min_grad_angle_deg",
    "min_grad_angle_pair",
    "min_input_angle_deg",
    "lambda_min_upper_bound",
    "lambda_min_bound_ratio",
    "seconds",
)

def _nets(nets, where: str, x=None) -> list:
    """The nets as the batch functions take them: ``NetFamily`` objects (``MLPFamily``,
    ``CNNFamily``; built and checked once by the caller, ``ntkcond.network.resolve_mlps``),
    each once; convolutional nets need the batch as NHWC images (n, H, W, C)."""
    nets = list(nets)
    if not nets or not all(isinstance(n, NetFamily) for n in nets):
        raise TypeError(f"{where}: expected nets as a nonempty list of ntkcond.network.MLPFamily "
                        f"or CNNFamily (ntkcond.network.resolve_mlps), got {nets!r}")
    if x is not None and any(n.takes_images for n in nets) and np.ndim(x) != 4:
        raise ValueError(f"{where}: expected the batch as images (n, H, W, C) for a "
                         f"convolutional net, got shape {np.shape(x)}")
    return nets


def check_nonzero_rows(ds, where: str) -> None:
    """ValueError naming the first zero row of the data set ``ds`` by its row in the file (not
    by its place in a shuffled batch): a zero input has no direction, so its angles are
    undefined."""
    zero = ~np.any(ds.x != 0, axis=1)
    if zero.any():
        row = int(np.argmax(zero))
        raise ValueError(f"{where}: expected nonzero inputs (a zero row has no angle to the "
                         f"others), got {int(zero.sum())} zero row(s) in {ds.name}, the first "
                         f"row {row} of the data set (after preprocessing); drop it")


def check_spectrum_fields(rec: dict) -> None:
    """Check the spectrum fields of a stored record (``runs.rundir.check_record_fields``
    kinds, then consistency): n ≥ 1, 0 < lambda_min_nonzero ≤ lambda_max, 1 ≤ rank ≤ n,
    kappa_eff = lambda_max/lambda_min_nonzero (to 1e-12 relative: it is computed so) and at
    most 1/(n·eps₆₄), the largest κ_eff the cutoff τ = n·eps·λmax lets through; where present,
    kappa ≥ kappa_eff or None and precision_limited a bool. ValueError naming the field otherwise."""
    from .rundir import check_record_fields

    check_record_fields(rec, {"n": "int>=1", "lambda_max": "float>0",
                              "lambda_min_nonzero": "float>0", "rank": "int>=1",
                              "kappa_eff": "float>0"})
    # kappa and precision_limited: in the κ records, not in train_vs_depth's
    check_record_fields(rec, {k: v for k, v in (("kappa", "float>0|None"),
                                                 ("precision_limited", "bool")) if k in rec})
    n, lam_max, lam_min, kappa_eff = rec["n"], rec["lambda_max"], rec["lambda_min_nonzero"], rec["kappa_eff"]
    if rec["rank"] > n:
        raise ValueError(f"expected rank <= n = {n}, got {rec['rank']}")
    if lam_min > lam_max * (1 + 1e-12):
        raise ValueError(f"expected lambda_min_nonzero <= lambda_max = {lam_max!r}, got {lam_min!r}")
    if abs(kappa_eff - lam_max / lam_min) > 1e-12 * kappa_eff:
        raise ValueError(f"expected kappa_eff = lambda_max/lambda_min_nonzero = "
                         f"{lam_max / lam_min!r}, got {kappa_eff!r}")
    ceiling = 1.0 / (n * np.finfo(np.float64).eps)
    if kappa_eff > ceiling * (1 + 1e-9):
        raise ValueError(f"expected kappa_eff <= 1/(n*eps) = {ceiling:.6g} (larger values fall "
                         f"below the cutoff), got {kappa_eff!r}")
    if rec.get("kappa") is not None and rec["kappa"] < kappa_eff * (1 - 1e-12):
        raise ValueError(f"expected kappa >= kappa_eff = {kappa_eff!r} or null, got {rec['kappa']!r}")


def spectrum_record(ntk, angles, index, *, dtype=None, on_spectrum=None) -> dict:
    """The kernel part of a record: conditioning of ``ntk`` and the smallest angle.

    Args:
      ntk: (n, n) kernel (checked once as ``ntkcond.conditioning`` checks it: one float64
        copy, one finiteness pass, one transpose, shared by κ and the bound);
      angles: (n, n) gradient angles in radians;
      index: (n,) data-set indices of the rows (for ``min_grad_angle_pair``).
      dtype: the dtype ``ntk`` was computed in (``conditioning``'s ``dtype``).
      on_spectrum: if given, called with the (n,) ascending eigenvalues of ``ntk`` (K's units,
        ``Conditioning.eigenvalues``) of the one eigendecomposition made here; the record is
        the same either way.

    Also ``lambda_min_upper_bound``, the closest-pair bound min_{i<j} λ₋(i, j) ≥ λ_min
    (``ntkcond.lambda_min_upper_bound``, Liu & Hui Prop. 4.1), and ``lambda_min_bound_ratio`` =
    lambda_min_nonzero / that bound (≤ 1 up to rounding for a full-rank kernel; None when the
    bound is ≤ 0).
    """
    where = "spectrum_record"
    return scaled_record(checked_kernel(ntk, where, dtype), angles, index, where,
                         on_spectrum=on_spectrum)


def scaled_record(kernel: ScaledKernel, angles, index, where: str, *, on_spectrum=None) -> dict:
    """``spectrum_record`` of a kernel already checked or built here (``ScaledKernel``; the
    iterators below pass ``scale_trusted`` of the kernels they build): the unchecked cores
    ``conditioning_core`` and ``lambda_min_upper_bound_core`` on the one scaled matrix, no
    check, copy or transpose of it; messages name ``where``."""
    rtol, atol = resolve_tolerances(None, None, kernel.matrix.shape[0], where)  # the defaults
    cond = conditioning_core(kernel, rtol, atol, where)
    if on_spectrum is not None:
        on_spectrum(cond.eigenvalues)
    angle, i, j = argmin_upper(angles)
    bound = lambda_min_upper_bound_core(kernel, where)[0]  # closest-pair interlacing bound ≥ λ_min
    return {
        "lambda_max": cond.lambda_max,
        "lambda_min_nonzero": cond.lambda_min_nonzero,
        "rank": cond.rank,
        "kappa_eff": cond.kappa_eff,
        "kappa": cond.kappa if math.isfinite(cond.kappa) else None,
        "precision_limited": cond.precision_limited,
        "min_grad_angle_deg": math.degrees(angle),
        "min_grad_angle_pair": [int(index[i]), int(index[j])],
        "lambda_min_upper_bound": bound,
        "lambda_min_bound_ratio": cond.lambda_min_nonzero / bound if bound > 0 else None,
    }


def iter_infinite_batch(x, index, *, depths, nets, trainable="all", meta=None,
                        on_spectrum=None):
    """Records for one batch at infinite width, every depth × net, yielded as each kernel is
    done (``measure_infinite_batch`` collects them in a list).

    The Gram matrix, input angles and layer maps are shared across depths
    (``ntkcond.infinite.kernels.sweep_geometry``) and the input geometry across nets; one
    float64 ``eigvalsh`` per kernel.

    Args:
      x: (n, d) float64 batch, or (n, H, W, C) images for convolutional nets; index: (n,)
        data-set indices of its rows.
      depths: iterable of depths; nets: the nets (``MLPFamily`` or ``CNNFamily``, one per
        activation).
      trainable: "all", "first" or "last" ("all" for convolutional nets).
      meta: keys copied into every record (dataset, split, batch_index, ...).
      on_spectrum: called with the (n,) ascending eigenvalues of each kernel just before its
        record is yielded (``spectrum_record``); no extra eigendecomposition.

    Yields:
      record dicts (``RECORD_KEYS``, and the ``NET_KEYS`` that are set).
    """
    where = "measure_infinite_batch"
    meta = dict(meta or {})
    x = np.asarray(x, dtype=np.float64)
    nets = _nets(nets, where, x)
    if x.shape[0] < 2:
        raise ValueError(f"measure_infinite_batch: expected a batch of n >= 2, got {x.shape}")
    start = time.perf_counter()
    # shared by every depth and fully-connected net; the input angles of every net
    geometry = pair_geometry(x.reshape(len(x), -1), None, where)
    min_input = math.degrees(argmin_upper(geometry.angle)[0])
    for net in nets:
        items = (sweep_images_of(x, net, depths, trainable, where) if net.takes_images
                 else sweep_geometry(geometry, net, depths, trainable, where))
        for item in items:
            rec = dict(meta)
            rec.update(
                n=int(x.shape[0]),
                depth=item.depth,
                activation=net.act.name,
                width="inf",
                seed=None,
                trainable=trainable,
                **net.options(),
            )
            # item.ntk: finite (check_scale) and exactly symmetric (pairs (i, j), i > j, computed
            # as (j, i)) by construction: not checked again
            rec.update(scaled_record(scale_trusted(item.ntk, where), item.angles, index, where,
                                     on_spectrum=on_spectrum))
            rec["min_input_angle_deg"] = min_input
            now = time.perf_counter()
            rec["seconds"] = now - start
            start = now
            yield rec


def measure_infinite_batch(x, index, *, depths, nets, trainable="all", meta=None,
                           on_spectrum=None) -> list[dict]:
    """``list(iter_infinite_batch(...))``: the records of one batch at infinite width."""
    return list(iter_infinite_batch(x, index, depths=depths, nets=nets, trainable=trainable,
                                    meta=meta, on_spectrum=on_spectrum))


def iter_finite_batch(x, index, *, depths, nets, width: int, seeds, trainable="all",
                      meta=None, on_spectrum=None, weights=None, workers=None):
    """Records for one batch at finite width, every net × seed × depth, yielded in that order
    (``measure_finite_batch`` collects them in a list).

    Each kernel is the exact empirical NTK of the finite net of ``nets`` (``finite_net``:
    ``ntkcond.mlp(depth, width, activation, **options)``) with
    weights from ``jax.random.PRNGKey(seed)`` (``MLP.init``; the same seed gives the same net on
    every batch and for every activation): on the CPU by ``ntkcond.finite.sweep.BatchNTK``,
    bit for bit the kernel of ``ntkcond.empirical_ntk`` run on the same BLAS thread count, at a
    fraction of the cost (weights drawn once per (seed, depth) into ``weights``, the input Gram
    once per batch, in-place elementwise passes, linear nets' identical gradient rows once),
    else (weights on an accelerator) by ``empirical_ntk`` in jax, one kernel at a time. Angles
    are read off the kernel (``pairwise_angles``), so they are resolved down to ~1e-8 rad only.

    The kernels and their spectra run on ``workers`` threads with BLAS at one thread
    (``ntkcond._core.threads.ordered_map``): while the generator is open NumPy's BLAS is
    single-threaded process-wide, and its thread count is restored when the generator is
    exhausted or closed. Within an (activation, seed) the deepest nets go first; a record is
    yielded once it and every record before it are done.

    Args:
      x: (n, d) batch; index: (n,) data-set indices of its rows.
      depths: iterable of depths; nets: the nets (``MLPFamily``, one per activation).
      width: hidden width m ≥ 1; seeds: iterable of int seeds.
      trainable: "all", "first" or "last".
      meta: keys copied into every record.
      on_spectrum: as in ``iter_infinite_batch``: called in the calling thread, in record
        order, just before each record is yielded (the kernels may run on worker threads).
      weights: a ``ntkcond.finite.sweep.NetWeights`` shared across calls (e.g. the batches of
        a run), so each net is drawn once; default a store for this call.
      workers: threads (default the BLAS thread count, ``blas_threads``); 1 runs the kernels
        one after the other in the calling thread, BLAS threads untouched.

    Yields:
      record dicts (``RECORD_KEYS``), ``width`` an int and ``seed`` the seed; ``seconds`` is
      the wall time of that kernel's draw (0 when its weights were stored), kernel and record.
    """
    from ..finite.models import GeneralMLP
    from ..finite.sweep import BatchNTK, NetWeights

    where = "measure_finite_batch"
    meta = dict(meta or {})
    x = np.asarray(x, dtype=np.float64)
    nets = _nets(nets, where, x)
    images = nets[0].takes_images
    if x.ndim != (4 if images else 2) or x.shape[0] < 2:
        shape = "(n, H, W, C)" if images else "(n, d)"
        raise ValueError(f"measure_finite_batch: expected a batch of shape {shape}, n >= 2, got "
                         f"{x.shape}")
    seeds = [int(s) for s in seeds]
    depths = sorted(set(depths))
    for L in depths:  # checked here, not in BatchNTK.kernel on a worker thread
        resolve_trainable(trainable, L, where)
    if images and trainable != "all":
        raise ValueError(f"{where}: convolutional nets train every layer, got trainable "
                         f"{trainable!r}")
    flat = x.reshape(len(x), -1)
    # input_angles(x), its messages naming this function
    min_input = math.degrees(argmin_upper(pair_geometry(flat, None, where, arrays=7).angle)[0])
    weights = NetWeights() if weights is None else weights
    workers = (blas_threads() if workers is None
               else as_count(workers, "workers", "measure_finite_batch"))
    batch = None if images else BatchNTK(x)
    general = {}  # (seed, depth, width) -> weights of the nets with options (GeneralMLP)

    def task(family, seed, depth):
        def prepare():
            start = time.perf_counter()
            net = finite_net(family, depth, width)
            opts = family.options()
            if family.takes_images:  # the CNN's layer stack: weights from the seed's key
                params = cnn_params(net, seed, x.shape)
            elif isinstance(net, GeneralMLP):  # weights and biases drawn once per (seed, depth)
                key = (seed, depth, width)
                if key not in general:
                    import jax

                    general[key] = [np.asarray(w, np.float64) for w in
                                    net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=np.float64)]
                params = general[key]
            else:
                params, _ = weights.get(net, seed, x.shape[1])
            drawn = time.perf_counter() - start

            def work():
                start = time.perf_counter()
                K, kernel = (_cnn_kernel(x, family, net, params, where) if family.takes_images
                             else _finite_kernel(batch, net, params, trainable, where))
                _check_alive(K, index, family.act, width, seed, depth, meta)
                rec = dict(meta)
                rec.update(n=int(x.shape[0]), depth=depth, activation=family.act.name,
                           width=int(width), seed=seed, trainable=trainable, **opts)
                spectrum = []
                rec.update(scaled_record(kernel, pairwise_angles_core(K, EPS64, where), index,
                                         where, on_spectrum=spectrum.append))
                rec["min_input_angle_deg"] = min_input
                rec["seconds"] = drawn + time.perf_counter() - start
                return rec, spectrum[0]

            return work

        return prepare

    import jax

    if jax.default_backend() != "cpu":  # weights land on the accelerator: empirical_ntk there
        workers = 1
    jobs = [(net, s, L) for net in nets for s in seeds for L in depths]
    group = len(depths)  # deepest first within each (activation, seed): no idle worker at its end
    order = [g + group - 1 - k for g in range(0, len(jobs), group) for k in range(group)]
    for rec, spectrum in ordered_map([task(*job) for job in jobs], workers, order):
        if on_spectrum is not None:
            on_spectrum(spectrum)
        yield rec


def _check_alive(K, index, act, width, seed, depth, meta) -> None:
    """ValueError naming the net when a gradient is zero on an input of the batch (K_ii = 0):
    a small bias-free ReLU net with every unit of a layer inactive there is dead on it, and
    its angles (and for the zero kernel, κ) are undefined."""
    dead = np.flatnonzero(np.diagonal(K) <= 0)
    if dead.size:
        where = f" of batch {meta['batch_index']}" if "batch_index" in meta else ""
        raise ValueError(
            f"iter_finite_batch: the width-{width} {act.name} net of seed {seed} at depth {depth} is "
            f"dead on {dead.size} of the {K.shape[0]} inputs{where} (first: row {int(index[dead[0]])} "
            "of the data set): its gradient there is zero, every unit of a hidden layer "
            "inactive, so gradient angles and kappa_eff are undefined; use a larger --width")


def finite_net(family: NetFamily, depth: int, width: int):
    """The finite net of ``family`` at ``depth`` and ``width``: ``ntkcond.mlp(depth, width,
    activation, **family.options())``; for a ``CNNFamily`` its layer stack with ``width``
    channels (``CNNFamily.network``: ``init``/``apply``)."""
    from ..finite.models import mlp

    if family.takes_images:
        return family.network(depth, width)
    return mlp(depth, width, family.act, **family.options())


def cnn_params(net, seed: int, shape):
    """The weights of the finite convolutional net ``net`` (``finite_net`` of a
    ``CNNFamily``) for inputs of ``shape`` (n, H, W, C): ``net.init(PRNGKey(seed), shape)``'s
    N(0, 1) draws (jax's default float, as every command draws them: the same seed is the
    same net in cond-vs-depth, train-vs-depth and train-track), as float64 jax arrays."""
    import jax
    import jax.numpy as jnp

    params = net.init(jax.random.PRNGKey(seed), tuple(shape))[1]
    with x64():
        return jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), params)


def finite_ntk(family: NetFamily, net, params, x) -> np.ndarray:
    """The exact float64 empirical NTK (n, n) of the finite net ``net`` of ``family``
    (``finite_net``) with ``params`` on ``x``: ``ntkcond.empirical_ntk`` (its structured
    route) for the fully-connected nets; for a convolutional one (NHWC x)
    ``ntkcond.empirical_ntk_fn`` of its ``apply`` (Σ_p ∂f/∂θ_p ∂f/∂θ_p over every layer)."""
    import jax.numpy as jnp

    from ..finite.empirical import empirical_ntk
    from ..finite.generic import empirical_ntk_fn

    with x64():
        xj = jnp.asarray(x, jnp.float64)
        K = (empirical_ntk_fn(net.apply)(params, xj) if family.takes_images
             else empirical_ntk(net, params, xj))
        return np.asarray(K, np.float64)


def _cnn_kernel(x, family, net, params, where) -> tuple[np.ndarray, ScaledKernel]:
    """(K, its ``ScaledKernel``) of a finite convolutional net: ``finite_ntk``, symmetrised
    once."""
    K = finite_ntk(family, net, params, x)
    return K, scale_trusted(K, where, symmetrise=True)


def _finite_kernel(batch, net, params, trainable, where) -> tuple[np.ndarray, ScaledKernel]:
    """(K, its ``ScaledKernel``): the float64 kernel of ``iter_finite_batch`` and the matrix its
    spectrum is read from. ``BatchNTK`` for NumPy weights (the CPU): finite (checked once, in
    ``BatchNTK.kernel``) and exactly symmetric by construction (every Gram is one ``A @ A.T``,
    BLAS's symmetric rank-k update with its triangle mirrored, combined entrywise), so
    ``scale_trusted``: one scaled copy. ``empirical_ntk`` in jax (scoped x64) for weights on
    an accelerator: finite (checked there), symmetric only up to rounding, so symmetrised
    (``scale_checked``: one copy, one transpose). The nets with weight/bias stds or residual
    blocks (``GeneralMLP``) go through ``empirical_ntk`` (its structured NumPy route)."""
    from ..finite.models import MLP

    if isinstance(net, MLP) and all(isinstance(w, np.ndarray) for w in params):
        K = batch.kernel(net, params, trainable, where=where)
        return K, scale_trusted(K, where)
    import jax.numpy as jnp

    from ..finite.empirical import empirical_ntk

    with x64():
        xs = batch.x if all(isinstance(w, np.ndarray) for w in params) else jnp.asarray(batch.x, jnp.float64)
        K = np.asarray(empirical_ntk(net, params, xs, trainable=trainable), np.float64)
    return K, scale_trusted(K, where, symmetrise=True)


def measure_finite_batch(x, index, *, depths, nets, width: int, seeds, trainable="all",
                         meta=None, on_spectrum=None, weights=None, workers=None) -> list[dict]:
    """``list(iter_finite_batch(...))``: the records of one batch at finite width."""
    return list(iter_finite_batch(x, index, depths=depths, nets=nets, width=width, seeds=seeds,
                                  trainable=trainable, meta=meta, on_spectrum=on_spectrum,
                                  weights=weights, workers=workers))
