"""Corpus: loads and stores of locals, globals, closures and attributes, each function compiled and plain
on several inputs through one compiled version (a wrongly reused graph shows as a wrong result)."""
import math
import threading

import numpy as np
import pytest

import dynamo
from support import same_value, assert_matches_python, compile_with_counter, graph_breaks

A = np.arange(6.0).reshape(2, 3)
B = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
V = np.arange(4, dtype=np.int64)

SCALE = 3.0
OFFSETS = (1.0, 2.0, 3.0)
CONFIG = {"gain": 2.0, "bias": -1.0}


def check(fn, *calls, graph=True):
    for args in calls:
        assert_matches_python(fn, *args, expect_graph=graph)


class Struct:
    """Test objects compare by their attributes, so mutated arguments can be compared."""

    def __eq__(self, other):
        return type(self) is type(other) and same_value(vars(self), vars(other))



# ---- locals -----------------------------------------------------------------------------------

def test_locals_assign_reassign_swap():
    def f(x, y):
        a = x + 1
        b = y * 2
        a, b = b, a
        c = d = a - b
        return c * d + a

    check(f, (A, B), (B, A), (V, V))


def test_augmented_assignment_on_locals():
    def f(x, n):
        total = 0
        total += n
        total *= 3
        total -= 1
        total //= 2
        y = x * 1.0
        y += total
        y *= 2
        return y, total

    check(f, (A, 4), (A, 7), (B, -3))


def test_delete_local_then_reassign():
    def f(x):
        tmp = x * 2
        out = tmp + 1
        del tmp
        tmp = out.sum(axis=0)
        return tmp

    check(f, (A,), (B,))


def test_chained_assignment_and_tuple_targets():
    def f(x):
        (a, b), c = (x, x + 1), x * 2
        p = q = r = c - a
        return a + b + c + p + q + r

    check(f, (A,), (V,))


# ---- globals ------------------------------------------------------------------------------------

def test_global_constants_are_folded_and_guarded():
    def f(x):
        return x * SCALE + OFFSETS[1]

    global SCALE
    check(f, (A,))
    saved = SCALE
    try:
        SCALE = 5.0  # must recompile, not reuse the graph that baked in 3.0
        check(f, (A,))
    finally:
        SCALE = saved


def test_global_dict_and_module_attribute():
    def f(x):
        return x * CONFIG["gain"] + CONFIG["bias"] + math.pi

    check(f, (A,), (B,))


def test_global_function_called():
    check(_global_caller, (A,), (B,))


def _global_helper(v):
    return v * 2 + 1


def _global_caller(x):
    return _global_helper(x) - _global_helper(1.0)


def test_builtins_are_found_after_globals():
    def f(x, items):
        return x * len(items) + abs(-2) + max(3, 4) + min(items)

    check(f, (A, [1, 2, 3]), (A, (5, 4)))


# ---- closures -----------------------------------------------------------------------------------

def test_closure_reads_outer_constant_and_array():
    k = 4.0
    w = np.full((2, 3), 0.5)

    def f(x):
        return x * k + w

    check(f, (A,), (B,))


def test_closure_value_change_recompiles():
    def make(k):
        def f(x):
            return x * k
        return f

    f2, f3 = make(2.0), make(3.0)
    compiled2 = dynamo.compile(f2, backend="eager")
    compiled3 = dynamo.compile(f3, backend="eager")
    np.testing.assert_array_equal(compiled2(A), A * 2.0)
    np.testing.assert_array_equal(compiled3(A), A * 3.0)  # same code object, other cell value


def test_inner_function_captures_argument():
    def f(x, s):
        def scaled(v):
            return v * s
        return scaled(x) + scaled(1.0)

    check(f, (A, 2.0), (A, 3), (B, -1))


def test_nested_closures_two_levels():
    def f(x):
        a = 2.0

        def middle(y):
            b = 3.0

            def inner(z):
                return z * a + b
            return inner(y) + a
        return middle(x)

    check(f, (A,), (B,))


def test_nonlocal_counter_in_inner_function():
    def f(x):
        count = 0

        def bump(v):
            nonlocal count
            count += 1
            return v + count
        y = bump(x)
        y = bump(y)
        return y, count

    check(f, (A,), (B,))


def test_lambda_capturing_locals():
    def f(x, p):
        scale = lambda v: v * p  # noqa: E731
        shift = lambda v, d=1.0: v + d  # noqa: E731
        return shift(scale(x)), shift(x, d=p)

    check(f, (A, 2.0), (B, 0.5))


def test_closure_cell_of_compiled_function_read_after_inner_call():
    def f(x):
        acc = x

        def add(v):
            nonlocal acc
            acc = acc + v
        add(1.0)
        add(x)
        return acc

    check(f, (A,), (B,))


def test_function_returned_then_called():
    def f(x):
        def make(k):
            return lambda v: v * k
        double, triple = make(2), make(3)
        return double(x) + triple(x)

    check(f, (A,), (V,))


def test_default_argument_captured_at_definition():
    def f(x):
        fns = [lambda v, i=i: v + i for i in range(3)]
        return [g(x) for g in fns]

    check(f, (A,), (V,))


# ---- attributes ----------------------------------------------------------------------------------

class Params(Struct):
    def __init__(self, w, b, name="p"):
        self.w = w
        self.b = b
        self.name = name


class Model(Struct):
    scale = 2.0

    def __init__(self):
        self.params = Params(np.ones((2, 3)), 0.5)


def test_attribute_reads_of_argument_object():
    def f(p, x):
        return x * p.w + p.b

    check(f, (Params(A, 1.0), B), (Params(B, 2), A))


def test_nested_attribute_and_class_attribute():
    def f(m, x):
        return (x * m.params.w + m.params.b) * m.scale

    check(f, (Model(), A), (Model(), B))


def test_attribute_value_change_recompiles():
    def f(p, x):
        return x + p.b

    compiled, counter = compile_with_counter(f)
    p = Params(A, 1.0)
    np.testing.assert_array_equal(compiled(p, A), A + 1.0)
    p.b = 10.0
    np.testing.assert_array_equal(compiled(p, A), A + 10.0)


def test_module_attribute_of_numpy():
    def f(x):
        return np.float64(2.0) * x + np.pi + np.e

    check(f, (A,), (B,))


def test_attribute_added_later_recompiles():
    class Holder(Struct):
        scale = 2.0

    def f(obj, x):
        return x * obj.scale, hasattr(obj, "extra")

    compiled = dynamo.compile(f, backend="eager")
    obj = Holder()
    np.testing.assert_array_equal(compiled(obj, A)[0], A * 2.0)
    obj.scale = 5.0  # now an instance attribute shadows the class one
    obj.extra = 1
    out, has_extra = compiled(obj, A)
    np.testing.assert_array_equal(out, A * 5.0)
    assert has_extra is True


def test_hasattr_true_from_the_instance_is_guarded():
    # scikit-learn's `if not hasattr(self, "t_"): self.t_ = 1.0`: compiled once for an object
    # that has t_, the answer was reused for a new object without it, so t_ was never set
    class Model(Struct):
        pass

    def f(obj, x):
        if not hasattr(obj, "t_"):
            obj.t_ = 1.0
        np.random.RandomState(0)  # a graph break: t_ is read in the resume function
        return x * obj.t_

    compiled = dynamo.compile(f, backend="eager")
    seasoned = Model()
    seasoned.t_ = 3.0
    np.testing.assert_array_equal(compiled(seasoned, A), A * 3.0)
    fresh = Model()
    np.testing.assert_array_equal(compiled(fresh, A), A * 1.0)
    assert fresh.t_ == 1.0


class _AvailableIf:
    """A descriptor whose __get__ raises AttributeError unless the instance allows it (as
    scikit-learn's available_if does), so that hasattr() depends on the instance."""

    def __init__(self, fn):
        self.fn = fn

    def __get__(self, obj, owner=None):
        if obj is not None and not obj.ok:
            raise AttributeError("not available")
        return self.fn if obj is None else self.fn.__get__(obj, owner)


class _Gated:
    score = _AvailableIf(lambda self, x: x * 2)

    def __init__(self, ok):
        self.ok = ok


class _Slotted:
    __slots__ = ("a",)


@pytest.mark.parametrize("ok", [True, False])
def test_hasattr_runs_descriptors_that_may_raise(ok):
    # hasattr() said True for any class attribute: LocalOutlierFactor(novelty=False) then
    # called score_samples, whose available_if check raises
    def f(obj, slotted, x):
        return hasattr(obj, "score"), hasattr(_Gated, "score"), hasattr(slotted, "a"), x + 1

    compiled = dynamo.compile(f, backend="eager")
    slotted = _Slotted()
    assert compiled(_Gated(ok), slotted, 1.0) == f(_Gated(ok), slotted, 1.0)
    slotted.a = 1
    assert compiled(_Gated(ok), slotted, 1.0) == f(_Gated(ok), slotted, 1.0)


_thread_local = threading.local()
_defaults = {"assume_finite": False, "n": 2}


def _config():  # scikit-learn's get_config(): a per-thread copy made on first use
    if not hasattr(_thread_local, "config"):
        _thread_local.config = _defaults.copy()
    return _thread_local.config


def test_attributes_of_a_thread_local_are_those_of_the_calling_thread():
    # a threading.local's custom __getattribute__ broke the graph at every get_config()
    def f(x):
        config = _config().copy()
        return x * config["n"], config

    compiled, counter = compile_with_counter(f)
    assert same_value(compiled(A), f(A))
    _thread_local.config["n"] = 5
    assert same_value(compiled(A), f(A))
    seen = {}

    def worker():  # another thread has no config yet: its own is made, not the main one's
        seen["result"], seen["config"] = compiled(A), _thread_local.config

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert same_value(seen["result"], (A * 2, _defaults)) and seen["config"] is not _thread_local.config
    del _thread_local.config
    assert same_value(compiled(A), (A * 2, _defaults)) and _thread_local.config == _defaults
    assert not graph_breaks(compiled)


def test_deleting_an_unbound_local_raises_like_python():
    def f(x, flag):
        y = x
        if flag:
            del y
        del y
        return x

    check(f, (A, False))
    check(f, (A, True), graph=False)


# ---- module __getattr__ (PEP 562): code that runs on every access -------------------------------------
import types  # noqa: E402
import warnings  # noqa: E402

LAZY = types.ModuleType("lazy_for_test")
LAZY.calls = []
LAZY.__getattr__ = lambda name: LAZY.calls.append(name) or len(LAZY.calls)


def test_module_getattr_hook_runs_on_every_call():
    # the hook's value was read once while tracing and baked into the graph: later calls got the
    # first call's value and the hook never ran again
    def f(x):
        return x * LAZY.lazy

    compiled = dynamo.compile(f, backend="eager")
    LAZY.calls.clear()
    expected = [f(A) for _ in range(3)]
    plain_calls = list(LAZY.calls)
    LAZY.calls.clear()
    for want in expected:
        np.testing.assert_array_equal(compiled(A), want)
    assert LAZY.calls == plain_calls


def _deprecated_attribute(name):
    # what numpy.lib's __getattr__ does for np.lib.math (removed in later NumPy versions)
    if name == "math":
        warnings.warn("lazy_deprecating.math is deprecated", DeprecationWarning, stacklevel=2)
        return math
    raise AttributeError(name)


DEPRECATING = types.ModuleType("lazy_deprecating")
DEPRECATING.__getattr__ = _deprecated_attribute


def test_module_getattr_deprecation_warns_on_every_call():
    # NumPy's test_deprecations: `np.lib.math` warns from numpy.lib's __getattr__; compiled, it
    # warned once at trace time (from dynamo's own file) and not on later calls
    def f():
        return DEPRECATING.math

    compiled = dynamo.compile(f, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert compiled() is math
    assert [w.filename for w in caught] == [__file__] * 3


_FIRST_USES = {  # each reads a submodule NumPy's __getattr__ imports on first use
    "rec": lambda x: x * len(np.rec.__name__),
    "char": lambda x: x * len(np.char.__name__),
    "strings": lambda x: x * len(np.strings.__name__),
    "polynomial": lambda x: x * len(np.polynomial.__name__),
}


def test_numpy_submodule_imported_on_first_use_is_no_graph_break():
    # Breaking there (as for any module __getattr__) left a graph break in the cached code of
    # every frame that was the first to use one; the submodule is imported while tracing instead
    lazy = [name for name in _FIRST_USES if name not in vars(np)]
    if not lazy:
        pytest.skip("every lazily imported NumPy submodule is imported already")
    compiled = dynamo.compile(_FIRST_USES[lazy[0]], backend="eager")
    expected = A * len(f"numpy.{lazy[0]}")
    np.testing.assert_array_equal(compiled(A), expected)
    np.testing.assert_array_equal(compiled(A), expected)
    assert not graph_breaks(compiled)
