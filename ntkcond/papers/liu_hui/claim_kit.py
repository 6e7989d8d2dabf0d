"""What every Liu & Hui claim check shares: the ``Formulas`` under test, the ``Claim`` record,
figure saving, and the real image batches (``report``, ``analytic_claims``, ``finite_claims``
and ``prop41`` import them; users see ``Claim`` and ``Formulas`` through
``ntkcond.papers.liu_hui``).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
from typing import Callable

import numpy as np

from ... import datasets
from ..._core.x64 import x64
from ...finite.empirical import empirical_ntk
from ...finite.models import mlp
from ...infinite import angles as _angles
from ...infinite.kernels import infinite_ntk
from ...infinite.power_series import ntk_power_series
from ...scale.bounds import condition_number_bounds
from ...spectrum import lambda_min_upper_bound
from ... import stax


#: The activations of ``cnn_ntk``: (the stax layer or None, the norm-preserving s_w).
CNN_ACTIVATIONS = {"relu": (stax.Relu, math.sqrt(2.0)), "linear": (None, 1.0)}


def cnn_ntk(images, depth: int, activation: str, padding: str = "SAME", filter: int = 3):
    """The NTK (n, n) of the bias-free CNN with a flatten read-out on NHWC ``images`` (n, H,
    W, C), by ``ntkcond.stax``:

        serial(*[Conv(1, (k, k), padding=padding, W_std=s_w), σ] * depth, Flatten(), Dense(1))

    with σ ReLU (s_w = √2) or none (linear, s_w = 1): the norm-preserving nets of Liu & Hui,
    infinitely many channels (the kernel does not depend on the 1 written for them)."""
    layer, s_w = CNN_ACTIVATIONS[activation]
    body = []
    for _ in range(depth):
        body.append(stax.Conv(1, (filter, filter), padding=padding, W_std=s_w))
        if layer is not None:
            body.append(layer())
    _, _, kernel_fn = stax.serial(*body, stax.Flatten(), stax.Dense(1))
    return np.asarray(kernel_fn(images, None, "ntk"))


@dataclasses.dataclass(frozen=True)
class Formulas:
    """The closed forms under test (``ntkcond.angles`` by default; ``infinite_ntk``, the
    closest-pair bound ``lambda_min_upper_bound`` of Prop 4.1, the power series
    ``ntk_power_series``, the κ bracket ``condition_number_bounds`` from ``ntkcond``, and the
    CNN kernel ``cnn_ntk`` of ``ntkcond.stax``)."""

    angle_map: Callable = _angles.angle_map
    derivative_factor: Callable = _angles.derivative_factor
    gradient_angle: Callable = _angles.gradient_angle
    small_angle_gradient_cos: Callable = _angles.small_angle_gradient_cos
    embedding_angle_asymptote: Callable = _angles.embedding_angle_asymptote
    relu_infinite_depth_angle: Callable = _angles.relu_infinite_depth_angle
    infinite_depth_kappa: Callable = _angles.infinite_depth_kappa
    infinite_ntk: Callable = infinite_ntk
    lambda_min_upper_bound: Callable = lambda_min_upper_bound
    ntk_power_series: Callable = ntk_power_series
    condition_number_bounds: Callable = condition_number_bounds
    cnn_ntk: Callable = cnn_ntk


#: A claim's verdict: checked and held, checked and did not hold, or not checked (with why).
VERDICTS = ("PASS", "FAIL", "SKIPPED")
#: The two ways a statistic is held to its threshold.
DIRECTIONS = ("<=", ">=")


@dataclasses.dataclass(frozen=True)
class Criterion:
    """One comparison a claim makes: ``statistic direction threshold``.

    Attributes:
      name: what the statistic is, in words a reader can recompute from the claim's details
        (e.g. "|log-log slope of the RMS error + 1/2|").
      statistic: the measured value (NaN when not measured: a SKIPPED claim).
      direction: "<=" (the statistic must not exceed the threshold) or ">=".
      threshold: the bound it is held to.

    ``margin`` is threshold − statistic for "<=" and statistic − threshold for ">=": ≥ 0
    exactly when the comparison holds (NaN, and −inf for an infinite statistic, when it
    cannot hold).
    """

    name: str
    statistic: float
    direction: str
    threshold: float

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"Criterion: expected direction in {DIRECTIONS}, got "
                             f"{self.direction!r}")
        for field in ("statistic", "threshold"):
            value = getattr(self, field)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
                raise TypeError(f"Criterion: expected {field} a real number, got {value!r}")
            object.__setattr__(self, field, float(value))

    @property
    def margin(self) -> float:
        """≥ 0 exactly when ``statistic direction threshold`` holds."""
        with np.errstate(invalid="ignore"):
            if self.direction == "<=":
                return float(self.threshold - self.statistic)
            return float(self.statistic - self.threshold)

    @property
    def holds(self) -> bool:
        return bool(self.margin >= 0)


#: Thresholds of the strict inequalities a < b (a > b) between two different computations,
#: held as the ratio a/b ≤ 1 − 1e-9 (≥ 1 + 1e-9): the values compared differ by far more than
#: rounding where the claim holds, and equal values (the same kernel twice) fail.
BELOW_ONE = 1.0 - 1e-9
ABOVE_ONE = 1.0 + 1e-9


def at_most(name: str, statistic, threshold) -> Criterion:
    """``Criterion(name, statistic, "<=", threshold)``."""
    return Criterion(name, float(statistic), "<=", float(threshold))


def at_least(name: str, statistic, threshold) -> Criterion:
    """``Criterion(name, statistic, ">=", threshold)``."""
    return Criterion(name, float(statistic), ">=", float(threshold))


@dataclasses.dataclass(frozen=True)
class Claim:
    """One checked claim: what is claimed, what was computed, and the comparisons that decide.

    Attributes:
      id: claim number (as in the issue), e.g. "1" or "9a".
      title, formula, paper: what is claimed, and where (statement and location).
      computed: what was computed independently.
      criteria: the comparisons (``Criterion``), first the claim's main statistic; the claim
        holds when every one holds.
      why: why those thresholds are right (and what a 1% error would do to them).
      expected: the verdict we expect and document: "PASS", or "FAIL" where the claim refutes
        a reading (9b) or a documented finding says it does not hold on this data (11 on the
        digits); ``expected_why`` says why when it is not "PASS".
      skipped: the reason the claim could not be checked here ("" when it was checked).
      details: further numbers (JSON-serialisable); figures: file names of its figures.

    The verdict and the four numbers shown for the claim (``statistic``, ``direction``,
    ``threshold``, ``margin``) are those of ``deciding``: the first criterion that fails, or
    the first criterion when all hold, so the verdict is PASS exactly when the margin shown is
    ≥ 0. A SKIPPED claim shows its first criterion with a NaN statistic.
    """

    id: str
    title: str
    formula: str
    paper: str
    computed: str
    criteria: tuple
    why: str
    expected: str = "PASS"
    expected_why: str = ""
    skipped: str = ""
    details: dict = dataclasses.field(default_factory=dict)
    figures: tuple = ()

    def __post_init__(self):
        criteria = tuple(self.criteria)
        if not criteria or not all(isinstance(c, Criterion) for c in criteria):
            raise TypeError(f"Claim {self.id}: expected criteria as a nonempty sequence of "
                            f"Criterion, got {self.criteria!r}")
        object.__setattr__(self, "criteria", criteria)
        if self.expected not in ("PASS", "FAIL"):
            raise ValueError(f"Claim {self.id}: expected expected in ('PASS', 'FAIL'), got "
                             f"{self.expected!r}")
        if self.skipped and not all(math.isnan(c.statistic) for c in criteria):
            raise ValueError(f"Claim {self.id}: a SKIPPED claim has no statistic (NaN), got "
                             f"{[c.statistic for c in criteria]}")

    @property
    def deciding(self) -> Criterion:
        """The criterion shown for the claim: the first that fails, else the first."""
        return next((c for c in self.criteria if not c.holds), self.criteria[0]) \
            if not self.skipped else self.criteria[0]

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "SKIPPED"
        return "PASS" if all(c.holds for c in self.criteria) else "FAIL"

    @property
    def statistic(self) -> float:
        return self.deciding.statistic

    @property
    def threshold(self) -> float:
        return self.deciding.threshold

    @property
    def direction(self) -> str:
        return self.deciding.direction

    @property
    def margin(self) -> float:
        return self.deciding.margin

    @property
    def unexpected(self) -> bool:
        """The verdict differs from ``expected`` (a SKIPPED claim always does)."""
        return self.verdict != self.expected

    def record(self) -> dict:
        """The claim as one JSON-ready record (``records.jsonl``, ``claims.json``): the
        deciding criterion's numbers (NaN as None), the verdict, and every criterion."""
        def num(v):
            return None if v != v else (v if math.isfinite(v) else ("inf" if v > 0 else "-inf"))

        return {"id": self.id, "title": self.title, "criterion": self.deciding.name,
                "statistic": num(self.statistic), "direction": self.direction,
                "threshold": num(self.threshold), "margin": num(self.margin),
                "expected": self.expected, "verdict": self.verdict,
                "unexpected": self.unexpected,
                "criteria": [{"name": c.name, "statistic": num(c.statistic),
                              "direction": c.direction, "threshold": num(c.threshold),
                              "margin": num(c.margin)} for c in self.criteria],
                "formula": self.formula, "paper": self.paper, "computed": self.computed,
                "why": self.why, "expected_why": self.expected_why, "skipped": self.skipped,
                "figures": list(self.figures)}

    @classmethod
    def skipped_claim(cls, id: str, title: str, formula: str, paper: str, reason: str,
                      criteria) -> "Claim":
        """A claim that was not checked, and why (e.g. an optional dependency is missing):
        ``criteria`` as (name, direction, threshold) of the comparisons it would make."""
        return cls(id=id, title=title, formula=formula, paper=paper, computed="not run",
                   criteria=tuple(Criterion(n, math.nan, d, t) for n, d, t in criteria),
                   why=reason, skipped=reason)


def pyplot():
    """matplotlib.pyplot (``ntkcond.plot.pyplot``: Agg unless a backend was chosen)."""
    from ... import plot

    return plot.pyplot()


def save_figure(fig, outdir, name):
    """Write ``fig`` as ``outdir/name`` (``ntkcond.plot.save``: atomic, tight bounding box, so
    no legend is clipped) and close it; () without ``outdir``."""
    from ... import plot

    if outdir is None:
        plot.pyplot().close(fig)
        return ()
    plot.save(fig, os.path.join(outdir, name))
    return (name,)


def loglog_slope(x, y) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def unit_pair(angle):
    return np.array([1.0, 0.0]), np.array([np.cos(angle), np.sin(angle)])


#: Where the real image files are looked for unless told otherwise: ``../shared/data`` from the
#: current directory (the folder beside a checkout, when run from its root).
DEFAULT_DATA_DIR = os.path.join("..", "shared", "data")


def real_image_sets(data_dir: str | None = None) -> tuple:
    """(name, x) of the real image sets: ``mnist_test.npz`` and ``cifar10_test.npz`` in
    ``data_dir`` when present (the papers' preprocessing), and scikit-learn's digits.

    ``data_dir`` defaults to ``DEFAULT_DATA_DIR``; the sets are loaded once per process and folder.
    """
    return tuple((name, x) for name, x, _, _ in _load_real_sets(_folder(data_dir)))


def real_images(n: int, data_dir: str | None = None) -> dict:
    """The first n rows of each set of ``real_image_sets`` as NHWC images (``Dataset.images``:
    MNIST (n, 28, 28, 1), CIFAR-10 (n, 32, 32, 3), digits (n, 8, 8, 1)): a fresh dict of
    copies."""
    return {name: images[:n].copy() for name, _, _, images in _load_real_sets(_folder(data_dir))}


def data_used(data_dir: str | None = None) -> list:
    """What ``real_image_sets(data_dir)`` reads, for the report's configuration: one dict per
    set (name, source: the file or "scikit-learn digits", preprocessing, shape, sha256
    fingerprint of the rows after preprocessing)."""
    from ...runs.rundir import data_fingerprint

    return [{"name": name, "source": source, "shape": list(x.shape),
             "fingerprint": data_fingerprint(x)}
            for name, x, source, _ in _load_real_sets(_folder(data_dir))]


def _folder(data_dir) -> str:
    return os.path.abspath(DEFAULT_DATA_DIR if data_dir is None else data_dir)


@functools.lru_cache(maxsize=None)
def _load_real_sets(folder: str) -> tuple:
    """(name, x (n, d), source, the same rows as NHWC images) of each set present."""
    found = []
    mnist = os.path.join(folder, "mnist_test.npz")
    cifar = os.path.join(folder, "cifar10_test.npz")
    if os.path.exists(mnist):
        found.append(("MNIST test", datasets.load(mnist, preset="mnist"), f"{mnist} (mnist preset)"))
    if os.path.exists(cifar):
        found.append(("CIFAR-10 test", datasets.load(cifar, preset="cifar10"),
                      f"{cifar} (cifar10 preset)"))
    found.append(("digits", datasets.load("digits"), "scikit-learn digits (bundled)"))
    return tuple((name, ds.x, source, ds.images) for name, ds, source in found)


def real_batches(n: int = 256, data_dir: str | None = None) -> dict:
    """Real image batches of n (first n rows of each set of ``real_image_sets``): a fresh dict
    of copies (callers may add entries)."""
    return {name: x[:n].copy() for name, x in real_image_sets(data_dir)}


def empirical_kernels(x, depth, width, activation, seeds):
    """Exact empirical NTKs (float64, structured path) of ``seeds`` random ``mlp(depth, width,
    activation)`` nets on x (n, d): (S, n, n), seed s the net of ``jax.random.PRNGKey(s)``."""
    with x64():
        import jax
        import jax.numpy as jnp

        net = mlp(depth, width, activation)
        xj = jnp.asarray(x, jnp.float64)
        return np.stack([
            np.asarray(empirical_ntk(net, net.init(jax.random.PRNGKey(s), x.shape[1], jnp.float64), xj))
            for s in seeds])
