"""Side effects recorded before an op that raises while the graph runs happen as in plain Python:
appends, globals, attributes and dict items before an out-of-bounds index or a singular matrix,
with and without array writes in the same graph."""
import numpy as np
import pytest

import dynamo
from semantics_helpers import BACKENDS, check_same
from support import graph_breaks

LOG: list = []
COUNT = 0
TABLE: dict = {}


class Holder:
    value = 0


HOLDER = Holder()


def reset():
    global COUNT
    LOG.clear()
    TABLE.clear()
    COUNT = 0
    HOLDER.value = 0


def observe():
    return (list(LOG), COUNT, dict(TABLE), HOLDER.value)


def append_then_take(x, idx):
    LOG.append(x.sum())
    return np.take(x, idx)


def global_then_index(x, idx):
    global COUNT
    COUNT += 1
    return x[idx] * 2


def attribute_and_item_then_take(x, idx):
    HOLDER.value = x.sum()
    TABLE["k"] = x.max()
    return np.take(x, idx) + 1


def append_then_inverse(m):
    LOG.append(m.trace())
    return np.linalg.inv(m)


def write_then_append_then_index(x, idx):
    x += 1
    LOG.append(x.sum())
    return x[idx]


def append_then_index_then_write(x, idx):
    LOG.append(1)
    y = x[idx]
    x += 1
    return y


def append_and_write_in_a_loop(x, idx):
    for i in range(3):
        LOG.append(i)
        x[idx + i] += 1
    return x


CASES = [
    (append_then_take, lambda: (np.arange(5.0), np.array([7]))),
    (append_then_take, lambda: (np.arange(5.0), np.array([2]))),
    (global_then_index, lambda: (np.arange(5.0), np.array([1, 9]))),
    (attribute_and_item_then_take, lambda: (np.arange(6.0), np.array([-7]))),
    (append_then_inverse, lambda: (np.zeros((2, 2)),)),
    (append_then_inverse, lambda: (np.eye(2) * 2,)),
    (write_then_append_then_index, lambda: (np.arange(5.0), np.array([5]))),
    (append_then_index_then_write, lambda: (np.arange(5.0), np.array([5]))),
    (append_and_write_in_a_loop, lambda: (np.arange(5.0), np.array([3]))),
    (append_and_write_in_a_loop, lambda: (np.arange(5.0), np.array([0]))),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make_args", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_effects_before_a_raising_op_happen(fn, make_args, backend):
    check_same(fn, make_args, backend, observe, reset)


def test_a_graph_writing_no_arrays_breaks_nowhere():
    """The rerun on error needs no graph break: one graph, the same as without the append."""
    compiled = check_same(append_then_take, lambda: (np.arange(5.0), np.array([9])), "eager", observe, reset)
    assert graph_breaks(compiled) == []


def test_a_write_after_effects_and_a_raising_op_ends_the_graph():
    compiled = check_same(append_then_index_then_write, lambda: (np.arange(5.0), np.array([1])), "eager",
                          observe, reset)
    assert len(graph_breaks(compiled)) == 1 and "writes an array" in graph_breaks(compiled)[0]


def test_the_rerun_leaves_no_exception_context():
    compiled = dynamo.compile(append_then_take, backend="eager")
    reset()
    with pytest.raises(IndexError) as info:
        compiled(np.arange(3.0), np.array([5]))
    assert info.value.__context__ is None and len(LOG) == 1


def warn_append_then_invert(x):
    y = np.log(x - 1)  # invalid value: a RuntimeWarning before the op that raises
    LOG.append(1)
    return y, np.linalg.inv(np.zeros((2, 2)))


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "triton"])  # triton keeps no FP flags
@pytest.mark.parametrize("action", ["always", "error"])
def test_warnings_before_a_raising_op_show_once(backend, action):
    # backend c lost y's warning: computed lazily after np.linalg.inv, which raised first (now stored
    # before a NumPy step that may warn, kernel_ir/program_order.py)
    import warnings

    def run(fn):
        reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            try:
                fn(np.zeros(3))
            except Exception as error:  # LinAlgError, or the RuntimeWarning raised under "error"
                raised = type(error)
        return raised, [str(w.message) for w in caught], observe()

    compiled = dynamo.compile(warn_append_then_invert, backend=backend)
    expected = run(warn_append_then_invert)
    assert run(compiled) == expected and run(compiled) == expected


def append_write_divide(x, log):
    log.append(len(log))
    x += 1.0
    return 1.0 / x


def _run_under(fn, modes, values, filter_action=None):
    """(result or exception type, the list, the array) of fn under np.errstate(**modes)."""
    import warnings

    x, log = np.array(values), []
    with warnings.catch_warnings():
        warnings.simplefilter(filter_action or "ignore")
        with np.errstate(**modes):
            try:
                result = fn(x, log)
            except (FloatingPointError, RuntimeWarning) as error:
                result = type(error)
    return result, log, x


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "triton"])
def test_a_graph_compiled_where_errors_warn_does_not_run_where_they_raise(backend):
    """Whether a float op may raise was decided from the caller's error state at the first
    compile: a later call under np.errstate(divide="raise") (or a warnings filter "error") ran
    that graph, which raised after the array write with the append still pending (the list
    stayed empty). The decision is a guard now: that call compiles a version that keeps order."""
    compiled = dynamo.compile(append_write_divide, backend=backend)
    plain_first = _run_under(append_write_divide, {"divide": "ignore"}, [0.0, 1.0])
    assert str(_run_under(compiled, {"divide": "ignore"}, [0.0, 1.0])) == str(plain_first)
    for modes, action in [({"divide": "raise"}, None), ({"divide": "warn"}, "error"), ({"all": "call"}, None)]:
        if modes.get("all") == "call":
            modes = {**modes}
            old = np.seterrcall(lambda *a: None)
        try:
            expected = _run_under(append_write_divide, modes, [-1.0, 1.0], action)
            got = _run_under(compiled, modes, [-1.0, 1.0], action)
        finally:
            if modes.get("all") == "call":
                np.seterrcall(old)
        assert str(got) == str(expected) and expected[1] == [0]
    # back to a quiet state: the first version runs again, nothing new is compiled
    before = len(compiled._dynamo_callback.compiled_frames)
    assert str(_run_under(compiled, {"divide": "ignore"}, [2.0, 1.0])) == str(
        _run_under(append_write_divide, {"divide": "ignore"}, [2.0, 1.0]))
    assert len(compiled._dynamo_callback.compiled_frames) == before


def write_divide_in_a_block(x, log):
    log.append(len(log))
    x += 1.0
    with np.errstate(divide="ignore"):
        y = np.log(x)
    return y / x


def test_the_error_state_guard_applies_captured_blocks_over_the_caller():
    """Inside a captured np.errstate(divide="ignore") block the caller's divide mode does not
    matter, its over or invalid mode still does: the guard merges as NumPy does."""
    compiled = dynamo.compile(write_divide_in_a_block, backend="numpy")
    for modes in [{}, {"divide": "raise"}, {"invalid": "raise"}, {}]:
        for values in ([-1.5, 1.0], [-1.0, 1.0]):
            expected = _run_under(write_divide_in_a_block, modes, values)
            assert str(_run_under(compiled, modes, values)) == str(expected)
