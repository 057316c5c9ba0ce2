"""Compiled functions in process pools (fork, spawn, forkserver) and in threads.

Each worker compiles on its first call there; a forked child keeps what its parent compiled.
"""
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import dynamo
import process_workloads as work
from dynamo import convert_frame

START_METHODS = [m for m in ("fork", "spawn", "forkserver") if m in multiprocessing.get_all_start_methods()]


def inputs(count=4, size=257):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(size) for _ in range(count)]


@pytest.mark.parametrize("method", START_METHODS)
def test_pool_map_of_a_compiled_function(method):
    arrays = inputs()
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.starmap(work.call_and_count, [(work.scaled_tanh, a) for a in arrays])
    for (result, graphs), a in zip(results, arrays):
        np.testing.assert_array_equal(result, work.scaled_tanh._dynamo_fn(a))
        assert graphs >= 1  # it compiled there, not ran as plain Python


@pytest.mark.parametrize("method", START_METHODS)
def test_process_pool_executor_map_of_a_closure(method):
    shift = 0.5
    compiled = dynamo.compile(lambda x: np.exp(-x * x) + shift)
    arrays = inputs()
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context(method)) as executor:
        results = list(executor.map(compiled, arrays))
    for result, a in zip(results, arrays):
        np.testing.assert_array_equal(result, np.exp(-a * a) + shift)


def _child_calls(conn, compiled, x):
    before = work.graphs_compiled(compiled)
    result = compiled(x)
    conn.send((result, before, work.graphs_compiled(compiled)))


@pytest.mark.skipif("fork" not in START_METHODS, reason="no fork on this platform")
def test_forked_child_uses_what_the_parent_compiled():
    x = inputs(1)[0]
    work.scaled_tanh(x)
    compiled_before = work.graphs_compiled(work.scaled_tanh)
    parent_end, child_end = multiprocessing.Pipe()
    child = multiprocessing.get_context("fork").Process(target=_child_calls, args=(child_end, work.scaled_tanh, x))
    child.start()
    result, before, after = parent_end.recv()
    child.join(30)
    assert child.exitcode == 0
    np.testing.assert_array_equal(result, work.scaled_tanh._dynamo_fn(x))
    assert before == after == compiled_before  # a cache hit in the child: no compile


def _compile_fresh(conn):
    def fresh(x):
        return np.sin(x) * 2.0

    conn.send(dynamo.compile(fresh)(np.arange(3.0)).tolist())


@pytest.mark.skipif("fork" not in START_METHODS, reason="no fork on this platform")
def test_fork_while_another_thread_compiles_does_not_deadlock():
    holding, release = threading.Event(), threading.Event()

    def hold_compile_lock():
        with convert_frame.compile_lock:  # what a thread in the middle of a compile holds
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold_compile_lock)
    holder.start()
    try:
        holding.wait(30)
        parent_end, child_end = multiprocessing.Pipe()
        child = multiprocessing.get_context("fork").Process(target=_compile_fresh, args=(child_end,))
        child.start()
        assert parent_end.poll(60), "the forked child hung on the compile lock its parent held"
        assert parent_end.recv() == (np.sin(np.arange(3.0)) * 2.0).tolist()
        child.join(30)
    finally:
        release.set()
        holder.join()


def test_threads_compiling_the_same_function_at_once():
    def kernel(x, y):
        return np.sqrt(x * x + y * y) - np.minimum(x, y)

    compiled = dynamo.compile(kernel)
    rng = np.random.default_rng(3)
    # one shape for all: the threads race for the same compile (sizes that differ would legitimately
    # add a dynamic-shape version, and a thread queued behind it may add another)
    pairs = [(rng.standard_normal(100), rng.standard_normal(100)) for _ in range(8)]
    barrier = threading.Barrier(len(pairs))
    results = [None] * len(pairs)

    def run(i):
        barrier.wait()
        results[i] = compiled(*pairs[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for result, (x, y) in zip(results, pairs):
        np.testing.assert_array_equal(result, kernel(x, y))
    entries = dynamo._C.cache_entries(kernel.__code__)
    assert 1 <= len(entries) <= 2  # threads queued on the compile lock look again: at most one duplicate
    for x, y in pairs:  # and the cache serves every caller afterwards
        np.testing.assert_array_equal(compiled(x, y), kernel(x, y))
