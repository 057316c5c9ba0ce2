"""Objects live as long across a graph break as in plain Python: the frame that calls a resume
function lets go of what it passes (_C.call_moving), the hook's intercepted frame of what it
hands to the transformed code, and a transformed frame of the arguments the code deleted or
assigned anew before the instruction that runs in Python. Found by NumPy's ndarray.resize
reference check and SciPy's assert_deallocated."""
import sys
import weakref

import numpy as np
import pytest

import dynamo

from breaks_helpers import arange, compare


class Payload:
    """An object only the function under test refers to."""


count = sys.getrefcount  # by another name: a function calling getrefcount is never compiled


def deleted_after_a_break():
    obj = Payload()
    ref = weakref.ref(obj)
    print("break", end="")
    del obj
    return ref() is not None


def assigned_anew_after_a_break():
    obj = Payload()
    ref = weakref.ref(obj)
    print("break", end="")
    obj = None
    return ref() is not None, type(obj)


def deleted_in_a_loop(n):
    seen = []
    for _ in range(n):
        obj = Payload()
        ref = weakref.ref(obj)
        print("break", end="")
        del obj
        seen.append(ref() is not None)
    return seen


def deleted_after_a_loop_that_may_bind_nothing(n):
    obj = Payload()
    ref = weakref.ref(obj)
    for i in range(n):  # the loop runs in Python; `last` may be unbound after it
        last = i
        print("break", end="")
    del obj
    return ref() is not None, last


def deleted_in_a_try_block():
    obj = Payload()
    ref = weakref.ref(obj)
    try:
        print("break", end="")
        del obj
        alive = ref() is not None
    finally:
        done = True
    return alive, done


def deleted_in_one_branch(a):
    obj = Payload()
    ref = weakref.ref(obj)
    if a.sum() > 0:
        del obj
        return ref() is not None
    return ref() is not None, type(obj)


def resized_after_a_break():
    x = np.ones(5)
    print("break", end="")
    x.resize(10, refcheck=True)
    return x


def counted_after_a_break(a):
    obj = Payload()
    y = a * 2
    print("break", end="")
    return count(obj), y


@pytest.mark.parametrize("fn", [deleted_after_a_break, assigned_anew_after_a_break, deleted_in_a_try_block,
                                resized_after_a_break])
def test_a_value_dropped_after_a_break_dies_as_in_python(fn):
    run = compare(fn)
    assert run.breaks
    for _ in range(3):  # the resume functions compiled, then their cache hits
        assert str(run.compiled()) == str(fn())


def test_a_value_dropped_in_a_loop_that_runs_in_python():
    run = compare(deleted_in_a_loop, 3)
    assert run.result == [False] * 3
    assert run.compiled(2) == [False] * 2


def test_a_value_dropped_after_a_loop_handing_over_the_locals_it_bound():
    run = compare(deleted_after_a_loop_that_may_bind_nothing, 3)
    assert run.result == (False, 2)
    assert run.compiled(2) == (False, 1)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_value_dropped_in_one_branch_of_a_data_dependent_jump(sign):
    run = compare(deleted_in_one_branch, sign * np.ones(3))
    assert str(run.compiled(sign * np.ones(3))) == str(run.result)
    assert (run.result is False) == (sign > 0)


def test_reference_counts_after_a_break_are_plain_pythons():
    a = arange(4)
    expected = counted_after_a_break(a)[0]
    run = compare(counted_after_a_break, a)
    assert [run.compiled(a)[0] for _ in range(3)] == [expected] * 3
