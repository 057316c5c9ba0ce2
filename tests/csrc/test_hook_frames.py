"""Which frames reach the compile callback: the compiled function and the frames it starts,
never the callback's own, guards', generators', coroutines', tracers' or SKIP-marked ones."""
import builtins
import gc
import json
import sys
import types

import pytest

import dynamo
from dynamo import _C
from dynamo.convert_frame import ConvertFrame

from hook_helpers import Recorder, always, assert_hook_off, identity


@pytest.fixture(autouse=True)
def no_gc():
    # a collection inside a hooked region could run __del__ frames and make exact lists flaky
    gc.disable()
    yield
    gc.enable()


def leaf(x):
    return x + 1


def middle(x):
    return leaf(x) * 2


def top(x):
    return middle(x) + leaf(x)


def test_callback_sees_the_compiled_function_and_every_frame_it_starts():
    rec = Recorder()
    assert _C.CompiledFunction(top, rec)(1) == top(1)
    assert rec.names == ["top", "middle", "leaf", "leaf"]
    assert_hook_off()


def test_frame_view_describes_the_frame_about_to_run():
    rec = Recorder()
    _C.CompiledFunction(top, rec)(5)
    view = rec.views[0]
    assert view.f_code is top.__code__
    assert view.f_func is top
    assert view.f_globals is globals()
    assert view.f_builtins is builtins.__dict__
    assert view.f_closure is None
    assert view.f_args == (5,)
    assert view.f_locals == {"x": 5}
    with pytest.raises(AttributeError):
        view.f_code = None


def test_frame_view_of_a_closure_shows_cells_and_all_argument_slots():
    scale = 3

    def f(a, b=2, *args, c, d=4, **kw):
        return a * scale

    rec = Recorder()
    _C.CompiledFunction(f, rec)(1, c=3, e=5)
    (view,) = rec.views
    # slots: positional, keyword-only, *args, **kwargs
    assert view.f_args == (1, 2, 3, 4, (), {"e": 5})
    assert view.f_locals == {"a": 1, "b": 2, "c": 3, "d": 4, "args": (), "kw": {"e": 5}, "scale": 3}
    assert view.f_closure is f.__closure__


def test_frames_started_by_the_callback_are_not_hooked():
    seen_inside = []

    def helper(view):
        seen_inside.append(_C.get_eval_frame())
        return None

    def answer(view):
        json.dumps([1])  # library code run by the callback
        return helper(view)

    rec = Recorder(answer)
    assert _C.CompiledFunction(top, rec)(1) == top(1)
    assert rec.names == ["top", "middle", "leaf", "leaf"]
    assert seen_inside == [None] * 4  # the hook is off inside the callback


def test_frames_started_by_a_guard_are_not_hooked():
    guard_calls = []

    def guard_fn(x):
        guard_calls.append(_C.get_eval_frame())
        return leaf(x) > 0  # a Python frame inside a guard

    rec = Recorder(lambda view: (_C.GuardProgram([("load_arg", 0, 0), ("call", 0, guard_fn)], 1),
                                 view.f_code.replace(co_name="leaf_t")) if view.f_code is leaf.__code__ else None)
    cf = _C.CompiledFunction(leaf, rec)
    assert cf(1) == 2  # miss: compiles
    assert cf(2) == 3  # hit: the guard runs leaf() itself
    assert cf(3) == 4
    assert rec.names == ["leaf"]
    assert guard_calls == [None, None]


def test_compiled_callback_called_inside_the_callback_is_not_intercepted_by_the_outer_one():
    inner_rec = Recorder()
    inner = _C.CompiledFunction(middle, inner_rec)

    def answer(view):
        inner(1)  # a compiled function used by the callback itself
        return None

    outer_rec = Recorder(answer)
    _C.CompiledFunction(leaf, outer_rec)(1)
    assert outer_rec.names == ["leaf"]
    assert inner_rec.names == ["middle", "leaf"]
    assert_hook_off()


def gen(n):
    for i in range(n):
        yield leaf(i)


def make_gen(n):
    return gen(n)


def consume(n):
    return sum(gen(n))


def test_generator_frames_are_never_intercepted_but_frames_they_start_are():
    rec = Recorder()
    g = _C.CompiledFunction(make_gen, rec)(3)
    assert rec.names == ["make_gen"]  # the generator function's call is not intercepted
    assert list(g) == [1, 2, 3]  # consumed outside: nothing hooked
    assert rec.names == ["make_gen"]
    rec.clear()
    assert _C.CompiledFunction(consume, rec)(3) == 6
    # consume, then each leaf the generator body calls; never `gen` (first run or resumption)
    assert rec.names == ["consume", "leaf", "leaf", "leaf"]


def test_generator_function_compiled_directly_runs_unintercepted():
    rec = Recorder(identity)
    cgen = _C.CompiledFunction(gen, rec)
    g = cgen(2)
    assert isinstance(g, types.GeneratorType)
    assert rec.names == []
    assert list(g) == [1, 2]
    assert _C.cache_entries(gen.__code__) == []


class Ready:
    def __await__(self):
        yield "suspended"
        return 10


async def coro(x):
    return leaf(x) + await Ready()


async def agen(n):
    for i in range(n):
        yield leaf(i)


async def collect_agen(n):
    return [v async for v in agen(n)]


def drive(c):
    try:
        while True:
            c.send(None)
    except StopIteration as stop:
        return stop.value


def run_coro(x):
    return drive(coro(x))


def run_agen(n):
    return drive(collect_agen(n))


def test_coroutine_and_async_generator_frames_are_never_intercepted():
    rec = Recorder()
    assert _C.CompiledFunction(run_coro, rec)(1) == 12
    assert rec.names == ["run_coro", "drive", "leaf"]
    rec.clear()
    assert _C.CompiledFunction(run_agen, rec)(2) == [1, 2]
    assert rec.names == ["run_agen", "drive", "leaf", "leaf"]
    for code in (coro.__code__, agen.__code__, collect_agen.__code__, Ready.__await__.__code__):
        assert _C.cache_entries(code) == []


def throw_into(g):
    next(g)
    return g.throw(ValueError("boom"))


def catcher():
    try:
        yield "first"
    except ValueError:
        yield leaf(41)


def test_gen_throw_through_compiled_frames():
    rec = Recorder(identity)
    cf = _C.CompiledFunction(throw_into, rec)
    assert cf(catcher()) == 42
    assert rec.names == ["throw_into", "leaf"]  # the generator resumed with throwflag is not
    rec.clear()
    assert cf(catcher()) == 42  # cache hits now
    assert rec.names == []
    assert _C.cache_entries(catcher.__code__) == []


def test_class_bodies_and_module_code_are_not_intercepted():
    def make_class():
        class Local:
            attr = leaf(1)

        exec("y = leaf(2)", {"leaf": leaf})
        return Local.attr

    rec = Recorder()
    assert _C.CompiledFunction(make_class, rec)() == 2
    assert rec.names == ["make_class", "leaf", "leaf"]


def test_lambdas_and_nested_functions_are_intercepted():
    def outer(x):
        square = lambda v: v * v  # noqa: E731

        def inner(v):
            return square(v) + 1

        return inner(x)

    rec = Recorder()
    assert _C.CompiledFunction(outer, rec)(3) == 10
    assert rec.names == ["outer", "inner", "<lambda>"]


def test_skip_answer_marks_the_code_until_reset():
    rec = Recorder(lambda view: _C.SKIP if view.f_code is leaf.__code__ else None)
    cf = _C.CompiledFunction(middle, rec)
    assert cf(1) == 4
    assert cf(1) == 4
    assert rec.names == ["middle", "leaf", "middle"]
    assert _C.is_skipped(leaf.__code__)
    assert not _C.is_skipped(middle.__code__)
    dynamo.reset()
    assert not _C.is_skipped(leaf.__code__)
    rec.clear()
    cf(1)
    assert rec.names == ["middle", "leaf"]


def test_cache_full_answer_runs_misses_of_that_callback_uncompiled_until_reset():
    full = Recorder(lambda view: _C.CACHE_FULL if view.f_code is leaf.__code__ else None)
    cf = _C.CompiledFunction(middle, full)
    assert [cf(i) for i in range(3)] == [2, 4, 6]
    assert full.names == ["middle", "leaf", "middle", "middle"]  # leaf was asked once
    assert not _C.is_skipped(leaf.__code__)
    other = Recorder()  # another callback's misses still reach it
    _C.CompiledFunction(middle, other)(1)
    assert other.names == ["middle", "leaf"]
    dynamo.reset()
    full.clear()
    cf(1)
    assert full.names == ["middle", "leaf"]


def test_transformed_code_frames_are_not_intercepted_but_frames_they_start_are():
    rec = Recorder(identity)
    cf = _C.CompiledFunction(top, rec)
    assert cf(1) == top(1)
    assert rec.names == ["top", "middle", "leaf"]  # leaf's second call hits the cache
    (entry,) = _C.cache_entries(top.__code__)
    assert _C.is_skipped(entry.code)
    rec.clear()
    assert cf(1) == top(1)
    assert rec.names == []


def test_frames_of_library_files_are_skipped_by_convert_frame(monkeypatch):
    compiled = []
    original = ConvertFrame.compile_frame

    def spy(self, frame):
        compiled.append(frame.f_code.co_name)
        return original(self, frame)

    monkeypatch.setattr(ConvertFrame, "compile_frame", spy)

    def user(x):
        return json.dumps(leaf(x))

    assert dynamo.compile(user, backend="eager")(1) == "2"
    assert compiled == ["user", "leaf"]  # json's frames reached the callback and were skipped
    assert _C.is_skipped(json.dumps.__code__)
    assert _C.cache_entries(json.dumps.__code__) == []


def test_config_skip_dirs_skips_user_files(monkeypatch, tmp_path):
    (tmp_path / "skipped_helper_mod.py").write_text("def helper(x):\n    return x * 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import skipped_helper_mod

    def user(x):
        return skipped_helper_mod.helper(x)

    with dynamo.config.patch(skip_dirs=(str(tmp_path),)):
        assert dynamo.compile(user, backend="eager")(2) == 6
    assert _C.is_skipped(skipped_helper_mod.helper.__code__)
    assert len(_C.cache_entries(user.__code__)) == 1


def test_frames_of_a_profile_function_are_not_intercepted():
    """(A trace function makes frames run as written altogether: test_hook_tracing.)"""
    traced = []

    def profiler(frame, event, arg):
        if event == "call":
            traced.append(leaf(0))  # a Python frame started by the profile function
        return None

    rec = Recorder()
    old = sys.getprofile()
    sys.setprofile(profiler)
    try:
        _C.CompiledFunction(middle, rec)(1)
    finally:
        sys.setprofile(old)
    assert rec.names == ["middle", "leaf"]
    assert traced  # the profiler ran, and its leaf() calls never reached the callback


def test_disable_inside_a_compiled_function_hides_frames():
    @dynamo.disable
    def hidden(x):
        return leaf(x)

    def outer(x):
        with dynamo.disable():
            a = middle(x)
        return a + hidden(x)

    rec = Recorder()
    assert _C.CompiledFunction(outer, rec)(1) == 6
    # outer itself, disable()'s __init__ and __exit__ frames (before and after the hook
    # went off), and the decorator's wrapper is run with the hook off as well
    user_frames = [n for n in rec.names if n in ("outer", "middle", "leaf", "hidden")]
    assert user_frames == ["outer"]
    assert_hook_off()


def test_set_eval_frame_directly_hooks_frames_started_afterwards():
    rec = Recorder()
    previous = _C.set_eval_frame(rec)
    try:
        assert _C.hook_installed()
        top(1)
    finally:
        restored = _C.set_eval_frame(previous)
    assert previous is None
    assert restored is rec
    assert rec.names == ["top", "middle", "leaf", "leaf"]
    assert_hook_off()


def test_set_eval_frame_rejects_non_callables():
    with pytest.raises(TypeError, match="callable or None"):
        _C.set_eval_frame(42)
    assert_hook_off()


def test_callback_answer_is_validated():
    for bad, error, text in [
        (42, TypeError, "must return None, SKIP, SKIP_UNHOOKED, CACHE_FULL, \\(guard, code\\), \\(guard, code, unhooked\\) or "
                        "\\(guard, code, unhooked, probe\\[, recheck\\[, part_of_caller\\]\\]\\)"),
        ((always(), leaf.__code__, False, "many"), TypeError, "integer"),
        ((always(), leaf.__code__, False, 4, "later"), TypeError, "integer"),
        ((always(), leaf.__code__, False, 4, 10, False, "more"), TypeError, "must return None, SKIP"),
        ((always(),), TypeError, "must return None, SKIP"),
        (("not a guard", leaf.__code__), TypeError, "GuardProgram"),
        ((always(), "not code"), TypeError, "code object"),
        ((always(), (lambda a, b: 0).__code__), ValueError, "argument slots"),
    ]:
        cf = _C.CompiledFunction(middle, Recorder(lambda view, bad=bad: bad))
        with pytest.raises(error, match=text):
            cf(1)
        assert_hook_off()
        assert _C.cache_entries(middle.__code__) == []


def test_callback_set_by_the_callback_or_a_guard_does_not_outlive_it():
    other = Recorder()

    def sets_and_leaves(view):
        _C.set_eval_frame(other)  # never restored
        return None

    before = sys.getrefcount(other)
    cf = _C.CompiledFunction(middle, sets_and_leaves)
    for _ in range(100):
        assert cf(1) == 4
    assert_hook_off()
    after = sys.getrefcount(other)
    assert after == before
    assert other.names == []

    def leaving_guard(x):
        _C.set_eval_frame(other)
        return True

    cf = _C.CompiledFunction(leaf, lambda view: (
        _C.GuardProgram([("load_arg", 0, 0), ("call", 0, leaving_guard)], 1), identity(view)[1]))
    for call in (lambda: cf(1), lambda: cf(x=1), lambda: _C.CompiledFunction(middle, Recorder())(1)):
        call()
        assert_hook_off()
    after = sys.getrefcount(other)
    assert after == before


def caller_name():
    return sys._getframe(1).f_code.co_name


def asks_for_its_caller():
    return caller_name()


def test_transformed_frames_link_to_the_callers_frame():
    cf = _C.CompiledFunction(asks_for_its_caller, Recorder(identity))
    for _ in range(3):  # miss, then hits: the replaced original frame never shows
        assert cf() == "asks_for_its_caller"
    assert _C.CompiledFunction(lambda: sys._getframe(1).f_code.co_name, Recorder(identity))() == \
        "test_transformed_frames_link_to_the_callers_frame"
