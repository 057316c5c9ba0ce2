"""The op-registry corpus through the triton backend (TRITON_INTERPRET=1): every `check` of
tests/fx_ir/ops also runs as a one-node graph of kernels (triton_ops_plugin), compared with NumPy."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from triton_helpers import INTERPRET  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]

# a few seconds of the corpus on every run: float16 math, rounding of integers, mixed-sign comparisons,
# in-place assignment, empty reshapes
QUICK = ("test_unary_ufunc_every_dtype and (exp2 or ceil) or test_binary_operators and lt"
         " or test_setitem_cases or test_reshape_cases")


def run_corpus(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TRITON_INTERPRET=INTERPRET,
               PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "triton_ops_plugin",
                           "-W", "ignore", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000)


def test_some_registry_checks_through_triton_kernels() -> None:
    result = run_corpus("tests/fx_ir/ops", "-k", QUICK)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "triton backend: {'checked'" in result.stdout


@pytest.mark.slow
def test_every_registry_check_through_triton_kernels() -> None:
    result = run_corpus("tests/fx_ir/ops")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
