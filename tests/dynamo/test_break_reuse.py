"""A graph break keeps the frame's first trace where the instruction that broke changed nothing
(dynamo/break_reuse.py): such a frame is traced once, not traced again to stop before the break.
Results equal plain Python; the suite's config.check_break_reuse compares every kept state with a
retrace's, and the cases a first trace cannot serve are traced twice."""
import numpy as np
import pytest
from numpy.testing import assert_array_equal

import dynamo
from dynamo import break_reuse
from dynamo.exc import InternalCompilerError
from support import compile_with_counter, graph_breaks, same_value


def traces(compiled):
    """(qualified name, translator runs) of every frame compiled, in order."""
    return [(code.co_qualname, frame.traces) for code, frame in compiled._dynamo_callback.compiled_frames]


def refused_calls(a, b):
    c = a + b
    assert_array_equal(c, c)  # library code: refused before it runs anything
    d = c * 2
    print(end="")
    return d - 1


def test_a_frame_whose_calls_are_refused_is_traced_once():
    a, b = np.arange(4.0), np.ones(4)
    compiled, counter = compile_with_counter(refused_calls)
    assert same_value(compiled(a, b), refused_calls(a, b))
    assert [runs for _, runs in traces(compiled)] == [1, 1, 1]  # the frame and its two resume functions
    assert len(graph_breaks(compiled)) == 2 and counter.frame_count == 3
    assert same_value(compiled(a + 1, b), refused_calls(a + 1, b))
    assert len(traces(compiled)) == 3  # no recompile: the guards are the retrace's
    dynamo.reset()


def _prints(x):
    print(end="")
    return x + 1


def breaks_inside_a_call(a):
    b = a * 3
    return _prints(b) * 2


def test_a_break_inside_an_inlined_call_is_traced_again():
    a = np.arange(3.0)
    compiled, _ = compile_with_counter(breaks_inside_a_call)
    assert same_value(compiled(a), breaks_inside_a_call(a))
    # the call ran part of _prints before it broke: the frame is traced again to stop before the call
    assert traces(compiled)[0] == ("breaks_inside_a_call", 2)
    dynamo.reset()


def holds_an_iterator(a, b):
    it = iter([a, b])
    first = next(it) * 2
    print(end="")  # the break: the iterator's position would be the first trace's after the call
    return first + next(it)


def test_a_frame_holding_an_iterator_is_traced_again():
    a, b = np.arange(3.0), np.ones(3)
    compiled, _ = compile_with_counter(holds_an_iterator)
    assert same_value(compiled(a, b), holds_an_iterator(a, b))
    assert traces(compiled)[0] == ("holds_an_iterator", 2)
    dynamo.reset()


def needs_its_float(a, s):
    b = a * s
    k = int(s)  # a run-time float needed as a number: pinned, compiled per value from now on
    print(end="")
    return b + k


def test_a_trace_that_pinned_a_float_is_traced_again():
    a = np.arange(3.0)
    compiled, _ = compile_with_counter(needs_its_float)
    for s in (1.5, 2.5):
        assert same_value(compiled(a, s), needs_its_float(a, s))
    # the second compile met s as a run-time float and pinned it: a retrace starts with it pinned
    ((name, runs),) = [entry for entry in traces(compiled)[1:] if entry[0] == "needs_its_float"]
    assert runs == 2
    dynamo.reset()


def test_a_kept_state_unlike_the_retraces_fails_the_check(monkeypatch):
    restore = break_reuse.BeforeStep.restore

    def wrong(self, tx):
        restore(self, tx)
        tx.stack.append(tx.stack[-1])  # a stack item too many

    monkeypatch.setattr(break_reuse.BeforeStep, "restore", wrong)
    monkeypatch.setattr(dynamo.config, "check_break_reuse", True)
    with pytest.raises(InternalCompilerError, match="differs from a retrace's"):
        dynamo.compile(refused_calls, backend="eager")(np.arange(4.0), np.ones(4))
    dynamo.reset()


def prints_after_its_float(a, s):
    b = a * s
    print(end="")
    return b + 1


def test_a_nan_float_is_the_same_value_to_both_traces():
    # the shape policy compares a float argument with the value it saw before: NaN != NaN made a
    # second trace of the frame take it as changed (a run-time input) where the first had a constant
    a = np.arange(3.0)
    compiled, _ = compile_with_counter(prints_after_its_float)
    for _ in range(2):
        assert same_value(compiled(a, float("nan")), prints_after_its_float(a, float("nan")))
    assert traces(compiled)[0] == ("prints_after_its_float", 1)
    assert len([name for name, _ in traces(compiled) if name == "prints_after_its_float"]) == 1  # no recompile
    dynamo.reset()
