"""The silent phase of a ReLU net from a generic small init on pairwise orthogonal inputs (Zhang,
Saxe & Latham, arXiv 2406.12615; eq. (4) of ``independent_nets``): ``silent_phase_outputs`` solves
the gradient flow linearised about f = 0 in closed form, unit by unit, and ``sign_group_nets``
turns it into the prediction of two independent Saxe nets, one per target sign.
"""
from __future__ import annotations

import numpy as np

from ._groups import group_geometry, require_orthogonal
from ._net_checks import as_weights, as_xy
from .independent_nets import IndependentNets

__all__ = ["silent_phase_outputs", "sign_group_nets"]


# ----------------------------------------------------------------------------- silent phase


def _silent_unit(p0, a0: float, b, n: int):
    """Pieces (t_start, A*, C, D, λ, active) of one unit's silent-phase solution, eq. (4) text:
    A(t) = A* + C e^{λ(t−t_start)} + D e^{−λ(t−t_start)} on each piece (λ = 0: a unit active on
    no point, frozen; then C holds A and D the constant dA/dt)."""
    active = p0 > 0
    A, dA, t = 0.0, a0 / n, 0.0
    pieces = []
    while True:
        lam = float(np.sqrt(np.sum(b[active] ** 2))) / n
        if lam == 0.0:
            pieces.append((t, 0.0, A, dA, 0.0, active.copy()))
            return pieces
        A_star = -float(np.sum(b[active] * p0[active])) / n**2 / lam**2
        C = 0.5 * ((A - A_star) + dA / lam)
        D = 0.5 * ((A - A_star) - dA / lam)
        pieces.append((t, A_star, C, D, lam, active.copy()))
        # Event: p0_μ + b_μ A = 0, i.e. A = T_μ: C z² − (T_μ − A*) z + D = 0 with z = e^{λτ} > 1.
        first, who = np.inf, None
        for mu in np.flatnonzero(active):
            T = -p0[mu] / b[mu]
            B = T - A_star
            if C == 0.0:
                roots = [D / B] if B != 0 else []
            else:
                disc = B * B - 4.0 * C * D
                if disc < 0:
                    continue
                q = -0.5 * (-B + np.copysign(np.sqrt(disc), -B))  # stable quadratic roots
                roots = [q / C] + ([D / q] if q != 0 else [])
            for z in roots:
                if z > 1.0:
                    tau = np.log(z) / lam
                    if tau < first:
                        first, who = tau, mu
        if who is None:
            return pieces
        z = np.exp(lam * first)
        A, dA = A_star + C * z + D / z, lam * (C * z - D / z)
        t += first
        active[who] = False


def _silent_outputs(pieces, P0, b, rho, n, t):
    """(T, n) silent-phase outputs Σ_i a_i(t) ρ_μ relu(p_iμ(t)) at times t (T,), from the
    pieces of every unit (``_silent_unit``)."""
    f = np.zeros((t.size, len(b)))
    for p0, unit in zip(P0, pieces):
        starts = np.array([pc[0] for pc in unit])
        which = np.searchsorted(starts, t, side="right") - 1
        for k, (t0, A_star, C, D, lam, active) in enumerate(unit):
            sel = which == k
            if not np.any(sel) or lam == 0.0:
                continue  # a unit active on no point contributes nothing
            with np.errstate(over="ignore", invalid="ignore"):
                e_plus, e_minus = np.exp(lam * (t[sel] - t0)), np.exp(-lam * (t[sel] - t0))
                A = A_star + C * e_plus + D * e_minus
                a_t = n * lam * (C * e_plus - D * e_minus)
                relu = np.maximum(p0[active][None] + b[active][None] * A[:, None], 0.0)
                f[np.ix_(sel, active)] += a_t[:, None] * rho[active][None] * relu
    return f


def _silent_checked(x, y, W1, W2, where):
    x, y = as_xy(x, y, where)
    require_orthogonal(x, where)
    if y.shape[1] != 1:
        raise ValueError(f"{where}: expected one output (k = 1), got targets of shape {y.shape}")
    W1, W2 = as_weights([W1, W2], where, d=x.shape[1], k=1)
    rho = np.linalg.norm(x, axis=1)
    return x, y[:, 0], W1 @ (x / rho[:, None]).T, W2[0], rho


def silent_phase_outputs(x, y, W1, W2, t) -> np.ndarray:
    """Outputs of a ReLU net f = W₂σ(W₁x) on pairwise orthogonal inputs in the silent phase:
    gradient flow linearised about f = 0 (errors e = −y), eq. (4) text, solved in closed form
    unit by unit (exponentials between the events at which a point switches a unit off).

    Exact for the linearised flow; the real net follows it while f ≪ y (the time t at which it
    stops doing so is the end of the plateau). Overflows to inf for very late t.

    Args:
      x: (n, d) pairwise orthogonal inputs; y: (n,) or (n, 1) targets (k = 1).
      W1: (h, d), W2: (1, h): the init.   t: times (T,), ≥ 0.

    Returns:
      (T, n) float64 f^lin(x_μ, t).
    """
    where = "silent_phase_outputs"
    x, y, P0, a0, rho = _silent_checked(x, y, W1, W2, where)
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    if t.ndim != 1 or not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError(f"{where}: expected finite times t >= 0 (1-D), got {t!r}")
    b, n = rho * y, x.shape[0]
    pieces = [_silent_unit(p0, float(a), b, n) for p0, a in zip(P0, a0)]
    return _silent_outputs(pieces, P0, b, rho, n, t)


def sign_group_nets(x, y, W1, W2) -> IndependentNets:
    """Prediction for a ReLU net from a *generic* small init on pairwise orthogonal inputs: two
    independent Saxe nets, one per target sign (G+ = {y > 0}, G− = {y < 0}), with r_G = ρ_G/n,
    Y_G = ‖y_G‖ and m₀ from the silent phase, eq. (4): the Saxe curve of G is half-way at the
    time t_G at which the linearised (silent-phase) strength would reach Y_G. A group whose
    silent-phase strength never reaches Y_G (no unit with the right sign active on it) gets
    rate 0 and stays at its initial loss.

    Needs ReLU, k = 1, one input norm per sign group (points of one sign whitened on their
    span), and a small init (outputs ≪ targets); otherwise the silent phase is not a phase.

    Raises:
      ValueError: inputs not pairwise orthogonal, k ≠ 1, unequal norms within a sign group.
    """
    where = "sign_group_nets"
    x, yv, P0, a0, rho = _silent_checked(x, y, W1, W2, where)
    n = x.shape[0]
    groups = [tuple(int(i) for i in np.flatnonzero(sel)) for sel in (yv > 0, yv < 0) if np.any(sel)]
    if sum(len(g) for g in groups) != n:
        raise ValueError(f"{where}: expected nonzero targets (each point has a sign), got "
                         f"{int(np.sum(yv == 0))} zero targets")
    r_norm, Y, _, _ = group_geometry(x, yv[:, None], groups, where)
    b = rho * yv
    pieces = [_silent_unit(p0, float(a), b, n) for p0, a in zip(P0, a0)]

    def strength(t, g):
        f = _silent_outputs(pieces, P0, b, rho, n, np.atleast_1d(t))
        return f[:, list(g)] @ yv[list(g)] / np.linalg.norm(yv[list(g)])

    rate, m0 = r_norm / n, np.zeros(len(groups))
    for k, g in enumerate(groups):
        scale = 1.0 / (2 * rate[k] * Y[k])  # the Saxe time unit of this group
        lo, hi = 0.0, scale
        while strength(hi, g)[0] < Y[k] and hi < 1e4 * scale:
            lo, hi = hi, 2 * hi
        if not strength(hi, g)[0] >= Y[k]:
            rate[k], m0[k] = 0.0, float(np.clip(strength(0.0, g)[0], -Y[k], Y[k]))
            continue
        while hi - lo > 1e-13 * hi:  # the first crossing on a grid of 65 times, refined
            grid = np.linspace(lo, hi, 65)
            j = int(np.argmax(strength(grid, g) >= Y[k]))
            lo, hi = grid[max(j - 1, 0)], grid[j]
        m0[k] = Y[k] / (1.0 + np.exp(hi / scale))
    return IndependentNets(groups=tuple(groups), target=Y, rate=rate, m0=m0,
                           weight=np.full(len(groups), 1.0 / n), kind="sign groups",
                           slope=0.0, n=n)
