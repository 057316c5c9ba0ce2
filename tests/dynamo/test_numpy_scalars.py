"""Corpus: NumPy scalars and 0-d arrays. Results keep NumPy's exact types; Python values taken from
array data (float(), item(), `if` on a comparison) give up with a reason; scalar arguments are exact."""
import math
import warnings

import numpy as np
import pytest

from numpy_samples import F32, F64, I64, check, sample
from support import compile_with_counter, fallbacks


def gave_up(compiled):
    """Every reason the frames of `compiled` fell back or broke their graph, as text."""
    breaks = [str(r) for _, frame in compiled._dynamo_callback.compiled_frames for r in getattr(frame, "breaks", ())]
    return fallbacks(compiled) + breaks


def test_results_are_numpy_scalars_of_numpy_types():
    def f(a):
        return np.sum(a), a.max(), a[0, 0], np.float64(2) * a.sum(), a.mean() > 1, np.int64(3) + a.argmax()

    for x in (F64, F32, I64):
        compiled, _ = compile_with_counter(f)
        result, expected = compiled(x), f(x)
        assert [type(r) for r in result] == [type(e) for e in expected]
    check(f, (F64,), (F32,), (I64,))


def test_zero_dimensional_arrays_stay_arrays():
    def f(a):
        return a + 1, a * a, np.sum(a), a[()], a[...], -a, np.exp(a), a.reshape(1), np.asarray(a)

    check(f, (sample(()),), (np.array(2, np.int64),), (np.array(-1.5, np.float32),))
    compiled, _ = compile_with_counter(f)
    result = compiled(np.array(2.0))
    # ufuncs of 0-d arrays give NumPy scalars; a[...] and reshape give arrays
    assert [type(r) for r in result] == [type(e) for e in f(np.array(2.0))]
    assert type(result[0]) is np.float64 and type(result[4]) is np.ndarray and result[4].ndim == 0


def test_scalar_arithmetic_with_python_numbers_follows_nep50():
    def f(a):
        s = a.sum()
        return s + 1, s * 2.5, 1 - s, s / 3, s ** 2, s > 0, -s, abs(s)

    check(f, (F32,), (I64,), (sample((3,), np.int8),), (sample((2,), np.float16),))


@pytest.mark.parametrize("convert", [float, int, bool, complex], ids=lambda c: c.__name__)
def test_python_conversions_of_array_data_give_up(convert):
    def f(a):
        return convert(a.sum()) + 1

    compiled, _ = compile_with_counter(f)
    assert compiled(F64) == f(F64)
    reasons = gave_up(compiled)
    assert reasons and all("data-dependent value" in r for r in reasons), reasons
    assert any(convert.__name__ in r for r in reasons), reasons


def test_item_and_tolist_give_up_with_a_reason():
    def f(a):
        return a.sum().item(), a.tolist()

    compiled, _ = compile_with_counter(f)
    assert compiled(F64) == f(F64)
    reasons = gave_up(compiled)
    assert any("item() of" in r and "needs its data" in r for r in reasons), reasons


def test_branching_on_array_data_gives_up():
    def f(a):
        if a.sum() > 3:
            return a * 2
        return a - 1

    compiled, _ = compile_with_counter(f)
    np.testing.assert_array_equal(compiled(F64), f(F64))
    np.testing.assert_array_equal(compiled(F64 * 0), f(F64 * 0))
    reasons = gave_up(compiled)
    assert reasons and all("data-dependent branch" in r for r in reasons), reasons
    check(f, (F64,), (-F64,), graph=False)


def test_branching_on_shapes_and_dtypes_is_fine():
    def f(a):
        if a.ndim == 2 and a.shape[0] > 2:
            a = a.T
        if a.dtype == np.float32:
            a = a.astype(np.float64)
        return a * 2

    check(f, (F64,), (F32,), (sample((2, 2), np.float32),), (sample((5,)),))


# ---- NumPy scalars passed in ---------------------------------------------------------------------------

def test_numpy_scalar_arguments_are_exact_constants():
    def f(a, s):
        return a * s, s * 2, type(s).__name__

    check(f, (F32, np.float32(2)), (F32, np.float64(2)), (I64, np.int8(3)), (I64, np.uint64(7)), (F32, np.bool_(True)))
    compiled, counter = compile_with_counter(f)
    compiled(F32, np.float32(2))
    compiled(F32, np.float32(2))
    assert counter.frame_count == 1
    compiled(F32, np.float64(2))  # a different type: NEP 50 gives float64, so a new graph
    compiled(F32, np.float32(3))  # a different value of the specialized constant
    assert counter.frame_count == 3


@pytest.mark.parametrize("zero", [0.0, np.float64(0.0), np.float32(0.0), complex(0.0, 0.0)], ids=repr)
def test_negative_zero_is_not_zero(zero):
    def f(a, s):
        return a / s, np.angle(s)  # the angle of -0.0 is pi

    compiled, counter = compile_with_counter(f)
    negative = -zero
    for s in (zero, negative, zero, negative):
        result = compiled(F64, s)
        expected = f(F64, s)
        np.testing.assert_array_equal(result[0], expected[0])
        assert result[1] == expected[1]
    assert counter.frame_count == 2


@pytest.mark.parametrize("nan", [math.nan, np.float64("nan"), np.float32("nan")], ids=repr)
def test_nan_arguments_are_guarded_exactly(nan):
    def f(a, s):
        return a + s

    compiled, counter = compile_with_counter(f)
    for s in (nan, nan, type(nan)(2.0), nan):
        np.testing.assert_array_equal(compiled(F64, s), f(F64, s))
    assert counter.frame_count == 2  # NaN once (not once per call), 2.0 once


def test_numpy_scalars_from_closures_and_globals():
    scale = np.float32(0.5)

    def f(a):
        return a * scale + OFFSET

    check(f, (F32,), (F64,))


OFFSET = np.int16(3)


def test_numpy_scalar_methods_and_attributes():
    def f(a, s):
        return a * s.dtype.type(2), s.dtype, s.itemsize, s.shape, s.ndim, a.astype(s.dtype)

    check(f, (F64, np.float32(1.5)), (I64, np.int8(2)))


def test_random_generators_run_in_python_and_draw_the_same_numbers():
    def f(a, seed):
        rng = np.random.default_rng(seed)
        noise = rng.normal(size=a.shape)
        return a + noise * rng.random()

    def legacy(a):
        np.random.seed(7)
        return a * np.random.rand(*a.shape) + np.random.randint(3)

    check(f, (F64, 0), (F64, 1), graph=False)
    check(legacy, (F64,), graph=False)
    compiled, _ = compile_with_counter(f)
    compiled(F64, 2)
    assert any("runs in Python" in r and "Generator.normal" in r for r in gave_up(compiled)), gave_up(compiled)


def test_finfo_and_iinfo_objects_are_constants():
    info = np.finfo(np.float32)

    def f(a):
        return np.maximum(a, info.tiny) * info.eps, np.iinfo(np.int8).max

    check(f, (F32,), (F64,))


def test_scalar_overflow_of_constants_warns_from_the_users_line_on_every_call():
    def f(a):
        return a + 1, np.uint8(250) + np.uint8(10)

    compiled, _ = compile_with_counter(f)
    for _ in range(2):  # the cached call warns too: the sum is not folded into a constant
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = compiled(F64)
        assert [(w.category, w.filename) for w in caught] == [(RuntimeWarning, __file__)]
        assert "overflow" in str(caught[0].message)
        assert result[1] == np.uint8(4) and type(result[1]) is np.uint8


def test_a_structured_record_is_a_mutable_view_not_a_constant():
    def f(record, a):
        record["x"] = record["x"] + 1
        return record["y"] * a, record

    def make():
        table = np.zeros(3, dtype=[("x", "f8"), ("y", "i4")])
        table["y"] = [4, 5, 6]
        return table

    compiled, _ = compile_with_counter(f)
    for i in range(3):
        plain_table, compiled_table = make(), make()
        expected = f(plain_table[i], F64)
        result = compiled(compiled_table[i], F64)
        assert np.array_equal(result[0], expected[0]) and result[0].dtype == expected[0].dtype
        assert np.array_equal(compiled_table, plain_table)
    assert not fallbacks(compiled)  # record fields break the graph, with reasons; nothing fails
