"""Cache entries whose code is the original (`in_place`): a hit runs the frame as it is, through
the frame hook and through a compiled function's call, with no second frame holding the arguments."""
import sys
import traceback

import numpy as np
import pytest

import dynamo
from dynamo import _C

from hook_helpers import Counter, assert_hook_off, refcounts


IN_PLACE_HITS = True  # tests/csrc/conftest.py leaves dynamo's own choice of code in place here


def answer_original(view):
    """An answer naming the frame's own code, guarded on each argument's type."""
    program = []
    for slot, value in enumerate(view.f_args):
        program += [("load_arg", slot, slot), ("type_is", slot, type(value))]
    return _C.GuardProgram(program, max(len(view.f_args), 1)), view.f_code


def frames_code(a, b=2, *rest, c=3, **kw):
    return sys._getframe().f_code, a + b + c + sum(rest) + sum(kw.values())


@pytest.mark.parametrize("call", [
    lambda f: f(1), lambda f: f(1, 5), lambda f: f(a=1, b=5), lambda f: f(1, 2, 3, 4),
    lambda f: f(1, c=10, z=100),
], ids=["positional", "two", "keywords", "varargs", "kwargs"])
def test_hit_runs_the_original_code_for_every_argument_layout(call):
    callback = Counter(answer_original)
    compiled = _C.CompiledFunction(frames_code, callback)
    for _ in range(3):
        code, total = call(compiled)
        assert code is frames_code.__code__
        assert total == call(frames_code)[1]
    assert callback.calls == 1
    (entry,) = _C.cache_entries(frames_code.__code__)
    assert entry.in_place and entry.hits == 2
    assert not _C.is_skipped(frames_code.__code__)  # the original stays hooked: it is what the entry runs
    assert_hook_off()


def nested_inner(x):
    return x * 2


def nested_outer(x):
    return nested_inner(x) + 1


def test_frames_started_by_an_in_place_hit_are_still_hooked():
    seen = []

    def callback(view):
        seen.append(view.f_code.co_name)
        return answer_original(view)

    compiled = _C.CompiledFunction(nested_outer, callback)
    assert [compiled(3) for _ in range(3)] == [7, 7, 7]
    assert seen == ["nested_outer", "nested_inner"]
    assert [e.hits for e in _C.cache_entries(nested_inner.__code__)] == [2]
    assert_hook_off()


def raises_at_line(x):
    raise ValueError(f"bad {x}")


def test_errors_and_tracebacks_come_from_the_original_frame():
    compiled = _C.CompiledFunction(raises_at_line, Counter(answer_original))
    for _ in range(2):
        with pytest.raises(ValueError, match="bad 1") as info:
            compiled(1)
        last = traceback.extract_tb(info.tb)[-1]
        assert last.name == "raises_at_line" and last.line == 'raise ValueError(f"bad {x}")'


def test_no_reference_leaks_over_10k_in_place_hits():
    class Arg:
        pass

    a = Arg()
    callback = Counter(answer_original)
    compiled = _C.CompiledFunction(frames_code, callback)
    hooked = _C.CompiledFunction(nested_outer, callback)

    def run(n):
        for _ in range(n):
            try:
                compiled(a)
            except TypeError:
                pass
            hooked(5)

    run(1000)  # compiles, and lets CPython specialize the loop
    run(10_000)
    before = refcounts(a, callback, frames_code.__code__, nested_outer.__code__)
    run(10_000)
    after = refcounts(a, callback, frames_code.__code__, nested_outer.__code__)
    assert after == before
    assert_hook_off()


def test_dynamo_runs_a_function_with_nothing_to_compile_in_place():
    def identity(x):
        return x

    compiled = dynamo.compile(identity)
    x = np.ones(3)
    assert compiled(x) is x and compiled(x) is x
    (entry,) = _C.cache_entries(identity.__code__)
    assert entry.in_place and entry.code is identity.__code__


def test_a_function_that_falls_back_whole_runs_in_place():
    def prints(x, *rest, **kw):
        print(x, rest, kw, file=sys.stderr)  # an unsupported call with no graph before it
        return sys._getframe().f_code

    compiled = dynamo.compile(prints)
    assert compiled(1, 2, k=3) is prints.__code__
    assert compiled(1, 2, k=3) is prints.__code__
    (entry,) = _C.cache_entries(prints.__code__)
    assert entry.in_place
