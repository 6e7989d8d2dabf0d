"""What every Liu & Hui claim check shares: the ``Formulas`` under test, the ``Claim`` record,
figure saving, and the real image batches (``report``, ``analytic_claims``, ``finite_claims``
and ``prop41`` import them; users see ``Claim`` and ``Formulas`` through
``ntkcond.papers.liu_hui``).
"""
from __future__ import annotations

import dataclasses
import functools
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


@dataclasses.dataclass(frozen=True)
class Formulas:
    """The closed forms under test (``ntkcond.angles`` by default; ``infinite_ntk``, the
    closest-pair bound ``lambda_min_upper_bound`` of Prop 4.1, the power series
    ``ntk_power_series`` and the κ bracket ``condition_number_bounds`` from ``ntkcond``)."""

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


#: A claim's verdict: checked and held, checked and did not hold, or not checked (with why).
STATUSES = ("PASS", "FAIL", "SKIPPED")


@dataclasses.dataclass(frozen=True)
class Claim:
    """One checked claim.

    Attributes:
      id: claim number (as in the issue), e.g. "1" or "9a".
      title, formula, paper: what is claimed, and where (statement and location).
      computed: what was computed independently.
      error, tolerance, why: the measured discrepancy, the bound it was held to, and the
        reason for that bound (for a SKIPPED claim: error is NaN and ``why`` says why it was
        not run).
      passed: error ≤ tolerance (and any stated extra condition); False when SKIPPED.
      details: further numbers (JSON-serialisable).
      figures: file names of the figures written for this claim.
      status: "PASS", "FAIL" or "SKIPPED"; left empty it follows ``passed``. A claim that cannot
        be checked here (a missing optional dependency) is reported SKIPPED, never dropped.
    """

    id: str
    title: str
    formula: str
    paper: str
    computed: str
    error: float
    tolerance: float
    why: str
    passed: bool
    details: dict = dataclasses.field(default_factory=dict)
    figures: tuple = ()
    status: str = ""

    def __post_init__(self):
        status = self.status or ("PASS" if self.passed else "FAIL")
        if status not in STATUSES:
            raise ValueError(f"Claim: expected status in {STATUSES}, got {self.status!r}")
        if (status == "PASS") != bool(self.passed):
            raise ValueError(f"Claim: expected passed={status == 'PASS'} with status {status!r}, "
                             f"got passed={self.passed!r}")
        object.__setattr__(self, "status", status)

    @classmethod
    def skipped(cls, id: str, title: str, formula: str, paper: str, reason: str,
                tolerance: float = float("nan")) -> "Claim":
        """A claim that was not checked, and why (e.g. an optional dependency is missing)."""
        return cls(id=id, title=title, formula=formula, paper=paper,
                   computed="not run", error=float("nan"), tolerance=tolerance,
                   why=reason, passed=False, status="SKIPPED")


def pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, outdir, name):
    if outdir is None:
        pyplot().close(fig)
        return ()
    from ..._core.io import atomic_savefig

    atomic_savefig(fig, os.path.join(outdir, name), dpi=110)
    pyplot().close(fig)
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
    return _load_real_sets(os.path.abspath(DEFAULT_DATA_DIR if data_dir is None else data_dir))


@functools.lru_cache(maxsize=None)
def _load_real_sets(folder: str) -> tuple:
    sets = []
    mnist = os.path.join(folder, "mnist_test.npz")
    cifar = os.path.join(folder, "cifar10_test.npz")
    if os.path.exists(mnist):
        sets.append(("MNIST test", datasets.load(mnist, preset="mnist").x))
    if os.path.exists(cifar):
        sets.append(("CIFAR-10 test", datasets.load(cifar, preset="cifar10").x))
    sets.append(("digits", datasets.load("digits").x))
    return tuple(sets)


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
