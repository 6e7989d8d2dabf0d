"""The condition-number-against-depth measurement of Liu & Hui (arXiv 2305.08813, Fig. 2–3).

For each batch of inputs, depth L and activation, the NTK Θ of the bias-free net is computed
and summarised by one record (a dict with the keys below, a contract other tools read):

  dataset, split, batch_index, n, depth, activation, width ("inf" or int), seed (None at
  infinite width), trainable, lambda_max, lambda_min_nonzero, rank, kappa_eff, kappa (None
  when the kernel is numerically singular: κ = ∞), precision_limited, min_grad_angle_deg,
  min_grad_angle_pair ([i, j] as indices into the data set), min_input_angle_deg, seconds.

With a network other than the norm-preserving bias-free one (``net_options``: ``w_std``,
``b_std``, ``residual`` of ``ntkcond.infinite.family``), every record also carries those of
them that are set (``w_std``, ``b_std``, ``residual``); records of the default net do not, so
they stay byte-for-byte what they were.

``runs.cond_vs_depth`` runs these over the batches of a data set as a resumable run, and
aggregates, tabulates and draws them.
"""
from __future__ import annotations

import inspect
import math
import numbers
import time

import numpy as np

from .._core.checks import as_count, resolve_trainable
from .._core.threads import blas_threads, ordered_map
from .._core.x64 import x64
from ..activations import parse_activation
from ..infinite.geometry import pair_geometry
from ..infinite.kernels import DepthKernel, sweep_geometry
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

__all__ = ["RECORD_KEYS", "NET_KEYS", "net_options", "spectrum_record", "scaled_record",
           "check_spectrum_fields", "check_nonzero_rows",
           "iter_infinite_batch", "iter_finite_batch", "measure_infinite_batch",
           "measure_finite_batch", "infinite_sweep", "family_sweep", "finite_net_factory",
           "library_options", "geometry_arrays"]

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

#: Keys of the network options (``net_options``); in a record only when set.
NET_KEYS = ("w_std", "b_std", "residual")


def net_options(w_std=None, b_std=0.0, residual=None, *, where: str, activations=()) -> dict:
    """The network options that differ from the norm-preserving bias-free net, checked.

    Args:
      w_std: weight std s_w > 0 of every layer (NTK parameterisation), or None for the
        norm-preserving net (hidden layers √c, read-out 1; leaky family only).
      b_std: bias std s_b ≥ 0 (0: no biases); needs ``w_std``.
      residual: residual scale β > 0 of layers 2 … L (``ntkcond.infinite.family``), or None.
      where: the caller's name for errors; activations: parsed activations to check against
        (smooth ones need ``w_std``).

    Returns:
      {"w_std": …, "b_std": …, "residual": …} holding only the entries that are set (w_std
      not None, b_std ≠ 0, residual not None) as floats: {} for the default net.

    Raises:
      ValueError: w_std ≤ 0, b_std < 0, residual ≤ 0, any of them not finite, b_std > 0 or a
        smooth activation without w_std.
    """
    out = {}
    for name, value, lowest, strict in (("w_std", w_std, 0.0, True), ("b_std", b_std, 0.0, False),
                                        ("residual", residual, 0.0, True)):
        if value is None:
            if name == "b_std":
                raise TypeError(f"{where}: expected b_std a number >= 0, got None")
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where}: expected {name} a real number, got {value!r}")
        value = float(value)
        if not math.isfinite(value) or (value <= lowest if strict else value < lowest):
            raise ValueError(f"{where}: expected {name} {'>' if strict else '>='} 0 (finite), "
                             f"got {value!r}")
        if name != "b_std" or value != 0.0:
            out[name] = value
    if "w_std" not in out:
        if "b_std" in out:
            raise ValueError(f"{where}: expected w_std with b_std = {out['b_std']:g} > 0 (the "
                             "norm-preserving default net has no biases), got w_std None")
        smooth = [a.name for a in activations if not a.is_leaky]
        if smooth:
            raise ValueError(f"{where}: expected w_std for the activation {smooth[0]!r} (only the "
                             "leaky family has a norm-preserving default), got w_std None")
    return out


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


def iter_infinite_batch(x, index, *, depths, activations, trainable="all", meta=None,
                        on_spectrum=None, w_std=None, b_std=0.0, residual=None):
    """Records for one batch at infinite width, every depth × activation, yielded as each
    kernel is done (``measure_infinite_batch`` collects them in a list).

    The Gram matrix, input angles and layer recursion are shared across depths
    (``depth_sweep``); one float64 ``eigvalsh`` per kernel.

    Args:
      x: (n, d) float64 batch; index: (n,) data-set indices of its rows.
      depths: iterable of depths; activations: iterable of activation spellings.
      trainable: "all", "first" or "last".
      meta: keys copied into every record (dataset, split, batch_index, ...).
      on_spectrum: called with the (n,) ascending eigenvalues of each kernel just before its
        record is yielded (``spectrum_record``); no extra eigendecomposition.
      w_std, b_std, residual: the network (``net_options``); the defaults are the
        norm-preserving bias-free net of ``ntkcond.infinite.kernels``.

    Yields:
      record dicts (``RECORD_KEYS``, and ``NET_KEYS`` that are set).
    """
    where = "measure_infinite_batch"
    meta = dict(meta or {})
    acts = [parse_activation(a) for a in activations]
    opts = net_options(w_std, b_std, residual, where="measure_infinite_batch", activations=acts)
    x = np.asarray(x, dtype=np.float64)
    if x.shape[0] < 2:
        raise ValueError(f"measure_infinite_batch: expected a batch of n >= 2, got {x.shape}")
    start = time.perf_counter()
    geometry = pair_geometry(x, None, where)  # shared by every depth and activation
    min_input = math.degrees(argmin_upper(geometry_arrays(geometry)[0])[0])
    for act in acts:
        for item in infinite_sweep(geometry, depths, act, trainable, opts, where):
            rec = dict(meta)
            rec.update(
                n=int(x.shape[0]),
                depth=item.depth,
                activation=act.name,
                width="inf",
                seed=None,
                trainable=trainable,
                **opts,
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


def measure_infinite_batch(x, index, *, depths, activations, trainable="all", meta=None,
                           on_spectrum=None, w_std=None, b_std=0.0, residual=None) -> list[dict]:
    """``list(iter_infinite_batch(...))``: the records of one batch at infinite width."""
    return list(iter_infinite_batch(x, index, depths=depths, activations=activations,
                                    trainable=trainable, meta=meta, on_spectrum=on_spectrum,
                                    w_std=w_std, b_std=b_std, residual=residual))


def infinite_sweep(geometry, depths, act, trainable, opts: dict, where: str = "depth_sweep"):
    """``DepthKernel`` per depth of the net ``opts`` (``net_options``) on a precomputed
    ``pair_geometry(x, None)``: ``sweep_geometry`` itself for the default net ({}) and where it
    takes the options, else ``family_sweep``."""
    if not opts:
        return sweep_geometry(geometry, depths, act, trainable, where)
    if "w_std" in inspect.signature(sweep_geometry).parameters:
        return sweep_geometry(geometry, depths, act, trainable, where, **opts)
    return family_sweep(geometry, depths, act, trainable, **opts)


def geometry_arrays(geometry):
    """(θ₀, cos θ₀, ‖x‖‖x'‖/d, ‖x‖/√d of the rows) of ``pair_geometry(x, None)``, whether it
    is the (θ₀, cos θ₀, scale) triple or a ``PairGeometry`` (angle, cos, norms, d)."""
    if hasattr(geometry, "angle"):
        scale = geometry.scale()
        return geometry.angle, geometry.cos, scale, geometry.norms1 / math.sqrt(geometry.d)
    angle, cos, scale = geometry
    return angle, cos, scale, np.sqrt(np.diag(scale))


def family_sweep(geometry, depths, act, trainable, w_std=None, b_std=0.0, residual=None):
    """NTKs and gradient angles of ``ntkcond.infinite.family.family_recursion`` (weights,
    biases, residual blocks) from ``pair_geometry``'s (θ₀, cos θ₀, ‖x‖‖x'‖/d), one pass for all
    depths.

    The recursion starts from x·x'/d = scale·cos θ₀, the rows' ‖x‖²/d (the diagonal of scale)
    and the Euclidean gap ½‖x − x'‖²/d = ½(‖x‖ − ‖x'‖)²/d + 2·scale·sin²(θ₀/2), formed without
    cancellation from the exact input angles; the angles are
    φ = 2 atan2(√(1 − cos φ), √(1 + cos φ)) of ``family.gradient_angle_terms``.
    """
    from .._core.checks import sweep_layers
    from ..infinite.recursion import angle_from
    from ..infinite.family import Net, family_recursion, gradient_angle_terms

    depths, layers = sweep_layers(depths, trainable, "depth_sweep")
    angle, cos, scale, r = geometry_arrays(geometry)
    r2 = r * r
    gap0 = 0.5 * np.subtract.outer(r, r) ** 2 + 2.0 * scale * np.sin(0.5 * angle) ** 2
    net = Net(act, w_std=w_std, b_std=b_std, residual=residual)
    for out in family_recursion(scale * cos, r2[:, None], r2[None, :], gap0, depths, net, layers):
        um, up = gradient_angle_terms(out["ntk_diag1"], out["ntk_diag2"], out["ntk"], out["ntk_gap"])
        phi = angle_from(np.maximum(um, 0.0), up)
        np.fill_diagonal(phi, 0.0)
        yield DepthKernel(depth=out["depth"], ntk=out["ntk"], angles=phi)


def iter_finite_batch(x, index, *, depths, activations, width: int, seeds, trainable="all",
                      meta=None, on_spectrum=None, nets=None, workers=None, w_std=None,
                      b_std=0.0, residual=None):
    """Records for one batch at finite width, every activation × seed × depth, yielded in that
    order (``measure_finite_batch`` collects them in a list).

    Each kernel is the exact empirical NTK of ``ntkcond.mlp(depth, width, activation)`` with
    weights from ``jax.random.PRNGKey(seed)`` (``MLP.init``; the same seed gives the same net on
    every batch and for every activation): on the CPU by ``ntkcond.finite.sweep.BatchNTK``,
    bit for bit the kernel of ``ntkcond.empirical_ntk`` run on the same BLAS thread count, at a
    fraction of the cost (weights drawn once per (seed, depth) into ``nets``, the input Gram
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
      depths: iterable of depths; activations: iterable of activation spellings.
      width: hidden width m ≥ 1; seeds: iterable of int seeds.
      trainable: "all", "first" or "last".
      meta: keys copied into every record.
      on_spectrum: as in ``iter_infinite_batch``: called in the calling thread, in record
        order, just before each record is yielded (the kernels may run on worker threads).
      nets: a ``ntkcond.finite.sweep.NetWeights`` shared across calls (e.g. the batches of a
        run), so each net is drawn once; default a store for this call.
      workers: threads (default the BLAS thread count, ``blas_threads``); 1 runs the kernels
        one after the other in the calling thread, BLAS threads untouched.
      w_std, b_std, residual: the network (``net_options``), passed to ``ntkcond.mlp`` when set.

    Yields:
      record dicts (``RECORD_KEYS``), ``width`` an int and ``seed`` the seed; ``seconds`` is
      the wall time of that kernel's draw (0 when its weights were stored), kernel and record.
    """
    from ..finite.sweep import BatchNTK, NetWeights

    where = "measure_finite_batch"
    meta = dict(meta or {})
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"measure_finite_batch: expected a batch of shape (n, d), n >= 2, got {x.shape}")
    seeds = [int(s) for s in seeds]
    depths = sorted(set(depths))
    for L in depths:  # checked here, not in BatchNTK.kernel on a worker thread
        resolve_trainable(trainable, L, where)
    acts = [parse_activation(a) for a in activations]
    opts = net_options(w_std, b_std, residual, where="measure_finite_batch", activations=acts)
    make_net = finite_net_factory(opts, "measure_finite_batch")
    # input_angles(x), its messages naming this function
    min_input = math.degrees(argmin_upper(pair_geometry(x, None, where, arrays=7).angle)[0])
    nets = NetWeights() if nets is None else nets
    workers = (blas_threads() if workers is None
               else as_count(workers, "workers", "measure_finite_batch"))
    batch = BatchNTK(x)
    general = {}  # (seed, depth, width) -> weights of the nets with options (GeneralMLP)

    def task(act, seed, depth):
        def prepare():
            start = time.perf_counter()
            net = make_net(depth, width, act)
            if opts:  # a GeneralMLP: weights and biases drawn once per (seed, depth)
                key = (seed, depth, width)
                if key not in general:
                    import jax

                    general[key] = [np.asarray(w, np.float64) for w in
                                    net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=np.float64)]
                params = general[key]
            else:
                params, _ = nets.get(net, seed, x.shape[1])
            drawn = time.perf_counter() - start

            def work():
                start = time.perf_counter()
                K, kernel = _finite_kernel(batch, net, params, trainable, where)
                _check_alive(K, index, act, width, seed, depth, meta)
                rec = dict(meta)
                rec.update(n=int(x.shape[0]), depth=depth, activation=act.name, width=int(width),
                           seed=seed, trainable=trainable, **opts)
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
    jobs = [(a, s, L) for a in acts for s in seeds for L in depths]
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


def finite_net_factory(opts: dict, where: str):
    """``(depth, width, act) -> ntkcond.mlp(depth, width, act, **opts)``; for a net with options
    (``net_options``) a ValueError naming ``where`` right away if this ``ntkcond.mlp`` does
    not take them."""
    from ..finite.models import mlp

    if opts:
        missing = [k for k in opts if k not in inspect.signature(mlp).parameters]
        if missing:
            raise ValueError(f"{where}: expected a finite-width net ntkcond.mlp with "
                             f"{', '.join(missing)}, got a version without them; use width inf")
    return lambda depth, width, act: mlp(depth, width, act, **opts)


def library_options(fn, opts: dict, where: str) -> dict:
    """``opts`` (``net_options``) if the library function ``fn`` takes them as keywords; a
    ValueError naming ``where`` if it does not (this version's ``fn`` has the default net
    only)."""
    missing = [k for k in opts if k not in inspect.signature(fn).parameters]
    if missing:
        raise ValueError(f"{where}: expected ntkcond.{fn.__name__} with {', '.join(missing)}, got "
                         "a version without them (only the norm-preserving bias-free net)")
    return opts


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


def measure_finite_batch(x, index, *, depths, activations, width: int, seeds, trainable="all",
                         meta=None, on_spectrum=None, nets=None, workers=None, w_std=None,
                         b_std=0.0, residual=None) -> list[dict]:
    """``list(iter_finite_batch(...))``: the records of one batch at finite width."""
    return list(iter_finite_batch(x, index, depths=depths, activations=activations, width=width,
                                  seeds=seeds, trainable=trainable, meta=meta,
                                  on_spectrum=on_spectrum, nets=nets, workers=workers,
                                  w_std=w_std, b_std=b_std, residual=residual))
