"""Tests of fx_ir/codegen.py and fx_ir/printing.py: generated source, constants, globals, text and table dumps.

Snapshots are exact strings; behaviour is checked against the Interpreter and plain NumPy.
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
import pytest

from dynamo.fx_ir import Graph, GraphModule, Interpreter, map_aggregate


def code_of(g: Graph, **options: Any) -> str:
    return g.python_code(**options).src


def run_code(g: Graph, *args: Any) -> Any:
    code = g.python_code()
    namespace = dict(code.globals)
    exec(compile(code.src, "<test>", "exec"), namespace)
    return namespace["forward"](None, *args)


def one_call(target: Any, *args: Any, **kwargs: Any) -> tuple[Graph, str]:
    """A graph `x, y -> target(*args)` where the strings "x"/"y" in args stand for the inputs."""
    g = Graph()
    inputs = {"x": g.placeholder("x"), "y": g.placeholder("y")}
    resolve = lambda v: inputs.get(v, v) if isinstance(v, str) else v  # noqa: E731
    node = g.call_function(target, map_aggregate(args, resolve), map_aggregate(kwargs, resolve))
    g.output(node)
    body = code_of(g, free_dead_values=False).splitlines()[1].strip()
    return g, body


def test_kmeans_snapshot(programs) -> None:  # type: ignore[no-untyped-def]
    assert code_of(programs["kmeans"].build()) == (
        "def forward(self, X, means):\n"
        "    getitem = means[:, None]\n"
        "    sub = X - getitem;  del getitem\n"
        "    norm = np.linalg.norm(sub, axis=2);  del sub\n"
        "    argmin = np.argmin(norm, axis=0);  del norm\n"
        "    return argmin\n"
    )


def test_stencil_snapshot_without_frees(programs) -> None:  # type: ignore[no-untyped-def]
    assert code_of(programs["stencil"].build(), free_dead_values=False) == (
        "def forward(self, A):\n"
        "    getitem = A[1:-1, 1:-1]\n"
        "    getitem_1 = A[1:-1, :-2]\n"
        "    getitem_2 = A[1:-1, 2:]\n"
        "    getitem_3 = A[2:, 1:-1]\n"
        "    getitem_4 = A[:-2, 1:-1]\n"
        "    add = getitem + getitem_1\n"
        "    add_1 = add + getitem_2\n"
        "    add_2 = add_1 + getitem_3\n"
        "    add_3 = add_2 + getitem_4\n"
        "    mul = 0.2 * add_3\n"
        "    copy = A.copy()\n"
        "    copy[1:-1, 1:-1] = mul\n"
        "    return copy\n"
    )


def test_softmax_snapshot_shows_methods_and_kwargs(programs) -> None:  # type: ignore[no-untyped-def]
    assert code_of(programs["softmax"].build()) == (
        "def forward(self, x):\n"
        "    max_1 = x.max(axis=-1, keepdims=True)\n"
        "    sub = x - max_1;  del max_1\n"
        "    exp = np.exp(sub);  del sub\n"
        "    sum_1 = exp.sum(axis=-1, keepdims=True)\n"
        "    truediv = exp / sum_1;  del exp, sum_1\n"
        "    return truediv\n"
    )


def test_generated_code_agrees_with_interpreter_and_numpy(program, rng, same, fresh_inputs) -> None:  # type: ignore[no-untyped-def]
    gm = GraphModule({}, program.build())
    for _ in range(3):
        inputs = program.inputs(rng)
        expected_inputs = fresh_inputs(inputs)
        expected = program.reference(*expected_inputs)
        compiled_inputs, interpreted_inputs = fresh_inputs(inputs), fresh_inputs(inputs)
        same(gm(*compiled_inputs), expected)
        same(Interpreter(gm).run(*interpreted_inputs), expected)
        for got_a, got_b, want in zip(compiled_inputs, interpreted_inputs, expected_inputs):
            same(got_a, want)  # inputs mutated exactly as plain NumPy mutates them
            same(got_b, want)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (operator.add, "add = x + y"), (operator.sub, "sub = x - y"), (operator.mul, "mul = x * y"),
        (operator.truediv, "truediv = x / y"), (operator.floordiv, "floordiv = x // y"),
        (operator.mod, "mod = x % y"), (operator.pow, "pow_1 = x ** y"), (operator.matmul, "matmul = x @ y"),
        (operator.and_, "and_ = x & y"), (operator.or_, "or_ = x | y"), (operator.xor, "xor = x ^ y"),
        (operator.lshift, "lshift = x << y"), (operator.rshift, "rshift = x >> y"),
        (operator.lt, "lt = x < y"), (operator.le, "le = x <= y"), (operator.eq, "eq = x == y"),
        (operator.ne, "ne = x != y"), (operator.gt, "gt = x > y"), (operator.ge, "ge = x >= y"),
        (operator.is_, "is_ = x is y"), (operator.is_not, "is_not = x is not y"),
        (operator.contains, "contains = y in x"), (operator.getitem, "getitem = x[y]"),
    ],
)
def test_binary_operators_render_as_python(target: Any, expected: str) -> None:
    assert one_call(target, "x", "y")[1] == expected


@pytest.mark.parametrize(
    ("target", "expected"),
    [(operator.neg, "neg = -x"), (operator.pos, "pos = +x"), (operator.invert, "invert = ~x"),
     (operator.not_, "not_ = not x")],
)
def test_unary_operators(target: Any, expected: str) -> None:
    assert one_call(target, "x")[1] == expected


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        ((slice(None), None), "x[:, None]"),
        ((slice(1, -1), slice(None, None, 2)), "x[1:-1, ::2]"),
        (Ellipsis, "x[...]"),
        ((Ellipsis, 0), "x[..., 0]"),
        ((), "x[()]"),
        ((1,), "x[1,]"),
        (slice("y", None), "x[y:]"),
        ((slice(0, "y"), [0, 2]), "x[0:y, [0, 2]]"),
        ("y", "x[y]"),
    ],
)
def test_subscripts(index: Any, expected: str) -> None:
    g, line = one_call(operator.getitem, "x", index)
    assert line == f"getitem = {expected}"


def test_slices_with_node_bounds_run(rng) -> None:  # type: ignore[no-untyped-def]
    g = Graph()
    a, lo = g.placeholder("a"), g.placeholder("lo")
    hi = g.call_function(operator.add, (lo, 3))
    g.output(g.call_function(operator.getitem, (a, (slice(lo, hi), slice(None, None, -1)))))
    arr = rng.random((8, 4))
    np.testing.assert_array_equal(GraphModule({}, g)(arr, 2), arr[2:5, ::-1])


def test_setitem_delitem_and_their_values() -> None:
    g = Graph()
    d, k = g.placeholder("d"), g.placeholder("k")
    stored = g.call_function(operator.setitem, (d, k, 1))
    g.call_function(operator.delitem, (d, "gone"))
    g.output(stored)
    assert code_of(g) == (
        "def forward(self, d, k):\n"
        "    d[k] = 1\n"
        "    setitem = None\n"
        "    del d['gone']\n"
        "    return setitem\n"
    )
    target = {"gone": 0}
    assert GraphModule({}, g)(target, "new") is None
    assert target == {"new": 1}


def test_inplace_operators_keep_graph_semantics() -> None:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    first = g.call_function(operator.iadd, (x, y))  # x is read later: alias first
    second = g.call_function(operator.imul, (first, 2))  # last use of `first`: plain `first *= 2`
    g.output((x, second))
    assert code_of(g) == (
        "def forward(self, x, y):\n"
        "    iadd = x\n"
        "    iadd += y\n"
        "    iadd *= 2\n"
        "    imul = iadd;  del iadd\n"
        "    return (x, imul)\n"
    )
    gm = GraphModule({}, g)
    assert gm(3, 4) == Interpreter(gm).run(3, 4) == (3, 14)  # ints: x itself is untouched
    arr = np.ones(2)
    out_x, out = gm(arr, 1.0)
    assert out_x is arr and out is arr  # arrays: updated in place, like operator.iadd
    np.testing.assert_array_equal(arr, [4.0, 4.0])


def test_getattr_renders_as_attribute_access() -> None:
    _, line = one_call(getattr, "x", "T")
    assert line == "getattr_1 = x.T"
    _, line = one_call(getattr, "x", "not valid")
    assert line == "getattr_1 = getattr(x, 'not valid')"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (float("inf"), "float('inf')"), (float("-inf"), "float('-inf')"), (float("nan"), "float('nan')"),
        (-0.0, "-0.0"), (1e-300, "1e-300"), (complex(1, -2), "(1-2j)"),
        (complex(float("inf"), 1), "complex(float('inf'), 1.0)"),
        (True, "True"), (None, "None"), ("s'q", '"s\'q"'), (b"\x00", "b'\\x00'"), (Ellipsis, "..."),
        ((1,), "(1,)"), ([1, (2, 3)], "[1, (2, 3)]"), ({"a": [None]}, "{'a': [None]}"),
        (slice(1, None), "slice(1, None, None)"),
        (np.float32, "np.float32"), (np.dtype("float32"), "np.dtype('float32')"),
        (np.dtype(">i4"), "np.dtype('>i4')"), (np.float32(0.1), "np.float32(0.1)"),
        (np.float16(0.1), "np.float16(0.1)"), (np.float64(0.1), "np.float64(0.1)"),
        (np.int8(-3), "np.int8(-3)"), (np.uint64(2**64 - 1), "np.uint64(18446744073709551615)"),
        (np.True_, "np.True_"), (np.complex64(1 + 2j), "np.complex64(complex(1.0, 2.0))"),
        (np.float32("nan"), "np.float32(float('nan'))"), (int, "int"), (len, "len"),
    ],
)
def test_constants_are_inlined_readably_and_exactly(value: Any, text: str) -> None:
    g = Graph()
    g.output(value)
    code = g.python_code()
    assert code.src.splitlines()[1] == f"    return {text}"
    result = run_code(g)
    assert type(result) is type(value)
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        assert math.isnan(result)
    else:
        assert result == value
        if isinstance(value, float):
            assert math.copysign(1, result) == math.copysign(1, value)


def test_nans_keep_their_sign_and_payload() -> None:
    payload = np.frombuffer(np.uint64(0x7FF8_0000_0000_0123).tobytes(), np.float64)[0]
    values = [-math.nan, math.nan, float(payload), complex(-math.nan, math.nan), np.float64(-math.nan),
              np.float32(-math.nan), payload, np.complex64(complex(1.0, -math.nan))]
    g = Graph()
    g.output(tuple(values))
    assert "-float('nan')" in code_of(g)
    for got, want in zip(run_code(g), values):
        assert type(got) is type(want)
        assert np.array(got).tobytes() == np.array(want).tobytes()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_numpy_float_scalars_round_trip_bit_for_bit(dtype: type, rng) -> None:  # type: ignore[no-untyped-def]
    with np.errstate(over="ignore"):  # float16 overflows to inf, which must round-trip too
        values = [dtype(v) for v in rng.standard_normal(50) * 10.0 ** rng.integers(-30, 30, 50)]
    values += [np.finfo(dtype).tiny, np.finfo(dtype).max, dtype(-0.0), np.nextafter(dtype(0), dtype(1))]
    g = Graph()
    g.output(tuple(values))
    for got, want in zip(run_code(g), values):
        assert type(got) is dtype and got.tobytes() == want.tobytes()


def test_negative_constant_bases_and_receivers_get_parentheses() -> None:
    assert one_call(operator.pow, -2, "x")[1] == "pow_1 = (-2) ** x"
    assert one_call(operator.pow, "x", -2)[1] == "pow_1 = x ** -2"
    assert one_call(operator.neg, -2.5)[1] == "neg = -(-2.5)"
    g = Graph()
    g.output(g.call_method("bit_length", (255,)))
    assert "call_method" not in code_of(g) and "(255).bit_length()" in code_of(g)
    assert run_code(g) == 8
    g2, _ = one_call(operator.pow, -2, "x")
    assert run_code(g2, 2, 0) == 4


def test_unusual_kwarg_names_are_passed_through_a_dict() -> None:
    def takes_any(**kw: Any) -> dict[str, Any]:
        return kw

    g = Graph()
    g.output(g.call_function(takes_any, (), {"a-b": 1, "ok": 2}))
    assert "takes_any = takes_any_1(ok=2, **{'a-b': 1})" in code_of(g)
    assert run_code(g) == {"ok": 2, "a-b": 1}


def test_other_objects_become_named_globals(rng) -> None:  # type: ignore[no-untyped-def]
    table = rng.random(3)

    def fused_kernel(a: Any, b: Any) -> Any:
        return a * b

    g = Graph()
    const = g.placeholder("const")  # the global for `table` must not clash with this input
    a = g.call_function(fused_kernel, (const, table))
    b = g.call_function(lambda v: v + 1, (a,))
    g.output(g.call_function(math.fsum, (b,)))
    code = g.python_code()
    assert code.src == (
        "def forward(self, const):\n"
        "    fused_kernel = fused_kernel_1(const, const_1)\n"
        "    lambda_1 = lambda_2(fused_kernel);  del fused_kernel\n"
        "    fsum = math.fsum(lambda_1);  del lambda_1\n"
        "    return fsum\n"
    )
    assert code.globals["const_1"] is table and code.globals["fused_kernel_1"] is fused_kernel
    assert code.globals["math"] is math and code.globals["np"] is np
    assert run_code(g, np.ones(3)) == math.fsum(table + 1)


def test_module_globals_avoid_node_names() -> None:
    g = Graph()
    math_input = g.placeholder("math")
    g.output(g.call_function(math.sqrt, (math_input,)))
    assert "sqrt = math_1.sqrt(math)" in code_of(g)
    assert run_code(g, 9.0) == 3.0


def test_numpy_paths_for_submodules_and_ufunc_methods() -> None:
    assert one_call(np.fft.fft, "x")[1] == "fft = np.fft.fft(x)"
    assert one_call(np.linalg.norm, "x", ord=2)[1] == "norm = np.linalg.norm(x, ord=2)"
    assert one_call(np.add.reduce, "x", axis=0)[1] == "add_reduce = np.add.reduce(x, axis=0)"
    assert one_call(np.abs, "x")[1] == "absolute = np.absolute(x)"
    assert one_call(np.random.rand, 2)[1] == "rand = np.random.rand(2)"
    assert one_call(operator.index, "x")[1] == "index = operator.index(x)"


def test_call_module_and_get_attr_use_the_root_name() -> None:
    g = Graph()
    x = g.placeholder("x")
    w = g.get_attr("params.weight")
    odd = g.get_attr("params.2d")
    g.output(g.call_module("blocks.kernel", (x, w, odd), {"scale": 2}))
    assert code_of(g, free_dead_values=False) == (
        "def forward(self, x):\n"
        "    params_weight = self.params.weight\n"
        "    params_2d = getattr(self.params, '2d')\n"
        "    blocks_kernel = self.blocks.kernel(x, params_weight, params_2d, scale=2)\n"
        "    return blocks_kernel\n"
    )
    assert "def forward(mod, x):" in g.python_code("mod").src


def test_placeholder_defaults_and_empty_bodies() -> None:
    g = Graph()
    g.placeholder("x")
    g.placeholder("axis", default=-1)
    g.placeholder("dtype", default=np.float32)
    g.output(None)
    assert code_of(g) == "def forward(self, x, axis=-1, dtype=np.float32):\n    return None\n"
    assert code_of(Graph()) == "def forward(self):\n    pass\n"


def test_source_comments_from_meta() -> None:
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.exp, (x,))
    b = g.call_function(np.log, (a,))
    a.meta["source"] = b.meta["source"] = "kmeans.py:3 y = np.log(np.exp(x))"
    g.output(b)
    assert code_of(g) == (
        "def forward(self, x):\n"
        "    # kmeans.py:3 y = np.log(np.exp(x))\n"
        "    exp = np.exp(x)\n"
        "    log = np.log(exp);  del exp\n"
        "    return log\n"
    )


def test_lineno_map_points_at_nodes(programs) -> None:  # type: ignore[no-untyped-def]
    code = programs["kmeans"].build().python_code()
    lines = code.src.splitlines()
    assert {n: lines[n - 1].split(" = ")[0].strip() for n in code.lineno_map} == {
        n: name for n, name in code.lineno_map.items() if name != "output"
    } | {6: "return argmin"}
    assert code.lineno_map[2] == "getitem" and code.lineno_map[6] == "output"


def test_dead_values_are_freed_only_when_dead() -> None:
    g = Graph()
    x = g.placeholder("x")
    unused = g.call_function(np.exp, (x,))
    kept = g.call_function(np.sin, (x,))
    twice = g.call_function(np.add, (kept, kept))
    g.output((twice, kept))
    assert code_of(g) == (
        "def forward(self, x):\n"
        "    exp = np.exp(x);  del exp\n"
        "    sin = np.sin(x)\n"
        "    add = np.add(sin, sin)\n"
        "    return (add, sin)\n"
    )
    assert unused.users == {}


# -- printing --------------------------------------------------------------------------------

def test_graph_str_snapshot(programs) -> None:  # type: ignore[no-untyped-def]
    assert str(programs["stencil"].build()).splitlines()[1:4] == [
        "    %A : placeholder[target=A]",
        "    %getitem : call_function[target=operator.getitem](args = (%A, (1:-1, 1:-1)))",
        "    %getitem_1 : call_function[target=operator.getitem](args = (%A, (1:-1, :-2)))",
    ]
    g = programs["black_scholes"].build()
    assert str(g).splitlines()[:7] == [
        "graph(S, K, T, r, v):",
        "    %S : placeholder[target=S]",
        "    %K : placeholder[target=K]",
        "    %T : placeholder[target=T]",
        "    %r : placeholder[target=r](default = 0.02)",
        "    %v : placeholder[target=v](default = 0.3)",
        "    %sqrt : call_function[target=np.sqrt](args = (%T,))",
    ]


def test_graph_str_shows_meta_and_constants(rng) -> None:  # type: ignore[no-untyped-def]
    from dynamo.fx_ir import ShapeProp

    g = Graph()
    x = g.placeholder("x")
    y = g.call_function(np.add, (x, rng.random((2, 3)).astype(np.float32)))
    s = g.call_method("sum", (y,))
    g.output((y, s, 3))
    ShapeProp(g).run(np.ones((2, 3), np.float32))
    assert str(g) == "\n".join([
        "graph(x):",
        "    %x : placeholder[target=x]  # array[float32](2, 3)",
        "    %add : call_function[target=np.add](args = (%x, array(float32, (2, 3))))  # array[float32](2, 3)",
        "    %sum_1 : call_method[target=sum](args = (%add,))  # scalar[float32]()",
        "    return (%add, %sum_1, 3)  # (array[float32](2, 3), scalar[float32](), int 3)",
    ])


def test_format_tabular_snapshot(programs, capsys) -> None:  # type: ignore[no-untyped-def]
    g = programs["softmax"].build()
    expected = "\n".join([
        "opcode         name     target            args          kwargs",
        "-------------  -------  ----------------  ------------  --------------------------",
        "placeholder    x        x                 ()            {}",
        "call_method    max_1    max               (x,)          {axis: -1, keepdims: True}",
        "call_function  sub      operator.sub      (x, max_1)    {}",
        "call_function  exp      np.exp            (sub,)        {}",
        "call_method    sum_1    sum               (exp,)        {axis: -1, keepdims: True}",
        "call_function  truediv  operator.truediv  (exp, sum_1)  {}",
        "output         output   output            (truediv,)    {}",
    ])
    assert g.format_tabular() == expected
    g.print_tabular()
    assert capsys.readouterr().out == expected + "\n"


def test_source_location_objects_become_comments() -> None:
    class Location:  # the frontend's own type; only its str() matters
        def __str__(self) -> str:
            return 'File "user.py", line 5, in step\n    return np.exp(x)'

    g = Graph()
    x = g.placeholder("x")
    node = g.call_function(np.exp, (x,))
    node.meta["source_location"] = Location()
    g.output(node)
    assert code_of(g).splitlines()[1:4] == [
        '    # File "user.py", line 5, in step',
        "    #     return np.exp(x)",
        "    exp = np.exp(x)",
    ]


def test_only_bound_names_are_freed() -> None:
    g = Graph()
    x = g.placeholder("x")
    buf = g.call_function(np.zeros, (3,))
    g.call_function(operator.iadd, (buf, x))  # last use of buf, and no users: never bound
    tmp = g.call_function(np.ones, (2,))
    g.call_function(operator.setitem, (tmp, 0, x))  # a statement: binds no name
    g.output(None)
    assert code_of(g) == (
        "def forward(self, x):\n"
        "    zeros = np.zeros(3)\n"
        "    zeros += x;  del zeros\n"
        "    ones = np.ones(2)\n"
        "    ones[0] = x;  del ones\n"
        "    return None\n"
    )
    assert run_code(g, 1.0) is None


def test_user_module_functions_are_bound_objects_not_module_lookups() -> None:
    import types

    module = types.ModuleType("user_kernels")
    exec("def scale(v):\n    return v * 2\n", module.__dict__)
    import sys

    sys.modules["user_kernels"] = module
    try:
        original = module.scale
        g = Graph()
        g.output(g.call_function(original, (g.placeholder("x"),)))
        gm = GraphModule({}, g)
        assert "scale = scale_1(x)" in gm.code
        module.scale = lambda v: v * 100  # rebinding later must not change the compiled graph
        assert gm(1) == 2
    finally:
        del sys.modules["user_kernels"]
