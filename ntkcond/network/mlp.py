"""The fully-connected nets of ``infinite_ntk``'s keywords, as layer stacks: ``MLPFamily``
(one activation, weight and bias stds, residual blocks, every depth), built once at the
public boundary by the one validator ``resolve_mlp``.

The net of depth L (NTK parameterisation, all weights and biases N(0, 1), width m → ∞,
s_w = ``w_std``, s_b = ``b_std``; neural-tangents'
``stax.serial(*[Dense(m, W_std=s_w, b_std=s_b), act] * L, Dense(1, W_std=s_w, b_std=s_b))``):

    z¹ = s_w/√d · W¹x + s_b b¹,
    z^{l+1} = s_w/√m · W^{l+1} σ(z^l) + s_b b^{l+1}                  (l = 1 … L − 1)
    f = s_w/√m · W^{L+1} σ(z^L) + s_b b^{L+1}.                                          (1)

``w_std=None`` is the norm-preserving net of Liu & Hui (arXiv 2305.08813): hidden layers
s_w² = c = 1/E[σ(z)²] (2/(1 + α²) for the leaky family; homogeneous activations only),
read-out s_w² = 1; L = 0 is the linear model W¹x/√d. With ``residual=β`` layers 2 … L are
residual blocks z^{l+1} = z^l + β(s_w/√m · W^{l+1} σ(z^l) + s_b b^{l+1})
(``FanOut(2)``, ``Parallel(Serial(σ, Dense(β s_w, β s_b)), Identity())``, ``FanInSum()``).

Trainable layers S (0-based: 0 is W¹, b¹; L the read-out; "last": the read-out only at every
depth) become the ``trainable`` flags of the ``Dense`` layers. The kernels of this family at
every depth come from one pass over its layers (``sweep_states``), each layer's map the one
``network(L)`` uses; the pass stops at the fixed point of the blocks and finishes in closed
form (``ntkcond.network.fixed_point``), and so do the variances of ``check_variances``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._core.checks import MAX_PAIR_BLOCKS, QUADRATURE_WEIGHT, depth_budget
from ..activations import ActivationFunction, parse_activation, parse_activations
from .layers import (MAX_STD, Dense, FanInSum, FanOut, Identity, Nonlinearity, Parallel, Serial,
                     check_std)
from .fixed_point import AffineMap, decaying_gap, settled
from .state import PairState

__all__ = ["NetFamily", "MLPFamily", "resolve_mlp", "resolve_mlps", "NET_KEYS", "KEYWORDS",
           "FLAGS"]

#: The options of a family (in records and config.json only when set): the fully-connected
#: nets' and the convolutional ones' (``ntkcond.network.cnn``).
NET_KEYS = ("w_std", "b_std", "residual", "arch", "readout", "filter")


class NetFamily:
    """A family of nets at every depth, one activation (``MLPFamily``, ``CNNFamily``): what
    the sweeps take. ``takes_images``: its inputs are NHWC images, not rows."""

    takes_images = False

    def inputs(self, ds):
        """The examples of the data set ``ds`` as this family's nets take them: its rows
        ``ds.x`` (n, d), or its NHWC images ``ds.images`` (n, H, W, C) (``takes_images``)."""
        return ds.images if self.takes_images else ds.x


@dataclasses.dataclass(frozen=True)
class MLPFamily(NetFamily):
    """The fully-connected nets of eq. (1) at every depth (module docstring). Build with
    ``resolve_mlp``.

    Attributes:
      act: the activation object; w_std: s_w, or None for the norm-preserving net;
      b_std: s_b ≥ 0 (0: no biases); residual: β, or None for a plain MLP.
    """

    act: ActivationFunction
    w_std: float | None = None
    b_std: float = 0.0
    residual: float | None = None

    # ----------------------------------------------------------------- what the object says
    @property
    def homogeneous(self) -> bool:
        """Bias-free with a positively homogeneous activation: every kernel is ‖x‖‖x′‖ times
        a function of the input angle, whatever w_std is."""
        return not self.b_std and self.act.homogeneous

    @property
    def is_linear(self) -> bool:
        """A bias-free linear net (angles never change)."""
        return self.homogeneous and self.act.is_linear

    @property
    def plain(self) -> bool:
        """No residual blocks."""
        return self.residual is None

    @property
    def angle_chain(self) -> bool:
        """Plain and homogeneous: its stack is a ``HomogeneousChain`` at every depth, so the
        fast angle recursion (and the JAX device engine, and the closest/farthest-pair
        shortcut, whose angles do not depend on w_std) serve it."""
        return self.homogeneous and self.plain

    @property
    def name(self) -> str:
        """e.g. ``relu``, ``erf,w_std=1.5,b_std=0.1`` (``residual=β`` appended when set)."""
        return ",".join([self.act.name] + [f"{k}={v:g}" for k, v in self.options().items()])

    def options(self) -> dict:
        """The keyword options that are set ({} for the default net): w_std if not None,
        b_std if nonzero, residual if not None — what records and config.json carry."""
        out = {}
        if self.w_std is not None:
            out["w_std"] = self.w_std
        if self.b_std:
            out["b_std"] = self.b_std
        if self.residual is not None:
            out["residual"] = self.residual
        return out

    def with_activation(self, act) -> "MLPFamily":
        """The same net with another activation (checked as ``resolve_mlp`` checks)."""
        return resolve_mlp(act, self.w_std, self.b_std, self.residual, where="MLPFamily")

    # ------------------------------------------------------------------------------ layers
    def hidden_variance(self) -> float:
        """s_w² of the hidden layers: w_std², or c (exactly) for the norm-preserving net."""
        return self.act.norm_preserving_scale if self.w_std is None else self.w_std**2

    def readout_variance(self) -> float:
        """s_w² of the read-out: w_std², or 1 for the norm-preserving net."""
        return 1.0 if self.w_std is None else self.w_std**2

    def dense(self, i: int, depth: int, layers=None, width=None) -> Dense:
        """The weight layer of index i (0 = first, ``depth`` = read-out) of the depth-``depth``
        net, trainable as ``layers`` says (None: all; "last": the read-out; a set)."""
        readout = i == depth
        v = self.readout_variance() if readout else self.hidden_variance()
        b = self.b_std**2 if self.b_std else None
        if self.residual is not None and 0 < i < depth:
            r2 = self.residual**2
            v, b = r2 * v, None if b is None else r2 * b
        trainable = (layers is None or (layers == "last" and readout)
                     or (layers != "last" and i in layers))
        out_dim = (None if width is None else 1) if readout else width
        return Dense(out_dim, v, b, trainable)

    def block(self, i: int, depth: int, layers=None, width=None):
        """The layers from z^i to z^{i+1} (1 ≤ i < depth): σ then ``dense(i)``, inside a
        residual block when ``residual`` is set."""
        inner = Serial((Nonlinearity(self.act), self.dense(i, depth, layers, width)))
        if self.residual is None:
            return inner
        return Serial((FanOut(2), Parallel((inner, Identity())), FanInSum()))

    def network(self, depth: int, layers=None, width=None) -> Serial:
        """The layer stack of the depth-``depth`` net (eq. (1)); ``width`` the hidden width
        of the finite net (None: infinite width only)."""
        if depth == 0:
            return Serial((self.dense(0, 0, layers, width),))
        stack = [self.dense(0, depth, layers, width)]
        stack += [self.block(i, depth, layers, width) for i in range(1, depth)]
        stack += [Nonlinearity(self.act), self.dense(depth, depth, layers, width)]
        return Serial(tuple(stack))

    def sweep_states(self, state, depths, layers=None, *, max_layers=None,
                     where: str = "MLPFamily.sweep_states"):
        """(L, state of the output) for every depth in ``depths`` (ascending) in one pass:
        z¹ = dense(0)(input), then per L the read-out of σ(z^L) and the next block; the layer
        maps are those of ``network(L)`` (σ(z^L) computed once for both).

        Past a fixed point of the blocks (``ntkcond.network.fixed_point``: the NNGP block of
        z^{l+1} equal to that of z^l bit for bit, every later block the same layers) the
        states of the deeper depths come from the closed form of the NTK's linear recursion:
        the pass costs the layers up to the fixed point, whatever the depth. Where it finds
        none within ``max_layers`` blocks (None: no bound) and deeper depths are asked for,
        ``ValueError`` naming ``where`` and the depth that fits.
        """
        top = max(depths)
        wanted = set(depths)
        if 0 in wanted:
            yield 0, self.dense(0, 0, layers).kernel(state)
        if top == 0:
            return
        sigma = Nonlinearity(self.act)
        z = self.dense(0, top, layers).kernel(state)  # trainable flags: index-wise, any depth
        prev, retry, misses = None, 0, 0
        for L in range(1, top + 1):
            h = sigma.kernel(z)
            if L in wanted:
                yield L, self.dense(L, L, layers).kernel(h)
            if L == top:
                return
            if max_layers is not None and L > max_layers:
                raise ValueError(
                    f"{where}: expected depth <= {max_layers} for this net on these pairs (its "
                    f"layer map reaches no fixed point within {max_layers} layers, and the "
                    f"layers beyond cost one pass each), got depth {top}")
            dense = self.dense(L, top, layers)
            step = self._block(dense, z, h)
            fixed = None
            if self._same_blocks_from(L, layers):
                fixed = self._closed_form(dense, prev, z, step, L, layers, L >= retry)
                if fixed is False:  # a decaying gap whose map did not predict: back off
                    misses += 1
                    retry, fixed = L + 2**misses, None
            if fixed is not None:
                start, fixed = fixed
                for M in sorted(d for d in wanted if d > L):
                    yield M, self.dense(M, M, layers).kernel(sigma.kernel(
                        fixed.advance(M - start)))
                return
            prev, z = z, step

    def _block(self, dense, z, h):
        """z^{l+1} from z^l and h = σ(z^l): ``dense`` of h, plus z in a residual block."""
        step = dense.kernel(h)
        return step if self.residual is None else FanInSum().kernel([step, z])

    def _closed_form(self, dense, prev, z, step, L, layers, gaps: bool):
        """(l₀, ``AffineMap``) where the blocks from z^{L−1} (``prev``), z^L (``z``) to z^{L+1}
        (``step``) reach a fixed point (``ntkcond.network.fixed_point``): settled at l₀ = L,
        or (``gaps``: tried) a decaying gap at l₀ = L − 1 whose map predicts z^{L+1}; False
        where a decaying gap's map did not predict it (the caller backs off: the probes cost
        five blocks); else None."""
        sigma = Nonlinearity(self.act)
        untrained = dataclasses.replace(dense, trainable=False)

        def probe(state, decay=None):
            return AffineMap.probe(state, lambda s: self._block(dense, s, sigma.kernel(s)),
                                   lambda s: self._block(untrained, s, sigma.kernel(s)), decay)

        if settled(z, step):
            return L, probe(z)
        if not gaps or prev is None or not self._same_blocks_from(L - 1, layers):
            return None
        decay = decaying_gap(prev, z, step)
        if decay is None:
            return None
        fixed = probe(prev, decay)
        return (L - 1, fixed) if fixed.predicts(step, 2) else False

    @staticmethod
    def _same_blocks_from(L: int, layers) -> bool:
        """Every hidden block from index L on is the same layers (the trainable flags do not
        change there, whatever the depth)."""
        return layers is None or layers == "last" or all(i < L for i in layers)

    def linear_factor(self, depth: int, layers=None) -> float:
        """c with K = c·XXᵀ/d for a plain bias-free linear net: |S ∩ [0, L]| times the
        output variance gain G_L (the order of ``HomogeneousChain.gain``; 1 for the
        norm-preserving net, so c = |S|). ValueError for other nets."""
        if not (self.is_linear and self.plain):
            raise ValueError(f"MLPFamily.linear_factor: expected a plain bias-free linear net, "
                             f"got {self.name}")
        count = 1 if layers == "last" else (depth + 1 if layers is None
                                            else len([i for i in layers if i <= depth]))
        if self.w_std is None:
            return float(count)
        v = self.w_std**2
        gain = v
        for _ in range(depth):
            gain = gain * v
        return count * gain

    def check_variances(self, sq_norms, depth: int, where: str) -> None:
        """The variances q_l the diagonal reaches up to ``depth`` from inputs of squared
        norms/d ``sq_norms``: ValueError naming ``where`` and the layer where one leaves
        float64's normal range (overflow, or underflow below 2.2e-308, e.g. GELU at s_w = 1.5,
        whose q_l shrinks geometrically to 0: no float64 kernel represents it), and for
        activations without closed forms ``act.check_variances`` (the quadrature's
        step-halving check) on every one. Nothing for homogeneous nets (their scale is carried
        apart from the recursion). The variances stop at their fixed point (q_{l+1} = q_l bit
        for bit: every later layer gives the same), so a deep net costs the layers up to it;
        a quadrature activation whose variances reach none within the budget is refused."""
        if self.homogeneous or depth == 0:
            return
        quadrature = not self.act.closed_form
        q = np.unique(np.asarray(sq_norms, dtype=np.float64).ravel())
        sigma = Nonlinearity(self.act)
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                z = self.dense(0, depth).variance(q)
                seen = [z]
                fits = depth_budget(QUADRATURE_WEIGHT * q.size, MAX_PAIR_BLOCKS)
                for L in range(1, depth):
                    if L > fits:
                        break
                    step = self.dense(L, depth).variance(sigma.variance(z))
                    step = step if self.residual is None else step + z
                    if np.array_equal(step, z):  # a fixed point: every later layer repeats it
                        break
                    z = step
                    seen.append(z)
        except ValueError as err:  # the quadrature's step needs more nodes than it may take
            raise ValueError(f"{where}: {err}") from None
        if quadrature and depth - 1 > fits and len(seen) > fits:  # no fixed point within the budget
            raise ValueError(
                f"{where}: expected depth <= {fits} for activation {self.act.name!r} on these "
                f"inputs (its variance map reaches no fixed point within {fits} layers, and "
                f"each further layer is one more quadrature), got depth {depth}")
        seen = np.concatenate(seen)
        with np.errstate(invalid="ignore"):
            normal = np.isfinite(seen) & (seen >= np.finfo(np.float64).tiny)
        if not np.all(normal):
            layer = 1 + next(i for i, v in enumerate(np.split(normal, len(normal) // q.size))
                             if not np.all(v))
            raise ValueError(f"{where}: expected depth <= {layer - 1} for activation "
                             f"{self.act.name!r} on these inputs (the NNGP variance entering it "
                             f"leaves float64's range at layer {layer}), got depth {depth}")
        if quadrature:
            self.act.check_variances(seen, where)


#: What the arguments are called in messages: the library's keywords, or a command's flags.
KEYWORDS = {"w_std": "w_std", "b_std": "b_std", "residual": "residual", "example": "w_std=1.5"}
FLAGS = {"w_std": "--w-std", "b_std": "--b-std", "residual": "--residual",
         "example": "--w-std 1.5"}


def resolve_mlp(activation, w_std=None, b_std=None, residual=None, *, where: str,
                names: dict = KEYWORDS) -> MLPFamily:
    """The one validator of a fully-connected net given by keywords: the ``MLPFamily``.

    Args:
      activation: any spelling of ``parse_activation``, or an ``MLPFamily`` (returned as it is:
        it was checked when it was built; then no other option may be given).
      w_std: s_w in [1e-150, 1e150], or None for the norm-preserving net (homogeneous
        activations only).
      b_std: s_b: None or 0 (no biases), or in [1e-150, 1e150].
      residual: β in [1e-150, 1e150], or None.
      where: the public function (or command flag group) to name in errors.
      names: what the options are called in messages (``KEYWORDS``, or ``FLAGS`` for a
        command's flags).

    Raises:
      TypeError: a value that is not a real number; ValueError: out of range, NaN or ±inf, or
        a non-homogeneous activation without w_std. Messages name ``where`` and the argument.
    """
    if isinstance(activation, NetFamily):
        if (w_std, b_std or None, residual) != (None, None, None):
            raise ValueError(f"{where}: expected either a net (MLPFamily, which carries its "
                             "options) or an activation with w_std/b_std/residual, got both")
        return activation
    act = parse_activation(activation, where)
    w = check_std(w_std, names["w_std"], where, allow_none=True, allow_zero=False)
    b = check_std(b_std, names["b_std"], where, allow_none=True, allow_zero=True) or 0.0
    r = check_std(residual, names["residual"], where, allow_none=True, allow_zero=False)
    if w is None and not act.homogeneous:
        raise ValueError(
            f"{where}: activation {act.name!r} is not homogeneous, so there is no "
            f"norm-preserving default; pass {names['w_std']} (e.g. {names['example']})")
    family = MLPFamily(act, w, b, r)
    if r is not None:
        big = r * r * max(family.hidden_variance(), b * b)
        if not big <= MAX_STD**2:
            raise ValueError(f"{where}: expected {names['residual']}²·max({names['w_std']}², "
                             f"{names['b_std']}²) <= {MAX_STD**2:g} (a normal float64), got "
                             f"{names['residual']} {r!r}")
    return family


def resolve_mlps(activations, w_std=None, b_std=None, residual=None, *, where: str,
                 names: dict = KEYWORDS) -> list:
    """The nets of several activations with the same options: ``resolve_mlp`` of each
    spelling of ``parse_activations`` (one spelling is one activation; each once), or
    ``NetFamily`` objects (fully-connected or convolutional) as they are (already checked;
    then no options may be given)."""
    if isinstance(activations, NetFamily):
        activations = [activations]
    items = list(activations) if not isinstance(activations, (str, ActivationFunction)) \
        else [activations]
    if items and all(isinstance(a, NetFamily) for a in items):
        if (w_std, b_std or None, residual) != (None, None, None):
            raise ValueError(f"{where}: expected either nets (MLPFamily, which carry their "
                             "options) or activations with w_std/b_std/residual, got both")
        names = [a.name for a in items]
        if len(set(names)) != len(names):
            raise ValueError(f"{where}: expected each net once, got {names}")
        return items
    acts = parse_activations(items if items else activations, where)
    return [resolve_mlp(a, w_std, b_std, residual, where=where, names=names) for a in acts]
