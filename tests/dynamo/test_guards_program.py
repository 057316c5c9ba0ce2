"""The guard compiler: guards as data lowered to GuardProgram instructions (one struct_is per array
input), readable text for every kind, exact checks of floats, and the no-overlap check."""
import math

import numpy as np
import pytest

from dynamo.array_layout import LAYOUT_VERIFIED
from dynamo.guards import FloatIs, GuardKind, GuardSet, NoOverlap, failure_reason, needs_exact_float_guard
from dynamo.sources import AttrSource, GlobalSource, LocalSource

X, Y = LocalSource(0, "x"), LocalSource(1, "y")


def array_guards(source, value):
    guards = GuardSet()
    guards.add(source, GuardKind.TYPE_IS, type(value))
    guards.add(AttrSource(source, "dtype"), GuardKind.EQUALS, value.dtype)
    guards.add(AttrSource(source, "shape"), GuardKind.EQUALS, value.shape)
    return guards


def passes(program, *args, globals_=None):
    return program.check(tuple(args), globals_ or {}) == -1


@pytest.mark.skipif(not LAYOUT_VERIFIED, reason="ndarray layout not verified on this NumPy")
def test_an_array_input_is_one_struct_check():
    program = array_guards(X, np.zeros((3, 4))).compile()
    assert [ins[0] for ins in program.instructions] == ["load_arg", "struct_is"]
    assert passes(program, np.ones((3, 4)))
    assert passes(program, np.ones((4, 3)).T)  # layout is not part of it
    for other in (np.ones((4, 3)), np.ones(12), np.ones((3, 4), np.float32), np.ones((3, 4, 1)),
                  np.matrix(np.ones((3, 4))), [[0.0] * 4] * 3, 3.0, None):
        assert not passes(program, other), other


def test_checks_agree_with_the_guards_for_every_kind_of_array():
    samples = [np.zeros(()), np.zeros(0), np.zeros(5), np.zeros((2, 0)), np.zeros((0, 2)), np.zeros((2, 3, 4)),
               np.zeros(5, np.int8), np.zeros(5, ">f8"), np.zeros(3, [("a", "f8")]), np.zeros(2, "U3")]
    for guarded in samples:
        program = array_guards(X, guarded).compile()
        for value in samples:
            expected = value.dtype == guarded.dtype and value.shape == guarded.shape
            assert passes(program, value) == expected, (guarded.dtype, guarded.shape, value.dtype, value.shape)


def test_a_dtype_that_is_not_numpys_own_instance_is_compared_by_value():
    import pickle

    unpickled = pickle.loads(pickle.dumps(np.zeros(3)))
    assert unpickled.dtype is not np.dtype("float64")
    program = array_guards(X, unpickled).compile()
    assert "struct_is" not in [ins[0] for ins in program.instructions]
    assert passes(program, np.zeros(3)) and passes(program, pickle.loads(pickle.dumps(np.zeros(3))))


def test_guards_print_as_written_and_failures_name_them():
    guards = array_guards(X, np.zeros((3, 4)))
    guards.add(GlobalSource("scale"), GuardKind.TYPE_IS, float)
    guards.add(GlobalSource("scale"), GuardKind.CALL, FloatIs(-0.0))
    guards.add(X, GuardKind.NO_OVERLAP, NoOverlap(Y, owned=True))
    text = str(guards).splitlines()
    assert text == ["type(L['x']) is numpy.ndarray", "L['x'].dtype == dtype('float64')", "L['x'].shape == (3, 4)",
                    "type(G['scale']) is float", "G['scale'] == -0.0 (sign and NaN exact)",
                    "not np.may_share_memory(L['x'], L['y'])"]
    program = guards.compile()
    failed = program.check((np.zeros((3, 5)), np.zeros(2)), {"scale": -0.0})
    assert "L['x'].shape == (3, 4)" in failure_reason(program, failed)
    failed = program.check((np.zeros((3, 4)), np.zeros(2)), {"scale": 0.0})
    assert failure_reason(program, failed) == "G['scale'] == -0.0 (sign and NaN exact)"


@pytest.mark.parametrize("value, same, different", [
    (0.0, [0.0], [-0.0, 1.0]), (-0.0, [-0.0], [0.0]), (math.nan, [math.nan, -math.nan], [0.0, math.inf]),
    (np.float32(-0.0), [np.float32(-0.0)], [np.float32(0.0)]), (complex(0.0, -0.0), [complex(0, -0.0)], [0j]),
    (complex(math.nan, 1.0), [complex(math.nan, 1.0)], [complex(math.nan, 2.0), complex(1.0, 1.0)]),
])
def test_float_is_tells_signed_zeros_and_nans_apart(value, same, different):
    assert needs_exact_float_guard(value)
    check = FloatIs(value)
    assert all(check(v) for v in same) and not any(check(v) for v in different)


def test_only_zeros_and_nans_need_the_exact_check():
    assert not any(needs_exact_float_guard(v) for v in (1.5, -2.0, np.float64(3), 1 + 2j, 0, True, "0.0"))


def test_no_overlap_checks():
    base = np.arange(10.0)
    owned = GuardSet()
    owned.add(X, GuardKind.NO_OVERLAP, NoOverlap(Y, owned=True))
    program = owned.compile()
    assert passes(program, np.zeros(3), np.zeros(3))
    a = np.zeros(3)
    assert not passes(program, a, a)  # the same array twice
    assert not passes(program, base[:3], base[5:])  # views: the owned form does not hold
    bounds = GuardSet()
    bounds.add(X, GuardKind.NO_OVERLAP, NoOverlap(Y, owned=False))
    program = bounds.compile()
    assert passes(program, base[:3], base[5:]) and passes(program, np.zeros(3), np.zeros(3))
    assert not passes(program, base[:6], base[5:]) and not passes(program, base[::2], base[1::2])


def test_sources_are_loaded_once():
    guards = array_guards(X, np.zeros(3))
    guards.add(AttrSource(X, "dtype"), GuardKind.ID_IS, np.dtype("float64"))
    guards.add(X, GuardKind.ID_IS, None)
    program = guards.compile()
    loads = [ins for ins in program.instructions if ins[0].startswith("load_")]
    assert len(loads) == len({ins[2:] for ins in loads})


class _RaisingEq:
    """A key whose __eq__ raises: a guard comparing keys must never call it."""

    def __eq__(self, other):
        raise RuntimeError("__eq__ called")

    __hash__ = object.__hash__


def test_dict_keys_guard_runs_no_user_eq_and_tells_signed_zeros_apart():
    import dynamo

    def f(d):
        return [str(k) for k in d]

    compiled = dynamo.compile(f, backend="eager")
    a, b = _RaisingEq(), _RaisingEq()
    for d in ({a: 1, 2: 3}, {b: 1, 2: 3}, {(1, a): 0}, {(1, b): 0}, {a: 1, 2: 3}, {-0.0: 1}, {0.0: 1}, {"s": 1}):
        assert compiled(d) == f(d)


def _closure_over(obj):
    def inner(x):
        return x * obj.scale
    return inner


class _Payload:
    scale = 2.0


def _freed_with(run):
    """run(closure) compiles code with a closure over a fresh payload; once the closure is
    dropped, reference counting alone must free the payload (gc off, as SciPy's
    assert_deallocated has it)."""
    import gc
    import weakref

    import dynamo

    payload = _Payload()
    ref = weakref.ref(payload)
    fn = _closure_over(payload)
    del payload
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        dynamo.reset()
        run(fn)
        del fn
        return ref() is None
    finally:
        if was_enabled:
            gc.enable()


def test_a_function_made_by_a_call_is_guarded_without_keeping_it_alive():
    # guarded by identity, a closure (and all its cells reach) lived as long as the cache entry
    import dynamo

    def f(fn, x):
        return fn(x) + 1

    assert _freed_with(lambda fn: dynamo.compile(f, backend="eager")(fn, np.ones(2)))
    compiled = dynamo.compile(f, backend="eager")
    first, second = _closure_over(_Payload()), _closure_over(_Payload())
    assert np.array_equal(compiled(first, np.ones(2)), np.full(2, 3.0))
    assert np.array_equal(compiled(second, np.ones(2)), np.full(2, 3.0))  # another closure: guard fails


def test_the_cache_keeps_no_closure_of_a_compiled_closure():
    # the cache entry reused the function it made for its code, closure and all, across calls
    import dynamo

    def run(fn):
        with dynamo.enable():
            fn(np.ones(2))

    assert _freed_with(run)


def test_a_weakly_held_function_that_died_does_not_match_none():
    # a dead weak reference gives None: the guard of a function argument then passed for None
    # (SciPy's boxcox_normmax called the optimizer of an earlier test, now None)
    import gc

    import dynamo

    def f(optimizer, x):
        if optimizer is None:
            return x + 1
        return x * 3

    compiled = dynamo.compile(f, backend="eager")
    fn = _closure_over(_Payload())
    assert np.array_equal(compiled(fn, np.ones(2)), np.full(2, 3.0))
    del fn
    gc.collect()
    assert np.array_equal(compiled(None, np.ones(2)), np.full(2, 2.0))
