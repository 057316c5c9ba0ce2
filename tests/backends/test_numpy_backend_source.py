"""Generated source snapshots (inline): what DYNAMO_LOGS=output_code shows for a few graphs."""
from __future__ import annotations

import logging
import operator
import textwrap

import numpy as np
from numpy_backend_helpers import build, compile_module

from dynamo.backends.numpy_cpu import Machine, NumpyBackend

MACHINE = Machine(cache_bytes=64 * 1024, cores=2, min_kernel_bytes=0, min_block_elements=1, thread_work=0)


def _source(body, inputs) -> str:
    return compile_module(build(len(inputs), body), inputs, MACHINE).source


def _expect(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_snapshot_elementwise_chain() -> None:
    def body(g, a, b):
        return g.call_function(np.sqrt, (g.call_function(operator.add, (g.call_function(operator.mul, (a, b)), 1.0)),))

    assert _source(body, [np.ones(1000), np.ones(1000)]) == _expect('''
        # numpy backend: 3 ops, 3 of them fused into 1 blocked kernel
        def kernel_0(lo, hi, scratch, a, b, sqrt_out):
            """mul, add, sqrt: rows lo:hi along axis 0 of sqrt (4 blocks of 250, 2 threads)."""
            mul = np.multiply(a[lo:hi], b[lo:hi], out=scratch[0])
            add = np.add(mul, 1.0, out=scratch[0])
            np.sqrt(add, out=sqrt_out[lo:hi])

        def forward(a, b):
            # kernel_0: 3 ops fused, evaluated block by block
            if c_ordered(a, b):
                sqrt = np.empty((1000,), dtype=np.float64)
                kernel_0_loop(a, b, sqrt)
            else:
                mul = a * b
                add = mul + 1.0;  del mul
                sqrt = np.sqrt(add);  del add
            return (sqrt,)
    ''')


def test_snapshot_softmax() -> None:
    def body(g, x):
        m = g.call_method("max", (x,), {"axis": 1, "keepdims": True})
        e = g.call_function(np.exp, (g.call_function(operator.sub, (x, m)),))
        return g.call_function(operator.truediv, (e, g.call_method("sum", (e,), {"axis": 1, "keepdims": True})))

    assert _source(body, [np.ones((256, 128), np.float32)]) == _expect('''
        # numpy backend: 5 ops, 5 of them fused into 1 blocked kernel
        def kernel_0(lo, hi, scratch, a, truediv_out):
            """max_1, sub, exp, sum_1, truediv: rows lo:hi along axis 0 of truediv (13 blocks of 21, 2 threads)."""
            max_1 = a[lo:hi].max(axis=1, keepdims=True)
            sub = np.subtract(a[lo:hi], max_1, out=scratch[0])
            exp = np.exp(sub, out=scratch[0])
            sum_1 = exp.sum(axis=1, keepdims=True)
            np.divide(exp, sum_1, out=truediv_out[lo:hi])

        def forward(a):
            # kernel_0: 5 ops fused, evaluated block by block
            if c_ordered(a):
                truediv = np.empty((256, 128), dtype=np.float32)
                kernel_0_loop(a, truediv)
            else:
                max_1 = a.max(axis=1, keepdims=True)
                sub = a - max_1;  del max_1
                exp = np.exp(sub, out=sub);  del sub
                sum_1 = exp.sum(axis=1, keepdims=True)
                truediv = np.divide(exp, sum_1, out=exp);  del exp, sum_1
            return (truediv,)
    ''')


def test_snapshot_stencil_writes_into_the_setitem_target() -> None:
    def body(g, a):
        v = g.call_method("copy", (a,))
        up = g.call_function(operator.getitem, (a, (slice(None, -2), slice(1, -1))))
        down = g.call_function(operator.getitem, (a, (slice(2, None), slice(1, -1))))
        value = g.call_function(operator.mul, (0.25, g.call_function(operator.add, (up, down))))
        g.call_function(operator.setitem, (v, (slice(1, -1), slice(1, -1)), value))
        return v

    assert _source(body, [np.ones((100, 100))]) == _expect('''
        # numpy backend: 6 ops, 2 of them fused into 1 blocked kernel
        def kernel_0(lo, hi, scratch, getitem, getitem_1, setitem_view):
            """add, mul: rows lo:hi along axis 0 of mul (10 blocks of 10, 2 threads)."""
            add = np.add(getitem[lo:hi], getitem_1[lo:hi], out=scratch[0])
            np.multiply(0.25, add, out=setitem_view[lo:hi])

        def forward(a):
            # a.copy(), but [1:-1, 1:-1] is computed straight into it below
            copy = np.empty((100, 100), dtype=np.float64) if type(a) is np.ndarray else a.copy()
            copy[0:1] = a[0:1]
            copy[99:100] = a[99:100]
            copy[1:99, 0:1] = a[1:99, 0:1]
            copy[1:99, 99:100] = a[1:99, 99:100]
            getitem = a[:-2, 1:-1]
            getitem_1 = a[2:, 1:-1]
            # kernel_0: 2 ops fused, evaluated block by block
            setitem_view = copy[1:-1, 1:-1]
            if c_ordered(getitem, getitem_1) and not errors_raise():
                kernel_0_loop(getitem, getitem_1, setitem_view)
            else:
                add = getitem + getitem_1
                mul = 0.25 * add;  del add
                copy[1:-1, 1:-1] = mul;  del mul
            del getitem, getitem_1, setitem_view
            return (copy,)
    ''')


def test_snapshot_gemm_bias_relu_reuses_the_matmul_buffer() -> None:
    def body(g, a, b, bias):
        return g.call_function(np.maximum, (g.call_function(operator.add, (g.call_function(operator.matmul, (a, b)), bias)), 0.0))

    assert _source(body, [np.ones((64, 64)), np.ones((64, 64)), np.ones(64)]) == _expect('''
        # numpy backend: 3 ops, 2 of them fused into 1 blocked kernel
        def kernel_0(lo, hi, scratch, matmul, c, maximum_out):
            """add, maximum: rows lo:hi along axis 0 of maximum (4 blocks of 16, 2 threads)."""
            add = np.add(matmul[lo:hi], c, out=scratch[0])
            np.maximum(add, 0.0, out=maximum_out[lo:hi])

        def forward(a, b, c):
            matmul = a @ b
            # kernel_0: 2 ops fused, evaluated block by block
            if c_ordered(matmul, c):
                maximum = matmul if matmul.flags.c_contiguous else np.empty((64, 64), dtype=np.float64)  # reuses matmul
                kernel_0_loop(matmul, c, maximum)
            else:
                add = matmul + c
                maximum = np.maximum(add, 0.0);  del add
            del matmul
            return (maximum,)
    ''')


def test_stages_are_logged_by_name(caplog) -> None:
    gm = build(1, lambda g, a: g.call_function(np.exp, (g.call_function(operator.neg, (a,)),)))
    with caplog.at_level(logging.DEBUG, logger="dynamo.output_code"):
        compiled = NumpyBackend(MACHINE, strict=True)(gm, [np.ones(300)])
    text = caplog.text
    assert "[plan]" in text and "[source]" in text and "[callable]" in text
    assert compiled.source in text and "kernel_0: extent 300" in text


def test_tracebacks_show_generated_lines() -> None:
    gm = build(2, lambda g, a, b: g.call_function(operator.matmul, (a, b)))
    compiled = compile_module(gm, [np.ones((3, 4)), np.ones((4, 5))], MACHINE)
    try:
        compiled(np.ones((3, 4)), np.ones((3, 5)))
    except ValueError as error:
        import traceback

        assert "matmul = a @ b" in "".join(traceback.format_exception(error))
    else:
        raise AssertionError("expected a shape error")



def test_nested_loops_call_the_inner_loop_statement_directly() -> None:
    import dynamo
    from dynamo.backends.numpy_cpu import numpy_backend

    def grid(a, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = a[i, j] * 2.0 + i - j
        return out

    made = []

    def recording(gm, inputs):
        made.append(numpy_backend(gm, inputs))
        return made[-1]

    compiled = dynamo.compile(grid, backend=recording)
    for rows, cols in ((3, 70), (5, 80)):  # loops longer than the unrolling limit stay loops
        a = np.arange(rows * cols * 1.0).reshape(rows, cols)
        assert compiled(a, np.zeros((rows, cols))).tobytes() == grid(a, np.zeros((rows, cols))).tobytes()
    # the whole loop statements, without the loop objects' own call in between
    assert ".run_loop(0, " in made[-1].source
    outer_loop = next(v for v in vars(made[-1].__globals__["self"]).values() if hasattr(v, "run_loop"))
    assert ".run_loop(0, " in outer_loop.run_loop.source
