"""Shared command-line plumbing of the scripts: data flags, --depths, and the error policy."""
from __future__ import annotations

import argparse
import sys

from .. import datasets


def parse_depths(text: str) -> list[int]:
    """'0-10', '0,1,5' or '0-3,7' → sorted list of depths ≥ 0."""
    depths = set()
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = (int(v) for v in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                depths.update(range(lo, hi + 1))
            else:
                depths.add(int(part))
    except ValueError:
        raise ValueError(f"--depths: expected e.g. '0-10' or '0,1,5', got {text!r}") from None
    if not depths or min(depths) < 0:
        raise ValueError(f"--depths: expected depths >= 0, got {text!r}")
    return sorted(depths)


def add_data_arguments(p: argparse.ArgumentParser, *, split: str = "train") -> None:
    """--dataset, --split, --data-dir, --mean, --std, --preset, --n, --dim (see datasets.load).

    ``split`` is the default split of the tensorflow-datasets names; digits, gaussian and an
    .npz path record their own single split unless --split is given.
    """
    p.add_argument("--dataset", default="digits",
                   help="digits (default), mnist, fashion_mnist, cifar10, svhn_cropped, gaussian, "
                        "or a .npz path with arrays x and y (needs --preset or --mean/--std)")
    p.add_argument("--split", default=None,
                   help=f"split of a named set (default {split}); for an .npz path it is recorded "
                        "(default: the file's name)")
    p.set_defaults(default_split=split)
    p.add_argument("--data-dir", default=None,
                   help="prepared TFDS data dir, or a folder with exported <name>_<split>.npz files "
                        "(e.g. cifar10_test.npz)")
    p.add_argument("--mean", type=float, nargs="+", default=None,
                   help=".npz: per-channel mean after scaling pixels to [0, 1] (one or per channel)")
    p.add_argument("--std", type=float, nargs="+", default=None, help=".npz: per-channel std")
    p.add_argument("--preset", default=None, choices=sorted(datasets.TFDS_NAMES),
                   help=".npz: the papers' mean/std of this data set (e.g. mnist, cifar10)")
    p.add_argument("--n", type=int, default=512, help="gaussian: number of points")
    p.add_argument("--dim", type=int, default=784, help="gaussian: dimension")


def load_data(args, *, seed: int = 0, normalize: str = "default") -> datasets.Dataset:
    """``datasets.load`` with the flags of ``add_data_arguments``."""
    split = args.split
    if split is None and args.dataset in datasets.TFDS_NAMES:
        split = getattr(args, "default_split", "train")
    return datasets.load(args.dataset, split, data_dir=args.data_dir, n=args.n, dim=args.dim,
                         seed=seed, mean=args.mean, std=args.std, preset=args.preset,
                         normalize=normalize)


def run_main(prog: str, parser: argparse.ArgumentParser, run, argv=None) -> int:
    """Parse, run; a ValueError/TypeError becomes one line on stderr and exit code 2."""
    args = parser.parse_args(argv)
    try:
        run(args)
    except (ValueError, TypeError) as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    return 0
