"""The frontend's test corpus through backend "tiered" with every graph moved to "c" at its first call
(tiered_corpus_plugin): each test's graphs run the swap and their C code against plain Python. Slow:
one C module per graph (minutes with a warm disk cache, hours with a cold one on two cores)."""
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


def run_with_plugin(*paths: str, timeout: int) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                   os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tiered_corpus_plugin",
                           "-W", "ignore", *paths], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_some_frontend_tests_with_every_graph_moved_to_c() -> None:
    result = run_with_plugin("tests/dynamo/test_lang_operators.py", "-k", "array", timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.mark.slow
def test_frontend_corpus_with_every_graph_moved_to_c() -> None:
    result = run_with_plugin("tests/dynamo", "tests/test_smoke.py", timeout=6 * 3600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
