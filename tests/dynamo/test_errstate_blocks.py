"""`with np.errstate(...)` captured in the graph (issue 16): the ops of the block run under its
settings over the caller's error state on every backend; results, RuntimeWarnings (message, line)
and FloatingPointErrors equal plain NumPy's; a block that breaks the graph runs in Python as before."""
import warnings

import numpy as np
import pytest

import dynamo

from support import fallbacks, graph_breaks, same_value

BACKENDS = ["eager", "numpy", "c"]


def observe(fn, *args):
    """What a call shows: (result, exception as text, warnings as (message, category, line)), and
    the error state after it."""
    before = np.geterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = fn(*args), None
        except Exception as raised:
            result, error = None, f"{type(raised).__name__}: {raised}"
    shown = [(str(w.message), w.category.__name__, w.lineno) for w in caught]
    assert np.geterr() == before, "the error state leaked out of the call"
    return result, error, shown


def assert_same(fn, backend, calls):
    compiled = dynamo.compile(fn, backend=backend)
    for args in calls:
        expected, got = observe(fn, *args), observe(compiled, *args)
        assert got[1:] == expected[1:], (got, expected)
        assert same_value(got[0], expected[0]), (got[0], expected[0])
    return compiled


def graph_ops(compiled):
    return [node.target for _, frame in compiled._dynamo_callback.compiled_frames for graph in frame.graphs
            for node in graph.graph_module.graph.nodes if node.op == "call_function"]


def under_errstate_ops(compiled):
    return sum(1 for target in graph_ops(compiled) if type(target).__name__ == "UnderErrstate")


def normalize(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(x)
    mean, std = logs.mean(), logs.std()
    if std > 0:  # a branch on a value: a graph break, after the block
        return (logs - mean) / std
    return logs - mean


def warn_then_raise(x):
    y = np.log(x)  # under the caller's settings
    with np.errstate(divide="warn", invalid="raise"):
        z = np.log(x - 1.0)
    return y + z


def nested(x):
    with np.errstate(all="ignore"):
        a = x / 0.0
        with np.errstate(divide="warn"):
            b = x / 0.0
        c = np.log(x - 5)
    return a + b + c


def inner_all_overrides(x):
    with np.errstate(divide="raise"):
        with np.errstate(all="ignore"):
            a = x / 0.0
        b = np.sqrt(x - 10)
    return a + b


def reductions_and_methods(x):
    manager = np.errstate(over="raise")
    with manager:
        total = (x * 1e308).sum()
    return total, x.mean()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_block_is_in_the_graph_and_runs_under_its_settings(backend):
    x = np.array([0.0, 1.0, 2.0, -1.0])
    compiled = assert_same(normalize, backend, [(x,), (np.array([1.0, 2.0, 4.0, 0.5]),), (x,)])
    assert all("with block" not in reason and "np.errstate" not in reason for reason in graph_breaks(compiled))
    assert fallbacks(compiled) == []
    assert len(graph_breaks(compiled)) == 1  # the branch on std only
    assert under_errstate_ops(compiled) == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [warn_then_raise, nested, inner_all_overrides, reductions_and_methods])
def test_warnings_and_errors_are_numpys(backend, fn):
    calls = [(np.array([2.0, 3.0, 1.0]),), (np.array([2.0, 3.0, 0.5]),), (np.array([12.0, 20.0]),),
             (np.array([2.0, 3.0, 1.0]),)]
    compiled = assert_same(fn, backend, calls)
    assert graph_breaks(compiled) == [] and fallbacks(compiled) == []
    assert under_errstate_ops(compiled) >= 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("outside", [{"all": "raise"}, {"divide": "warn", "invalid": "ignore"}, {"all": "ignore"}])
def test_the_callers_error_state_applies_outside_the_block(backend, outside):
    compiled = dynamo.compile(warn_then_raise, backend=backend)
    for x in (np.array([2.0, 3.0, 1.0]), np.array([0.0, 3.0, 2.0]), np.array([2.0, 3.0, 0.5])):
        with np.errstate(**outside):
            expected, got = observe(warn_then_raise, x), observe(compiled, x)
        assert got[1:] == expected[1:] and same_value(got[0], expected[0]), (got, expected)


def break_inside(x, log):
    with np.errstate(divide="ignore"):
        y = np.log(x)
        log.append(len(log))  # a side effect the graph keeps
        print(end="")  # a graph break inside the block: the block runs in Python, as before
        z = y * 2
    return z + 1


def writes_inside(x, out):
    with np.errstate(invalid="ignore"):
        out /= x  # an in-place write: the block runs in Python
    return np.sqrt(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_block_that_breaks_or_writes_runs_in_python(backend):
    log_plain, log_compiled = [], []
    compiled = dynamo.compile(break_inside, backend=backend)
    for x in (np.array([0.0, 1.0]), np.array([2.0, 0.0])):
        expected, got = observe(break_inside, x, log_plain), observe(compiled, x, log_compiled)
        assert got[1:] == expected[1:] and same_value(got[0], expected[0])
    assert log_compiled == log_plain
    assert any("np.errstate block runs in Python" in reason for reason in graph_breaks(compiled))
    dynamo.reset()
    compiled = dynamo.compile(writes_inside, backend=backend)
    for x in (np.array([0.0, 1.0, -1.0]), np.array([2.0, 0.0, 1.0])):
        a, b = np.array([0.0, -1.0, 1.0]), np.array([0.0, -1.0, 1.0])
        expected, got = observe(writes_inside, x, a), observe(compiled, x, b)
        assert got[1:] == expected[1:] and same_value(got[0], expected[0])
        np.testing.assert_array_equal(a, b)


def entered_twice(x):
    manager = np.errstate(divide="ignore")
    with manager:
        a = np.log(x)
    with manager:  # TypeError: Cannot enter `np.errstate` twice
        b = np.log(x)
    return a + b


def early_return_and_loop(x, n):
    acc = np.zeros_like(x)
    for i in range(n):
        with np.errstate(divide="ignore"):
            acc = acc + np.log(x - i)
    with np.errstate(invalid="ignore"):
        return np.sqrt(acc - 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_other_shapes_of_blocks(backend):
    x = np.array([0.0, 1.0, 2.0, 5.0])
    assert_same(entered_twice, backend, [(x,), (x,)])
    dynamo.reset()
    compiled = assert_same(early_return_and_loop, backend, [(x, 3), (x + 1, 3), (x, 100)])
    assert under_errstate_ops(compiled) >= 2


def raises_in_block_after_effect(x, log):
    log.append("before")
    with np.errstate(all="raise"):
        y = x / (x - x)
    log.append("after")
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_error_raised_in_the_block_restores_the_state_and_keeps_effects_in_order(backend):
    log_plain, log_compiled = [], []
    compiled = dynamo.compile(raises_in_block_after_effect, backend=backend)
    for _ in range(2):
        expected = observe(raises_in_block_after_effect, np.array([1.0, 2.0]), log_plain)
        got = observe(compiled, np.array([1.0, 2.0]), log_compiled)
        assert got == expected and expected[1].startswith("FloatingPointError")
    assert log_compiled == log_plain == ["before", "before"]


def test_without_numpys_error_state_internals_np_errstate_itself_runs(monkeypatch):
    from dynamo.fx_ir import errstate_call

    monkeypatch.setattr(errstate_call, "_make_extobj", None)
    compiled = assert_same(warn_then_raise, "numpy", [(np.array([2.0, 3.0, 1.0]),), (np.array([2.0, 3.0, 0.5]),)])
    assert under_errstate_ops(compiled) == 2  # x - 1.0 and its log


def test_nested_settings_merge_as_numpy_applies_them():
    from dynamo.fx_ir.errstate_call import merged

    assert merged(((("divide", "raise"),), (("all", "ignore"),))) == {"all": "ignore"}
    assert merged(((("all", "ignore"),), (("divide", "warn"),))) == {"all": "ignore", "divide": "warn"}
    assert merged(((("over", "raise"),), (("divide", "warn"),))) == {"over": "raise", "divide": "warn"}
