"""The NTK over training: κ_eff(t), kernel distance, alignment and effective rank of any JAX
model on fixed probe inputs (``NTKTracker``; one frozen ``NTKSnapshot`` per update).

Each ``NTKTracker.update(params, step)`` computes the exact empirical NTK

    K_t = J(θ_t) J(θ_t)ᵀ,   J = ∂f(θ, x)/∂θ  (n × P),   n × n, float64,

of the model at the parameters θ_t on the probe inputs x (n, …): by the structured route of
``ntkcond.finite.empirical`` (its eq. (1); no Jacobian is formed) for ``ntkcond.mlp`` nets,
and by ``ntkcond.empirical_ntk_fn`` (per-example Jacobians, one GEMM per parameter group) for
every other model. The snapshot reduces K_t to

    κ_eff, λ_max, λ_min⁺, rank, precision_limited   ``ntkcond.conditioning`` of K_t:
                    λ_min⁺ the smallest eigenvalue above τ = max(atol, rtol·λ_max), rtol = n·eps  (1)
    effective_rank  exp(−Σᵢ pᵢ log pᵢ),  pᵢ = λᵢ / Σ_{λⱼ > τ} λⱼ over the λᵢ > τ of (1)
                    (Roy & Vetterli 2007, "The effective rank: a measure of effective
                    dimensionality", EUSIPCO)                                                    (2)
    kernel_distance S(K₀, K_t) = 1 − ⟨K₀, K_t⟩_F / (‖K₀‖_F ‖K_t‖_F), K₀ the first snapshot's
                    kernel (Fort et al. 2020, "Deep learning versus kernel learning", NeurIPS,
                    eq. (4))                                                                     (3)
    alignment       A(K_t, y) = yᵀ K_t y / (‖K_t‖_F ‖y‖²) = ⟨K_t, yyᵀ⟩_F / (‖K_t‖_F ‖yyᵀ‖_F)
                    (Cristianini, Shawe-Taylor, Elisseeff & Kandola 2002, "On kernel-target
                    alignment", NIPS 14)                                                         (4)
    ntk_drift       ‖K_t − K₀‖_F / ‖K₀‖_F (the drift ``ntkcond.runs.train_vs_depth`` reports)     (5)

(3) is evaluated as ½‖K̂₀ − K̂_t‖²_F with K̂ = K/‖K‖_F, equal to it in exact arithmetic: it keeps
its relative accuracy where S is small (1 − cos loses it to cancellation below S ≈ 1e-8) and is
exactly 0 when K_t equals K₀ bit for bit (a model linear in its parameters). S ∈ [0, 2] and is
scale-invariant; for a small relative change ε = ‖K_t − K₀‖/‖K₀‖ it is of order ε² (only the
part of the change orthogonal to K₀ counts), so S and (5) answer different questions. (2), (3)
and (4) are computed on K scaled by a power of two (exact), so they do not depend on K's units.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from .._core.arrays import check_finite, check_param_leaves, check_real
from .._core.checks import as_count, resolve_trainable
from .._core.memory import array_bytes, check_memory
from .._core.x64 import x64
from ..spectrum import conditioning_core, effective_rank, resolve_tolerances, scale_trusted
from .adapters import ModelNet
from .empirical import empirical_ntk
from .generic import StaxNet, empirical_ntk_fn
from .models import MLP, GeneralMLP, check_params

__all__ = ["NTKSnapshot", "NTKTracker"]

#: n × n float64 arrays alive at once during an update: K, its scaled symmetric copy and the
#: transpose that forms it, the first snapshot's K̂₀, the difference of (3) and eigvalsh's copy.
_KERNELS_ALIVE = 6


@dataclasses.dataclass(frozen=True, repr=False)
class NTKSnapshot:
    """The empirical NTK of a model at one training step, reduced (``ntkcond.finite.tracker``).

    Attributes:
      step: the training step given to ``NTKTracker.update`` (an int ≥ 0).
      kappa_eff, lambda_max, lambda_min_nonzero, rank, precision_limited: those of
        ``ntkcond.conditioning(K)``, eq. (1) (eigenvalues in the units of K).
      effective_rank: exp of the entropy of the normalised eigenvalues above the cutoff, eq. (2)
        (Roy & Vetterli 2007); between 1 and ``rank``.
      kernel_distance: 1 − cos of the Frobenius angle between this kernel and the first
        snapshot's, eq. (3) (Fort et al. 2020); 0 for the first snapshot.
      alignment: kernel-target alignment yᵀKy/(‖K‖_F‖y‖²), eq. (4) (Cristianini et al. 2002);
        None when the tracker has no targets y.
      ntk_drift: relative Frobenius change ‖K − K₀‖_F/‖K₀‖_F, eq. (5).
      eigenvalues: the (n,) ascending eigenvalues of K when the tracker keeps spectra, else None.
    """

    step: int
    kappa_eff: float
    lambda_max: float
    lambda_min_nonzero: float
    rank: int
    precision_limited: bool
    effective_rank: float
    kernel_distance: float
    alignment: float | None
    ntk_drift: float
    eigenvalues: np.ndarray | None = None

    def __repr__(self) -> str:
        align = "None" if self.alignment is None else f"{self.alignment:.6g}"
        spectrum = "" if self.eigenvalues is None else f", eigenvalues=<{len(self.eigenvalues)}>"
        return (f"NTKSnapshot(step={self.step}, kappa_eff={self.kappa_eff:.6g}, "
                f"lambda_max={self.lambda_max:.6g}, lambda_min_nonzero={self.lambda_min_nonzero:.6g}, "
                f"rank={self.rank}, precision_limited={self.precision_limited}, "
                f"effective_rank={self.effective_rank:.6g}, "
                f"kernel_distance={self.kernel_distance:.6g}, alignment={align}, "
                f"ntk_drift={self.ntk_drift:.6g}{spectrum})")


#: The columns of ``NTKTracker.frame``: every field but the spectrum.
FRAME_COLUMNS = tuple(f.name for f in dataclasses.fields(NTKSnapshot) if f.name != "eigenvalues")


class NTKTracker:
    """The exact float64 empirical NTK of a model on fixed probe inputs, snapshot by snapshot.

        tracker = ntkcond.NTKTracker(net, x_probe, y=y_probe)
        for step in range(steps):
            if step in snapshot_steps:
                tracker.update(params, step)
            params, state = train_step(params, state)
        tracker.frame()            # one row per snapshot (pandas)

    Args:
      model: what f(θ, x) is: an ``ntkcond.mlp`` net (``MLP`` or ``GeneralMLP``; its params are
        the list ``net.init`` returns; the structured route), a ``ModelNet`` from
        ``ntkcond.from_flax``, ``from_nnx`` or ``from_equinox`` (params: the pytree like
        ``model.params``), a ``StaxNet`` from ``ntkcond.from_stax`` (of an ``ntkcond.stax``
        net: ``from_stax(*stax.serial(...))``), or any callable ``apply_fn(params, x)`` (an
        ``ntkcond.stax`` or neural-tangents stax net's ``apply_fn`` too) acting on the examples
        independently. The model must have one output per example: f(θ, x) of shape (n,) or
        (n, 1).
      x: the probe inputs, (n, …) (n, d for ``ntkcond.mlp`` nets); copied as float64.
      y: optional targets (n,) on the probe inputs, for the alignment eq. (4); not all zero.
      trainable: the layers the NTK differentiates, for ``ntkcond.mlp`` nets ("all", "first",
        "last" or 0-based layer indices, as ``ntkcond.empirical_ntk``); other models take
        "all" (choose their trainable parameters when building them, e.g.
        ``ntkcond.from_nnx(model, trainable=…)``).
      keep_spectra: keep each snapshot's eigenvalues (``NTKSnapshot.eigenvalues``; n floats
        per snapshot).
      rtol, atol: the cutoff τ of eq. (1), as ``ntkcond.conditioning`` (default n·eps, 0).

    Attributes:
      snapshots: tuple of the ``NTKSnapshot``s so far, in step order.
      seconds: {"kernel": …, "spectrum": …} wall seconds spent so far computing kernels and
        reducing them (eigvalsh and eqs. (2)–(5)).

    Raises:
      TypeError: a model of no kind above; x or y not real arrays; keep_spectra not a bool;
        rtol/atol not numbers.
      ValueError: x empty or with NaN/Inf (the row is named); y of another length, not finite
        or zero; ``trainable`` other than "all" for a model that is not an ``ntkcond.mlp`` net;
        x not (n, d) for an ``ntkcond.mlp`` net; a ``ModelNet`` whose outputs are not one per
        example.
      InsufficientMemoryError: the n × n kernels would not fit in memory (a smaller probe batch).
    """

    def __init__(self, model, x, *, y=None, trainable="all", keep_spectra: bool = False,
                 rtol: float | None = None, atol: float | None = None):
        where = "NTKTracker"
        check_real(x, where, "x")
        shape = np.shape(x)
        if len(shape) < 1 or shape[0] < 1 or math.prod(shape[1:]) < 1:
            raise ValueError(f"{where}: expected probe inputs x of shape (n, ...) with n >= 1 and "
                             f"nonempty examples, got shape {tuple(shape)}")
        check_finite(x, where, "x")
        n = int(shape[0])
        check_memory(_KERNELS_ALIVE * array_bytes((n, n)), f"tracking the NTK of {n} probe inputs",
                     None, where, alternative="use fewer probe inputs")
        self._x = np.array(x, dtype=np.float64)
        self._y = None if y is None else _targets(y, n, where)
        if not isinstance(keep_spectra, (bool, np.bool_)):
            raise TypeError(f"{where}: expected keep_spectra as a bool, got "
                            f"{type(keep_spectra).__name__} {keep_spectra!r}")
        self._keep = bool(keep_spectra)
        self._rtol, self._atol = resolve_tolerances(rtol, atol, n, where)
        self._layers = None
        self._reference = None  # (treedef, leaf shapes) of the params every update must have
        if isinstance(model, (MLP, GeneralMLP)):
            if len(shape) != 2:
                raise ValueError(f"{where}: expected probe inputs x of shape (n, d) for an "
                                 f"ntkcond.mlp net, got shape {tuple(shape)}")
            self._layers = resolve_trainable(trainable, model.depth, where)
            self._kind, self._apply = "ntkcond.mlp", None
        else:
            if not (isinstance(trainable, str) and trainable.lower() == "all"):
                raise ValueError(f"{where}: expected trainable='all' for a model that is not an "
                                 "ntkcond.mlp net (choose its trainable parameters when building "
                                 f"it, e.g. ntkcond.from_nnx(model, trainable=...)), got {trainable!r}")
            if isinstance(model, ModelNet):
                self._kind, self._apply = model.framework, model.apply_fn
                self._check_outputs(model.params, where)
                self._reference = _structure(model.params)
            elif isinstance(model, StaxNet):
                self._kind, self._apply = "stax", model.apply_fn
            elif callable(model) and not isinstance(model, type):
                self._kind, self._apply = "apply_fn", model
            else:
                raise TypeError(f"{where}: expected model as an ntkcond.mlp net, a ModelNet "
                                "(ntkcond.from_flax, from_nnx, from_equinox), a StaxNet "
                                "(ntkcond.from_stax) or a callable apply_fn(params, x), got "
                                f"{type(model).__name__}")
            self._ntk_fn = empirical_ntk_fn(self._apply)
        self._model = model
        self._snapshots: list[NTKSnapshot] = []
        self._first = None  # K̂₀ = K₀/‖K₀‖_F (scaled units) of the first snapshot
        self._first_scaled = None  # (K₀·2^-e₀, e₀, ‖K₀·2^-e₀‖_F)
        self._seconds = {"kernel": 0.0, "spectrum": 0.0}

    # ------------------------------------------------------------------ public
    @property
    def snapshots(self) -> tuple:
        return tuple(self._snapshots)

    @property
    def seconds(self) -> dict:
        return dict(self._seconds)

    @property
    def n(self) -> int:
        """The number of probe inputs."""
        return int(self._x.shape[0])

    def __len__(self) -> int:
        return len(self._snapshots)

    def __repr__(self) -> str:
        last = self._snapshots[-1].step if self._snapshots else None
        return (f"NTKTracker({self._kind}, n={self.n}, {len(self._snapshots)} snapshots, "
                f"last step {last})")

    def update(self, params, step, *, x=None) -> NTKSnapshot:
        """The snapshot of the model at ``params`` after ``step`` training steps, eqs. (1)–(5).

        Args:
          params: the model's parameters now (any float dtype; the kernel is float64): the
            weight list of an ``ntkcond.mlp`` net, the pytree of the model otherwise, of the
            same structure and shapes at every update.
          step: an int ≥ 0, larger than the previous update's.
          x: probe inputs for this update instead of the tracker's (e.g. the same images as
            they come out of an augmenting pipeline), of the same shape; the kernel distance
            and drift then compare kernels of different inputs. Default: the tracker's.

        Returns:
          ``NTKSnapshot`` (also appended to ``snapshots``).

        Raises:
          TypeError: step not an integer; a parameter leaf complex or not numeric.
          ValueError: a step not after the previous one; probe inputs x of another shape than
            the tracker's, or with NaN/Inf; params of another model (structure or shapes; for
            an ``ntkcond.mlp`` net, shapes that do not fit the probe inputs' d); NaN/Inf in a parameter (the step, the leaf and the entry are named); a
            model whose outputs are not one per example; a kernel that is all zero (a dead
            net) or not finite.
        """
        step = as_count(step, "step", "NTKTracker.update", minimum=0)
        if self._snapshots and step <= self._snapshots[-1].step:
            raise ValueError(f"NTKTracker.update: expected a step after the previous snapshot's "
                             f"step {self._snapshots[-1].step}, got step {step}")
        where = f"NTKTracker.update (step {step})"
        probe = self._x if x is None else self._probe(x, where)
        self._check_params(params, where)
        start = time.perf_counter()
        K = self._kernel(params, probe)
        mid = time.perf_counter()
        snapshot = self._reduce(K, step, where)
        self._seconds["kernel"] += mid - start
        self._seconds["spectrum"] += time.perf_counter() - mid
        self._snapshots.append(snapshot)
        return snapshot

    def frame(self):
        """The snapshots as a ``pandas.DataFrame``: one row per snapshot, columns step,
        kappa_eff, lambda_max, lambda_min_nonzero, rank, precision_limited, effective_rank,
        kernel_distance, alignment (NaN without targets) and ntk_drift; ``attrs`` holds the
        model kind, n, rtol and atol. Spectra: ``spectra()``.

        Raises ImportError without pandas (the ``pandas`` extra)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("NTKTracker.frame: needs pandas: pip install 'ntkcond[pandas]' "
                              "(or pip install pandas)") from None
        rows = [{c: getattr(s, c) for c in FRAME_COLUMNS} for s in self._snapshots]
        for row in rows:
            if row["alignment"] is None:
                row["alignment"] = math.nan
        frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
        frame.attrs = {"model": self._kind, "n": self.n, "rtol": self._rtol, "atol": self._atol}
        return frame

    def spectra(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps (k,), eigenvalues (k, n) ascending, in K's units) of the k snapshots.

        Raises ValueError unless the tracker keeps spectra (``keep_spectra=True``)."""
        if not self._keep:
            raise ValueError("NTKTracker.spectra: expected a tracker that keeps spectra "
                             "(NTKTracker(..., keep_spectra=True)), got keep_spectra=False")
        steps = np.array([s.step for s in self._snapshots], dtype=np.int64)
        values = np.array([s.eigenvalues for s in self._snapshots]).reshape(len(steps), self.n)
        return steps, values

    # ----------------------------------------------------------------- private
    def _check_outputs(self, params, where):
        """ValueError unless f(params, x) has one output per probe input: (n,) or (n, 1)."""
        import jax

        try:
            with x64():
                out = jax.eval_shape(self._apply, params, self._x)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: the model's apply_fn(params, x) fails on these params and "
                             f"the probe inputs of shape {self._x.shape}: {err}") from None
        shape = tuple(getattr(out, "shape", ()))
        if shape not in ((self.n,), (self.n, 1)):
            raise ValueError(f"{where}: expected a model with one output per example (outputs of "
                             f"shape ({self.n},) or ({self.n}, 1) for {self.n} probe inputs), got "
                             f"outputs of shape {shape}; track one output, e.g. "
                             "lambda params, x: apply_fn(params, x)[:, k]")

    def _check_params(self, params, where):
        if self._layers is not None:
            check_params(self._model, params, self._x.shape, where)
            check_param_leaves(list(params), where)
            return
        structure = _structure(params)
        if self._reference is None:  # the first update of a plain apply_fn or stax net
            check_param_leaves(params, where)
            self._check_outputs(params, where)
            self._reference = structure
            return
        if structure != self._reference:
            raise ValueError(f"{where}: expected params of the tracked model (structure "
                             f"{self._reference[0]}, leaf shapes {list(self._reference[1])}), got "
                             f"structure {structure[0]}, leaf shapes {list(structure[1])}")
        check_param_leaves(params, where)

    def _probe(self, x, where) -> np.ndarray:
        """The probe inputs ``x`` of one update as float64: the tracker's shape, finite."""
        check_real(x, where, "x")
        if tuple(np.shape(x)) != self._x.shape:
            raise ValueError(f"{where}: expected probe inputs x of shape {self._x.shape} (those "
                             f"the tracker was given), got shape {tuple(np.shape(x))}")
        check_finite(x, where, "x")
        return np.asarray(x, dtype=np.float64)

    def _kernel(self, params, x) -> np.ndarray:
        """K (n, n) float64, by the structured route (``ntkcond.mlp``) or ``empirical_ntk_fn``."""
        import jax
        import jax.numpy as jnp

        with x64():
            if self._layers is not None:
                params = [jnp.asarray(w, jnp.float64) for w in params]
                K = empirical_ntk(self._model, params, x, trainable=self._layers)
            else:
                params = jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf, jnp.float64), params)
                K = self._ntk_fn(params, x)
            return np.asarray(K, dtype=np.float64)

    def _reduce(self, K: np.ndarray, step: int, where: str) -> NTKSnapshot:
        """Eqs. (1)–(5) of K; the first call also stores K̂₀."""
        scaled = scale_trusted(K, where, symmetrise=True)  # (K + Kᵀ)/2 · 2^-e, max in [0.5, 1)
        cond = conditioning_core(scaled, self._rtol, self._atol, where)
        Ks, e = scaled.matrix, scaled.exponent
        norm = float(np.linalg.norm(Ks))
        unit = Ks / norm
        if self._first is None:
            self._first, self._first_scaled = unit, (Ks, e, norm)
        diff = self._first - unit
        distance = 0.5 * float(np.vdot(diff, diff))
        K0s, e0, norm0 = self._first_scaled
        with np.errstate(over="ignore", under="ignore"):  # ‖K·2^-e − K₀·2^-e‖ scaled back: exact
            drift = float(np.ldexp(np.linalg.norm(Ks - np.ldexp(K0s, e0 - e)), e - e0) / norm0)
        alignment = None
        if self._y is not None:
            y = self._y
            alignment = float(y @ Ks @ y) / (norm * float(y @ y))
        eig_scaled = np.ldexp(cond.eigenvalues, -e)  # the same eigenvalues, in Ks's units
        above = eig_scaled[eig_scaled > math.ldexp(cond.cutoff, -e)]  # eq. (2): those of eq. (1)
        return NTKSnapshot(
            step=step, kappa_eff=cond.kappa_eff, lambda_max=cond.lambda_max,
            lambda_min_nonzero=cond.lambda_min_nonzero, rank=cond.rank,
            precision_limited=cond.precision_limited,
            effective_rank=effective_rank(above),
            kernel_distance=distance, alignment=alignment, ntk_drift=drift,
            eigenvalues=np.array(cond.eigenvalues) if self._keep else None)


def _structure(params) -> tuple:
    """(treedef, leaf shapes) of a parameter pytree."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(params)
    return treedef, tuple(tuple(np.shape(leaf)) for leaf in leaves)


def _targets(y, n: int, where: str) -> np.ndarray:
    """y (n,) or (n, 1) as float64 (n,): real, finite, not all zero."""
    check_real(y, where, "y")
    shape = np.shape(y)
    if shape not in ((n,), (n, 1)):
        raise ValueError(f"{where}: expected targets y of shape ({n},) for {n} probe inputs, got "
                         f"shape {tuple(shape)}")
    check_finite(y, where, "y")
    out = np.array(y, dtype=np.float64).reshape(n)
    if not np.any(out):
        raise ValueError(f"{where}: expected targets y not all zero (the alignment divides by "
                         "‖y‖²), got all zeros")
    return out
