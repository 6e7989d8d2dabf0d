"""ntkcond._core.progress: tqdm on a terminal, plain lines (no carriage returns) elsewhere,
nothing under TQDM_DISABLE or disable=True; totals shown where known."""
import io

import pytest

from ntkcond._core import progress as P


def test_plain_lines_off_a_terminal(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(P, "MIN_SECONDS", 0.0)
    bar = P.LineProgress(total=20, desc="job", unit="kernel", stream=stream)
    for _ in range(20):
        bar.update(1)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines[0].startswith("job: 2/20 kernels (10%)") and len(lines) == 10
    assert lines[-1].startswith("job: 20/20 kernels (100%)")


def test_a_quick_job_prints_one_closing_line_and_iterables_give_their_total():
    stream = io.StringIO()
    items = list(P.LineProgress(range(7), desc="quick", unit="size", stream=stream))
    assert items == list(range(7))
    (line,) = stream.getvalue().splitlines()  # MIN_SECONDS not reached: only the last line
    assert line.startswith("quick: 7/7 sizes (100%)")
    stream = io.StringIO()
    with P.LineProgress(desc="open", unit="check", stream=stream) as bar:
        bar.update(3)
        bar.set_postfix_str("check_x")
    assert stream.getvalue().startswith("open: 3 checks, ") and "[check_x]" in stream.getvalue()


@pytest.mark.parametrize("value, off", [("1", True), ("true", True), ("0", False), ("", False),
                                        ("no", False)])
def test_tqdm_disable_is_respected(monkeypatch, capsys, value, off):
    monkeypatch.setenv("TQDM_DISABLE", value)
    assert P.progress_disabled() is off
    with P.progress_bar(total=3, desc="env", unit="it") as bar:
        bar.update(3)
    err = capsys.readouterr().err  # capsys: stderr is not a terminal, so plain lines
    assert (err == "") is off and "\r" not in err


def test_disable_prints_nothing(capsys):
    with P.progress_bar(total=3, desc="x", disable=True) as bar:
        bar.update(3)
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_tqdm(monkeypatch):
    monkeypatch.setattr(P, "_is_terminal", lambda stream: True)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    bar = P.progress_bar(total=2, desc="tty")
    from tqdm.auto import tqdm

    assert isinstance(bar, tqdm)
    bar.close()
