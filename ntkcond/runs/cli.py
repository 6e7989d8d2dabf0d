"""Shared command-line plumbing of the scripts: one parser type, the data flags, the run
flags, ``--depths``, and the error policy.

Every command (``ntkcond <name>`` and its script ``scripts/<name>.py``): ``main(argv=None,
prog=None)`` beside its library call; ``parser(prog, doc)`` (defaults shown in ``--help``) and
``command_parser`` (the same parser under either name);
``add_data_arguments`` (the same data flags everywhere); ``add_run_arguments`` (``--out``,
``--resume``, ``--overwrite``, ``--no-progress``); ``parse_depths`` (``0-10``, ``0,1,5``);
``parse_width``, ``positive_int`` and ``positive_float`` (argparse types of ``--width``,
counts and tolerances);
``add_network_arguments`` (``--depths``, ``--activations``, ``--w-std``, ``--b-std``,
``--residual``, ``--arch``, ``--readout``, ``--filter`` and, where asked, ``--trainable``: the
nets) with ``nets_from_args`` (the network objects, built once here); ``activation_name`` and
``target_name`` (the argparse types of ``--activations`` and ``--target``);
``run_main``, which turns any error into one line on stderr: exit 2 for bad input and OS
errors, 130 for Ctrl-C, never a traceback, and acts on the process flags of
``runs.launcher.add_process_arguments`` where a script has them.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

from .. import datasets
from .._core.checks import MAX_DEPTH, as_depth
from .provenance import command_line


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each flag's help with its default once: "(default: X)" appended unless the help already
    says its default, the flag has none (None) or is a switch (False); lists shown as typed
    ("inf 512")."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("default" in text or default is None or default is False
                or default is argparse.SUPPRESS or action.option_strings == []
                or isinstance(action, argparse._HelpAction)):
            return text
        if isinstance(default, (list, tuple)):
            default = " ".join(str(v) for v in default)
        return f"{text} (default: {str(default).replace('%', '%%')})"


class Parser(argparse.ArgumentParser):
    """argparse with defaults shown in ``--help`` and one-line errors (exit 2).

    ``invocation``: how the command is run (``ntkcond cond-vs-depth`` or ``python
    scripts/cond_vs_depth.py``), the head of the command line ``run_main`` records."""

    invocation: str = ""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def parser(prog: str, doc: str) -> Parser:
    """The parser of a script: ``doc``'s first paragraph as the description, the rest as epilog."""
    head, _, rest = doc.strip().partition("\n\n")
    return Parser(prog=prog, description=head, epilog=rest or None, formatter_class=_HelpFormatter)


def command_parser(name: str, doc: str, prog: str | None = None) -> Parser:
    """The parser of the command ``name`` (e.g. "cond_vs_depth"), as ``parser``.

    Run as the script ``scripts/<name>.py`` when ``prog`` is None (errors read
    ``<name>: error: …``), else as ``prog`` (e.g. "ntkcond cond-vs-depth", the ``ntkcond``
    command). ``{command}`` in ``doc`` (its examples) becomes the way it was invoked:
    ``python scripts/<name>.py`` or ``prog``.
    """
    command = f"python scripts/{name}.py" if prog is None else prog
    p = parser(name if prog is None else prog, doc.replace("{command}", command))
    p.invocation = command
    return p


def add_run_arguments(p: argparse.ArgumentParser, prog: str, *, resume: bool = True) -> None:
    """--out (runs/<prog>), --resume, --overwrite, --no-progress: the run-directory policy."""
    p.add_argument("--out", default=os.path.join("runs", prog), help="run directory")
    if resume:
        p.add_argument("--resume", action="store_true",
                       help="continue the run in --out (same configuration and data required)")
    p.add_argument("--overwrite", action="store_true", help="discard the run in --out and start over")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def parse_depths(text: str, flag: str = "--depths") -> list[int]:
    """'0-10', '0,1,5' or '0-3,7' → sorted list of depths ≥ 0, each given once ('1,1' and
    '0-3,2' are refused: a depth twice is a typo, not a request), under the library's one depth
    contract (``ntkcond._core.checks.as_depth``: at most ``MAX_DEPTH``). ``flag`` names the
    flag in the errors (e.g. ``--deep-depths``)."""
    depths: set = set()
    repeated: set = set()
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = (int(v) for v in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                new = set(range(lo, min(hi, MAX_DEPTH + 1) + 1))  # checked below
            else:
                new = {int(part)}
            repeated |= depths & new
            depths |= new
    except ValueError:
        raise ValueError(f"{flag}: expected e.g. '0-10' or '0,1,5', got {text!r}") from None
    try:
        if not depths:
            raise ValueError
        checked = sorted(as_depth(L, flag) for L in depths)
    except ValueError:
        raise ValueError(f"{flag}: expected depths in [0, {MAX_DEPTH}], got {text!r}") from None
    if repeated:
        raise ValueError(f"{flag}: expected each depth once, got {sorted(repeated)} more than "
                         f"once in {text!r}")
    return checked


def parse_width(text: str):
    """argparse type of ``--width``: 'inf' (also 'infinite', '∞') or an integer width >= 1."""
    if text.strip().lower() in ("inf", "infinite", "∞"):
        return "inf"
    return _int_at_least_one(text, "'inf' or an integer width >= 1")


def positive_float(text: str) -> float:
    """argparse type: a finite float > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _int_at_least_one(text, "an integer >= 1")


def int_at_least(low: int):
    """argparse type: an integer >= ``low`` (errors name the flag: argparse adds it)."""
    def typed(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return value

    typed.__name__ = f"integer >= {low}"
    return typed


def check_batch(batch: int, ds, flag: str = "--batch") -> None:
    """ValueError naming ``flag`` unless 1 <= ``batch`` <= the number of rows of ``ds``."""
    if batch > len(ds.x):
        raise ValueError(f"{flag}: expected at most n = {len(ds.x)} (the rows of {ds.name}), got "
                         f"{batch}")


def target_name(text: str) -> str:
    """argparse type of ``--target`` (train-vs-depth, train-track): lt5, even or class:K (K an
    integer; ``runs.train_records.make_targets``)."""
    head, _, k = text.partition(":")
    if text in ("lt5", "even") or (head == "class" and k.lstrip("-").isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"expected lt5, even or class:K (K an integer), got {text!r}")


def _int_at_least_one(text: str, expected: str) -> int:
    """int(text) if it is an integer >= 1, else argparse's error saying ``expected``."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    return _float_above(text, strict=False)


def _float_above(text: str, *, strict: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (value <= 0 if strict else value < 0):
        raise argparse.ArgumentTypeError(f"expected a number {'>' if strict else '>='} 0, "
                                         f"got {text!r}")
    return value


def activation_name(text: str) -> str:
    """argparse type of ``--activations``: the canonical name of an activation
    (``ntkcond.activations.parse_activation``; the names of ``activations_help()``)."""
    from ..activations import parse_activation

    try:
        return parse_activation(text).name
    except (ValueError, TypeError) as err:
        raise argparse.ArgumentTypeError(_one_line(err)) from None


def _std_type(nonzero: bool):
    """argparse type of a std flag: a number in [1e-150, 1e150] (or 0 where allowed): its
    square a normal float64 (``ntkcond.network.layers.MAX_STD``)."""
    from ..network.layers import MAX_STD

    def std(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if value == 0.0 and not nonzero:
            return 0.0
        if not (math.isfinite(value) and 1.0 / MAX_STD <= value <= MAX_STD):
            low = "" if nonzero else "0 or "
            raise argparse.ArgumentTypeError(f"expected {low}a number in [{1 / MAX_STD:g}, "
                                             f"{MAX_STD:g}], got {text!r}")
        return value

    std.__name__ = "std" if nonzero else "std_or_zero"
    return std


def add_network_arguments(p: argparse.ArgumentParser, *, depths: str = "0-10",
                          activations=("relu", "linear"), trainable: bool = False,
                          options: bool = True) -> None:
    """The nets of a sweep, one flag group: --depths, --activations, --w-std, --b-std,
    --residual (``ntkcond.network.mlp``; NTK parameterisation), --arch, --readout, --filter
    (``ntkcond.network.cnn``) and, with ``trainable``, --trainable. The defaults are the
    norm-preserving bias-free nets of Liu & Hui, so a run without them is the run it always
    was. ``nets_from_args`` builds the nets. Without ``options`` only --depths and
    --activations (a command that chooses the stds itself: the activation study)."""
    from ..activations import activations_help

    g = p.add_argument_group("network")
    g.add_argument("--depths", default=depths, help="depths L (hidden layers), e.g. 0-10 or 0,1,5")
    g.add_argument("--activations", nargs="+", type=activation_name, default=list(activations),
                   metavar="ACT",
                   help=activations_help() + (" (those outside the leaky family need --w-std)"
                                              if options else ""))
    if not options:
        return
    g.add_argument("--w-std", type=_std_type(True), default=None,
                   help="weight std s_w of every layer (default: the norm-preserving "
                        "bias-free net: hidden layers sqrt(c), c = 2/(1+a^2), read-out 1; "
                        "needed for activations outside the leaky family)")
    g.add_argument("--b-std", type=_std_type(False), default=0.0,
                   help="bias std s_b of every layer (0: no biases)")
    g.add_argument("--residual", type=_std_type(True), default=None,
                   help="residual blocks z + beta*(layer) for layers 2..L with this beta "
                        "(default: a plain MLP)")
    g.add_argument("--arch", default="mlp", choices=["mlp", "cnn"],
                   help="fully-connected nets, or convolutional nets on the images (NHWC): "
                        "L convolutions (k x k filters, stride 1, SAME padding) and "
                        "activations, then --readout and a dense read-out; --width counts "
                        "channels")
    g.add_argument("--readout", default="flatten", choices=["flatten", "gap"],
                   help="--arch cnn: flatten (the spatial diagonal; cheap) or global average "
                        "pooling (every pixel pair)")
    g.add_argument("--filter", type=positive_int, default=3,
                   help="--arch cnn: filter size k (k x k)")
    if trainable:
        g.add_argument("--trainable", default="all", choices=["all", "first", "last"],
                       help="which weights are trained: all layers, W1 only, or the read-out "
                            "only (--arch cnn: all)")
    else:  # every layer trained: the nets of commands without the flag
        p.set_defaults(trainable="all")


def nets_from_args(args) -> list:
    """The nets of the flags of ``add_network_arguments``, built and checked once: one
    ``ntkcond.network.MLPFamily`` per activation (``resolve_mlps``), or with ``--arch cnn``
    one ``CNNFamily`` (``resolve_cnns``); errors name the flags. Flags of the other
    architecture that are set are refused."""
    from ..network import resolve_cnns, resolve_mlps
    from ..network.mlp import FLAGS

    if args.arch == "cnn":
        if args.residual is not None:
            raise ValueError("--residual: residual blocks are fully-connected only, got "
                             f"--residual {args.residual:g} with --arch cnn")
        if args.trainable != "all":
            raise ValueError("--trainable: convolutional nets train every layer (--trainable "
                             f"all), got --trainable {args.trainable} with --arch cnn")
        return resolve_cnns(args.activations, args.w_std, args.b_std, readout=args.readout,
                            filter=args.filter, where="--activations", names=FLAGS)
    given = [flag for flag, value, default in (("--readout", args.readout, "flatten"),
                                                ("--filter", args.filter, 3))
             if value != default]
    if given:
        raise ValueError(f"{given[0]}: applies to --arch cnn, got --arch mlp")
    return resolve_mlps(args.activations, args.w_std, args.b_std, args.residual,
                        where="--activations", names=FLAGS)


def parse_sizes(text: str) -> list[int]:
    """'64,128,1000' → sorted list of batch sizes ≥ 2, each given once."""
    try:
        given = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--sizes: expected comma-separated integers, got {text!r}") from None
    values = sorted(set(given))
    if not values or values[0] < 2:
        raise ValueError(f"--sizes: expected integers >= 2, got {text!r}")
    if len(values) != len(given):
        raise ValueError(f"--sizes: expected each size once, got {text!r}")
    return values


def add_data_arguments(p: argparse.ArgumentParser, *, split: str = "train") -> None:
    """--dataset, --split, --data-dir, --mean, --std, --preset, --normalize, --downsample, --n,
    --dim (see datasets.load) and --seed (the shuffling and the gaussian set).

    ``split`` is the default split of the tensorflow-datasets names; digits, gaussian and an
    .npz path record their own single split unless --split is given.
    """
    p.add_argument("--dataset", default="digits",
                   help="digits, mnist, fashion_mnist, cifar10, svhn_cropped, gaussian, "
                        "or a .npz path with arrays x and y (needs --preset or --mean/--std)")
    p.add_argument("--split", default=None,
                   help=f"split of a named set ({split} when not given); digits and gaussian "
                        "record 'all', an .npz path its file name")
    p.set_defaults(default_split=split)
    p.add_argument("--data-dir", default=None,
                   help="prepared TFDS data dir, or a folder with exported <name>_<split>.npz files "
                        "(e.g. cifar10_test.npz)")
    p.add_argument("--mean", type=float, nargs="+", default=None,
                   help=".npz: per-channel mean after scaling pixels to [0, 1] (one or per "
                        "channel; default: --preset's, or the set's own)")
    p.add_argument("--std", type=float, nargs="+", default=None,
                   help=".npz: per-channel std (default: --preset's, or the set's own)")
    p.add_argument("--preset", default=None, choices=sorted(datasets.TFDS_NAMES),
                   help=".npz: the papers' mean/std of this data set (e.g. mnist, cifar10)")
    p.add_argument("--normalize", default="default", choices=["default", "unit", "none"],
                   help="preprocessing: the set's (default), unit-norm rows, or none (raw values)")
    p.add_argument("--downsample", type=positive_int, default=1,
                   help="average the images over k x k pixel blocks (k divides H and W): "
                        "smaller images for convolutional nets that pool")
    p.add_argument("--n", type=int_at_least(2), default=512, help="gaussian: number of points")
    p.add_argument("--dim", type=int_at_least(1), default=784, help="gaussian: dimension")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed of the batches' shuffling and of --dataset gaussian")


def load_data(args) -> datasets.Dataset:
    """``datasets.load`` with the flags of ``add_data_arguments`` (``--seed`` included)."""
    seed = args.seed
    split = args.split
    if split is None and args.dataset in datasets.TFDS_NAMES:
        split = getattr(args, "default_split", "train")
    return datasets.load(args.dataset, split, data_dir=args.data_dir, n=args.n, dim=args.dim,
                         seed=seed, mean=args.mean, std=args.std, preset=args.preset,
                         normalize=args.normalize, downsample=args.downsample)


def run_main(prog: str, p: Parser, run, argv=None) -> int:
    """Parse ``argv`` and call ``run(args)``; every failure becomes one line on stderr. The
    command line (``p.invocation`` and ``argv``) is what ``runs.provenance`` records.

    ValueError/TypeError (bad input), ArithmeticError (an overflow from an extreme input) and
    OSError (unwritable --out, full disk, missing file): exit 2. KeyboardInterrupt: exit 130
    (records already appended are safe; --resume continues).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    with command_line((p.invocation or prog).split() + argv):  # recorded in config.json
        return _run(prog, args, argv, run)


def _run(prog: str, args, argv, run) -> int:
    joined = False
    try:
        if hasattr(args, "processes"):  # the process flags (``runs.launcher``)
            from .launcher import start_or_join

            code = start_or_join(prog, args, argv, run)
            if code is not None:  # this process started the others and waited for them
                return code
            joined = _joined()
        status = run(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; finished records are kept: rerun with --resume to continue",
              file=sys.stderr)
        return _failed(130, joined)
    except (ValueError, TypeError, ArithmeticError) as err:  # arithmetic: an extreme input
        message = _one_line(err)
        message = message[len(prog) + 2:] if message.startswith(f"{prog}: ") else message
        print(f"{prog}: error: {message}", file=sys.stderr)
        return _failed(2, joined)
    except OSError as err:
        where = f" {err.filename!r}" if getattr(err, "filename", None) else ""
        print(f"{prog}: error: {err.strerror or err}{where}", file=sys.stderr)
        return _failed(2, joined)
    return status if isinstance(status, int) else 0  # a command's own status (check-claims --strict)


def _joined() -> bool:
    from ..scale.processes import current_share

    return current_share().distributed


def _failed(code: int, joined: bool) -> int:
    """A process of a distributed run that failed leaves at once: a normal exit would wait at
    JAX's shutdown barrier for processes that wait for it (minutes)."""
    if joined:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())
