"""Who holds a frame's arguments while it runs: a hit whose transformed code runs in a new frame
moves the intercepted frame's argument references into it, and _C.call_moving hands a list's
items to the frame it starts, so that the callee's frame holds them as a call under the hook
does when nothing is compiled (the caller's stack and the frame: with a PEP 523 hook installed
CPython keeps a call's arguments on the caller's stack until it returns)."""
import sys
import weakref

import pytest

from dynamo import _C

from hook_helpers import Counter, always, assert_hook_off


def transformed(view):
    """The frame's code, as a code object of its own: a hit runs it in a new frame."""
    return always(), view.f_code.replace(co_qualname=view.f_code.co_qualname + ".<transformed>")


class Arg:
    """An object whose count nothing else touches."""


def count_first(a, b=None):
    return sys.getrefcount(a)


def drops_first(a, ref):
    del a
    return ref() is not None


def passes_a_new_object():
    return count_first(Arg())


def counted_under(answer):
    for fn in (passes_a_new_object, count_first):  # a SKIP answer before marked them
        _C.clear_cache(fn.__code__)
    previous = _C.set_eval_frame(Counter(answer))
    try:
        return [passes_a_new_object() for _ in range(3)]  # a miss, then hits
    finally:
        _C.set_eval_frame(previous)
        assert_hook_off()


def test_an_intercepted_frame_holds_no_argument_while_its_transformed_code_runs():
    as_is = counted_under(lambda view: _C.SKIP)
    assert counted_under(transformed) == as_is


def drop_through_call_moving():
    obj = Arg()
    ref = weakref.ref(obj)
    values = [obj, ref]
    del obj
    alive = _C.call_moving(drops_first, values)
    return alive, values


@pytest.mark.parametrize("answer", [lambda view: _C.SKIP, transformed], ids=["as-is", "transformed"])
def test_call_moving_leaves_the_callee_frame_the_only_holder(answer):
    for fn in (drop_through_call_moving, drops_first, count_first):
        _C.clear_cache(fn.__code__)
    previous = _C.set_eval_frame(Counter(answer))
    try:
        results = [drop_through_call_moving() for _ in range(3)]
        moved = _C.call_moving(count_first, [Arg()])
    finally:
        _C.set_eval_frame(previous)
    assert results == [(False, [])] * 3
    assert moved == 2  # the frame's local and getrefcount's argument


def test_call_moving_without_a_frame_or_with_bad_arguments():
    assert _C.call_moving(max, [3, 1, 2]) == 3  # no frame starts: released on return
    assert _C.call_moving(count_first, [Arg()]) == 3  # no hook installed: released on return
    with pytest.raises(TypeError):
        _C.call_moving(count_first, (1,))
    with pytest.raises(TypeError):
        _C.call_moving(count_first, [1, 2, 3])  # an error binding the arguments
