"""ntkcond._core.quiet: tensorflow's native log lines (written to descriptor 2 while its
libraries load) are dropped during the import only; Python errors still surface."""
import os
import subprocess
import sys

import pytest

from ntkcond._core import quiet


def test_descriptor_two_is_silenced_then_restored():
    code = ("import os, sys\n"
            "from ntkcond._core.quiet import native_stderr_silenced\n"
            "with native_stderr_silenced():\n"
            "    os.write(2, b'native noise\\n')\n"
            "os.write(2, b'after\\n')\n"
            "print('python stdout')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0 and out.stderr == "after\n" and out.stdout == "python stdout\n"


def test_quiet_import_returns_the_module_and_raises_import_errors(monkeypatch):
    assert quiet.quiet_import("json") is sys.modules["json"]
    monkeypatch.setitem(sys.modules, "no_such_pkg_for_ntkcond", None)
    with pytest.raises(ImportError):
        quiet.quiet_import("no_such_pkg_for_ntkcond")
    sys.stderr.write("")  # stderr usable afterwards


def test_neural_tangents_imports_without_log_lines():
    pytest.importorskip("neural_tangents")
    code = ("from ntkcond._core.quiet import quiet_import\n"
            "quiet_import('neural_tangents')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0 and out.stderr == "", out.stderr
