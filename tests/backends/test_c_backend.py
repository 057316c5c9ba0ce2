"""backend="c": fused C kernels compared bitwise with plain NumPy (results, dtypes, warnings), NumPy
steps for what does not lower, symbolic sizes, threads, and a clear error without a compiler."""
from __future__ import annotations

import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dynamo
from dynamo import config
from dynamo.backends import lookup_backend

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")


class Recorder:
    """backend "c", keeping what it returned for each graph."""

    def __init__(self):
        self.compiled = []

    def __call__(self, gm, inputs):
        self.compiled.append(lookup_backend("c")(gm, inputs))
        return self.compiled[-1]


def same(got, expected):
    """Bitwise equality of results (arrays, NumPy scalars, tuples), dtypes and types included."""
    assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e)
        return
    if isinstance(expected, (np.ndarray, np.generic)):
        g, e = np.asarray(got), np.asarray(expected)
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        assert g.tobytes() == e.tobytes(), f"{g} != {e}"
        return
    assert got == expected


def run_both(fn, *args):
    """(compiled result, plain result, compiled warnings, plain warnings): messages and categories."""
    recorder = Recorder()
    compiled = dynamo.compile(fn, backend=recorder)
    out = []
    for f in (compiled, fn):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = f(*copies)
        out.append((result, [(w.category, str(w.message)) for w in caught], copies))
    (got, got_warn, got_args), (expected, expected_warn, expected_args) = out
    same(got, expected)
    same(tuple(got_args), tuple(expected_args))  # arguments mutated alike
    assert got_warn == expected_warn
    return recorder


RNG = np.random.default_rng(0)


def test_elementwise_chain_is_one_kernel_and_bitwise_numpy():
    def chain(a, b, c):
        return (a * 2.5 + b) / (c - 0.5) - np.sqrt(np.abs(a)) * np.maximum(b, c)

    args = [RNG.standard_normal(1001) for _ in range(3)]
    recorder = run_both(chain, *args)
    (compiled,) = recorder.compiled
    assert compiled.kernel_count == 1 and compiled.fallback_nodes == []
    run_both(chain, *[a.astype(np.float32) for a in args])
    run_both(chain, *[a[::3] for a in args])  # strided inputs: the generic copy of the loops


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_integer_arithmetic_wraps_and_divides_as_numpy(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.max, 0, 1, 7, -7 if info.min < 0 else 9, 3, info.max // 2], dtype)
    b = np.array([-1 if info.min < 0 else 1, 2, 0, 0, -2 if info.min < 0 else 2, 3, 70, 1], dtype)

    def ops(x, y):
        return x + y, x - y, x * y, x // y, x % y, x & y, x | y, x ^ y, ~x, -x, np.abs(x), x > y, x << 3, x >> 2

    run_both(ops, a, b)


def test_mixed_sign_comparisons_and_casts():
    def mixed(i, u, f):
        return i < u, i >= u, i == u, f.astype(np.int64), f.astype(np.int32), i.astype(np.float32), f > 0.5

    i = np.array([-1, 0, 5, -(2 ** 62)], np.int64)
    u = np.array([2 ** 63 + 5, 0, 4, 1], np.uint64)
    f = np.array([np.nan, 1e300, -2.7, 3.9])
    run_both(mixed, i, u, f)  # out-of-range float->int: invalid value encountered in cast, NumPy's values


def test_nan_rules_of_maximum_minimum_and_reductions():
    x = np.array([[1.0, np.nan, 3.0], [-0.0, 0.0, -1.0], [np.inf, -np.nan, 2.0]])
    y = np.array([[np.nan, 2.0, -np.nan], [0.0, -0.0, -2.0], [1.0, 5.0, np.nan]])

    def nan_rules(a, b):
        return (np.maximum(a, b), np.minimum(a, b), a.max(axis=1), a.min(axis=0), a.argmax(axis=1),
                a.argmin(axis=0), np.isnan(a), np.isfinite(b), np.sign(a), np.where(a > b, a, b))

    run_both(nan_rules, x, y)


def test_integer_reductions_in_kernels_float_sums_left_to_numpy():
    """Row sums of an input call NumPy's add loop in the kernel (test_c_pairwise.py); the sum of a whole
    2-D array (NumPy adds it flat) stays a NumPy step."""
    def reductions(a, m):
        return m.sum(axis=1), m.prod(axis=0), (m > 3).any(axis=1), (m > -5).all(), a.sum(axis=1), a.mean()

    m = RNG.integers(-9, 9, (40, 30))
    a = RNG.standard_normal((40, 30))
    recorder = run_both(reductions, a, m)
    (compiled,) = recorder.compiled
    reasons = [(str(node), reason) for node, reason in compiled.fallback_nodes]
    assert reasons == [("mean", "a float sum over an axis that is not an input's last keeps NumPy's order as NumPy code")]
    assert compiled.kernel_count >= 1
    assert any("runs as NumPy code" in note for note in compiled.notes)


def test_floating_point_warnings_follow_errstate():
    def divide(a, b):
        return a / b + np.sqrt(a - 1.0)

    a, b = np.array([1.0, 0.0, 2.0]), np.array([0.0, 0.0, 1.0])
    run_both(divide, a, b)  # divide by zero and invalid value, in NumPy's order
    compiled = dynamo.compile(divide, backend="c")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(a, b)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide by zero encountered in divide"):
        compiled(a, b)
    run_both(lambda x: x * 1e308, np.array([10.0, 1.0]))  # overflow encountered in multiply
    run_both(lambda x: x // np.zeros(2, x.dtype), np.array([3, 4]))  # integer floor division by zero


def test_in_place_updates_and_setitem_write_the_arguments():
    def update(a, b):
        a += b * 2
        b[1:3] = a[:2] - 1
        return a.max()

    run_both(update, RNG.standard_normal(6), RNG.standard_normal(6))


def test_symbolic_sizes_one_binary_serves_every_size():
    def f(a, b):
        return (a - b.max()) * 3.0 + a.argmin()

    recorder = Recorder()
    compiled = dynamo.compile(f, backend=recorder, dynamic=True)
    for n in (5, 17, 100):
        a, b = RNG.standard_normal(n), RNG.standard_normal(n)
        same(compiled(a, b), f(a, b))
    assert len(recorder.compiled) == 1


def test_inputs_whose_sizes_the_trace_guarded_equal_fuse_into_one_kernel():
    """x * y guards s0 == s1: the graph names both sizes s0, so the chain is one C kernel (before, every
    op after the first ran as NumPy code: "cannot broadcast (s0,) to (s1,)"); sizes that differ later
    fail the guard and recompile, and an outer product keeps its two sizes apart."""
    def chain(x, y):
        return (x * y + 1.0) * x - y

    def outer(x, y):
        return x[:, None] * y[None, :] + 1.0

    for fn, shapes in ((chain, [(7, 7), (9, 9), (9, 1), (3, 3)]), (outer, [(4, 6), (5, 8), (5, 5)])):
        recorder = Recorder()
        compiled = dynamo.compile(fn, backend=recorder, dynamic=True)
        for n, m in shapes:
            x, y = RNG.standard_normal(n), RNG.standard_normal(m)
            same(compiled(x, y), fn(x, y))
        assert all(not c.fallback_nodes and c.kernel_count == 1 for c in recorder.compiled), \
            [c.fallback_nodes for c in recorder.compiled]


def test_threaded_and_single_threaded_kernels_agree():
    def f(a, b):
        return np.maximum(a * b - 1.0, 0.0), (a > b).sum(axis=1), a.argmax(axis=1)

    a, b = RNG.standard_normal((64, 50)), RNG.standard_normal((64, 50))
    results = []
    for threads in (1, 2):
        with config.patch(c_threads=threads, c_parallel_work=1):
            dynamo.reset()
            results.append(dynamo.compile(f, backend="c")(a, b))
    same(results[0], results[1])
    same(results[0], f(a, b))


def test_scalar_kernels_and_zero_size_arrays():
    run_both(lambda a: a[2] * 2.0 + 1.0, np.arange(5.0))
    run_both(lambda a: a * 2.0 + 1.0, np.zeros((0, 3)))


def test_call_native_rejects_bad_arguments():
    from dynamo import _C

    with pytest.raises(TypeError):
        _C.call_native(1)
    with pytest.raises(ValueError):
        _C.call_native(0, 0, np.zeros(2))
    with pytest.raises(ValueError, match="read-only"):  # a read-only array given as written
        x = np.zeros(2)
        x.flags.writeable = False
        _C.call_native(1, 1, x)


def test_no_compiler_is_a_clear_error_and_numpy_still_works(tmp_path):
    code = (
        "import numpy as np, dynamo\n"
        "f = lambda x: x * 2.0 + 1.0\n"
        "try:\n"
        "    dynamo.compile(f, backend='c')(np.ones(3))\n"
        "except dynamo.BackendCompilerFailed as e:\n"
        "    print('ERROR', e)\n"
        "print('NUMPY', dynamo.compile(f, backend='numpy')(np.ones(3)).tolist())\n"
    )
    env = {"PATH": str(tmp_path), "DYNAMO_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    for extra in ({}, {"CC": "/nonexistent/cc"}):
        done = subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert "ERROR" in done.stdout and "C compiler" in done.stdout, done.stdout
        assert "install" in done.stdout
        assert "NUMPY [3.0, 3.0, 3.0]" in done.stdout


# ---------------------------------------------------------------- the disk cache

PROGRAM = (
    "import numpy as np, dynamo\n"
    "from dynamo.backends import lookup_backend\n"
    "f = dynamo.compile(lambda x, y: (x * 3.0 - y) / (y + 2.0), backend='c')\n"
    "x, y = np.arange(10.0), np.linspace(0, 1, 10)\n"
    "assert f(x, y).tobytes() == ((x * 3.0 - y) / (y + 2.0)).tobytes()\n"
    "print('COMPILES', lookup_backend('c').compiles)\n"
)


@pytest.fixture
def counting_cc(tmp_path):
    """A compiler that logs each run to a file, then runs the real one."""
    real = shutil.which("cc") or shutil.which("gcc")
    log = tmp_path / "cc.log"
    script = tmp_path / "counting-cc"
    script.write_text(f"#!/bin/sh\necho run >> {log}\nexec {real} \"$@\"\n")
    script.chmod(0o755)
    return script, log


def run_program(cache, cc, **env):
    import os
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "DYNAMO_CACHE_DIR": str(cache), "CC": str(cc), **env})
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split("COMPILES")[1])


def calls(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_second_process_runs_no_compiler(tmp_path, counting_cc):
    cc, log = counting_cc
    cache = tmp_path / "cache"
    assert run_program(cache, cc) == 1
    first = calls(log)
    assert first >= 2  # the probe and the module
    assert run_program(cache, cc) == 0
    assert calls(log) == first
    # a changed flag is another entry
    assert run_program(cache, cc, DYNAMO_C_NATIVE="0") == 1


def test_truncated_or_foreign_entry_is_rebuilt_never_loaded(tmp_path, counting_cc):
    cc, _ = counting_cc
    cache = tmp_path / "cache"
    assert run_program(cache, cc) == 1
    (so,) = (cache / "c").glob("*/*.so")
    so.write_bytes(so.read_bytes()[:100])
    assert run_program(cache, cc) == 1
    record = so.with_suffix(".json")
    record.write_text(record.read_text().replace('"key": "', '"key": "x'))
    assert run_program(cache, cc) == 1
    assert run_program(cache, cc) == 0


def test_concurrent_writers(tmp_path, counting_cc):
    import os
    cc, _ = counting_cc
    cache = tmp_path / "cache"
    env = {**os.environ, "DYNAMO_CACHE_DIR": str(cache), "CC": str(cc)}
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert len(list((cache / "c").glob("*/*.so"))) == 1
    assert not list((cache / "c").glob("*/.*"))  # no temporary left behind
    assert run_program(cache, cc) == 0


def test_cache_command_line(tmp_path, counting_cc):
    import os
    cc, _ = counting_cc
    cache = tmp_path / "cache"
    run_program(cache, cc)
    env = {**os.environ, "DYNAMO_CACHE_DIR": str(cache)}
    info = subprocess.run([sys.executable, "-m", "dynamo", "cache", "info"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert info.returncode == 0 and "C modules: 1" in info.stdout, info.stdout + info.stderr
    cleared = subprocess.run([sys.executable, "-m", "dynamo", "cache", "clear"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert cleared.returncode == 0 and "removed 1" in cleared.stdout
    assert not (cache / "c").exists()


def test_dump_of_the_c_source(tmp_path):
    import os
    code = "import numpy as np, dynamo\ndynamo.compile(lambda x: x + 1.0, backend='c')(np.ones(4))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "DYNAMO_LOGS": "output_code", "DYNAMO_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "[c_src]" in done.stderr and "int kernel0(const dyn_arg *a)" in done.stderr


def test_loop_node_runs_its_body_compiled():
    import operator

    from dynamo.fx_ir import ForLoop, Graph, GraphModule, ShapeProp

    body = Graph()
    i, acc, table = body.placeholder("i"), body.placeholder("acc"), body.placeholder("table")
    row = body.call_function(operator.getitem, (table, i))
    body.output((body.call_function(operator.add, (acc, body.call_function(operator.mul, (row, 2.0)))),))
    g = Graph()
    start, rows = g.placeholder("start"), g.placeholder("rows")
    loop = g.call_module("loop_0", (0, 5, 1, start, rows))
    g.output((g.call_function(operator.getitem, (loop, 0)),))
    gm = GraphModule({"loop_0": ForLoop(GraphModule({}, body), num_carried=1)}, g)
    x0, table_ = np.zeros(4), np.arange(20.0).reshape(5, 4)
    ShapeProp(gm).propagate(x0, table_)
    compiled = lookup_backend("c")(gm, [x0, table_])
    same(compiled(x0, table_), gm.forward(x0, table_))
    (loop,) = [v for v in compiled.__globals__.values() if isinstance(v, ForLoop)]
    assert len(loop.run_body.programs) == 1  # the body compiled once (one layout), run five times
    assert loop.run_body.programs[next(iter(loop.run_body.programs))].kernel_count == 1


def test_ufunc_dtype_keyword_picks_the_loop():
    """np.add(f8, i1, dtype=f4) adds in float32 (both inputs cast first), not in float64 then cast: the
    op-registry corpus's test_ufunc_keywords found the last bit apart."""
    def add_as_float32(a, b):
        return np.add(a, b, dtype=np.float32) * 2, np.multiply(b, a, dtype=np.float32)

    run_both(add_as_float32, RNG.standard_normal(300) * 3, np.arange(-150, 150).astype(np.int8))


def test_record_fields_whose_strides_are_not_whole_elements_run_as_numpy():
    # NumPy's test_umath TestAdd::test_reduce_alignment with every graph on c: a['b'] of a record array
    # [('a', int32), ('b', float64)] has stride 12, and the kernels stepped by stride // itemsize = 1
    # element (they read the int fields' bytes as doubles: 2.1e-314 and NaN for 0.0)
    def f(b):
        return b.sum(), b * 2, b.copy()

    def records(n):
        a = np.zeros(n, dtype=[("a", np.int32), ("b", np.float64)])
        a["a"], a["b"][1:] = -1, 1.5
        return a

    compiled = dynamo.compile(f, backend="c")
    for b in (records(5)["b"], np.arange(5.0), records(7)["b"][::2]):
        for got, want in zip(compiled(b), f(b)):
            assert np.array_equal(got, want) and np.asarray(got).dtype == np.asarray(want).dtype
