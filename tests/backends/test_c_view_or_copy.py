"""backend="c": a reshape is a view or a copy as the argument's layout decides at run time (NumPy copies
when the strides do not allow a view): a write after it reaches the view and not the copy."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import dynamo
from c_helpers import Recorder, bits, needs_compiler

pytestmark = needs_compiler


def reshape_then_write(a):
    d = a.reshape(-1)[::3]
    a[0] += 1
    return d, a


def reshape_of_a_result_then_write(a):
    t = a * 2.0
    d = t.reshape(-1)
    t[0] = -1.0
    return d, t.sum(axis=1)


@pytest.mark.parametrize("first", ["C", "F"])
def test_a_write_after_a_reshape_reaches_views_and_not_copies(first):
    """The frontend corpus' case (test_guards_arrays): a Fortran-ordered argument's reshape(-1) is a
    copy, a C-ordered one's a view; the graph of the first call serves both."""
    base = np.arange(20.0).reshape(4, 5)
    layouts = {"C": base.copy(), "F": np.asfortranarray(base)}
    order = [layouts[first], layouts["F" if first == "C" else "C"], base[:, ::2]]
    compiled = dynamo.compile(reshape_then_write, backend=Recorder())
    for a in order:
        assert bits(compiled(copy.deepcopy(a))) == bits(reshape_then_write(copy.deepcopy(a)))


def test_a_reshape_of_a_computed_array_is_a_view():
    """A kernel's result is in C order whatever the call: its reshape stays a kernel view."""
    recorder = Recorder()
    compiled = dynamo.compile(reshape_of_a_result_then_write, backend=recorder)
    a = np.arange(12.0).reshape(3, 4)
    assert bits(compiled(a)) == bits(reshape_of_a_result_then_write(a))
    assert not any("reshape" in str(node) for g in recorder.graphs for node, _ in g.fallback_nodes)
