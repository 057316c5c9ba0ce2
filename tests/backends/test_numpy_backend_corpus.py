"""Other folders' test corpora through the numpy backend with tiny blocks and two threads: the
frontend's tests (every graph compiled by it), and every call the op-registry tests check."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pytest_with_plugin(plugin: str, *paths: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                   os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", plugin, *paths],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_frontend_corpus_through_blocked_kernels() -> None:
    result = _pytest_with_plugin("numpy_backend_tiny_plugin", "tests/dynamo", "tests/test_smoke.py")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_the_frontend_corpus_skips_what_holds_for_the_registered_backends_only() -> None:
    """Inline small graphs and eager's logged graphs are what the backends as registered do; with
    blocked kernels registered in their place those tests are skipped, and the files' others pass."""
    files = ("tests/dynamo/test_graph_inline.py", "tests/dynamo/test_explain_report.py")
    result = _pytest_with_plugin("numpy_backend_tiny_plugin", *files)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "this corpus replaces them" in result.stdout, result.stdout[-2000:]


@pytest.mark.slow
def test_every_registry_check_through_blocked_kernels() -> None:
    result = _pytest_with_plugin("numpy_backend_ops_plugin", "tests/fx_ir/ops")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
