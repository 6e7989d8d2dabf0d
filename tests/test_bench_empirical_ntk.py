"""Smoke test of benchmarks/bench_empirical_ntk.py (the timing itself is not a test)."""
import importlib.util
import os

import pytest

pytest.importorskip("jax")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_bench():
    path = os.path.join(ROOT, "benchmarks", "bench_empirical_ntk.py")
    spec = importlib.util.spec_from_file_location("bench_empirical_ntk", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_structured_flops_counts_each_gemm():
    bench = load_bench()
    # depth 0: x W (2nd) and the Gram x xᵀ (2n²d)
    assert bench.structured_flops(4, 3, 99, 0) == 2 * 4 * 3 + 2 * 16 * 3
    # depth 1, n=2, d=3, m=5: forward 2n(dm + m) = 80; no hidden-to-hidden backward GEMM;
    # Grams 2n²(d + m) for the inputs = 64 and 2n²·m for B = 40
    assert bench.structured_flops(2, 3, 5, 1) == 80 + 64 + 40


def test_bench_main_writes_a_table(tmp_path):
    out = str(tmp_path / "bench.md")
    # one child process (structured only) and a 256² GEMM test keep this to a few seconds
    rc = load_bench().main(["--n", "16", "--d", "8", "--m", "4", "--depth", "1", "--dtype", "float64",
                            "--methods", "structured", "--repeats", "1", "--gemm-size", "256",
                            "--out", out])
    assert rc == 0
    text = open(out).read()
    assert "| 16 | 8 | 4 | 1 | float64 | structured | ok |" in text
    assert "- n=16 d=8 m=4 L=1 float64: structured" in text
