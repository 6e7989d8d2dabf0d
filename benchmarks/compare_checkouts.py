#!/usr/bin/env python3
"""Time one command in two checkouts side by side: before and after a change, in one run.

    python benchmarks/compare_checkouts.py BEFORE AFTER --rounds 5 -- \\
        scripts/min_angle.py --dataset ../shared/data/mnist_test.npz --preset mnist --limit 10000

Runs ``python <checkout>/<script> <flags> --out <tmp> --overwrite --no-progress`` with each
checkout first on ``PYTHONPATH`` (the same interpreter, ``OPENBLAS_NUM_THREADS`` as set),
alternating BEFORE, AFTER, BEFORE, … for ``--rounds`` rounds (so load changes hit both alike),
and reads the command's own compute time from what it wrote: the ``seconds`` of
``result.json`` (min-angle), else the sum of the records' ``seconds`` (the sweeps: kernels,
eigendecompositions and records, no start-up or data loading). Prints medians, every round's
ratio AFTER/BEFORE, and the load average; ``--out`` writes the same as Markdown.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def compute_seconds(out: str) -> float:
    result = os.path.join(out, "result.json")
    if os.path.exists(result):
        with open(result, encoding="utf-8") as f:
            return float(json.load(f)["seconds"])
    with open(os.path.join(out, "records.jsonl"), encoding="utf-8") as f:
        return sum(float(json.loads(line)["seconds"]) for line in f if line.strip())


def run(checkout: str, argv: list, out: str) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    cmd = [sys.executable, os.path.join(checkout, argv[0]), *argv[1:], "--out", out,
           "--overwrite", "--no-progress"]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, cwd=checkout)
    return compute_seconds(out), time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=None, help="write the Markdown result here")
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--" not in argv:
        p.error("expected '-- script flags…' after the options")
    cut = argv.index("--")
    args, command = p.parse_args(argv[:cut]), argv[cut + 1:]
    if not command:
        p.error("expected a script after '--'")
    times = {"before": [], "after": []}
    walls = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for label in ("before", "after"):
                seconds, wall = run(getattr(args, label), command, os.path.join(tmp, label))
                times[label].append(seconds)
                walls[label].append(wall)
                print(f"round {r}: {label} {seconds:.3f} s (wall {wall:.1f} s)", file=sys.stderr,
                      flush=True)
    ratios = [a / b for a, b in zip(times["after"], times["before"])]
    b, a = statistics.median(times["before"]), statistics.median(times["after"])
    lines = [f"`{' '.join(command)}`, {args.rounds} rounds alternating before/after",
             "", "| checkout | median compute (s) | rounds (s) |", "|---|---|---|",
             f"| before ({args.before}) | {b:.3f} | {', '.join(f'{t:.3f}' for t in times['before'])} |",
             f"| after ({args.after}) | {a:.3f} | {', '.join(f'{t:.3f}' for t in times['after'])} |",
             "", f"after/before: {a / b:.3f} (medians); per round "
             f"{', '.join(f'{q:.3f}' for q in ratios)}; load average "
             f"{' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end; "
             f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
