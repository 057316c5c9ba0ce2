"""The Python entry points over the hook: compile's forms and metadata, disable/enable, backends,
the cache (hits, reset, per-owner entries) and the recompile limit."""
import inspect
import warnings

import pytest

import dynamo
from dynamo import _C
from dynamo.convert_frame import ConvertFrame

from hook_helpers import Recorder, assert_hook_off


@pytest.fixture
def compiled_frames(monkeypatch):
    """The names of the frames dynamo's callback compiles (misses), in order."""
    names = []
    compile_frame = ConvertFrame.compile_frame

    def spy(self, frame):
        names.append(frame.f_code.co_name)
        return compile_frame(self, frame)

    monkeypatch.setattr(ConvertFrame, "compile_frame", spy)
    return names


def add(a, b=1):
    """Adds two numbers."""
    return a + b


# ---- compile's forms --------------------------------------------------------------------------

def test_compile_as_decorator_decorator_factory_and_call():
    @dynamo.compile
    def f1(x):
        return x + 1

    @dynamo.compile(backend="eager")
    def f2(x):
        return x + 2

    f3 = dynamo.compile(add, backend="eager")
    for cf in (f1, f2, f3):
        assert isinstance(cf, _C.CompiledFunction)
    assert (f1(1), f2(1), f3(1)) == (2, 3, 2)
    assert _C.cache_entries(add.__code__)[0].owner is f3._dynamo_callback
    assert_hook_off()


def test_compiling_a_compiled_function_compiles_the_original():
    once = dynamo.compile(add)
    twice = dynamo.compile(once, backend="eager")
    assert twice._dynamo_fn is add
    assert twice(1, 2) == 3


def test_wraps_metadata_is_kept():
    cf = dynamo.compile(add)
    assert cf.__name__ == "add"
    assert cf.__qualname__ == "add"
    assert cf.__doc__ == "Adds two numbers."
    assert cf.__module__ == __name__
    assert cf.__wrapped__ is add
    assert inspect.signature(cf) == inspect.signature(add)
    assert "add" in repr(cf)

    class Holder:
        @dynamo.compile
        def method(self, x: int, *, y: str = "") -> int:
            """Method doc."""
            return x

    m = Holder.__dict__["method"]
    assert m.__qualname__ == "test_wraps_metadata_is_kept.<locals>.Holder.method"
    assert m.__doc__ == "Method doc."
    assert str(inspect.signature(Holder().method)) == "(x: int, *, y: str = '') -> int"
    assert m.__annotations__ == {"x": int, "y": str, "return": int}


def test_lambdas_and_closures():
    square = dynamo.compile(lambda v: v * v)
    assert square.__name__ == "<lambda>"
    assert [square(i) for i in range(4)] == [0, 1, 4, 9]

    def make(offset):
        def shifted(v):
            return v + offset

        return dynamo.compile(shifted)

    plus1, plus10 = make(1), make(10)
    assert (plus1(1), plus10(1), plus1(2), plus10(v=2)) == (2, 11, 3, 12)


@pytest.mark.parametrize("bad", [42, "text", None.__class__, int, type("Local", (), {})])
def test_non_callables_and_classes_are_rejected(bad):
    with pytest.raises(TypeError, match="dynamo.compile takes a function, method or lambda"):
        dynamo.compile(bad)
    with pytest.raises(TypeError, match="dynamo.compile takes a function"):
        dynamo.compile(backend="eager")(bad)


def test_bad_options_are_rejected():
    with pytest.raises(TypeError, match="fullgraph"):
        dynamo.compile(add, fullgraph="yes")
    with pytest.raises(TypeError, match="dynamic"):
        dynamo.compile(add, dynamic=1.5)
    with pytest.raises(TypeError, match=r"CompiledFunction\(fn, callback\) takes"):
        _C.CompiledFunction(add, 3)


def test_unknown_backend_lists_registered_backends():
    with pytest.raises(dynamo.InvalidBackend) as info:
        dynamo.compile(add, backend="no-such-backend")
    message = str(info.value)
    assert "'no-such-backend'" in message
    for name in dynamo.list_backends():
        assert name in message
    assert "eager" in dynamo.list_backends() and "numpy" in dynamo.list_backends()
    assert isinstance(info.value, ValueError)
    with pytest.raises(dynamo.InvalidBackend):
        dynamo.compile(backend="no-such-backend")
    with pytest.raises(dynamo.InvalidBackend):
        dynamo.enable("no-such-backend")


def test_callable_backend_and_options_share_or_separate_callbacks():
    def my_backend(gm, example_inputs):
        return gm.forward

    a = dynamo.compile(add, backend=my_backend)
    b = dynamo.compile(lambda x: x, backend=my_backend)
    c = dynamo.compile(add, backend=my_backend, fullgraph=True)
    assert a._dynamo_callback is b._dynamo_callback
    assert a._dynamo_callback is not c._dynamo_callback
    assert isinstance(a._dynamo_callback, ConvertFrame)


# ---- disable / enable ---------------------------------------------------------------------------

def inner(x):
    return x * 2


def test_disable_as_decorator_and_context(compiled_frames):
    @dynamo.disable
    def hidden(x):
        """Hidden doc."""
        return inner(x)

    assert hidden.__name__ == "hidden" and hidden.__doc__ == "Hidden doc."

    @dynamo.compile(backend="eager")
    def outer(x):
        with dynamo.disable():
            a = inner(x)
        b = hidden(x)
        return a + b + inner(x)

    assert outer(1) == 6
    assert compiled_frames == ["outer", "inner"]  # only the call outside the disabled parts
    assert len(_C.cache_entries(inner.__code__)) == 1
    assert _C.cache_entries(inner.__code__)[0].hits == 0
    assert_hook_off()


def test_disable_at_top_level_is_harmless():
    with dynamo.disable():
        assert _C.get_eval_frame() is None
        assert dynamo.compile(inner)(2) == 4
    assert_hook_off()


def test_enable_context_compiles_frames_started_inside(compiled_frames):
    def outer(x):
        return inner(x) + 1

    with dynamo.enable("eager"):
        assert _C.hook_installed()
        assert outer(1) == 3
        assert outer(2) == 5
    assert_hook_off()
    assert compiled_frames[:2] == ["outer", "inner"]
    assert compiled_frames.count("outer") == 1 and compiled_frames.count("inner") == 1
    assert _C.cache_entries(outer.__code__)[0].hits == 1
    # the block's own frame is already running: never compiled
    assert compiled_frames.count("test_enable_context_compiles_frames_started_inside") == 0


def test_enable_and_disable_nest():
    def outer(x):
        return inner(x)

    with dynamo.enable("eager"):
        with dynamo.disable():
            assert not _C.hook_installed()
            outer(1)
        assert _C.hook_installed()
        with dynamo.enable("numpy"):
            outer(1)
        outer(1)
    assert_hook_off()
    owners = {entry.owner.backend_name for entry in _C.cache_entries(outer.__code__)}
    assert owners == {"eager", "numpy"}


def test_nested_compiled_functions_with_different_backends_keep_separate_entries():
    def shared(x):
        return x + 1

    eager_shared = dynamo.compile(shared, backend="eager")

    @dynamo.compile(backend="numpy")
    def outer(x):
        # shared's frame is intercepted by numpy's callback; eager_shared brings its own
        return shared(x) + eager_shared(x)

    for _ in range(3):
        assert outer(1) == 4
    entries = _C.cache_entries(shared.__code__)
    assert {e.owner.backend_name for e in entries} == {"eager", "numpy"}
    assert sorted(e.hits for e in entries) == [2, 2]
    assert eager_shared(5) == 6
    assert_hook_off()


# ---- the cache --------------------------------------------------------------------------------------

def test_cache_hit_does_not_call_the_callback(compiled_frames):
    cf = dynamo.compile(add, backend="eager")
    for i in range(10):
        assert cf(i, 2) == i + 2  # fast path
        assert cf(i) == i + 1  # frame hook (default used)
        assert cf(a=i, b=3) == i + 3  # frame hook (keywords)
    assert compiled_frames == ["add"]
    (entry,) = _C.cache_entries(add.__code__)
    assert entry.hits == 29
    assert "add" in repr(entry)


def test_guard_failure_recompiles_and_most_recent_entry_comes_first(compiled_frames):
    cf = dynamo.compile(add, backend="eager")
    assert cf(1, 2) == 3
    assert cf(1.5, 2) == 3.5
    assert cf("a", "b") == "ab"
    assert compiled_frames == ["add"] * 3
    entries = _C.cache_entries(add.__code__)
    assert [str(e.guard.info[1]) for e in entries] == [
        "type(L['a']) is str", "type(L['a']) is float", "type(L['a']) is int"]
    assert cf(2, 2) == 4  # hit on the last entry moves it to the front
    assert [e.hits for e in _C.cache_entries(add.__code__)] == [1, 0, 0]
    assert str(_C.cache_entries(add.__code__)[0].guard.info[1]) == "type(L['a']) is int"
    assert compiled_frames == ["add"] * 3


def test_reset_clears_entries_and_skip_marks(compiled_frames):
    import json

    @dynamo.compile(backend="eager")
    def user(x):
        return json.dumps(add(x))

    user(1)
    user(1)
    assert compiled_frames == ["user", "add"]
    assert _C.is_skipped(json.dumps.__code__)
    transformed = _C.cache_entries(add.__code__)[0].code
    assert _C.is_skipped(transformed)
    dynamo.reset()
    assert _C.cache_entries(add.__code__) == []
    assert _C.cache_entries(user._dynamo_fn.__code__) == []
    assert not _C.is_skipped(json.dumps.__code__)
    assert not _C.is_skipped(transformed)
    user(1)
    assert compiled_frames == ["user", "add", "user", "add"]


def test_clear_cache_and_mark_skip_for_one_code_object():
    rec = Recorder()
    cf = _C.CompiledFunction(add, rec)
    _C.mark_skip(add.__code__)
    assert cf(1) == 2
    assert rec.names == []
    _C.clear_cache(add.__code__)
    assert not _C.is_skipped(add.__code__)
    assert cf(1) == 2
    assert rec.names == ["add"]
    with pytest.raises(TypeError, match="expected a code object"):
        _C.cache_entries(add)
    with pytest.raises(TypeError, match="expected a code object"):
        _C.mark_skip("add")


def test_cache_size_limit_logs_once_and_runs_the_original_after(compiled_frames, caplog):
    def poly(x):
        return x * 2

    cf = dynamo.compile(poly, backend="eager")
    with dynamo.config.patch(cache_size_limit=2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert cf(1) == 2
            assert cf(1.5) == 3.0
            assert caught == []
            assert cf("a") == "aa"  # third type: over the limit
            assert cf([1]) == [1, 1]
            assert cf((2,)) == (2, 2)
            assert cf(3) == 6 and cf(2.5) == 5.0  # the cached versions still serve
    assert compiled_frames == ["poly", "poly"]
    assert len(_C.cache_entries(poly.__code__)) == 2
    assert caught == []  # logged: a Python warning would reach the program
    (record,) = [r for r in caplog.records if "cache_size_limit" in r.getMessage()]
    assert record.levelname == "WARNING" and record.name == "dynamo"
    message = record.getMessage()
    assert "poly" in message
    assert "cache_size_limit (2)" in message
    assert "type(L['x']) is" in message  # the guard that failed
    # reset forgets the warning too
    dynamo.reset()
    caplog.clear()
    with dynamo.config.patch(cache_size_limit=1):
        cf(1)
        cf("b")
    assert [r for r in caplog.records if "poly" in r.getMessage()]


def test_cache_entries_belong_to_their_owner():
    first, second = Recorder(lambda v: (_C.GuardProgram([], 1), v.f_code.replace(co_name="t1"))), Recorder()
    assert _C.CompiledFunction(inner, first)(1) == 2
    assert _C.CompiledFunction(inner, second)(1) == 2  # first's entry does not serve second
    assert second.names == ["inner"]
    (entry,) = _C.cache_entries(inner.__code__)
    assert entry.owner is first
    assert entry.guard.nregs == 1 and entry.guard.instructions == []


def test_functions_sharing_code_share_entries_but_not_closures():
    def make(k):
        def f(x):
            return x * k

        return f

    fns = [dynamo.compile(make(k), backend="eager") for k in range(5)]
    assert [f(2) for f in fns] == [0, 2, 4, 6, 8]
    assert [f(x=3) for f in fns] == [0, 3, 6, 9, 12]
    (entry,) = _C.cache_entries(fns[0]._dynamo_fn.__code__)
    assert entry.hits == 9


def test_functions_sharing_code_with_other_globals():
    import types

    ns1 = {"OFFSET": 10}
    exec("def g(x):\n    return x + OFFSET\n", ns1)
    ns2 = {"OFFSET": 20, "__builtins__": ns1["__builtins__"]}
    twin = types.FunctionType(ns1["g"].__code__, ns2)  # same code object, other globals
    g1, g2 = dynamo.compile(ns1["g"], backend="eager"), dynamo.compile(twin, backend="eager")
    assert (g1(1), g2(1), g1(2), g2(x=2), g1(x=3)) == (11, 21, 12, 22, 13)
    (entry,) = _C.cache_entries(twin.__code__)
    assert entry.hits == 4


def test_changing_a_functions_code_after_compile():
    def f(x):
        return x + 1

    def g(x):
        return x * 10

    cf = dynamo.compile(f, backend="eager")
    assert cf(1) == 2
    f.__code__ = g.__code__
    assert cf(2) == 20
    assert cf(x=3) == 30


# ---- guards and code that change the cache while it is in use ------------------------------------

def twice(x):
    return x * 2


def test_guard_clearing_the_cache_during_lookup():
    from dynamo.bytecode_compat import flatten_signature

    def clearing(x):
        if x == 7:
            _C.clear_cache(twice.__code__)
        return type(x) is int

    clearing_entry = (_C.GuardProgram([("load_arg", 0, 0), ("call", 0, clearing)], 1),
                      flatten_signature(twice.__code__))
    answers = [
        clearing_entry,
        (_C.GuardProgram([("load_arg", 0, 0), ("type_is", 0, float)], 1), flatten_signature(twice.__code__)),
    ]
    cf = _C.CompiledFunction(twice, lambda view: answers.pop(0) if answers else clearing_entry)
    assert cf(1) == 2  # entry A
    assert cf(1.5) == 3.0  # A fails: entry B in front, [B, A]
    assert cf(7) == 14  # B fails, A empties the list while it is checked, then passes
    assert _C.cache_entries(twice.__code__) == []
    assert cf(x=7) == 14  # a miss now: the callback answers with A again
    assert cf(x=7) == 14  # through the frame hook: A empties the list and passes
    assert cf(8) == 16 and cf(9) == 18
    assert len(_C.cache_entries(twice.__code__)) == 1


def test_reset_inside_a_guard_and_inside_compiled_code(compiled_frames):
    calls = []

    def resetting(x):
        calls.append(x)
        dynamo.reset()
        return True

    from dynamo.bytecode_compat import flatten_signature

    cf = _C.CompiledFunction(twice, lambda view: (
        _C.GuardProgram([("load_arg", 0, 0), ("call", 0, resetting)], 1), flatten_signature(twice.__code__)))
    assert cf(1) == 2
    assert cf(2) == 4  # hit: the guard drops the whole cache, the entry still runs
    assert cf(x=3) == 6  # compiled again
    assert calls == [2]

    @dynamo.compile(backend="eager")
    def resets_itself(x):
        dynamo.reset()
        return twice(x)

    for i in range(3):
        assert resets_itself(i) == 2 * i
        assert resets_itself(x=i) == 2 * i
    assert_hook_off()


def test_compiling_inside_a_guard():
    inner_cf = dynamo.compile(twice, backend="eager")
    seen = []

    def compiles(x):
        seen.append(inner_cf(x))  # compiles twice() while twice's cache is being checked
        return True

    from dynamo.bytecode_compat import flatten_signature

    cf = _C.CompiledFunction(twice, lambda view: (
        _C.GuardProgram([("load_arg", 0, 0), ("call", 0, compiles)], 1), flatten_signature(twice.__code__)))
    assert cf(1) == 2
    assert cf(2) == 4
    assert cf(2.5) == 5.0
    assert seen[:2] == [4, 5.0]
    assert len(_C.cache_entries(twice.__code__)) >= 2
    assert_hook_off()


def test_code_objects_dying_with_cache_entries():
    import gc

    for i in range(50):
        ns = {}
        exec(f"def make():\n    k = {i}\n    def f(x):\n        return x + k\n    return f\n", ns)
        cf = dynamo.compile(ns["make"](), backend="eager")
        assert cf(1) == 1 + i and cf(x=2) == 2 + i
        del ns, cf
        if i % 10 == 0:
            gc.collect()
    gc.collect()
    dynamo.reset()  # the states of dead code objects are gone from reset's list
    assert dynamo.compile(twice)(2) == 4
