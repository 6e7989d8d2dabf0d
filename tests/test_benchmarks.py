"""Smoke test of benchmarks/bench_empirical_ntk.py (the timing itself is not a test)."""
import importlib.util
import os

import pytest

pytest.importorskip("jax")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_benchmark(name="bench_empirical_ntk"):
    """Import benchmarks/<name>.py as a module (benchmarks are not a package)."""
    path = os.path.join(ROOT, "benchmarks", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_structured_flops_counts_each_gemm():
    bench = load_benchmark()
    # depth 0: x W (2nd) and the Gram x xᵀ (2n²d)
    assert bench.structured_flops(4, 3, 99, 0) == 2 * 4 * 3 + 2 * 16 * 3
    # depth 1, n=2, d=3, m=5: forward 2n(dm + m) = 80; no hidden-to-hidden backward GEMM;
    # Grams 2n²(d + m) for the inputs = 64 and 2n²·m for B = 40
    assert bench.structured_flops(2, 3, 5, 1) == 80 + 64 + 40


def test_bench_main_writes_a_table(tmp_path):
    out = str(tmp_path / "bench.md")
    # one child process (structured only) and a 256² GEMM test keep this to a few seconds
    rc = load_benchmark().main(["--n", "16", "--d", "8", "--m", "4", "--depth", "1", "--dtype", "float64",
                            "--methods", "structured", "--repeats", "1", "--gemm-size", "256",
                            "--out", out])
    assert rc == 0
    text = open(out).read()
    assert "| 16 | 8 | 4 | 1 | float64 | structured | ok |" in text
    assert "- n=16 d=8 m=4 L=1 float64: structured" in text


def test_validation_report_on_digits(tmp_path):
    # --quick: digits (d = 64), n = 16, width 16, depths 1 and 3, all three activations.
    out = str(tmp_path / "validate.md")
    assert load_benchmark("validate_empirical_ntk").main(["--quick", "--out", out]) == 0
    text = open(out).read()
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| digits")]
    agree = [r for r in rows if len(r) == 7]
    impls = {r[3] for r in agree}
    assert {"structured (NumPy, CPU)", "structured (jitted jax)", "generic jacobian",
            "generic ntk_vp"} <= impls
    assert len(agree) == 3 * 2 * len(impls)
    # every implementation is an exact contraction: float64 rounding (~1e-15) against the
    # issue's 1e-10; κ_eff (≤ 1e3 here) amplifies that by at most κ, so 1e-8 has margin
    assert all(float(r[4]) < 1e-10 and float(r[6].rstrip(" |")) < 1e-8 for r in agree), agree
    # convergence: 3 fixed seeds at widths 16, 64, 256 give a fitted exponent near -1/2
    # (measured -0.59); [-0.75, -0.3] excludes no convergence (0) and 1/m (-1)
    slope = float(text.split("error ∝ m^")[1].split()[0])
    assert -0.75 <= slope <= -0.3, slope


def test_bench_infinite_sweep_family_table(tmp_path, capsys):
    """``bench_infinite_sweep.py --family``: one row per activation beside ReLU, with ratios."""
    bench = load_benchmark("bench_infinite_sweep")
    out = tmp_path / "family.md"
    assert bench.main(["--n", "12", "--d", "5", "--depths", "2", "--repeats", "2",
                       "--family", "relu", "erf", "sin", "gelu", "--out", str(out)]) == 0
    text = out.read_text()
    for row in ("| relu | norm-preserving, no biases | 2 |", "| erf | w_std = 1.5 | 2 |",
                "| gelu | w_std = 1.5 | 1 |"):
        assert row in text, text
    assert "ratio to ReLU" in text and "<= 1.5x" in text and "<= 3x" in text


def test_bench_distributed_rows_for_one_two_or_both_process_counts():
    """``bench_distributed.row``: medians over rounds, speed-up and floor T₁/(T₁/2 + c) when both
    counts ran, blanks (not a made-up ratio) when a job ran at one count only (``--counts 2``
    for the 60,000 κ_eff)."""
    bench = load_benchmark("bench_distributed")
    kappa = {"kappa_eff": 1234.5, "passes": 40, "converged": True, "cached_fraction": 1.0,
             "cache_bytes": 2**30}
    one = {"seconds": 10.0, "collectives": 0.0, "result": kappa, "devices": None, "n": 100,
           "peak_rss_gb": 1.0, "pass_seconds": 8.0}
    two = [dict(one, seconds=6.0, collectives=1.0, devices=2, peak_rss_gb=0.7),
           dict(one, seconds=5.5, collectives=1.5, devices=2, peak_rss_gb=0.8)]
    both = bench.row("kappa", [one], [two])
    assert both[:9] == ["kappa", "100", "10.00", "6.00", "1.67x", "1.00", "1.50", "1.67x", "0.8"]
    assert "rel. 0.0e+00" in both[9] and "jax.device_count() = 2, 2" in both[9]
    # Amdahl with the repeated dense algebra: 10 / (8/2 + 2 + 1) = 1.43x
    assert "8.0 s in kernel passes, 2.0 s in the dense algebra" in both[9] and "at most 1.43x" in both[9]
    # three rounds: medians (T₁ 10, T₂ 6), each round's speed-up listed, results all compared
    slow = dict(one, seconds=14.0)
    other = dict(one, result=dict(kappa, kappa_eff=1234.5 * (1 + 1e-9)))
    rounds = bench.row("kappa", [one, slow, other], [two, [dict(p, seconds=9.0) for p in two], two])
    assert rounds[2:5] == ["10.00", "6.00", "1.67x (1.67, 1.56, 1.67)"]
    assert "> 1e-12" in rounds[9]  # the third round's κ differs by 1e-9: shown, not hidden
    only_two = bench.row("kappa", [], [two])
    assert only_two[2:5] == ["not run", "6.00", ""] and only_two[7] == ""
    assert "40 passes" in only_two[9] and "cached 100% (1.00 GiB)" in only_two[9]
    only_one = bench.row("kappa", [one], [])
    assert only_one[2:4] == ["10.00", "not run"] and only_one[8] == "1.0"
    for bad in (["--counts", "3"], ["--repeats", "0"]):
        with pytest.raises(SystemExit):
            bench.main(bad)


def test_bench_tracker_writes_both_tables(tmp_path):
    """``bench_tracker.py`` at toy sizes: both tables, and the tracker and the jacrev loop agree
    on κ_eff (the same kernel: printed to 6 digits, equal)."""
    out = tmp_path / "tracker.md"
    assert load_benchmark("bench_tracker").main(["--rounds", "1", "--depths", "1", "--snapshots", "3",
                                                  "--n1", "8", "--n2", "16", "--out", str(out)]) == 0
    text = out.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| 1 | 200,960 |"))
    tracker, user = row.split(" | ")[6].split(" / ")
    assert tracker == user
    assert "| 3 | **" in text and "3 snapshots: width 512, 3 hidden layers" in text
