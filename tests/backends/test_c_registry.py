"""The op-registry corpus through backend "c": every `check` of tests/fx_ir/ops also runs as a one-node
graph of C kernels (c_ops_plugin), compared bitwise with NumPy, warnings included."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")

# a few seconds of the corpus on every run (each graph is one C module: compiled once, then cached)
QUICK = "test_binary_operators and floordiv"


def run_corpus(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "c_ops_plugin",
                           "-W", "ignore", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000)


def test_some_registry_checks_through_c_kernels() -> None:
    result = run_corpus("tests/fx_ir/ops", "-k", QUICK)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "c backend: {'checked'" in result.stdout


@pytest.mark.slow
def test_every_registry_check_through_c_kernels() -> None:
    result = run_corpus("tests/fx_ir/ops")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
