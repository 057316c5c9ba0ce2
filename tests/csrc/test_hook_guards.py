"""The GuardProgram VM: every instruction, failed checks vs errors, check()'s failing index, and
bad programs rejected at construction (never a crash at run time)."""
import builtins

import pytest

from dynamo import _C
from dynamo.guards import GuardKind, GuardSet, failure_reason
from dynamo.sources import AttrSource, ClosureSource, GlobalSource, ItemSource, LocalSource

G = _C.GuardProgram
BUILTINS = builtins.__dict__


def cells(*values):
    def make(*vs):
        a, b, c = (vs + (None,) * 3)[:3]
        return (lambda: (a, b, c)).__closure__

    return make(*values)


def empty_cell():
    def f():
        return x  # noqa: F821  (x is assigned below: its cell is empty until then)

    x = 1
    del x
    return f.__closure__


class Obj:
    attr = 5

    @property
    def broken(self):
        raise ZeroDivisionError("property failed")


def test_empty_program_passes():
    assert G([], 0).check((), {}) == -1
    assert G([], 1).check((1, 2), {}) == -1


def test_load_arg_and_type_is():
    prog = G([("load_arg", 0, 0), ("type_is", 0, int), ("load_arg", 1, 1), ("type_is", 1, str)], 2)
    assert prog.check((1, "a"), {}) == -1
    assert prog.check((True, "a"), {}) == 1  # type(True) is bool, not int
    assert prog.check((1, b"a"), {}) == 3
    assert prog.check((1,), {}) == 2  # missing slot: the load fails
    assert prog.nregs == 2
    assert prog.instructions == [("load_arg", 0, 0), ("type_is", 0, int), ("load_arg", 1, 1), ("type_is", 1, str)]
    assert repr(prog) == "GuardProgram(4 checks, 2 registers)"


def test_load_global_with_builtins_fallback():
    prog = G([("load_global", 0, "len"), ("id_is", 0, len)], 1)
    assert prog.check((), {}, BUILTINS) == -1  # from builtins
    assert prog.check((), {"len": len}) == -1  # from globals
    assert prog.check((), {"len": 3}, BUILTINS) == 1  # globals shadow builtins
    assert prog.check((), {}) == 0  # nowhere: a failed load, not an error
    assert prog.check((), {}, {}) == 0
    assert prog.check((), {}, None) == 0


def test_load_cell():
    prog = G([("load_cell", 0, 1), ("equals", 0, 20)], 1)
    assert prog.check((), {}, None, cells(10, 20)) == -1
    assert prog.check((), {}, None, cells(10, 21)) == 1
    assert prog.check((), {}, None, cells(10)[:1]) == 0  # no such cell
    assert prog.check((), {}, None, None) == 0  # no closure
    assert G([("load_cell", 0, 0)], 1).check((), {}, None, empty_cell()) == 0  # empty cell


def test_load_attr_missing_is_a_failed_check_not_an_error():
    prog = G([("load_arg", 0, 0), ("load_attr", 1, 0, "attr"), ("equals", 1, 5)], 2)
    assert prog.check((Obj(),), {}) == -1
    assert prog.check((object(),), {}) == 1  # AttributeError: the load fails
    broken = G([("load_arg", 0, 0), ("load_attr", 0, 0, "broken")], 1)
    with pytest.raises(ZeroDivisionError, match="property failed"):
        broken.check((Obj(),), {})  # any other exception is an error


def test_load_item_missing_is_a_failed_check_not_an_error():
    prog = G([("load_arg", 0, 0), ("load_item", 0, 0, "k"), ("load_item", 0, 0, 1), ("equals", 0, "x")], 1)
    assert prog.check(({"k": [0, "x"]},), {}) == -1
    assert prog.check(({"j": [0, "x"]},), {}) == 1  # KeyError
    assert prog.check(({"k": [0]},), {}) == 2  # IndexError
    assert prog.check(({"k": [0, "y"]},), {}) == 3
    with pytest.raises(TypeError):
        prog.check((5,), {})  # not subscriptable: an error, not a failed check


def test_type_is_id_is_equals():
    sentinel = object()
    prog = G([("load_arg", 0, 0), ("type_is", 0, list), ("load_arg", 1, 1), ("id_is", 1, sentinel),
              ("load_arg", 2, 2), ("equals", 2, 2.5)], 3)
    assert prog.check(([], sentinel, 2.5), {}) == -1
    assert prog.check(((), sentinel, 2.5), {}) == 1
    assert prog.check(([], object(), 2.5), {}) == 3
    assert prog.check(([], sentinel, 2.0), {}) == 5


def test_type_in_compares_exact_types():
    class Liar:  # claims to be a float through __class__: the check reads the real type
        __class__ = float  # type: ignore[assignment]

    class MyFloat(float):
        pass

    prog = G([("load_arg", 0, 0), ("type_in", 0, (float, complex))], 1)
    assert prog.check((1.5,), {}) == -1 and prog.check((2j,), {}) == -1
    for other in (1, True, MyFloat(1.0), Liar(), None):
        assert prog.check((other,), {}) == 1, other
    assert G([("load_arg", 0, 0), ("type_in", 0, ())], 1).check((1.0,), {}) == 1


def test_equals_error_propagates():
    class BadEq:
        def __eq__(self, other):
            raise RuntimeError("no comparing")

    prog = G([("load_arg", 0, 0), ("equals", 0, 1)], 1)
    with pytest.raises(RuntimeError, match="no comparing"):
        prog.check((BadEq(),), {})


def test_len_is():
    prog = G([("load_arg", 0, 0), ("len_is", 0, 3)], 1)
    assert prog.check(([1, 2, 3],), {}) == -1
    assert prog.check(("abcd",), {}) == 1
    assert prog.check((5,), {}) == 1  # no len(): a different kind of value

    class BadLen:
        def __len__(self):
            raise ValueError("bad len")

    with pytest.raises(ValueError, match="bad len"):
        prog.check((BadLen(),), {})


def test_call_and_call_many():
    seen = []

    def positive(x):
        seen.append(x)
        return x > 0

    prog = G([("load_arg", 0, 0), ("call", 0, positive), ("load_arg", 1, 1),
              ("call_many", lambda a, b: a < b, (0, 1)), ("call_many", lambda: [1], ())], 2)
    assert prog.check((1, 2), {}) == -1
    assert prog.check((-1, 2), {}) == 1
    assert prog.check((3, 2), {}) == 3
    assert seen == [1, -1, 3]
    assert G([("call_many", lambda: [], ())], 1).check((), {}) == 0  # falsy result fails


def test_call_exception_propagates_and_truthiness_errors_too():
    def boom(x):
        raise KeyError("not a lookup failure")

    with pytest.raises(KeyError):
        G([("load_arg", 0, 0), ("call", 0, boom)], 1).check((1,), {})

    class NoBool:
        def __bool__(self):
            raise TypeError("no truth")

    with pytest.raises(TypeError, match="no truth"):
        G([("load_arg", 0, 0), ("call", 0, lambda x: NoBool())], 1).check((1,), {})


def test_registers_are_reused_and_released():
    big = object()
    prog = G([("load_arg", 0, 0), ("load_arg", 0, 1), ("id_is", 0, big)], 1)
    assert prog.check((1, big), {}) == -1
    import sys

    before = sys.getrefcount(big)
    for _ in range(1000):
        prog.check((big, big), {})
    assert sys.getrefcount(big) == before


def test_many_registers_live_on_the_heap():
    n = 100
    program = [("load_arg", i, i) for i in range(n)] + [("equals", i, i) for i in range(n)]
    prog = G(program, n)
    assert prog.check(tuple(range(n)), {}) == -1
    assert prog.check(tuple(range(n - 1)) + (0,), {}) == 2 * n - 1


def test_check_failing_index_is_what_failure_reason_explains():
    guards = GuardSet()
    guards.add(LocalSource(0, "x"), GuardKind.TYPE_IS, int)
    guards.add(AttrSource(LocalSource(1, "o"), "attr"), GuardKind.EQUALS, 5)
    guards.add(ItemSource(LocalSource(2, "d"), "k"), GuardKind.LEN_IS, 2)
    guards.add(GlobalSource("len"), GuardKind.ID_IS, len)
    guards.add(ClosureSource(0, "c"), GuardKind.EQUALS, 10)
    prog = guards.compile()
    good = ((1, Obj(), {"k": [1, 2]}), {}, BUILTINS, cells(10))
    assert prog.check(*good) == -1
    failed = prog.check((1.0,) + good[0][1:], *good[1:])
    assert failure_reason(prog, failed) == "type(L['x']) is int"
    failed = prog.check((1, object(), {"k": [1, 2]}), *good[1:])
    assert failure_reason(prog, failed) == "L['o'].attr could not be read"
    failed = prog.check((1, Obj(), {"k": [1]}), *good[1:])
    assert failure_reason(prog, failed) == "len(L['d']['k']) == 2"
    failed = prog.check(good[0], {"len": max}, BUILTINS, cells(10))
    assert failure_reason(prog, failed) == "G['len'] is <builtin_function_or_method len>"
    failed = prog.check(good[0], {}, BUILTINS, cells(11))
    assert failure_reason(prog, failed) == "C['c'] == 10"


def test_guard_program_runs_in_the_hook_against_arguments_globals_and_closure():
    limit = 10

    def f(x, *, flag=True):
        return x if flag else limit

    prog = G([("load_arg", 0, 0), ("type_is", 0, int), ("load_arg", 1, 1), ("id_is", 1, True),
              ("load_cell", 2, 0), ("equals", 2, 10), ("load_global", 3, "len"), ("id_is", 3, len)], 4)
    calls = []

    def callback(view):
        calls.append(view.f_args)
        if prog.check(view.f_args, view.f_globals, view.f_builtins, view.f_closure) != -1:
            return None
        return prog, view.f_code.replace(co_argcount=2, co_kwonlyargcount=0)

    cf = _C.CompiledFunction(f, callback)
    assert cf(1) == 1 and cf(2) == 2 and cf(x=3, flag=True) == 3
    assert calls == [(1, True)]
    assert cf(1.5) == 1.5  # type guard fails
    assert len(calls) == 2
    (entry, *_) = _C.cache_entries(f.__code__)
    assert entry.hits == 2


# ---- bad programs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("program, nregs, error, message", [
    ([("frobnicate", 0, 0)], 1, ValueError, "unknown guard instruction 'frobnicate'"),
    ([(3, 0, 0)], 1, ValueError, "unknown guard instruction 3"),
    ([("load_arg", 1, 0)], 1, ValueError, r"guard register 1 out of range \[0, 1\)"),
    ([("load_arg", -1, 0)], 1, ValueError, "guard register -1 out of range"),
    ([("load_arg", "r0", 0)], 1, TypeError, "integer"),
    ([("load_arg", 0, -1)], 1, ValueError, "load_arg index must be >= 0"),
    ([("load_cell", 0, -2)], 1, ValueError, "load_cell index must be >= 0"),
    ([("type_is", 0, int)], 1, ValueError, "guard register 0 is read before an instruction loads it"),
    ([("load_arg", 0, 0), ("type_is", 1, int)], 2, ValueError, "register 1 is read before"),
    ([("load_attr", 0, 0, "x")], 1, ValueError, "register 0 is read before"),
    ([("load_arg", 0, 0), ("load_attr", 0, 0, 5)], 1, TypeError, "load_attr takes a str name"),
    ([("load_arg", 0, 0), ("load_attr", 0, 0)], 1, TypeError, "load_attr takes 4 elements"),
    ([("load_arg", 0, 0, 0)], 1, TypeError, "load_arg takes 3 elements"),
    ([("len_is", 0, 3)], 1, ValueError, "read before"),
    ([("type_in", 0, (int,))], 1, ValueError, "read before"),
    ([("load_arg", 0, 0), ("type_in", 0, int)], 1, TypeError, "type_in takes a tuple of types"),
    ([("load_arg", 0, 0), ("class_shape", 0, ((), ()))], 1, TypeError, r"class_shape takes \(of_type: bool"),
    ([("load_arg", 0, 0), ("class_shape", 0, (1, ()))], 1, TypeError, r"class_shape takes \(of_type: bool"),
    ([("call_many", len, (0,))], 1, ValueError, "read before"),
    ([("call_many", len, 0)], 1, TypeError, r"call_many takes \(op, fn, \(registers...\)\)"),
    ([("load_arg", 0, 0), ("call_many", len, (0,) * 33)], 1, ValueError, "at most 32 registers"),
    ([("load_global", 0, 5)], 1, TypeError, "load_global takes a str name"),
    ([("load_arg", 0)], 1, TypeError, "guard instruction must be a tuple"),
    (["load_arg"], 1, TypeError, "guard instruction must be a tuple"),
    (5, 1, TypeError, "instructions must be a sequence"),
    ([], -1, ValueError, "nregs out of range"),
    ([], 1 << 20, ValueError, "nregs out of range"),
])
def test_bad_programs_are_rejected(program, nregs, error, message):
    with pytest.raises(error, match=message):
        G(program, nregs)


def test_check_arguments_are_validated():
    prog = G([("load_cell", 0, 0), ("equals", 0, 1)], 1)
    with pytest.raises(TypeError):
        prog.check([1], {})
    with pytest.raises(TypeError):
        prog.check((1,), [])
    with pytest.raises(TypeError, match="tuple of cells or None"):
        prog.check((), {}, None, [1])
    with pytest.raises(TypeError, match="tuple of cells or None"):
        prog.check((), {}, None, (1,))
    assert prog.check((), {}, None, cells(1)) == -1


def test_guard_program_info_is_kept():
    info = ["first", "second"]
    prog = G([("load_arg", 0, 0), ("type_is", 0, int)], 1, info)
    assert prog.info is info
    assert G([], 0).info is None


def made_in_a_call(name="x", value=1.0):
    class Point:
        size = value

        def norm(self):
            return self.size

    if name != "size":
        setattr(Point, name, 2.0)
    return Point


def test_class_shape_compares_classes_made_per_call_by_their_shape():
    from dynamo.class_shapes import ClassShape, shape_of

    Point = made_in_a_call()
    shape = shape_of(Point)
    by_class = G([("load_arg", 0, 0), ("class_shape", 0, (False, shape))], 1)
    by_type = G([("load_arg", 0, 0), ("class_shape", 0, (True, shape))], 1)
    same = [made_in_a_call(), made_in_a_call(value=3.0)]  # another call's class; a value of one kind
    Sub = type("Sub", (Point,), {})
    Meta = type("Meta", (type,), {})
    other = [made_in_a_call("y"), made_in_a_call(value=3), Sub, Meta("Point", (), dict(Point.__dict__)),
             type("Point", (), {**Point.__dict__, 1: 2}), Point(), 5, int]
    moved = made_in_a_call()
    moved.__module__ = "elsewhere"
    other.append(moved)
    for cls in same:
        assert by_class.check((cls,), {}) == -1 and by_type.check((cls(),), {}) == -1, cls
        assert ClassShape(Point, of_type=False)(cls)
    for value in other:
        assert by_class.check((value,), {}) == 1, value
        assert not ClassShape(Point, of_type=False)(value), value
    assert by_type.check((Point,), {}) == 1  # type(Point) is type: not a class of that shape
