"""Graphs with symbolic sizes through the numpy backend: one compiled artifact, many sizes, blocked
when the sizes make it pay and straight otherwise, always NumPy's exact results."""
from __future__ import annotations

import logging
import operator
import re
import textwrap
import warnings

import numpy as np
import pytest
import sympy
from dynamo.backends.numpy_cpu import Machine, NumpyBackend
from dynamo.fx_ir import TensorMeta
from numpy_backend_helpers import build, same

import dynamo

# Blocking pays from 1600 bytes on (200 float64s); a second thread from 3000 element-ops.
MACHINE = Machine(cache_bytes=4096, cores=2, min_kernel_bytes=1600, min_block_elements=1, thread_work=3000)
# Every size runs blocked, empty and one-row kernels included.
ALWAYS = Machine(cache_bytes=256, cores=2, min_kernel_bytes=0, min_block_elements=1, thread_work=0)
SIZES = [2, 3, 17, 199, 200, 201, 1000, 4099]
s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)


class Recorder:
    """A backend that keeps what it compiled, so a test can count compiles and read the plan."""

    def __init__(self, machine: Machine | None = None) -> None:
        machine = machine or MACHINE
        self.backend = NumpyBackend(machine, strict=True)
        self.compiled: list = []

    def __call__(self, gm, example_inputs):
        function = self.backend(gm, example_inputs)
        self.compiled.append(function)
        return function


def _run_both(fn, compiled, make_args):
    plain_args, compiled_args = make_args(), make_args()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = fn(*plain_args)
        result = compiled(*compiled_args)
    assert same(result, expected)
    assert same(compiled_args, plain_args), "inputs were changed differently"


def _dynamic_kernels(recorder: Recorder) -> int:
    return sum(1 for f in recorder.compiled for k in f.plan.kernels if k.dynamic)


def chain(a, b):
    return np.exp(a) * b + np.sqrt(np.abs(a)) - 1.0


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def stencil(u):
    v = u.copy()
    v[1:-1] = (u[2:] + u[:-2]) * 0.5 + u[1:-1] * 0.25
    return v


def jacobi(u):
    v = u.copy()
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return v


def mutates(x, y):
    x += y * 2.0
    return np.tanh(x) * y


def differences(a):
    return (a[1:] - a[:-1]) * 3.0 + a[1:] ** 2


@pytest.mark.parametrize("fn, make", [
    (chain, lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n))),
    (softmax, lambda n, rng: (rng.standard_normal((n, 7 + n % 5)).astype(np.float32),)),
    (stencil, lambda n, rng: (rng.standard_normal(n),)),
    (jacobi, lambda n, rng: (rng.standard_normal((n, 3 + n // 7)),)),
    (mutates, lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n))),
    (differences, lambda n, rng: (rng.standard_normal(n),)),
], ids=["chain", "softmax", "stencil", "jacobi", "mutates", "differences"])
@pytest.mark.parametrize("machine", [MACHINE, ALWAYS], ids=["switch", "always"])
def test_one_artifact_serves_every_size(fn, make, machine) -> None:
    recorder = Recorder(machine)
    compiled = dynamo.compile(fn, backend=recorder, dynamic=True)
    rng = np.random.default_rng(7)
    for n in SIZES:
        seed = int(rng.integers(1 << 30))
        _run_both(fn, compiled, lambda n=n, seed=seed: make(n, np.random.default_rng(seed)))
    assert len(recorder.compiled) == 1, "a new size compiled again"
    assert _dynamic_kernels(recorder) >= 1, recorder.compiled[0].source
    assert not re.search(r"^ +\w+ = \w+\.copy\(\)$", recorder.compiled[0].source, re.M), "a copy made whole"


def writes_into(x, y):
    x[1:] = np.exp(y[:-1]) * 2.0 - x[:-1]
    return x


def test_kernel_writing_into_a_dynamic_input_that_may_overlap_its_operands() -> None:
    recorder = Recorder(ALWAYS)
    compiled = dynamo.compile(writes_into, backend=recorder, dynamic=True)
    for n in (2, 3, 40, 333):
        rng = np.random.default_rng(n)
        x, y = rng.standard_normal(n), rng.standard_normal(n)
        _run_both(writes_into, compiled, lambda x=x, y=y: (x.copy(), y))

        def aliased(x=x):
            base = x.copy()
            return (base, base)
        _run_both(writes_into, compiled, aliased)

        def view(x=x):
            base = x.copy()
            return (base[::-1], base)
        _run_both(writes_into, compiled, view)
    # aliasing between the arguments is guarded on: each pattern compiles once
    assert any(k.dynamic and k.target is not None for f in recorder.compiled for k in f.plan.kernels)


def test_blocked_and_straight_paths_are_both_taken() -> None:
    recorder = Recorder()
    compiled = dynamo.compile(chain, backend=recorder, dynamic=True)
    a, b = np.ones(10), np.ones(10)
    compiled(a, b)
    loop = next(v for k, v in recorder.compiled[0].__globals__.items() if k.endswith("_loop"))
    assert loop._loops == {}, "a small size ran blocked"
    compiled(np.ones(1000), np.ones(1000))
    (blocked,) = loop._loops.values()
    assert blocked.blocks > 1 and blocked.threads == 2
    compiled(np.ones(300), np.ones(300))
    assert len(loop._loops) == 2


def test_views_and_other_layouts_of_dynamic_inputs() -> None:
    recorder = Recorder()
    compiled = dynamo.compile(chain, backend=recorder, dynamic=True)
    rng = np.random.default_rng(3)
    for n in (400, 1001, 150):
        base = rng.standard_normal((2 * n, 2))
        flat = rng.standard_normal(3 * n)
        pairs = [(base[:n, 0], base[n:, 1]), (base[::-1, 0][:n], flat[:n]), (flat[5:5 + n], base[::2, 1]),
                 (flat[n:2 * n], flat[2 * n:])]
        for a, b in pairs:
            _run_both(chain, compiled, lambda a=a, b=b: (a, b))
    assert len(recorder.compiled) == 1


def test_broadcast_against_a_static_row() -> None:
    def scale(x, w):
        return np.maximum(x * w + 1.0, 0.0)

    recorder = Recorder()
    compiled = dynamo.compile(scale, backend=recorder, dynamic=True)
    rng = np.random.default_rng(5)
    w = rng.standard_normal(3)
    for n in (50, 300, 999):
        x = rng.standard_normal((n, 3))
        _run_both(scale, compiled, lambda x=x: (x.copy(), w))
    assert len(recorder.compiled) <= 2


def _expect(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _symbolic_graph():
    def body(g, a, b):
        m = g.call_function(operator.mul, (a, b))
        return g.call_function(np.sqrt, (g.call_function(operator.add, (m, 1.0)),))

    gm = build(2, body)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            node.meta["val"] = TensorMeta((s0, 3), np.float64) if node.name == "a" else TensorMeta((3,), np.float64)
    return gm


def test_snapshot_dynamic_graph() -> None:
    compiled = NumpyBackend(MACHINE, strict=True)(_symbolic_graph(), [np.ones((100, 3)), np.ones(3)])
    assert compiled.source == _expect('''
        # numpy backend: 3 ops, 3 of them fused into 1 blocked kernel
        def kernel_0(lo, hi, scratch, a, b, sqrt_out):
            """mul, add, sqrt: rows lo:hi along axis 0 of sqrt (blocks and threads chosen per call from the sizes)."""
            mul = np.multiply(a[lo:hi], b, out=scratch[0])
            add = np.add(mul, 1.0, out=scratch[0])
            np.sqrt(add, out=sqrt_out[lo:hi])

        def kernel_0_layout(s0):
            """kernel_0 at these sizes: extent, bytes in flight per row, elements per row, work, scratch shapes."""
            return s0, 72, 3, 9 * s0, ((s0, 3),)

        def forward(a, b):
            s0 = a.shape[0]
            # kernel_0: 3 ops fused, evaluated block by block
            if 24 * s0 >= 1600 and c_ordered(a, b):
                sqrt = np.empty((s0, 3), dtype=np.float64)
                kernel_0_loop((s0,), a, b, sqrt)
            else:
                mul = a * b
                add = mul + 1.0;  del mul
                sqrt = np.sqrt(add);  del add
            return (sqrt,)
    ''')
    for n in (2, 50, 67, 500):
        a, b = np.random.default_rng(n).standard_normal((n, 3)), np.linspace(-1, 1, 3)
        assert same(compiled(a, b), (np.sqrt(a * b + 1.0),))


def test_dynamic_source_is_logged(caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="dynamo.output_code"):
        compiled = NumpyBackend(MACHINE, strict=True)(_symbolic_graph(), [np.ones((100, 3)), np.ones(3)])
    assert compiled.source in caplog.text
    assert "kernel_0: extent s0, 72 bytes/row in flight" in caplog.text
    assert "blocks and threads chosen per call from the sizes" in caplog.text


def test_sizes_the_inputs_do_not_give_stay_straight_code() -> None:
    def body(g, a, b):
        return g.call_function(np.exp, (g.call_function(operator.mul, (a, 2.0)),)), g.call_function(np.sqrt, (b,))

    gm = build(2, body)
    for node in gm.graph.nodes:
        if node.op == "placeholder":  # b's size is an expression with no input dimension of its own
            node.meta["val"] = TensorMeta((s0,) if node.name == "a" else (2 * s1,), np.float64)
    compiled = NumpyBackend(ALWAYS, strict=True)(gm, [np.ones(100), np.ones(50)])
    (kernel,) = compiled.plan.kernels
    assert kernel.dynamic and {m.name for m in kernel.members} == {"mul", "exp"}
    for n in (3, 64, 301):
        a, b = np.linspace(-1, 1, n), np.linspace(0, 4, 2 * n)
        assert same(compiled(a, b), (np.exp(a * 2.0), np.sqrt(b)))


def scaled_by_a_size(a):
    n = a.shape[0]
    return np.exp(a[1:] - a[:-1]) * (n // 2) - n


def test_python_ints_computed_from_sizes_join_kernels() -> None:
    recorder = Recorder(ALWAYS)
    compiled = dynamo.compile(scaled_by_a_size, backend=recorder, dynamic=True)
    for n in (2, 3, 10, 257):
        a = np.random.default_rng(n).standard_normal(n)
        _run_both(scaled_by_a_size, compiled, lambda a=a: (a,))
    assert len(recorder.compiled) == 1
    (kernel,) = recorder.compiled[0].plan.kernels
    assert len(kernel.members) == 4, recorder.compiled[0].source


def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def test_a_short_symbolic_axis_is_split_as_its_example_length() -> None:
    recorder = Recorder(ALWAYS)
    compiled = dynamo.compile(kmeans_step, backend=recorder, dynamic=True)
    for n, k, d in [(50, 3, 2), (400, 5, 2), (300, 4, 3), (2, 2, 2), (90, 2, 5)]:
        rng = np.random.default_rng(n + d)
        X, means = rng.standard_normal((n, d)), rng.standard_normal((k, d))
        _run_both(kmeans_step, compiled, lambda X=X, means=means: (X, means))
    assert len(recorder.compiled) == 1
    plan = recorder.compiled[0].plan
    (kernel,) = plan.kernels
    split = plan.buffers.split[kernel.name]
    assert split.components and set(split.assumed.values()) == {2}
    assert " == 2 and " in recorder.compiled[0].source


def test_dynamo_logs_output_code_shows_the_shape_generic_source() -> None:
    import subprocess
    import sys

    program = textwrap.dedent("""
        import numpy as np, dynamo
        f = dynamo.compile(lambda a, b: np.exp(a) * b + 1.0, dynamic=True)
        for n in (10, 1000000, 77):
            assert np.array_equal(f(np.ones(n), np.ones(n)), np.exp(np.ones(n)) + 1.0)
    """)
    env = {**__import__("os").environ, "DYNAMO_LOGS": "output_code"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    log = done.stderr
    assert log.count("[source]") == 1, "one artifact for every size"
    for text in ("s0 = L_a.shape[0]", "def kernel_0_layout(s0):", "kernel_0_loop((s0,), L_a, L_b, add)",
                 "blocks and threads chosen per call from the sizes", "extent s0"):
        assert text in log, log


def test_static_kernel_reading_rows_of_a_symbolic_size() -> None:
    # the product over rows of x[[0, 1]] is (2,): static, but each of its 2 rows streams s1 elements,
    # so the blocking depends on s1 (it failed to compile: 'Cannot convert symbols to int'; fuzzer)
    recorder = Recorder(ALWAYS)

    def f(x):
        return np.prod(x[[0, 1]], axis=1) + 1

    compiled = dynamo.compile(f, backend=recorder)
    for shape in [(5, 3), (3, 4), (4, 200)]:
        x = np.arange(np.prod(shape), dtype=np.int16).reshape(shape) % 5 + 1
        assert same(compiled(x), f(x))
    assert len(recorder.compiled) == 2
