"""Fixed-seed samples of the differential fuzzer (tests/fuzz/run.py runs long campaigns): random
NumPy and pure-Python programs run plain and compiled on each backend leave identical results and effects."""
from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: it decides at import

import pytest  # noqa: E402
from fuzz_campaign import Campaign  # noqa: E402

from dynamo.backends.registry import list_backends  # noqa: E402

# (first seed, programs): about 20 s per CPU backend here; triton runs Triton's interpreter (~2 s a program)
SAMPLE = {"eager": (0, 60), "numpy": (10_000, 60), "numpy-tiny": (20_000, 60), "c": (30_000, 60),
          "triton": (40_000, 6)}
SLOW_SAMPLE = {"eager": (100_000, 400), "numpy": (110_000, 400), "numpy-tiny": (120_000, 400),
               "c": (130_000, 400), "triton": (140_000, 60)}

# pure-Python programs (fuzz_python.py): a few seconds per backend
PYTHON_SAMPLE = {"eager": (0, 15), "numpy": (1_000, 15), "tiered": (2_000, 15)}


def _run(backend: str, first: int, count: int, kind: str = "numpy") -> None:
    if backend == "triton":
        pytest.importorskip("triton")
    if backend == "c" and "c" not in list_backends():
        pytest.skip("no c backend registered")
    campaign = Campaign([backend], minimize=True, minimize_seconds=30, log=None, kind=kind)
    campaign.run(range(first, first + count))
    assert not campaign.failures, campaign.report(0) + "\n\n" + "\n\n".join(
        failure.report() + (f"--- minimized ---\n{small}" if small else "") for failure, small in campaign.failures)


@pytest.mark.parametrize("backend", list(SAMPLE))
def test_fuzz_sample(backend: str) -> None:
    _run(backend, *SAMPLE[backend])


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(SLOW_SAMPLE))
def test_fuzz_larger_sample(backend: str) -> None:
    _run(backend, *SLOW_SAMPLE[backend])


@pytest.mark.parametrize("backend", list(PYTHON_SAMPLE))
def test_fuzz_python_sample(backend: str) -> None:
    _run(backend, *PYTHON_SAMPLE[backend], kind="python")
