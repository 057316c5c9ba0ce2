"""Transformed code replaces the original and receives the right argument slots, on the first
call (miss) and on hits, through the compiled function's fast path and through the frame hook.

The callbacks here answer with the code of a *different* function of the same argument layout,
which records what it receives, so a result of "repl" proves that the replacement ran.
"""
import inspect

import pytest

import dynamo
from dynamo import _C
from dynamo.bytecode_compat import flatten_signature
from dynamo.convert_frame import CompiledFrame, ConvertFrame

from hook_helpers import Counter, assert_hook_off, replacing

CALLS = []  # what replacement code received, one tuple of argument slots per call
PATHS = []  # per guard run: "fast" (before any frame, hook not yet installed) or "hook"


def path_witness():
    PATHS.append("hook" if _C.hook_installed() else "fast")
    return True


def witnessed_guard():
    return _C.GuardProgram([("call_many", path_witness, ())], 1)


@pytest.fixture(autouse=True)
def clean_records():
    CALLS.clear()
    PATHS.clear()
    yield
    CALLS.clear()
    PATHS.clear()
    assert_hook_off()


# ---- argument layouts: original, replacement (flat slots, in slot order) ----------------------

def f_pos(a, b):
    return ("orig", a, b)


def r_pos(a, b):
    CALLS.append((a, b))
    return "repl"


def f_defaults(a, b=5):
    return ("orig", a, b)


def f_posonly(a, b, /, c):
    return ("orig", a, b, c)


def r_three(a, b, c):
    CALLS.append((a, b, c))
    return "repl"


def f_varargs(a, *args):
    return ("orig", a, args)


def f_varkw(a, **kw):
    return ("orig", a, kw)


def f_kwonly(a, *, k, m=3):
    return ("orig", a, k, m)


def f_all(a, b=2, /, c=3, *args, d, e=5, **kw):
    return ("orig", a, b, c, d, e, args, kw)


def r_all(a, b, c, d, e, args, kw):  # slots: positional, keyword-only, *args, **kwargs
    CALLS.append((a, b, c, d, e, args, kw))
    return "repl"


def f_none():
    return ("orig",)


def r_none():
    CALLS.append(())
    return "repl"


f_lambda = lambda a, b=1: ("orig", a, b)  # noqa: E731
r_lambda = lambda a, b: (CALLS.append((a, b)), "repl")[1]  # noqa: E731

LAYOUTS = [
    # id, original, replacement, args, kwargs, slots received, fast path on a hit
    ("positional", f_pos, r_pos, (1, 2), {}, (1, 2), True),
    ("keyword", f_pos, r_pos, (1,), {"b": 2}, (1, 2), True),
    ("all-keyword", f_pos, r_pos, (), {"b": 2, "a": 1}, (1, 2), True),
    ("default-used", f_defaults, r_pos, (1,), {}, (1, 5), True),
    ("default-given", f_defaults, r_pos, (1, 6), {}, (1, 6), True),
    ("positional-only", f_posonly, r_three, (1, 2), {"c": 3}, (1, 2, 3), True),
    ("varargs", f_varargs, r_pos, (1, 2, 3), {}, (1, (2, 3)), False),
    ("varargs-empty", f_varargs, r_pos, (1,), {}, (1, ()), False),
    ("varkw", f_varkw, r_pos, (1,), {"x": 2, "y": 3}, (1, {"x": 2, "y": 3}), False),
    ("kwonly", f_kwonly, r_three, (1,), {"k": 2}, (1, 2, 3), False),
    ("kwonly-given", f_kwonly, r_three, (1,), {"m": 4, "k": 2}, (1, 2, 4), False),
    ("everything", f_all, r_all, (1, 7, 8, 9), {"d": 4, "z": 0}, (1, 7, 8, 4, 5, (9,), {"z": 0}), False),
    ("everything-defaults", f_all, r_all, (1,), {"d": 4}, (1, 2, 3, 4, 5, (), {}), False),
    ("no-arguments", f_none, r_none, (), {}, (), True),
    ("lambda", f_lambda, r_lambda, (1, 2), {}, (1, 2), True),
    ("lambda-default", f_lambda, r_lambda, (1,), {}, (1, 1), True),
]


@pytest.mark.parametrize("original, replacement, args, kwargs, slots, fast",
                         [case[1:] for case in LAYOUTS], ids=[case[0] for case in LAYOUTS])
def test_replacement_receives_the_argument_slots(original, replacement, args, kwargs, slots, fast):
    callback = Counter(replacing({original: replacement}, guard=witnessed_guard))
    cf = _C.CompiledFunction(original, callback)
    # miss: the callback answers, the replacement runs at once
    assert cf(*args, **kwargs) == "repl"
    assert CALLS == [slots]
    assert callback.calls == 1
    assert PATHS == []  # nothing cached yet: no guard ran
    # hit: no callback, the replacement runs again, through the fast path when the call binds
    # to the positional slots (keywords, defaults), through the frame hook otherwise (*args,
    # **kwargs, keyword-only parameters)
    assert cf(*args, **kwargs) == "repl"
    assert CALLS == [slots, slots]
    assert callback.calls == 1
    assert PATHS == ["fast" if fast else "hook"]
    # a frame started inside a compiled function: always the frame hook
    outer = _C.CompiledFunction(lambda: original(*args, **kwargs), callback)
    assert outer() == "repl"
    assert CALLS == [slots] * 3
    assert callback.calls == 2  # the lambda's frame (the callback runs it as it is)
    assert PATHS[-1] == "hook"
    # uncompiled, nothing changed
    assert original(*args, **kwargs)[0] == "orig"
    (entry,) = _C.cache_entries(original.__code__)
    assert entry.hits == 2


def test_set_eval_frame_replaces_frames_started_afterwards():
    callback = Counter(replacing({f_all: r_all}))
    previous = _C.set_eval_frame(callback)
    try:
        results = [f_all(1, d=4), f_all(1, 2, 3, 4, d=0, q=1)]
    finally:
        _C.set_eval_frame(previous)
    assert results == ["repl", "repl"]
    assert CALLS == [(1, 2, 3, 4, 5, (), {}), (1, 2, 3, 0, 5, (4,), {"q": 1})]
    assert callback.calls == 1
    assert f_all(1, d=4)[0] == "orig"


def test_replacement_is_used_when_the_guard_passes_and_the_original_otherwise():
    def int_guard():
        return _C.GuardProgram([("load_arg", 0, 0), ("type_is", 0, int)], 1)

    callback = Counter(lambda view: (int_guard(), flatten_signature(r_pos.__code__))
                       if type(view.f_args[0]) is int else None)
    cf = _C.CompiledFunction(f_pos, callback)
    assert cf(1, 2) == "repl"
    assert cf(1.0, 2) == ("orig", 1.0, 2)  # guard fails, callback says run the original
    assert cf(3, 4) == "repl"
    assert cf(b=4, a=3) == "repl"
    assert callback.calls == 2
    assert CALLS == [(1, 2), (3, 4), (3, 4)]


# ---- closures, cells, nonlocal ------------------------------------------------------------

def make_scaled(scale):
    def scaled(x):
        return ("orig", x * scale)

    return scaled


def make_scaled_replacement(scale):
    def scaled(x):  # same free variable: the replacement reads the original's cell
        CALLS.append((x, scale))
        return "repl"

    return scaled


def test_replacement_reads_the_free_variables_of_the_original():
    replacement = make_scaled_replacement(None)
    ten, hundred = make_scaled(10), make_scaled(100)
    callback = Counter(lambda view: (_C.GuardProgram([], 1), flatten_signature(replacement.__code__)))
    assert _C.CompiledFunction(ten, callback)(1) == "repl"
    assert _C.CompiledFunction(hundred, callback)(2) == "repl"  # same code, other closure: hit
    assert _C.CompiledFunction(ten, callback)(x=3) == "repl"
    assert callback.calls == 1
    assert CALLS == [(1, 10), (2, 100), (3, 10)]


def make_counter():
    count = 0

    def bump(step):
        nonlocal count
        count += step
        return count

    def read():
        return count

    return bump, read


def make_counter_replacement():
    count = 0

    def bump(step):
        nonlocal count
        count += 10 * step
        return count

    return bump


def test_transformed_code_writes_the_original_cells():
    bump, read = make_counter()
    replacement = make_counter_replacement()
    callback = Counter(lambda view: (_C.GuardProgram([], 1), flatten_signature(replacement.__code__)))
    cf = _C.CompiledFunction(bump, callback)
    assert cf(1) == 10
    assert cf(2) == 30
    assert cf(step=3) == 60
    assert read() == 60
    assert bump(1) == 61  # the plain function shares the cell


def f_arg_cell(x, y):
    def inner():
        return x + y

    y += 1  # written after capture: the cell sees it
    return inner


def r_arg_cell(x, y):
    def inner():
        return ("repl", x, y)

    CALLS.append((x, y))
    return inner


def test_argument_captured_by_an_inner_function():
    callback = Counter(replacing({f_arg_cell: r_arg_cell}))
    cf = _C.CompiledFunction(f_arg_cell, callback)
    assert cf(1, 2)() == ("repl", 1, 2)
    assert cf(3, y=4)() == ("repl", 3, 4)
    assert cf(5, 6)() == ("repl", 5, 6)
    assert CALLS == [(1, 2), (3, 4), (5, 6)]
    # the identity transformation keeps cell semantics
    dynamo.reset()
    compiled = dynamo.compile(f_arg_cell, backend="eager")
    assert compiled(1, 2)() == 4
    assert compiled(1, 2)() == 4
    assert compiled(x=1, y=5)() == 7


def make_cell_and_free(offset):
    def f(x):
        def inner():
            return x + offset

        return inner

    return f


def make_cell_and_free_replacement(offset):
    def f(x):
        def inner():
            return ("repl", x, offset)

        return inner

    return f


def test_argument_cells_and_free_variables_together():
    original = make_cell_and_free(100)
    replacement = make_cell_and_free_replacement(None)
    callback = Counter(replacing({original: replacement}))
    cf = _C.CompiledFunction(original, callback)
    assert cf(1)() == ("repl", 1, 100)
    assert cf(2)() == ("repl", 2, 100)
    assert cf(x=3)() == ("repl", 3, 100)
    dynamo.reset()
    assert dynamo.compile(original, backend="eager")(1)() == 101


# ---- methods --------------------------------------------------------------------------------

class Box:
    def __init__(self, v):
        self.v = v

    def scaled(self, k):
        return ("orig", self.v * k)

    @staticmethod
    def static(a, b):
        return ("orig", a, b)

    @classmethod
    def klass(cls, a):
        return ("orig", cls, a)


def r_method(self, k):
    CALLS.append((self, k))
    return "repl"


def r_klass(cls, a):
    CALLS.append((cls, a))
    return "repl"


def test_compiled_function_in_a_class_body_binds_like_a_method():
    callback = Counter(replacing({Box.scaled: r_method}, guard=witnessed_guard))

    class Sub(Box):
        scaled = _C.CompiledFunction(Box.scaled, callback)

    box = Sub(3)
    assert box.scaled(2) == "repl"
    assert box.scaled(4) == "repl"  # PyMethod -> the compiled function's fast path
    assert box.scaled(k=5) == "repl"
    assert Sub.scaled(box, 6) == "repl"
    assert CALLS == [(box, 2), (box, 4), (box, 5), (box, 6)]
    assert PATHS == ["fast", "fast", "fast"]  # a keyword is bound before any frame too
    assert callback.calls == 1


def test_bound_method_compiled():
    callback = Counter(replacing({Box.scaled: r_method}))
    box = Box(3)
    cf = _C.CompiledFunction(box.scaled, callback)  # not a function: the frame hook does it
    assert cf(2) == "repl"
    assert cf(k=4) == "repl"
    assert CALLS == [(box, 2), (box, 4)]
    assert callback.calls == 1


@pytest.fixture
def dynamo_replaces(monkeypatch):
    """Make dynamo.compile's identity transformation answer with replacement code:
    {original function: replacement function}; dynamo's own guards are kept."""
    mapping = {}
    compile_frame = ConvertFrame.compile_frame

    def replacing_compile_frame(self, frame):
        compiled = compile_frame(self, frame)
        for original, replacement in mapping.items():
            if frame.f_code is original.__code__:
                return CompiledFrame(compiled.guards, flatten_signature(replacement.__code__))
        return compiled

    monkeypatch.setattr(ConvertFrame, "compile_frame", replacing_compile_frame)
    return mapping


def test_dynamo_compile_on_methods_static_and_class_methods(dynamo_replaces):
    dynamo_replaces.update({Box.scaled: r_method, Box.static: r_pos, Box.klass.__func__: r_klass})

    class Compiled(Box):
        scaled = dynamo.compile(Box.scaled, backend="eager")
        static = dynamo.compile(Box.__dict__["static"], backend="eager")
        klass = dynamo.compile(Box.__dict__["klass"], backend="eager")

    box = Compiled(2)
    assert isinstance(Compiled.__dict__["static"], staticmethod)
    assert isinstance(Compiled.__dict__["klass"], classmethod)
    for _ in range(2):  # miss, then hit
        assert box.scaled(5) == "repl"
        assert box.static(1, 2) == "repl"
        assert Compiled.static(3, b=4) == "repl"
        assert box.klass(7) == "repl"
        assert Compiled.klass(a=8) == "repl"
    assert CALLS == [(box, 5), (1, 2), (3, 4), (Compiled, 7), (Compiled, 8)] * 2
    bound = dynamo.compile(box.scaled, backend="eager")
    assert bound.__self__ is box
    assert bound(9) == "repl"
    assert CALLS[-1] == (box, 9)


def test_decorating_methods_in_a_class_body(dynamo_replaces):
    class Point:
        def __init__(self, x):
            self.x = x

        @dynamo.compile(backend="eager")
        def shifted(self, dx=1):
            return ("orig", self.x + dx)

        @staticmethod
        @dynamo.compile(backend="eager")
        def origin(scale):
            return ("orig", scale)

        @classmethod
        @dynamo.compile(backend="eager")
        def make(cls, x):
            return cls(x)

    point = Point.make(3)
    assert type(point) is Point and point.x == 3
    assert point.shifted() == ("orig", 4)
    assert point.shifted(dx=2) == ("orig", 5)
    assert Point.origin(2) == ("orig", 2)
    dynamo.reset()
    dynamo_replaces[Point.shifted._dynamo_fn] = r_method
    assert point.shifted(7) == "repl"
    assert point.shifted(dx=8) == "repl"
    assert point.shifted() == "repl"
    assert CALLS == [(point, 7), (point, 8), (point, 1)]


def test_dynamo_compile_replacement_through_fast_path_and_hook(dynamo_replaces):
    dynamo_replaces[f_all] = r_all
    dynamo_replaces[f_pos] = r_pos
    cf_all = dynamo.compile(f_all, backend="eager")
    cf_pos = dynamo.compile(f_pos, backend="eager")

    @dynamo.compile(backend="eager")
    def outer(x):
        return f_pos(x, x), f_all(x, d=x)

    for _ in range(3):
        assert cf_pos(1, 2) == "repl"
        assert cf_pos(b=2, a=1) == "repl"
        assert cf_all(1, d=4) == "repl"
        assert outer(5) == ("repl", "repl")
    assert CALLS == [(1, 2), (1, 2), (1, 2, 3, 4, 5, (), {}), (5, 5), (5, 2, 3, 5, 5, (), {})] * 3
    assert [e.hits for e in _C.cache_entries(f_pos.__code__)] == [8]  # 9 calls, 1 miss
    assert [e.hits for e in _C.cache_entries(f_all.__code__)] == [5]
    # a different argument type fails the type guard: compiled again, a second entry
    assert cf_pos(1.5, 2) == "repl"
    assert len(_C.cache_entries(f_pos.__code__)) == 2


def test_signature_of_the_original_is_what_callers_see():
    def f(a, b=2, *args, c, **kw):
        return a

    cf = dynamo.compile(f, backend="eager")
    with pytest.raises(TypeError, match="required keyword-only argument: 'c'"):
        cf(1)
    with pytest.raises(TypeError, match="multiple values for argument 'a'"):
        cf(1, a=2, c=3)
    assert cf(1, c=3) == 1
    with pytest.raises(TypeError, match="required keyword-only argument: 'c'"):
        cf(1)  # after a cache entry exists too
    assert inspect.signature(cf) == inspect.signature(f)


# ---- more shapes of frames --------------------------------------------------------------------

def test_mutable_default_is_the_same_object_in_the_transformed_code():
    def collect(x, acc=[]):  # noqa: B006  (shared on purpose)
        acc.append(x)
        return acc

    cf = dynamo.compile(collect, backend="eager")
    first = cf(1)
    assert cf(2) is first and cf(x=3) is first
    assert first == [1, 2, 3] and collect.__defaults__[0] is first


def test_custom_builtins_are_those_of_the_function():
    namespace = {"__builtins__": {"len": lambda v: 42}}
    exec("def f(x):\n    return len(x)\n", namespace)
    cf = dynamo.compile(namespace["f"], backend="eager")
    assert [cf([1]), cf([1]), cf(x=[1])] == [42, 42, 42]
    (entry,) = _C.cache_entries(namespace["f"].__code__)
    assert entry.hits == 2


class Base:
    def describe(self, x):
        return ("base", x)


def test_zero_argument_super_and_class_cell_in_compiled_methods(dynamo_replaces):
    class Child(Base):
        @dynamo.compile(backend="eager")
        def describe(self, x):
            return ("child",) + super().describe(x) + (__class__.__name__,)

        @dynamo.compile(backend="eager")
        def __init__(self, v=0):
            self.v = v

        @dynamo.compile(backend="eager")
        def __call__(self, k):
            return self.v * k

    child = Child(3)
    for _ in range(3):
        assert child.describe(1) == ("child", "base", 1, "Child")
        assert child.describe(x=2) == ("child", "base", 2, "Child")
        assert Child(v=2)(5) == 10 and child(k=2) == 6


def test_exec_of_function_code_inside_a_compiled_function():
    def no_args():
        return "ran"

    seen = {}

    @dynamo.compile(backend="eager")
    def runs_exec():
        exec(no_args.__code__, {"seen": seen}, seen)  # an optimized code object run by exec
        return eval("1 + 1")

    for _ in range(3):
        assert runs_exec() == 2
    assert_hook_off()


def test_compiling_builtins_and_callable_objects():
    class Callable:
        def __call__(self, x):
            return x + 1

    assert dynamo.compile(len)([1, 2]) == 2
    assert dynamo.compile(Callable())(1) == 2
    assert dynamo.compile(Callable().__call__)(x=2) == 3
