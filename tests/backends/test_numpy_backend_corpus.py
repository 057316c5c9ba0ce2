"""The frontend's own test corpus (tests/dynamo, tests/test_smoke.py), every graph compiled by the
numpy backend with tiny blocks and two threads instead of its usual backend."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_frontend_corpus_through_blocked_kernels() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                   os.environ.get("PYTHONPATH")])))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "numpy_backend_tiny_plugin",
         "tests/dynamo", "tests/test_smoke.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
