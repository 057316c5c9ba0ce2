"""Guards on NumPy values: what recompiles (dtype, shape, ndim, globals, closures, attributes,
scalars), what never does, layouts, aliasing between inputs, subclasses and the cache limit."""
import warnings

import numpy as np
import pytest

import dynamo
from dynamo import config
from numpy_samples import F32, F64, I64, check, sample
from support import compile_with_counter, fallbacks


def add(a, b):
    return a + b * 2


def entry_guards(fn):
    """The readable guards of every compiled entry of fn, in order."""
    return [str(frame.guards) for code, frame in fn._dynamo_callback.compiled_frames]


def test_same_inputs_never_recompile():
    compiled, counter = compile_with_counter(add)
    for _ in range(5):
        compiled(F64, F64.copy())
        compiled(sample((3, 4)), sample((3, 4)))  # new arrays, same type, dtype and shape
    assert counter.frame_count == 1


@pytest.mark.parametrize("other", [F32, I64, sample((4, 3)), sample((3, 4, 1)), sample((12,)), sample((0, 4)),
                                   np.ones((3, 4), ">f8")], ids=["float32", "int64", "shape", "ndim", "1d", "empty", "byteswapped"])
def test_a_new_dtype_shape_or_ndim_recompiles(other):
    compiled, counter = compile_with_counter(add)
    compiled(F64, F64.copy())
    result = compiled(other, other.copy())
    assert counter.frame_count == 2
    np.testing.assert_array_equal(result, add(other, other))
    assert result.dtype == add(other, other).dtype
    compiled(other, other.copy())
    compiled(F64, F64.copy())
    assert counter.frame_count == 2


def test_guards_print_readably():
    compiled, _ = compile_with_counter(add)
    compiled(F64, F32)
    text = entry_guards(compiled)[0]
    for line in ["type(L['a']) is numpy.ndarray", "L['a'].dtype == dtype('float64')", "L['a'].shape == (3, 4)",
                 "L['b'].dtype == dtype('float32')"]:
        assert line in text.splitlines(), text


def test_dtype_objects_that_are_equal_but_not_numpys_own_reuse_the_entry():
    import pickle

    compiled, counter = compile_with_counter(add)
    unpickled = pickle.loads(pickle.dumps(F64))  # its dtype is a fresh object equal to float64
    compiled(unpickled, unpickled.copy())
    compiled(pickle.loads(pickle.dumps(F64)), pickle.loads(pickle.dumps(F64)))
    compiled(F64, F64.copy())
    assert counter.frame_count == 1


def test_layouts_do_not_recompile_and_compute_correctly():
    base = sample((6, 8))
    layouts = [base[:3, :4], base[::2, ::2], base[::-2, 1::2], base.T[:4, :3].T, np.asfortranarray(base[:3, :4]),
               base[::-1, ::-1][:3, :4]]
    for backend in ("eager", "numpy"):
        compiled = dynamo.compile(add, backend=backend)
        for x in layouts:
            for y in layouts:
                np.testing.assert_array_equal(compiled(x, y), add(x, y))
        dynamo.reset()
    check(add, *[(x, y) for x, y in zip(layouts, reversed(layouts))], backend="numpy")


def test_noncontiguous_inputs_through_every_kind_of_op():
    def f(a, b):
        c = a @ b.T + np.sum(a, axis=0)
        d = a.reshape(-1)[::3]
        a[0] += 1
        return c, d, np.cumsum(b, axis=1), a.T.copy(), np.concatenate([a, b])

    base = sample((8, 10))
    for backend in ("eager", "numpy"):
        check(f, (base[::2, :4].copy(), base[:4, ::-2][:, :4]), (base[1::2, 1:5], base[::-2, ::3][:, :4]),
              (np.asfortranarray(base[:4, :4]), base[:4, 6:]), backend=backend)


def test_global_value_recompiles():
    global SCALE
    compiled, counter = compile_with_counter(scaled)
    SCALE = 2.0
    np.testing.assert_array_equal(compiled(F64), F64 * 2.0)
    compiled(F64)
    SCALE = 3.0
    np.testing.assert_array_equal(compiled(F64), F64 * 3.0)
    assert counter.frame_count == 2
    SCALE = 2.0
    compiled(F64)
    assert counter.frame_count == 2


SCALE = 2.0
TABLE = np.arange(4.0)


def scaled(a):
    return a * SCALE


def test_global_array_is_an_input_guarded_on_its_layout():
    global TABLE

    def f(a):
        return a + TABLE

    compiled, counter = compile_with_counter(f)
    np.testing.assert_array_equal(compiled(F64), F64 + TABLE)
    TABLE = TABLE + 1  # a new array of the same dtype and shape: the same graph, the new data
    np.testing.assert_array_equal(compiled(F64), F64 + TABLE)
    assert counter.frame_count == 1
    TABLE = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(compiled(F64), F64 + TABLE)
    assert counter.frame_count == 2


def test_closure_value_recompiles():
    def make(k):
        def f(a):
            return a * k
        return f

    compiled_2, counter = compile_with_counter(make(2))
    compiled_2(F64)
    compiled_3 = dynamo.compile(make(3), backend=counter)
    np.testing.assert_array_equal(compiled_3(F64), F64 * 3)
    assert counter.frame_count == 2  # one code object, two closure values: two entries
    compiled_2(F64)
    compiled_3(F64)
    assert counter.frame_count == 2


def test_closure_array_and_attribute_values():
    class Model:
        def __init__(self, w, bias):
            self.w = w
            self.bias = bias

    model = Model(sample((4, 2)), 0.5)

    def f(x):
        return x @ model.w + model.bias

    compiled, counter = compile_with_counter(f)
    np.testing.assert_allclose(compiled(F64), f(F64))
    model.bias = 1.5
    np.testing.assert_allclose(compiled(F64), f(F64))
    assert counter.frame_count == 2
    model.w = sample((4, 2))  # same layout: no recompile, the new weights are used
    np.testing.assert_allclose(compiled(F64), f(F64))
    assert counter.frame_count == 2
    model.w = sample((4, 5))
    np.testing.assert_allclose(compiled(F64), f(F64))
    assert counter.frame_count == 3


def test_python_scalar_arguments_recompile_by_type_and_value():
    def f(a, s):
        return a * s

    compiled, counter = compile_with_counter(f)
    compiled(F32, 2.0)
    compiled(F32, 2.0)
    assert counter.frame_count == 1
    for s in (3.0, 2, True, np.float32(2.0)):
        np.testing.assert_array_equal(compiled(F32, s), f(F32, s))
        assert compiled(F32, s).dtype == f(F32, s).dtype
    assert counter.frame_count == 5


# ---- aliasing between inputs -------------------------------------------------------------------------

def accumulate(a, b):
    c = b * 2
    a += 1
    d = b * 2
    return c, d


def test_inputs_that_overlap_a_written_input_are_never_assumed_apart():
    cases = [lambda x: (x, x[:]), lambda x: (x[:4], x[2:]), lambda x: (x[::2], x[1::2]), lambda x: (x[1:], x[:-1])]
    for backend in ("eager", "numpy"):
        compiled = dynamo.compile(accumulate, backend=backend)
        for make_args in cases:
            x_plain, x_compiled = np.arange(6.0), np.arange(6.0)
            expected = accumulate(*make_args(x_plain))
            result = compiled(*make_args(x_compiled))
            np.testing.assert_array_equal(x_compiled, x_plain)
            for r, e in zip(result, expected):
                np.testing.assert_array_equal(r, e)
        dynamo.reset()


def test_no_overlap_guard_is_installed_only_for_written_inputs():
    compiled, counter = compile_with_counter(accumulate)
    compiled(F64.copy(), F64.copy())
    text = entry_guards(compiled)[0]
    assert "not np.may_share_memory(L['a'], L['b'])" in text, text
    pure, _ = compile_with_counter(add)
    pure(F64, F64)
    assert "may_share_memory" not in entry_guards(pure)[0]
    # distinct arrays again: no recompile; an overlapping pair: a new entry that writes in Python
    compiled(F64.copy(), F64.copy())
    assert counter.frame_count == 1
    x = np.arange(12.0).reshape(3, 4)
    expected_x = x.copy()
    expected = accumulate(expected_x, expected_x[:])
    result = compiled(x, x[:])
    np.testing.assert_array_equal(x, expected_x)
    np.testing.assert_array_equal(result[1], expected[1])


def test_views_as_inputs_use_the_bounds_check():
    base = np.arange(24.0).reshape(4, 6)
    compiled, counter = compile_with_counter(accumulate)
    compiled(base[:2], base[2:])  # views of one buffer that do not overlap: compiled
    text = entry_guards(compiled)[0]
    assert "not np.may_share_memory(L['a'], L['b'])" in text
    assert fallbacks(compiled) == []
    other = np.arange(24.0).reshape(4, 6)
    compiled(other[2:], other[:2])
    assert counter.frame_count == 1
    # column blocks interleave in memory: their bounds overlap, so the write runs in Python
    compiled(other[:, :3], other[:, 3:])
    assert counter.frame_count > 1


def test_the_same_array_twice_is_one_input():
    def f(a, b):
        a += 1
        return b * 2

    x, y = np.arange(4.0), np.arange(4.0)
    compiled, counter = compile_with_counter(f)
    np.testing.assert_array_equal(compiled(x, x), f(y, y))
    np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(compiled(np.arange(4.0), np.arange(4.0)), np.arange(4.0) * 2)
    assert counter.frame_count == 2


# ---- ndarray subclasses --------------------------------------------------------------------------------

class Tagged(np.ndarray):
    def doubled(self):
        return self * 2


@pytest.mark.parametrize("value", [np.matrix([[1.0, 2.0], [3.0, 4.0]]), np.ma.masked_array([1.0, 2.0, 3.0], [0, 1, 0]),
                                   np.arange(4.0).view(Tagged)], ids=["matrix", "masked", "user"])
def test_subclasses_are_never_plain_arrays(value):
    def f(a):
        return a * 2, a.sum(), a.T

    compiled, counter = compile_with_counter(f)
    result, expected = compiled(value), f(value)
    assert type(result[0]) is type(expected[0])
    assert counter.op_count == 0  # no graph takes a subclass as an ndarray
    np.testing.assert_array_equal(np.asarray(result[0]), np.asarray(expected[0]))
    plain = np.asarray(value).copy()
    result = compiled(plain)  # an exact ndarray of the same shape: guarded apart, compiled anew
    assert type(result[0]) is np.ndarray
    assert any("type(L['a']) is numpy.ndarray" in text for text in entry_guards(compiled))


def test_user_subclass_methods_run_as_written():
    def f(a):
        return a.doubled() + 1

    value = np.arange(4.0).view(Tagged)
    check(f, (value,), graph=False)


# ---- the cache limit -----------------------------------------------------------------------------------

def test_cache_limit_logs_once_naming_the_function_and_the_guard(caplog):
    def shapes(a):
        return a + 1

    compiled, counter = compile_with_counter(shapes)
    with config.patch(cache_size_limit=3, automatic_dynamic_shapes=False), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 8):
            x = sample((n,))
            np.testing.assert_array_equal(compiled(x), x + 1)
    assert counter.frame_count == 3
    assert caught == []  # a Python warning would reach the program (and raise under -W error)
    messages = [r.getMessage() for r in caplog.records if "cache_size_limit" in r.getMessage()]
    assert len(messages) == 1, messages
    assert "shapes" in messages[0] and "L['a'].shape == (3,)" in messages[0], messages[0]


def test_past_the_cache_limit_misses_run_the_original_without_asking_again():
    def shapes(a):
        return a * 2

    compiled, counter = compile_with_counter(shapes)
    callback = compiled._dynamo_callback
    with config.patch(cache_size_limit=2, automatic_dynamic_shapes=False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in list(range(1, 9)) + [1, 2]:
            x = sample((n,))
            np.testing.assert_array_equal(compiled(x), x * 2)
    assert counter.frame_count == 2
    assert len(callback.recompiles) == 1  # the one recompile; misses past the limit record nothing
    assert len(callback.compiled_frames) == 2
