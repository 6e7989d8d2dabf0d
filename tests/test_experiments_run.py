"""The run directory of the bias-free experiments (``ntkcond.papers.zhang_saxe_latham.experiments_run``)
through its command line, ``scripts/biasfree_dynamics.py``: summaries, figures, --resume into
one directory, one-line errors."""
import json
import os

from conftest import load_script  # noqa: E402


def _script():
    return load_script("biasfree_dynamics")


def test_script_smoke(tmp_path, capsys):
    mod = _script()
    out = str(tmp_path / "run")
    assert mod.main(["equivalence", "--fast", "--out", out, "--no-progress",
                     "--time", "3", "--lr", "0.02"]) == 0
    summary = json.load(open(os.path.join(out, "summary_equivalence.json")))
    assert summary["square"]["exact_max_weight_dev"] < 1e-12
    assert summary["planted_asymmetry"]["weight_dev"] > 1e-8
    assert os.path.getsize(os.path.join(out, "equivalence.png")) > 0
    out2 = str(tmp_path / "run2")  # one run per directory: another experiment, another --out
    assert mod.main(["closed-form", "--fast", "--out", out2, "--no-progress",
                     "--lrs", "0.05"]) == 0
    rows = json.load(open(os.path.join(out2, "summary_closed-form.json")))["results"]
    assert max(r["max_rel_err_vs_discrete_map"] for r in rows) < 1e-11
    capsys.readouterr()
    assert mod.main(["closed-form", "--out", out, "--lrs", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("biasfree_dynamics: error:")
    assert mod.main(["equivalence", "--out", out, "--lr", "-1"]) == 2


def test_issue8_subcommands_smoke(tmp_path, capsys):
    mod = _script()
    out = str(tmp_path / "run")
    base = ["--fast", "--out", out, "--no-progress", "--resume"]  # one directory, four experiments
    assert mod.main(["orthogonal", "--sizes", "2"] + base) == 0
    rows = json.load(open(os.path.join(out, "summary_orthogonal.json")))["results"]
    assert max(r["max_rel_err_vs_discrete_map[lr]"] for r in rows) < 1e-12
    assert mod.main(["large-init", "--scales", "0.1", "--grid-lrs", "0.004,1.5"] + base) == 0
    grid = json.load(open(os.path.join(out, "summary_large-init.json")))["grids"]["mirrored"]
    assert grid["regions"]["collapse"] == [[0.1, 0.004]]
    assert mod.main(["xor"] + base) == 0
    xs = json.load(open(os.path.join(out, "summary_xor.json")))
    assert xs["pair"]["d=2"]["0"]["max_rel_err_vs_discrete_map"]["max"] < 1e-12
    assert abs(xs["pair"]["d=2"]["1"]["final_loss"]["max"] - 0.5) < 1e-12  # alpha = 1: no XOR fit
    assert mod.main(["rank-one"] + base) == 0
    cases = json.load(open(os.path.join(out, "summary_rank-one.json")))["cases"]
    assert cases["flow rk4 dt=0.01 α=0"]["max_deviation"] < 1e-11
    assert cases["planted: asymmetric data (one x shifted 0.1)"]["max_deviation"] > 1e-4
    for name in ("orthogonal.png", "large_init.png", "xor.png", "rank_one.png"):
        assert os.path.getsize(os.path.join(out, name)) > 10_000
    assert not [p for p in os.listdir(out) if p.startswith(".tmp-")]
    capsys.readouterr()
    assert mod.main(["orthogonal", "--sizes", "x"] + base) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("biasfree_dynamics: error:")
    assert mod.main(["large-init", "--scales", "-1"] + base) == 2
