"""Failures the differential fuzzer (tests/fuzz/) found in casts and the order of effects: unread work,
integer reciprocals and float-to-integer casts warn in NumPy's order, and a float scalar stored into integers
raises as NumPy raises, after the side effects before it, on every CPU backend."""
from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np
import pytest
from triton_helpers import INTERPRET

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import

import dynamo  # noqa: E402
from dynamo.backends.registry import list_backends  # noqa: E402

BACKENDS = [b for b in ("eager", "numpy", "c") if b in list_backends()]


def observed(fn, *args):
    """What a call leaves: result bytes, exception, warnings in order."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = fn(*args), None
        except Exception as exc:  # noqa: BLE001 - compared with the plain program's
            result, error = None, (type(exc).__name__, str(exc))
    described = None if result is None else (result.dtype, result.shape, result.tobytes())
    return described, error, [(w.category, str(w.message)) for w in caught]


def dead_floor_divide_then_integer_reciprocal(a, s):
    # fuzz seeds 1062758 and 1065153, backend c: an integer reciprocal was not taken as an op that may
    # warn, so the unread `a // s` before it was computed after it ('divide by zero in floor_divide' last)
    v = a // s
    v = np.reciprocal(a)
    return np.expm1(v)


def dead_remainder_then_infinite_fill(a):
    # fuzz seed 1063206, backend c: np.full_like(ints, inf) was taken as quiet (a creation), so the
    # unread remainder's 'divide by zero' came after its 'invalid value encountered in cast'
    v = a % a
    return np.full_like(a, float("inf"))


def power_read_only_for_its_layout(a, s):
    # fuzz seed 1070161, backend c: v was read only by np.full_like (its shape and dtype), so the power
    # was taken as read, never computed, and its 'invalid value' never warned
    v = a ** a
    return np.full_like(v, s)


def unread_division_through_a_view(a):
    # fuzz seed 1071227, backend c: v's slice divided in place and stored back was taken as a read of v;
    # nothing computed v, and inf / inf never warned
    v = np.multiply(a, a)
    v[::1] /= float("inf")


def unread_division_before_a_loop(a):
    # fuzz seed 1070618, backend c: a loop node over integer arguments was taken as an op that cannot
    # warn, so the unread division before it ran after the loop's powers had warned
    v = np.true_divide(0.0, np.isclose(a, 2))
    for _ in range(1, 4):
        w = np.power(1e300, a)


def floor_divide_in_place_through_float64(a):
    # fuzz seed 1071929, backend c: float32 //= int64 runs in float64 and casts back; the invalid value of
    # -inf // 7 was blamed on the kernel's first op, the cast to float64
    v = a.astype(np.float64)
    a //= np.int64(7)
    return v


def float_ops_under_a_constant_result(a, b):
    # fuzz seed 1072985, backend c: `False & x` and `True | x` are constant whatever x is; the C compiler
    # folded them and dropped the division and the square root only x read, with their warnings
    v = -0.0 <= a / np.zeros_like(a)
    w = np.logical_or(True, np.sqrt(b) > 0)
    return (False & (b != v)) ^ w ^ (np.left_shift(np.int64(1) - (a / b < 3), 70) > 0)


def comparison_with_nan_of_a_numpy_loops_value(a, s):
    # fuzz seed 1100513, backend c: `v > nan` is False whatever v is; the pin that keeps the float ops under
    # v named the cast before np.log's tile loop, out of scope where the comparison is (a C compile error)
    v = np.log(a)
    v[v > float("nan")] = s
    return v


def remainder_after_each_write_of_an_unrolled_loop(a):
    # fuzz seed 1074276, backend c: the three `np.mod(1e-300, a)` are one kernel IR expression (it loads `a`
    # by name), computed by three kernels between the writes; each reported the flag for all three nodes
    for x in a:
        a[a < x] = True
        np.mod(1e-300, a)
    return np.asarray(x)   # x read after the loop, as in the fuzzed program (without it, no failure)


def float_ops_under_operands_the_compiler_folds(a, s):
    # fuzz seed 1110198, backend c: `np.where(w, v, v)` is v whatever w is, `w ^ w` and `w & ~w` are False;
    # the C compiler folded them and dropped the division only w read, with its warning
    v = a.astype(np.int16)
    w = v / (v + 0.0) > s
    return np.where(w, v, v) + (w ^ w) + np.logical_and(w, ~w)


def std_of_each_row_after_a_break(a, b):
    # fuzz seed 1110533, backend c: the three unrolled `v.std(axis=1)` are three NumPy calls, each warning for
    # its subtract (inf - inf); the kernel computed their sums once, and the subtract inside, the value of no
    # graph node, was reported once (the print breaks the graph: v is an input of the loop's)
    v = 300 / a
    print(b.dtype, end="")
    for row in v:
        w = v.std(axis=1)
    return np.asarray(row)


def nans_compared_with_infinities(a, b):
    # fuzz seed 1130620, backend c: GCC's vectorizer made `a != inf` into `!(a < inf)`, a signaling compare:
    # 'invalid value encountered in not_equal' for a NaN, which NumPy's quiet compare never warns
    return np.where(a != float("inf"), b, a) + np.where(a == -float("inf"), b, a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, make_args, expected_warnings", [
    (floor_divide_in_place_through_float64, lambda: (np.array([[0.9, -np.inf, 2.5]], np.float32),),
     ["invalid value encountered in floor_divide"]),
    (power_read_only_for_its_layout, lambda: (np.array([-1.5, 2.0, 0.5]), 2.0),
     ["invalid value encountered in power"]),
    (unread_division_through_a_view, lambda: (np.array([-1.5, np.inf, 0.5]),),
     ["invalid value encountered in divide"]),
    (unread_division_before_a_loop, lambda: (np.array([[0, 2, 5, 7]], np.uint16),),
     ["invalid value encountered in divide"] + ["overflow encountered in power"] * 3),
    (dead_floor_divide_then_integer_reciprocal, lambda: (np.array([0, 1, 2, -3]), 0),
     ["divide by zero encountered in floor_divide", "divide by zero encountered in reciprocal",
      "invalid value encountered in reciprocal"]),
    (dead_remainder_then_infinite_fill, lambda: (np.array([[0, 1], [2, 3]], np.int32),),
     ["divide by zero encountered in remainder", "invalid value encountered in cast"]),
    (comparison_with_nan_of_a_numpy_loops_value, lambda: (np.array([0, 2, 6, 4]), 1.5),
     ["divide by zero encountered in log"]),
    (remainder_after_each_write_of_an_unrolled_loop, lambda: (np.array([False, False, True]),),
     ["invalid value encountered in remainder"] * 2),
    (float_ops_under_operands_the_compiler_folds, lambda: (np.array([0, 1, 2, 3, 0, 1, 2, 3]), 0.5),
     ["invalid value encountered in divide"]),
    (std_of_each_row_after_a_break, lambda: (np.array([[5, 7, 2, 5], [2, 1, 0, 6], [6, 4, 9, 8]], np.uint8),
                                             np.int32(8)),
     ["divide by zero encountered in divide"] + ["invalid value encountered in subtract"] * 3),
    (nans_compared_with_infinities, lambda: (np.array([[np.nan, 1, 0], [0, np.nan, np.nan], [np.inf, 0, -np.inf],
                                                       [-1, 0, np.nan], [0, np.nan, 2]], np.float32),
                                             np.array([[1.79, 0.38, -0.5]], np.float32)), []),
    (float_ops_under_a_constant_result, lambda: (np.array([1.0, 0.0, 2.0]), np.array([-1.0, 0.0, 4.0])),
     ["divide by zero encountered in divide", "invalid value encountered in divide",
      "invalid value encountered in sqrt", "invalid value encountered in divide"]),
])
def test_warnings_come_in_numpys_order(backend, program, make_args, expected_warnings):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for _ in range(3):
        expected = observed(program, *make_args())
        assert [message for _, message in expected[2]] == expected_warnings
        assert observed(compiled, *make_args()) == expected


SEEN: dict[int, np.ndarray] = {}
CALLS = [0]


def float_scalar_stored_into_integers(a, b):
    # fuzz seed 1063768: `ints[None] = a @ a` with a NaN product raises ValueError in NumPy (a scalar is
    # converted as Python converts it; an array would be cast with a warning). Backend c cast it in its
    # kernel (no error), and on every backend the store into SEEN before it was lost when it raised (the
    # graph writes b, so it cannot run the frame again from its start)
    SEEN[0] = a
    product = a @ a
    smallest = np.argmin(b, axis=0)
    b[:1] = product     # uint16: NumPy casts this NaN with a warning
    smallest[None] = product
    CALLS[0] += 1
    return smallest


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_scalar_stored_into_integers_raises_after_earlier_effects(backend):
    dynamo.reset()
    compiled = dynamo.compile(float_scalar_stored_into_integers, backend=backend)
    errors = []
    for first in (1.0, np.nan, -np.inf, 2.0, np.nan):
        outcomes = []
        for fn in (float_scalar_stored_into_integers, compiled):
            a, b = np.array([first, 2.0, 0.5]), np.arange(4, dtype=np.uint16).reshape(4, 1)
            CALLS[0] = 0
            outcomes.append((observed(fn, a, b), SEEN[0] is a, CALLS[0], b.tobytes()))
        assert outcomes[1] == outcomes[0]
        errors.append(outcomes[0][0][1] and outcomes[0][0][1][0])
    assert errors == [None, "ValueError", "OverflowError", None, "ValueError"]


def unsigned_remainder_of_a_constant(a):
    # fuzz seed 2023085, backend triton: `v % 1` of uint8 gave Triton an int32 constant beside a uint8
    # tensor, which its % refuses (InterpreterError 'different signedness')
    v = np.min(~a, axis=1, keepdims=True)
    return a ** (v % 1), a // (v + 1), (v - 3) % a


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_triton_integer_division_of_unsigned_values_and_constants():
    dynamo.reset()
    compiled = dynamo.compile(unsigned_remainder_of_a_constant, backend="triton")
    a = np.array([[3, 250, 7, 1, 9], [4, 4, 6, 128, 255]], np.uint8)   # no 0: Triton kernels do not warn
    got, expected = observed_all(compiled, a), observed_all(unsigned_remainder_of_a_constant, a)
    assert got == expected


def observed_all(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = fn(*args)
    return [(r.dtype, r.shape, r.tobytes()) for r in results], [str(w.message) for w in caught]


def float16_clipped_by_int32_bounds(a, low):
    # fuzz seed 2024381, backend triton: clip of float16 by int32 bounds is float64 in NumPy; the kernel IR
    # compared and picked the uncast operands, which Triton promotes to float16 (41 ** 3 overflowed to inf)
    v = np.clip(a, low, 2)
    return v, np.power(v[-1], 3), np.clip(low, a, 70000)


@pytest.mark.parametrize("backend", [*BACKENDS, "triton"])
def test_clip_compares_in_the_result_type(backend):
    if backend == "triton" and importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    dynamo.reset()
    compiled = dynamo.compile(float16_clipped_by_int32_bounds, backend=backend)
    for low in (np.array([41, -5], np.int32), np.array([-3, 69000], np.int32)):
        a = np.array([[-0.01], [-2.27]], np.float16)
        assert observed_all(compiled, a, low) == observed_all(float16_clipped_by_int32_bounds, a, low)


def narrow_integer_product_then_float16_power(a):
    # fuzz seed 2029040, backend triton: tl.sum adds int8 products as int32, so the int8 matmul's 223 (-33 in
    # NumPy, which wraps around) reached exp2 as 223: inf for NumPy's 0
    return np.exp2(np.matmul(a, a.T))


def float16_spread_past_its_range(a):
    # fuzz seed 2029861, backend triton: NumPy's var and std of float16 keep each step in float16, so a sum of
    # squares past 65504 is inf; lowered in float32 throughout, the std came out 119.4
    return a.std(axis=1), a.var(axis=1)


def stack_of_many_pieces(a):
    # fuzz seed 2045050, backend triton: np.stack of 600 pieces nests 600 wheres, which the Triton writer
    # followed by recursion (RecursionError compiling the graph)
    return np.stack([a] * 400)


def products_with_a_zero_and_an_overflow(a):
    # fuzz seed 2052686, backend triton: NumPy multiplies in memory order (0 first here: -0.0 to the end);
    # Triton's products per row then across rows met 0 * -inf (nan)
    return a.prod(axis=(0, 1), keepdims=True), np.asfortranarray(a).prod(), a.prod(axis=1), a.T.prod(axis=0)


@pytest.mark.parametrize("backend", [*BACKENDS, "triton"])
@pytest.mark.parametrize("program, make_args", [
    (narrow_integer_product_then_float16_power, lambda: (np.array([[9, 5, 9, 6], [1, -2, 3, 0]], np.int8),)),
    (float16_spread_past_its_range, lambda: (np.array([[0.34, 298.5, 1.53, -0.83, -0.54], [0.28, 0.72, 2.5, 0.84, -2.48]],
                                                      np.float16),)),
    (stack_of_many_pieces, lambda: (np.arange(5.0),)),
    (products_with_a_zero_and_an_overflow, lambda: (np.array([[1e300, 0.0, 2.0], [1e300, 1e300, -1.0]]),)),
])
def test_narrow_dtypes_and_deep_values_as_numpy(backend, program, make_args):
    if backend == "triton" and importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    got, expected = observed_all(compiled, *make_args()), observed_all(program, *make_args())
    if backend == "triton":   # Triton's kernels raise no floating-point flags: a documented limitation
        got, expected = got[0], expected[0]
    assert got == expected
