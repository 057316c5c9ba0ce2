"""A compiled function's call before any frame exists: keywords and defaults bound to the argument
slots as CPython binds them (the guards see those slots), every call it cannot bind left to the
frame path (which raises CPython's own TypeError), and entries whose code starts no frame to
compile run with the hook off."""
import pytest

from dynamo import _C
from dynamo.bytecode_compat import flatten_signature

from hook_helpers import Recorder, assert_hook_off


def target(a, b, /, c, d=4, e=[]):  # noqa: B006  (the default's identity is part of the test)
    return (a, b, c, d, e)


def recording_guard(seen):
    """Passes, after recording the five argument slots it was given."""
    program = []
    for slot in range(5):
        program += [("load_arg", slot, slot), ("call", slot, lambda value: seen.append(value) or True)]
    return _C.GuardProgram(program, 5)


CALLS = [
    ((1, 2, 3), {}),
    ((1, 2), {"c": 3}),
    ((1, 2), {"d": 5, "c": 3}),
    ((1, 2, 3, 4, [9]), {}),
    ((1, 2, 3), {"e": "x"}),
]
BAD_CALLS = [
    ((1,), {"c": 3}),            # b missing
    ((1, 2, 3), {"c": 3}),       # c twice
    ((1, 2, 3), {"z": 1}),       # unknown keyword
    ((1,), {"b": 2, "c": 3}),    # a positional-only parameter by keyword
    ((1, 2, 3, 4, 5, 6), {}),    # too many
    ((), {}),
]


def compiled_target(seen):
    answer = (recording_guard(seen), flatten_signature(target.__code__))
    cf = _C.CompiledFunction(target, Recorder(lambda view: answer))
    cf(0, 0, 0)  # the miss: compiles through the frame path
    seen.clear()
    return cf


@pytest.mark.parametrize("args, kwargs", CALLS)
def test_keywords_and_defaults_reach_the_guards_as_bound_slots(args, kwargs):
    seen = []
    cf = compiled_target(seen)
    expected = target(*args, **kwargs)
    result = cf(*args, **kwargs)
    assert result == expected and result[4] is expected[4]  # the default list itself
    assert seen == list(expected)  # guards ran once, on the bound slots
    assert _C.cache_entries(target.__code__)[0].hits >= 1
    assert_hook_off()


@pytest.mark.parametrize("args, kwargs", BAD_CALLS)
def test_calls_that_do_not_bind_raise_pythons_error(args, kwargs):
    cf = compiled_target([])
    with pytest.raises(TypeError) as plain:
        target(*args, **kwargs)
    with pytest.raises(TypeError) as compiled:
        cf(*args, **kwargs)
    assert str(compiled.value) == str(plain.value)
    assert_hook_off()


def test_defaults_are_read_at_each_call():
    seen = []
    cf = compiled_target(seen)
    saved = target.__defaults__
    try:
        target.__defaults__ = (7, "new")
        assert cf(1, 2, 3) == (1, 2, 3, 7, "new") == target(1, 2, 3)
    finally:
        target.__defaults__ = saved


def inner(x):
    return x + 1


def outer(x):
    return inner(x) * 2


@pytest.mark.parametrize("unhooked", [False, True])
def test_an_unhooked_entry_runs_with_the_hook_off(unhooked):
    def answer(view):
        if view.f_code is outer.__code__:
            return _C.GuardProgram([], 1), flatten_signature(outer.__code__), unhooked
        return None

    rec = Recorder(answer)
    cf = _C.CompiledFunction(outer, rec)
    assert cf(1) == 4  # compiled on this call: its own inner() frame is shown to the callback
    rec.clear()
    assert cf(2) == cf(x=2) == 6
    (entry,) = _C.cache_entries(outer.__code__)
    assert entry.unhooked == unhooked
    assert rec.names == ([] if unhooked else ["inner", "inner"])
    assert_hook_off()
