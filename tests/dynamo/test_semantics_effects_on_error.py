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
