"""Blocked and threaded kernels equal unblocked execution bit for bit; layouts, errors and threads."""
from __future__ import annotations

import operator
import threading
import warnings

import numpy as np
import pytest
from numpy_backend_helpers import SERIAL, TINY, WHOLE, build, check_graph, compile_module, same, sample

import dynamo
from dynamo.backends.numpy_cpu import Machine, NumpyBackend, this_machine
from dynamo.backends.numpy_cpu.runtime import c_ordered

RNG = np.random.default_rng(11)


def _softmax_layernorm(g, x, gamma):
    m = g.call_method("max", (x,), {"axis": -1, "keepdims": True})
    e = g.call_function(np.exp, (g.call_function(operator.sub, (x, m)),))
    s = g.call_method("sum", (e,), {"axis": -1, "keepdims": True})
    p = g.call_function(operator.truediv, (e, s))
    mu = g.call_method("mean", (p,), {"axis": -1, "keepdims": True})
    var = g.call_method("var", (p,), {"axis": -1, "keepdims": True})
    return g.call_function(operator.mul, (g.call_function(operator.truediv, (
        g.call_function(operator.sub, (p, mu)), g.call_function(np.sqrt, (g.call_function(operator.add, (var, 1e-5)),)))), gamma))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("shape", [(1, 7), (13, 1), (97, 33), (3, 5, 64)])
def test_blocked_threaded_serial_and_whole_agree(dtype, shape) -> None:
    x, gamma = sample(shape, dtype, RNG), sample(shape[-1:], dtype, RNG)
    gm = build(2, _softmax_layernorm)
    results = []
    for machine in (TINY, SERIAL, WHOLE):
        compiled = check_graph(gm, [x, gamma], machine)
        results.append(compiled(x, gamma))
    assert same(results[0], results[1]) and same(results[1], results[2])


def test_block_size_and_threads_follow_the_machine() -> None:
    x = sample((512, 256), np.float64, RNG)
    gm = build(1, lambda g, a: g.call_function(np.exp, (g.call_function(operator.mul, (a, 2.0)),)))
    small = Machine(cache_bytes=64 * 1024, cores=4, min_kernel_bytes=0, min_block_elements=1, thread_work=0)
    plan = compile_module(gm, [x], small).plan
    blocking = plan.blocking[plan.kernels[0].name]
    assert blocking.block * blocking.row_bytes <= small.budget_bytes and blocking.threads == 4
    big = Machine(cache_bytes=64 * 1024, cores=4, min_kernel_bytes=1 << 30, min_block_elements=1, thread_work=0)
    assert not compile_module(gm, [x], big).plan.kernels  # small arrays: straight code


def test_default_machine_keeps_small_arrays_straight() -> None:
    x = sample((8,), np.float64, RNG)
    gm = build(1, lambda g, a: g.call_function(np.exp, (g.call_function(operator.mul, (a, 2.0)),)))
    compiled = compile_module(gm, [x], this_machine())
    assert not compiled.plan.kernels and "def kernel" not in compiled.source


@pytest.mark.parametrize("layout", ["transposed", "reversed", "strided", "broadcast"])
def test_other_layouts_take_the_straight_branch_exactly(layout) -> None:
    base = sample((40, 40), np.float64, RNG)
    x = {"transposed": base.T, "reversed": base[::-1], "strided": base[:, ::2][:, :20].copy()[:, :20],
         "broadcast": np.broadcast_to(base[0], (40, 40))}[layout]
    y = sample(x.shape, np.float64, RNG)
    gm = build(2, lambda g, a, b: g.call_method("sum", (g.call_function(np.exp, (g.call_function(operator.mul, (a, b)),)),),
                                                {"axis": 1}))
    gm2 = build(2, lambda g, a, b: g.call_function(np.exp, (g.call_function(operator.mul, (a, b)),)))
    compiled = compile_module(gm, [np.ascontiguousarray(x), y])  # compiled for C inputs, called with others
    assert same(compiled(x, y), gm.forward(x, y))
    compiled2 = compile_module(gm2, [np.ascontiguousarray(x), y])
    result, expected = compiled2(x, y)[0], gm2.forward(x, y)[0]
    assert same(result, expected) and result.strides == expected.strides


def test_c_ordered() -> None:
    a = np.zeros((4, 6))
    assert c_ordered(a, a[1:3, 2:5], a[:, None, :], a[::2], np.float64(1.0))
    assert not c_ordered(a.T) and not c_ordered(a[:, ::-1]) and not c_ordered(np.broadcast_to(a[0], (4, 6)))
    assert not c_ordered(np.ma.masked_array(a)) and not c_ordered(np.asmatrix(a))


def test_ndarray_subclasses_take_the_straight_branch() -> None:
    x = sample((50, 20), np.float64, RNG)
    gm = build(1, lambda g, a: g.call_function(np.exp, (g.call_function(operator.mul, (a, 2.0)),)))
    compiled = compile_module(gm, [x])
    masked = np.ma.masked_array(x, mask=x > 1.0)
    result, expected = compiled(masked)[0], gm.forward(masked)[0]
    assert type(result) is type(expected) and np.array_equal(result.mask, expected.mask)


def test_errstate_reaches_worker_threads() -> None:
    x = sample((400, 16), np.float64, RNG)
    x[350, 3] = 0.0
    gm = build(1, lambda g, a: g.call_function(np.log, (g.call_function(np.absolute, (a,)),)))
    compiled = compile_module(gm, [x])
    assert compiled.plan.blocking[compiled.plan.kernels[0].name].threads == 2
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            compiled(x)
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert same(compiled(x), gm.forward(x))


@pytest.mark.parametrize("machine", [TINY, SERIAL], ids=["threads", "serial"])
def test_each_op_warns_once_per_call_however_many_blocks_warn(machine) -> None:
    # zeros and negatives in every block: plain NumPy warns once per ufunc and kind, in op order
    x = np.tile(np.array([0.0, -1.0, 2.0, 0.0]), (50, 1))
    gm = build(1, lambda g, a: g.call_function(np.sqrt, (g.call_function(np.reciprocal, (g.call_function(np.log, (a,)),)),)))
    compiled = compile_module(gm, [x], machine)
    assert compiled.plan.blocking[compiled.plan.kernels[0].name].block < 50
    caught = []
    for run in (gm.forward, compiled):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            run(x)
        caught.append([(w.category, str(w.message)) for w in record])
    assert caught[1] == caught[0] == [(RuntimeWarning, "divide by zero encountered in log"),
                                      (RuntimeWarning, "invalid value encountered in log")]
    with warnings.catch_warnings(record=True) as record:  # the default filter: once per location
        warnings.simplefilter("default")
        compiled(x)
        compiled(x)
    assert len(record) == 2


@pytest.mark.parametrize("machine", [TINY, SERIAL], ids=["threads", "serial"])
def test_blocked_warnings_come_in_op_order_and_numpys_flag_order(machine) -> None:
    # the first op (log) warns only in the last blocks, the second (sqrt) in the first: NumPy warns
    # for log first; and log's own two flags come divide-then-invalid, whichever block raised which
    x = np.ones((60, 4))
    x[:3] = -1.0
    x[-1] = 0.0
    gm = build(1, lambda g, a: g.call_function(operator.add, (g.call_function(np.log, (g.call_function(np.negative, (a,)),)),
                                                              g.call_function(np.sqrt, (a,)))))
    compiled = compile_module(gm, [x], machine)
    assert compiled.plan.blocking[compiled.plan.kernels[0].name].blocks > 2
    caught = []
    for run in (gm.forward, compiled):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            run(x)
        caught.append([str(w.message) for w in record])
    assert caught[1] == caught[0] == ["divide by zero encountered in log", "invalid value encountered in log",
                                      "invalid value encountered in sqrt"]


def test_blocked_warnings_of_two_ops_on_one_line_keep_op_order() -> None:
    # `y / (1e300 <= y)` in float32: the comparison's cast overflows, then the division divides by
    # zero; compiled, both ops of the kernel carry the user's one line number (so that warnings point
    # there), and only the instruction running tells them apart
    def f(y):
        return y / (1e300 <= y)

    y = np.tile(np.array([1.0, 0.0, 2.0], np.float32), (30, 1))
    compiled = dynamo.compile(f, backend=NumpyBackend(TINY, strict=True))
    caught = []
    for run in (f, compiled):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            run(y)
        caught.append([str(w.message) for w in record])
    assert caught[1] == caught[0] and caught[0][0] == "overflow encountered in cast"


@pytest.mark.parametrize("op", [operator.gt, operator.le, operator.eq])
def test_number_compared_with_an_array_calls_the_reflected_ufunc(op) -> None:
    # `0.5 > x` runs x.__lt__(0.5) in Python: a kernel must call np.less(x, 0.5), whose warnings
    # name `less` (complex NaNs warn in comparisons); found by the fuzzer
    x = np.full((40, 3), complex(np.nan, 1.0))
    gm = build(1, lambda g, a: g.call_function(op, (0.5, a)))
    compiled = compile_module(gm, [x])
    assert compiled.plan.blocking[compiled.plan.kernels[0].name].blocks > 1
    caught, results = [], []
    for run in (gm.forward, compiled):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            results.append(run(x))
        caught.append([str(w.message) for w in record])
    assert same(results[1], results[0])
    assert caught[1] == caught[0]


def test_exceptions_in_kernels_propagate_and_the_loop_recovers() -> None:
    x = np.arange(600, dtype=np.int64).reshape(100, 6)
    gm = build(1, lambda g, a: g.call_function(np.floor_divide, (g.call_function(operator.mul, (a, 3)), a)))
    compiled = compile_module(gm, [x])
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            compiled(x)  # a zero divisor in the first block
    y = x + 1
    assert same(compiled(y), gm.forward(y))


def test_concurrent_calls_do_not_share_scratch() -> None:
    gm = build(2, _softmax_layernorm)
    inputs = [(sample((64, 48), np.float64, np.random.default_rng(i)), sample((48,), np.float64, RNG)) for i in range(4)]
    compiled = compile_module(gm, list(inputs[0]))
    expected = [gm.forward(*args) for args in inputs]
    errors: list[str] = []

    def worker(i: int) -> None:
        for _ in range(20):
            if not same(compiled(*inputs[i]), expected[i]):
                errors.append(f"thread {i}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("axis", [1, 2, (1, 2)])
def test_order_sensitive_sums_block_only_before_reduced_axes(axis) -> None:
    x = sample((6, 50, 9), np.float32, RNG)
    gm = build(1, lambda g, a: g.call_method("sum", (g.call_function(np.exp, (a,)),), {"axis": axis}))
    compiled = check_graph(gm, [x])
    kernel = compiled.plan.kernels[0]
    assert any(m.target == "sum" for m in kernel.members)
    gm0 = build(1, lambda g, a: g.call_method("sum", (g.call_function(np.exp, (a,)),), {"axis": 0}))
    compiled0 = check_graph(gm0, [x])  # axis 0 before any block axis: the sum stays outside
    assert all(m.target != "sum" for k in compiled0.plan.kernels for m in k.members)


@pytest.mark.slow
def test_large_reductions_exact_with_real_machine() -> None:
    x = sample((2048, 2048), np.float32, RNG)
    gm = build(2, _softmax_layernorm)
    check_graph(gm, [x, sample((2048,), np.float32, RNG)], this_machine())


@pytest.mark.parametrize("reduction", ["sum", "max", "min", "norm"])
@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_short_trailing_axis_split_into_components_is_exact(reduction, n, dtype) -> None:
    x = sample((300, n), dtype, RNG)
    x[::7, 0], x[::5, -1] = -0.0, -0.0
    x[3, 1] = np.nan
    m = sample((6, 1, n), dtype, RNG)
    m[0, 0, :] = 0.0

    def body(g, a, b):
        diff = g.call_function(operator.sub, (a, b))
        if reduction == "norm":
            r = g.call_function(np.linalg.norm, (diff,), {"axis": 2})
        else:
            r = g.call_method(reduction, (diff,), {"axis": -1, "keepdims": True})
        return g.call_function(np.argmin, (r,), {"axis": 0})
    compiled = check_graph(build(2, body), [x, m])
    split = compiled.plan.buffers.split[compiled.plan.kernels[0].name]
    assert split.components and split.reductions, compiled.plan.describe()


def test_split_components_read_unsplit_values_and_broadcasts() -> None:
    pos, w = sample((500, 3), np.float64, RNG), sample((3,), np.float64, RNG)

    def body(g, p, weights):
        centred = g.call_function(operator.sub, (p, g.call_method("mean", (p,), {"axis": 1, "keepdims": True})))
        scaled = g.call_function(operator.mul, (centred, weights))
        return g.call_method("sum", (g.call_function(np.square, (scaled,)),), {"axis": 1})
    compiled = check_graph(build(2, body), [pos, w])
    assert compiled.plan.buffers.split[compiled.plan.kernels[0].name].components


def test_a_busy_pool_never_delays_a_kernel() -> None:
    import time

    from dynamo.backends.numpy_cpu import runtime

    x = sample((300, 40), np.float64, RNG)
    gm = build(1, lambda g, a: g.call_function(np.sin, (g.call_function(operator.mul, (a, 3.0)),)))
    compiled = compile_module(gm, [x])
    assert compiled.plan.blocking[compiled.plan.kernels[0].name].threads == 2
    pool = runtime._thread_pool(1)
    blockers = [pool.submit(time.sleep, 1.0) for _ in range(pool._max_workers)]
    start = time.perf_counter()
    assert same(compiled(x), gm.forward(x))  # the main thread does every block itself
    assert time.perf_counter() - start < 0.5
    for blocker in blockers:
        blocker.result()


def test_kernels_that_need_each_other_are_not_kept_together() -> None:
    from dynamo.backends.numpy_cpu.scheduling import Kernel, _cyclic_kernels

    def body(g, p, q):
        a1 = g.call_function(np.exp, (p,))
        b1 = g.call_function(np.exp, (q,))
        b2 = g.call_function(operator.add, (q, g.call_function(np.sum, (a1,))))
        a2 = g.call_function(operator.add, (p, g.call_function(np.sum, (b1,))))
        return a2, b2
    gm = build(2, body)
    a1, b1, b2, a2 = [n for n in gm.graph.nodes if n.target in (np.exp, operator.add)]
    kernel_a = Kernel("a", [a1, a2], {a1: 0, a2: 0}, 10)
    kernel_b = Kernel("b", [b1, b2], {b1: 0, b2: 0}, 10)
    assert _cyclic_kernels(gm.graph, [kernel_a, kernel_b])
    assert not _cyclic_kernels(gm.graph, [kernel_a]) and not _cyclic_kernels(gm.graph, [kernel_b])
    check_graph(gm, [sample((10,), np.float64, RNG), sample((10,), np.float64, RNG)])


def test_threads_stay_off_while_every_core_is_taken(monkeypatch) -> None:
    import dataclasses
    import os

    from dynamo.backends.numpy_cpu import runtime

    machine = dataclasses.replace(TINY, busy_load=3.0)
    gm = build(2, lambda g, a, b: g.call_function(np.exp, (g.call_function(operator.mul, (a, b)),)))
    inputs = [sample((4000,), np.float64, RNG), sample((4000,), np.float64, RNG)]
    parallel = []
    original = runtime.BlockedLoop._run_parallel
    monkeypatch.setattr(runtime.BlockedLoop, "_run_parallel", lambda self, arrays: (parallel.append(1),
                                                                                   original(self, arrays)))
    for load, expected in ((9.5, 0), (0.2, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        monkeypatch.setattr(runtime, "_load", [-1.0, 0.0])  # read the (patched) load average again
        parallel.clear()
        check_graph(gm, inputs, machine)
        assert len(parallel) == expected, f"load {load}"
    assert this_machine().busy_load == this_machine().cores + 1.0
