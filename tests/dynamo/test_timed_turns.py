"""Timed turns (config.timed_turns): a new compiled version and the original code take turns on
the first calls, each timed; a version slower than the original is dropped for it, and explain
says so. Results are the same whichever code runs."""
import time

import numpy as np
import pytest

import dynamo
from dynamo import _C
from dynamo.explain import report_from

from support import same_value


@pytest.fixture(autouse=True)
def timed_turns():
    with dynamo.config.patch(timed_turns=16):
        yield


def slow_backend(graph_module, example_inputs):
    def run(*args):
        time.sleep(0.002)  # far slower than the few operations it replaces
        return graph_module.forward(*args)
    return run


def affine(x):
    return x * 2.0 + 1.0


def test_a_version_slower_than_the_original_is_dropped():
    compiled = dynamo.compile(affine, backend=slow_backend)
    x = np.arange(4.0)
    for _ in range(dynamo.config.timed_turns + 2):
        assert same_value(compiled(x), affine(x))
    (entry,) = _C.cache_entries(affine.__code__)
    assert entry.dropped and entry.in_place and entry.probe == 0
    assert _C.is_skipped(affine.__code__)  # its only version dropped: no guards checked first
    assert entry.best_compiled > entry.best_original > 0.0
    text = str(report_from(compiled._dynamo_callback))
    assert "Dropped for the original code (slower than it per call, timed in turns):" in text
    assert "affine:" in text.split("Dropped for the original code")[1]
    start = time.perf_counter()
    compiled(x)  # the original now: no sleep
    assert time.perf_counter() - start < 0.002


def test_turns_alternate_between_the_compiled_and_the_original_code():
    calls = []

    def counting_backend(graph_module, example_inputs):
        def run(*args):
            calls.append(1)
            return graph_module.forward(*args)
        return run

    with dynamo.config.patch(timed_turns=6):
        compiled = dynamo.compile(affine, backend=counting_backend)
        x = np.arange(3.0)
        for _ in range(6):
            assert same_value(compiled(x), affine(x))
    # the compiled code on turns 1, 3, 5; from the second pair on every call if it was clearly faster
    assert 3 <= len(calls) <= 5, calls


def test_no_turns_when_disabled():
    with dynamo.config.patch(timed_turns=0):
        compiled = dynamo.compile(affine, backend=slow_backend)
        x = np.arange(4.0)
        for _ in range(4):
            assert same_value(compiled(x), affine(x))
    (entry,) = _C.cache_entries(affine.__code__)
    assert not entry.dropped and entry.probe == 0 and entry.hits >= 3
