"""Graphs run inline in the transformed code (dynamo/graph_inline.py): the numpy backend's straight
code spliced into the user's frame gives what plain NumPy gives, errors and warnings at the user's
lines, and anything that cannot be spliced is called as before."""
import logging
import traceback
import warnings

import numpy as np
import pytest

import dynamo
from dynamo import _C
from dynamo.backends.numpy_cpu import Machine, NumpyBackend

from support import same_value

rng = np.random.default_rng(8)
# the default backend as registered runs small graphs inline: a corpus that registers blocked kernels
# in its place (tests/backends/numpy_backend_tiny_plugin.py) skips what holds for inline code only
inline_by_default = pytest.mark.registered_backend


def graphs_of(compiled):
    return [graph for _, frame in compiled._dynamo_callback.compiled_frames for graph in frame.graphs]


def calls_a_graph(fn, compiled):
    """Whether some transformed code of fn calls a compiled graph: the backend's callable as a constant,
    wrapped to turn the hook off (a _C.CompiledFunction), or as it is where the code runs unhooked."""
    graph_callables = {id(c) for g in graphs_of(compiled) for c in (g.compiled_fn, getattr(g.compiled_fn, "_dynamo_fn", None))}
    return any(id(const) in graph_callables for entry in _C.cache_entries(fn.__code__)
               for const in entry.code.co_consts)


def small(x, y):
    return x * y + 1.0 - np.sqrt(x)


@inline_by_default
def test_a_small_graph_runs_inline_and_gives_numpys_result():
    x, y = rng.random(8), rng.random(8)
    compiled = dynamo.compile(small, backend="numpy")
    for _ in range(3):
        assert same_value(compiled(x, y), small(x, y))
    assert [g.inlined for g in graphs_of(compiled)] == [True]
    assert not calls_a_graph(small, compiled)


@inline_by_default
def test_outputs_keep_their_identity_and_inputs_come_back_as_they_are():
    def f(x, n):
        a = x * n
        b = np.exp(a)
        return a, b, x, a, n

    x = rng.random(5)
    compiled = dynamo.compile(f, backend="numpy")
    result = compiled(x, 3.0)
    assert same_value(result, f(x, 3.0))
    assert result[0] is result[3] and result[2] is x
    assert [g.inlined for g in graphs_of(compiled)] == [True]


@inline_by_default
def test_both_sides_of_a_graph_break_run_inline(capsys):
    def f(x):
        y = np.exp(x) - 1
        print("between")
        return y * 2 + x

    x = rng.random(6)
    compiled = dynamo.compile(f, backend="numpy")
    assert same_value(compiled(x), f(x))
    assert capsys.readouterr().out == "between\nbetween\n"
    assert [g.inlined for g in graphs_of(compiled)] == [True, True]


def _warnings_of(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


@inline_by_default
def test_a_warning_inside_the_graph_points_at_the_users_line():
    def f(x):
        y = x - 10.0
        return np.sqrt(y)  # invalid value: a RuntimeWarning here

    x = rng.random(4)
    compiled = dynamo.compile(f, backend="numpy")
    expected, expected_warnings = _warnings_of(f, x)
    for _ in range(2):
        result, seen = _warnings_of(compiled, x)
        assert same_value(result, expected) and seen == expected_warnings
    assert expected_warnings and expected_warnings[0][2] == __file__


@inline_by_default
def test_an_error_inside_the_graph_has_plain_pythons_traceback():
    def f(x):
        y = x * 2.0
        z = y - y
        return 1.0 / z  # division by zero: raised under np.errstate(divide="raise")

    def frames(fn):
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError) as info:
            fn(rng.random(3))
        return [(frame.name, frame.lineno, frame.line) for frame in traceback.extract_tb(info.value.__traceback__)[1:]]

    compiled = dynamo.compile(f, backend="numpy")
    with np.errstate(divide="ignore"):
        compiled(rng.random(3))  # compiled with errors off
    assert frames(compiled) == frames(f) == [("f", f.__code__.co_firstlineno + 3, "return 1.0 / z  # division "
                                              "by zero: raised under np.errstate(divide=\"raise\")")]


def test_blocked_kernels_are_still_called():
    tiny = Machine(cache_bytes=2048, cores=2, min_kernel_bytes=0, min_block_elements=1, thread_work=0)
    x, y = rng.random(300), rng.random(300)
    compiled = dynamo.compile(small, backend=NumpyBackend(tiny, strict=True))
    assert same_value(compiled(x, y), small(x, y))
    assert [g.inlined for g in graphs_of(compiled)] == [False]


@inline_by_default
def test_the_output_code_log_says_the_graph_runs_inline(caplog):
    with caplog.at_level(logging.DEBUG, logger="dynamo.output_code"):
        dynamo.compile(small, backend="numpy")(rng.random(3), rng.random(3))
    text = caplog.text
    assert "def forward(" in text and "runs inline" in text


def _with_a_loop(gm, example_inputs):
    def forward(*args):
        for _ in range(1):
            result = gm.forward(*args)
        return result
    return forward


def _reading_a_list(gm, example_inputs):
    namespace = {"table": [gm]}
    exec("def forward(x):\n    return table[0].forward(x)\n", namespace)
    return namespace["forward"]


def _closure(gm, example_inputs):
    def forward(x):
        return gm.forward(x)
    return forward


@pytest.mark.parametrize("backend", [_with_a_loop, _reading_a_list, _closure])
def test_a_function_that_cannot_be_spliced_is_called(backend):
    def f(x):
        return np.exp(x) + 1

    def marked(gm, example_inputs):
        function = backend(gm, example_inputs)
        function.inlinable = True  # claimed, but the splice looks at the code itself
        return function

    x = rng.random(3)
    compiled = dynamo.compile(f, backend=marked)
    assert same_value(compiled(x), f(x)) and same_value(compiled(x), f(x))
    assert [g.inlined for g in graphs_of(compiled)] == [False]


def unrolled(x):
    for k in range(300):  # unrolled while tracing: a graph of 600 ops
        x = x * 1.0001 + k
    return x


@inline_by_default
def test_a_big_graph_is_called_not_spliced():
    x = rng.random(8)
    compiled = dynamo.compile(unrolled, backend="numpy")
    assert same_value(compiled(x), unrolled(x)) and same_value(compiled(x), unrolled(x))
    assert [g.inlined for g in graphs_of(compiled)] == [False]
    assert calls_a_graph(unrolled, compiled)


def test_code_that_runs_unhooked_calls_the_backends_callable_itself():
    """The wrapper that turns the hook off around a graph is left out where the transformed code runs
    with the hook off anyway: a cached call enters the graph's Python function as Python calls one
    (no C call in between). Where the code runs hooked (a graph break), the wrapper stays."""
    seen = []

    def helper(v):  # started by the graph: never compiled, whichever way the graph is called
        seen.append(v.shape)
        return v

    def backend(gm, example_inputs):
        def forward(*args):
            return tuple(helper(out) for out in gm.forward(*args))
        return forward

    def whole(x):
        return np.exp(x) * 2

    def broken(x):
        y = np.exp(x)
        print("break")
        return y * 2

    x = rng.random(4)
    for fn, unhooked in [(whole, True), (broken, False)]:
        compiled = dynamo.compile(fn, backend=backend)
        expected = fn(x)
        for _ in range(3):
            assert same_value(compiled(x), expected)
        (graph,) = [g for code, frame in compiled._dynamo_callback.compiled_frames if code is fn.__code__
                    for g in frame.graphs]
        entry, = _C.cache_entries(fn.__code__)
        assert entry.unhooked == unhooked and graph.called_unhooked == unhooked
        constants = [id(c) for c in entry.code.co_consts]
        assert (id(graph.compiled_fn._dynamo_fn) in constants) == unhooked
        assert (id(graph.compiled_fn) in constants) == (not unhooked)
        assert calls_a_graph(fn, compiled)
        assert not _C.cache_entries(helper.__code__)  # the graph's frames ran uncompiled
        assert len(seen) >= 3
        seen.clear()
