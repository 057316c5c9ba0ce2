"""Timed turns in the hook: while a compiled turn runs, a resume function's version
(part_of_caller) runs compiled and takes no turn of its own, so that the turn times the frame's
version as a whole; other functions compiled apart take their turns wherever they are called."""
import pytest

from dynamo import _C

from hook_helpers import assert_hook_off

TURNS = 4


def inner(x):
    return x + 1


def outer(x):
    return inner(x) * 2


class CopiesWithTurns:
    """Compiles each code to a copy of itself (not in place) that takes TURNS timed turns; `inner`'s
    version says whether it is part of its caller's."""

    def __init__(self, part_of_caller):
        self.part_of_caller = part_of_caller

    def __call__(self, view):
        part = self.part_of_caller and view.f_code is inner.__code__
        return _C.GuardProgram([], 1), view.f_code.replace(), False, TURNS, 0, part


@pytest.fixture
def clock():
    _C.set_turn_timer(lambda: 0.0)  # no time passes: no version is dropped
    yield
    _C.set_turn_timer(None)


@pytest.mark.parametrize("part_of_caller", [True, False])
def test_a_resume_function_takes_no_turn_during_its_callers_compiled_turn(clock, part_of_caller):
    compiled = _C.CompiledFunction(outer, CopiesWithTurns(part_of_caller))
    try:
        assert compiled(1) == 4  # outer's first turn: its compiled code, which calls inner
        (outer_entry,) = _C.cache_entries(outer.__code__)
        (inner_entry,) = _C.cache_entries(inner.__code__)
        assert outer_entry.probe == TURNS - 1 and inner_entry.part_of_caller == part_of_caller
        # a resume function ran compiled, untimed; a function compiled apart took its first turn
        assert inner_entry.probe == (TURNS if part_of_caller else TURNS - 1)
        assert compiled(2) == 6  # outer's original turn: plain Python, the hook off for inner
        assert inner_entry.probe == (TURNS if part_of_caller else TURNS - 1)
        for x in range(TURNS):
            assert compiled(x) == 2 * x + 2
        assert outer_entry.probe == 0 and not outer_entry.dropped
        # once its caller's turns are over, a resume function takes its own
        assert inner_entry.probe == (TURNS - TURNS // 2 if part_of_caller else 0)
    finally:
        _C.clear_cache(outer.__code__)
        _C.clear_cache(inner.__code__)
    assert_hook_off()

