"""backend="c": the arrays a runner allocates come from NumPy's allocation hook with a cache of freed
large blocks (backends/c_cpu/memory.py): results stay plain arrays that own their data, a dead
result's memory serves the next call, a live one's never, and nothing else allocates through it."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import dynamo
from c_helpers import needs_compiler
from dynamo.backends.c_cpu.memory import MIN_CACHED_BYTES, cached_memory

pytestmark = needs_compiler

N = 2 * MIN_CACHED_BYTES // 8   # float64 values: twice the smallest cached block


def handler_name(a: np.ndarray | None = None) -> str:
    try:
        from numpy._core import multiarray
    except ImportError:   # NumPy 1.x
        from numpy.core import multiarray  # type: ignore[no-redef]
    return multiarray.get_handler_name() if a is None else multiarray.get_handler_name(a)


def chain(a, b):
    return np.sqrt(np.abs(a * b - 1.5)) + a


@pytest.fixture
def inputs():
    rng = np.random.default_rng(3)
    return rng.standard_normal(N), rng.standard_normal(N)


@pytest.fixture
def memory():
    memory = cached_memory()
    if memory is None:
        pytest.skip("NumPy's memory-handler API not found")
    memory.clear()
    yield memory
    memory.clear()


def test_results_are_numpy_arrays_that_own_their_data(inputs, memory):
    compiled = dynamo.compile(chain, backend="c")
    result = compiled(*inputs)
    assert np.array_equal(result, chain(*inputs))
    assert type(result) is np.ndarray and result.base is None and result.flags.owndata
    assert result.flags.writeable and result.flags.c_contiguous
    assert handler_name(result) == "dynamo_c_cached"
    # NumPy's resize checks references and reallocates through the array's own handler
    before = result.copy()
    result.resize((2 * N,))
    assert np.array_equal(result[:N], before) and not result[N:].any()
    result.resize((3,))
    assert np.array_equal(result, before[:3])


def test_a_dead_result_s_memory_serves_the_next_call(inputs, memory):
    compiled = dynamo.compile(chain, backend="c")
    first = compiled(*inputs)
    address = first.ctypes.data
    del first
    hits = memory.hits()
    second = compiled(*inputs)
    assert second.ctypes.data == address and memory.hits() == hits + 1
    assert np.array_equal(second, chain(*inputs))


def test_a_live_result_is_never_written_again(inputs, memory):
    compiled = dynamo.compile(chain, backend="c")
    a, b = inputs
    kept = [compiled(a, b) for _ in range(3)]
    b2 = b + 1.0
    again = compiled(a, b2)
    assert len({r.ctypes.data for r in kept + [again]}) == 4
    for r in kept:
        assert np.array_equal(r, chain(a, b))
    assert np.array_equal(again, chain(a, b2))


def test_small_results_and_other_allocations_keep_numpy_s_allocator(memory):
    compiled = dynamo.compile(chain, backend="c")
    small = compiled(np.ones(10), np.ones(10))
    assert handler_name(small) == "default_allocator"
    compiled(np.ones(N), np.ones(N))
    assert handler_name(np.empty(N)) == "default_allocator"   # the hook is set only around the runner's own
    assert handler_name() == "default_allocator"


def test_the_cache_keeps_at_most_its_limit(memory):
    with dynamo.config.patch(c_memory_cache_bytes=3 * MIN_CACHED_BYTES):
        memory = cached_memory()
        arrays = [memory.empty((N // 2 + k,), np.dtype(np.float64)) for k in range(6)]
        del arrays
        assert 0 < memory.cached_bytes() <= 3 * MIN_CACHED_BYTES
    with dynamo.config.patch(c_memory_cache_bytes=0):
        assert cached_memory() is None
        compiled = dynamo.compile(chain, backend="c")
        assert handler_name(compiled(np.ones(N), np.ones(N))) == "default_allocator"


def test_hit_counter_is_what_the_library_counts(memory):
    hits = ctypes.c_uint64.in_dll(memory.library, "dyn_cache_hits").value
    assert memory.hits() == hits
