"""Failures the differential fuzzer (tests/fuzz/) found in the backends, minimized: each program run
plain and compiled on every CPU backend must return the same values and leave the same arguments."""
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
HAS_TRITON = importlib.util.find_spec("triton") is not None


def contiguous_copy_then_write(a):
    # fuzz seed 900000, backend c: the kernel lowering took ascontiguousarray for a view, so the copy
    # of the reversed array saw the write made after it
    smallest = np.argmin(a)
    copy = np.ascontiguousarray(a[::-1])
    a[:] = smallest
    return copy


def contiguous_same_array_then_write(a):
    # an array that is already C-contiguous is returned itself: the write shows through it
    same = np.ascontiguousarray(a)
    a[0] = a[1]
    return same, same is a


def astype_same_dtype_then_in_place(a):
    # fuzz seed 1000569, backend c: astype to the array's own dtype is a copy, but the kernel lowering
    # took the array's own value, so the in-place product wrote into the argument
    v = a.astype(np.float64)
    v *= a
    return v


def assert_identical(got, expected):
    assert type(got) is type(expected)
    if isinstance(expected, tuple):
        for g, e in zip(got, expected, strict=True):
            assert_identical(g, e)
    elif isinstance(expected, np.ndarray):
        assert (got.dtype, got.shape, got.strides) == (expected.dtype, expected.shape, expected.strides)
        assert got.tobytes() == expected.tobytes()
    else:
        assert got == expected


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", [contiguous_copy_then_write, contiguous_same_array_then_write])
@pytest.mark.parametrize("dtype", [np.float64, np.bool_, np.int32])
def test_fuzzer_found_program(backend, program, dtype):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for values in ([1, 0, 1], [0, 1, 1, 0, 1]):   # a second shape: the cached path and a recompile
        plain_args, compiled_args = np.array(values, dtype), np.array(values, dtype)
        expected = program(plain_args)
        got = compiled(compiled_args)
        assert_identical(got, expected)
        assert_identical(compiled_args, plain_args)


def scalar_overflows_the_dtype(a):
    # fuzz seeds 900020 and 1000008, backend c: the Python scalar, cast to the array's dtype, overflows;
    # NumPy warns on every call, the kernel lowering folded the cast and warned once, while compiling
    return a * 1e300 + 1.0, a < 1e300


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fuzzer_found_warnings(backend, dtype):
    dynamo.reset()
    compiled = dynamo.compile(scalar_overflows_the_dtype, backend=backend)
    for _ in range(2):   # the first call compiles, the second runs the cached kernels
        with warnings.catch_warnings(record=True) as plain_warnings:
            warnings.simplefilter("always")
            expected = scalar_overflows_the_dtype(np.ones(3, dtype))
        with warnings.catch_warnings(record=True) as compiled_warnings:
            warnings.simplefilter("always")
            got = compiled(np.ones(3, dtype))
        assert_identical(got, expected)
        assert [(w.category, str(w.message)) for w in compiled_warnings] == \
            [(w.category, str(w.message)) for w in plain_warnings]


def unread_in_place_floor_divide(a):
    # fuzz seed 1000163, backend c: an in-place update nobody reads never ran, nor warned
    v = -a
    v //= v


@pytest.mark.parametrize("backend", BACKENDS)
def test_fuzzer_found_astype_copy(backend):
    dynamo.reset()
    compiled = dynamo.compile(astype_same_dtype_then_in_place, backend=backend)
    # as the fuzzer called it: float32 twice, then float64 of another shape (a recompile)
    for values in (np.array([1.5, 2.0, -3.0], np.float32), np.array([0.5, 2.0, 3.0], np.float32),
                   np.array([1.99, 0.1, -0.28, -2.81])):
        plain_args, compiled_args = values.copy(), values.copy()
        assert_identical(compiled(compiled_args), astype_same_dtype_then_in_place(plain_args))
        assert_identical(compiled_args, plain_args)


def write_then_singular_inverse(a):
    # fuzz seed 1000456, backend c (issue #17 class 1): the functionalized write into the argument was
    # stored at the graph's end, which the LinAlgError of the NumPy step never reached
    a[:1] = 7
    np.linalg.inv(np.zeros((2, 2)))


def write_then_raising_step_and_old_value(a):
    # the write lands before the NumPy step, and a value read before the write keeps the old contents
    old = a + 1
    a[:1] = 7
    return old * 2, np.take(a, 10**6)


def shift_in_place_then_fancy_setitem(a):
    # fuzz seed 1000624, backend c: the NumPy setitem after `a <<= k` wrote into a temporary holding
    # a << k instead of a, and a kept the shifted values
    a <<= 3
    a[[0, -1]] = 5
    return a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, make_args", [
    (shift_in_place_then_fancy_setitem, lambda: (np.array([[2, 3, -1], [1, 1, 1], [4, 0, 2]]),)),
    (write_then_singular_inverse, lambda: (np.array([1.5, 2.0, -3.0]),)),
    (write_then_raising_step_and_old_value, lambda: (np.array([1.5, 2.0, -3.0]),)),
    (unread_in_place_floor_divide, lambda: (np.array([[1, 0], [2, 3]], np.uint8),)),
])
def test_fuzzer_found_effects_before_an_error(backend, program, make_args):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for _ in range(2):
        outcomes = []
        for fn in (program, compiled):
            args = make_args()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    fn(*args)
                    error = None
                except (IndexError, np.linalg.LinAlgError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
            outcomes.append(([(w.category, str(w.message)) for w in caught], error,
                             [a.tobytes() for a in args]))
        assert outcomes[1] == outcomes[0]


# -- seeds 1000596..1005025 (backend c): writes the kernel lowering ordered wrongly, views it lost --------

def square_then_masked_setitem(a, s):
    # fuzz seed 1003200: the mask, read by the NumPy setitem, was computed after `a` was stored, from
    # the squared values: it squared them twice
    a *= a
    a[a < s] = s
    return a


def where_then_shift_then_view_update(a, s, t):
    # fuzz seed 1004887: `v1` was computed after the shift was stored into `a`
    v1 = np.where(a < 2, t, a)
    v4 = np.where(v1, v1, v1)
    a <<= s
    v4[...] *= v1
    return v4


def in_place_loop_through_a_new_axis(a, mask):
    # fuzz seed 1001753
    for _ in mask:
        a[None] *= mask
        a += a
    return a


def numpy_step_alias_then_out(a):
    # fuzz seed 1001485: np.atleast_2d(a) is `a`; the sum reading it was computed after fmax wrote into a
    v = np.atleast_2d(a)
    total = sum(v for _ in range(3))
    np.fmax(a, 7, out=a)
    return total


def flipped_row_updated_in_place(a):
    # fuzz seed 1005025: np.flip's result (a view of a's row) was updated in a kernel's temporary
    for row in a:
        pass
    v = np.flip(row)
    v -= v
    return {"x": row}


def rows_of_a_temporary_written_into_the_argument(a):
    # fuzz seed 1000596: the last row of ~a, returned, was computed after the write into a was stored
    for r in ~a:
        a[-1, ::-1] = r
    return r


def views_that_change_nothing(a):
    # fuzz seeds 1002394, 1003873: np.broadcast_to(a, a.shape) (read-only) and a[...] are new array
    # objects, not `a` itself
    return np.broadcast_to(a, a.shape), a[...], np.broadcast_to(a + 1, a.shape)


def many_unrolled_scalar_reads(a):
    # fuzz seed 1004797: 400 unread scalar reads became one kernel of 401 buffers (call_native takes 64)
    v = a[a > 0]
    for x in v:
        for y in v:
            pass
    return x


def in_place_through_a_read_only_view_of_itself(a):
    # fuzz seed 1000221 (eager and numpy): after the break, `a` was made from the read-only
    # broadcast_to view that covers it, so `a ^= v` raised 'output array is read-only'
    v = np.broadcast_to(a, a.shape)
    if v[0].any():
        for _ in v:
            a ^= v
    return a, v


def describe(value, args):
    """Everything the fuzzer compares about a value: type, dtype, shape, strides, flags, aliasing, bits."""
    if isinstance(value, np.ndarray):
        alias = [k for k, a in enumerate(args) if isinstance(a, np.ndarray) and np.shares_memory(a, value)]
        return ("ndarray", value.dtype.str, value.shape, value.strides, value.flags.writeable,
                [value is a for a in args], alias, value.tobytes())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [describe(v, args) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, describe(v, args)) for k, v in value.items()])
    return (type(value).__name__, repr(value))


def run_recorded(fn, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = fn(*args), None
        except Exception as exc:  # noqa: BLE001 - compared with the plain program's
            result, error = None, (type(exc).__name__, str(exc))
    return (describe(result, args), error, [(w.category, str(w.message)) for w in caught],
            [describe(a, args) for a in args])


def in_place_result_read_after_its_source_is_written(a, s):
    # fuzz seed 1010085, backend c: v, read only through its `//=`, was computed after the NumPy step
    # had the write into `a` stored, so from the new `a` (wrong values; and its warning came second)
    v = a + 1.0
    v //= 3
    a //= s
    w = np.ones_like(a, dtype=np.complex128)
    return v, w


def view_returned_with_its_atleast_2d(a):
    # fuzz seed 1061064, backend c: np.atleast_2d(v) of a 2-d view is v itself; each reference to the
    # view made another view object on the host, so the two results were not the same object
    v = a.copy().reshape(-1, 1)
    return [v, np.atleast_2d(v)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, make_args", [
    (square_then_masked_setitem, lambda: (np.array([[1.5], [3.0], [-2.0], [0.5]], np.float32), 9)),
    (where_then_shift_then_view_update, lambda: (np.array([[4], [9], [0], [4], [1]], np.int16), True, False)),
    (in_place_loop_through_a_new_axis, lambda: (np.arange(9, dtype=np.int32).reshape(3, 3),
                                                np.array([True, False, True]))),
    (numpy_step_alias_then_out, lambda: (np.array([[1.5, 9.0], [-2.0, 3.0]]),)),
    (flipped_row_updated_in_place, lambda: (np.array([[4, 5, 6]]),)),
    (rows_of_a_temporary_written_into_the_argument, lambda: (np.array([[3, -8], [4, 6]], np.int32),)),
    (views_that_change_nothing, lambda: (np.array([[4], [5]], np.int32),)),
    (many_unrolled_scalar_reads, lambda: (np.arange(-4, 21, dtype=np.int8).reshape(5, 5),)),
    (in_place_through_a_read_only_view_of_itself, lambda: (np.array([[1, 2], [3, 0]]),)),
    (in_place_result_read_after_its_source_is_written, lambda: (np.array([1.0, 5.0, 9.0, np.inf]), 2.0)),
])
def test_fuzzer_found_write_order_and_views(backend, program, make_args):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    # three calls: the c backend alternates its kernels and the numpy backend's code while timing them
    for _ in range(3):
        assert run_recorded(compiled, make_args()) == run_recorded(program, make_args())


def row_of_a_product_read_after_a_masked_write(a):
    # fuzz seed 2071115, backend triton: the product was stored before the NumPy step that writes `a`,
    # but its last row, lowered before as the product's expression, still read `a`: after the write
    v = a * 2
    for r in v:
        pass
    a[a < 1.5] = 255
    return r * 2, v[::-1, 1:]


def in_place_through_a_reshaped_view_then_into_its_base(a):
    # fuzz seed 1181780, backends c and triton: `v <<= v` of the view ran as NumPy code, and `a ^= v` was
    # functionalized as a new value of a, though v (that in-place result) was read after it (by vstack)
    v = a.reshape(-1)
    v <<= v
    a ^= v
    return np.vstack([v, a])


@pytest.mark.parametrize("backend", BACKENDS + (["triton"] if HAS_TRITON else []))
@pytest.mark.parametrize("program, shape", [(row_of_a_product_read_after_a_masked_write, lambda n: (n, 5)),
                                            (in_place_through_a_reshaped_view_then_into_its_base, lambda n: (5 * n,))])
def test_views_read_after_a_write_see_it(backend, program, shape):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for n in (3, 3, 4):
        make_args = lambda: (np.arange(-7, 5 * n - 7, dtype=np.int16).reshape(shape(n)) * 3 % 11,)  # noqa: E731
        assert run_recorded(compiled, make_args()) == run_recorded(program, make_args())


def repeated_ops_that_warn(a, i):
    # fuzz seeds 1000835 and 1003127 (numpy: CSE merged two identical ops, one warning for two) and
    # 1001769, 1002867 (c: two identical nodes are one interned expression, reported once)
    for _ in range(2):
        v = a - a // a
        w = v > 5
    return np.sqrt(a) + np.sqrt(a), w, (i % i) * (i % i)


def unread_divisions_then_out_write(a):
    # fuzz seed 1004484, backend c: unread work ran at the graph's end, after out= wrote zeros into `a`,
    # and warned three times where NumPy (which ran it first) did not warn
    for _ in range(3):
        v = a // a
    np.floor_divide(a, 7, out=a)


def element_of_a_computed_value(a):
    # fuzz seeds 1005539, 1006168, 1006320, backend c: only the element read was computed, so the
    # division by zero NumPy met in another element did not warn
    v = np.remainder(1, a)
    return v[1], np.floor_divide(a, 0)[:-1].sum()


def division_of_a_sum(a):
    # fuzz seed 1002594, backend c: the compiler moved the division before the flag test of the add,
    # which took the division by zero as its own ('encountered in add')
    return np.argmax(2.5 / (a + a))


def division_stored_and_read_at_other_indices(a):
    # fuzz seed 1002594: a node's op in one kernel and, inlined at other indices, in another was
    # reported twice
    v = 2.5 / (a + a)
    return v, np.argmax(v, axis=-1, keepdims=True), v[::-1] > 0


def remainder_in_place_by_a_cast(a, b):
    # fuzz seed 1007127, backend c: a kernel that reads what it writes is not rerun to find the op
    # that raised; the division by zero was blamed on the cast before the remainder
    a %= b.astype(np.int64)
    return a


def unread_view_of_a_division(m):
    # fuzz seed 1008824, backend c: the view nobody reads was skipped, and so was the division it views
    (1 // m).reshape(-1)


def transposed_unread_division(a):
    # fuzz seed 1049786 (eager, numpy): the division was read only by its transpose, which nobody read;
    # dead code elimination dropped both, and the 'invalid value' warning with them
    v = np.floor_divide(float("inf"), a)
    w = v.T  # noqa: F841 - unread, as in the program found


def sum_then_two_in_place_divisions(a, s):
    # fuzz seed 1010085, backend c: `a //= s` (a kernel that reads what it writes: its flags are not
    # found by a rerun) reported floor_divide without its graph node, which did not count apart from
    # the `//=` of the sum, reported with its node: one warning for two
    v = sum(a for _ in range(3))
    a //= s
    v //= 3


def remainder_inlined_into_a_dot(a):
    # fuzz seed 1020200, backend c: the `%` inlined into the dot's sum runs at the reduction's index
    # variable, an expression without its node, and warned again besides the stored `%`'s report
    m = np.where(a, a, 9) % a
    return m @ np.where(a < 2, a, 9), m


def power_inlined_into_a_concatenate(a, b):
    # fuzz seed 1020342, backend c: the power, inlined in both branches of the concatenate at shifted
    # indices, warned twice more than its stored value's one warning
    p = np.where(b < 1, a, -a) ** 0.1
    c = np.concatenate([p, p])
    return c, p, np.add.accumulate(a)


def division_overwritten_in_its_kernel(a):
    # fuzz seeds 1007609, 1020367, backend c: the setitem made the division an operand of a `where` on
    # the index that never selects it where it divides by zero; the C compiler dropped it, and its flag
    v = 0.1 / a
    v[:-1] = 0.5
    return v


def division_where_not_selected(a):
    # backend c: GCC computed the division only where `where` selects it (no division by zero)
    return np.where(a != 0, 1.0 / a, 0.0)


def products_in_place_then_an_unread_division(a, m):
    # fuzz seed 1006984, backend c: the unread `//` ran before the kernel that stores the products into
    # `a` at the end, and warned first
    a *= float("inf")
    m // m[3]


def remainder_wholly_overwritten(a, b):
    # fuzz seed 1061219, backend c: the value, read only by the write into it, counted as read: it was
    # never computed, and NumPy's 'invalid value' of the remainder was lost
    v = np.remainder(-1.26, a)
    v[...] = b


STD_LOG: list = []


def std_of_an_empty_slice_then_a_raising_step(a):
    # fuzz seed 1040164 (eager, numpy): the graph warned 'Degrees of freedom <= 0' and raised
    # LinAlgError; the frame's rerun (for the recorded append) warned it again
    v = a.T.std(axis=None)
    STD_LOG.append(v)
    return v, np.linalg.inv(np.zeros((2, 2)))


def power_in_place_by_its_reciprocal(a):
    # fuzz seed 1181710, backend c: a kernel reading what it writes has no rerun; its 'invalid value' was
    # blamed on its first op that can raise a flag, the reciprocal, which never raises that one
    a **= np.reciprocal(a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, make_args, count", [
    (power_in_place_by_its_reciprocal, lambda: (np.array([[2.11, -1.73, 0.0, -2.03]]),), 2),
    (std_of_an_empty_slice_then_a_raising_step, lambda: (np.zeros((2, 0)),), 3),
    (unread_view_of_a_division, lambda: (np.array([[True, False], [True, True]]),), 1),
    (transposed_unread_division, lambda: (np.array([[0], [7], [-4], [2]]),), 1),
    (division_overwritten_in_its_kernel, lambda: (np.array([0.0, 1.0, 2.0]),), 1),
    (division_where_not_selected, lambda: (np.array([0.0, 1.0, 2.0]),), 1),
    (products_in_place_then_an_unread_division, lambda: (np.array([0.0, 1.0]), np.array([True, False, True, False])), 2),
    (remainder_wholly_overwritten, lambda: (np.zeros(4, bool), np.arange(4.0)), 1),
    (sum_then_two_in_place_divisions, lambda: (np.array([[1.5, np.inf, -2.0], [0.5, 1.0, 3.0]]), -3.28), 2),
    (remainder_inlined_into_a_dot, lambda: (np.array([True, False, True, True]),), 1),
    (power_inlined_into_a_concatenate, lambda: (np.array([[1.0, -2.0], [3.0, -4.0]], np.float32),
                                                 np.array([[0.5, 0.5], [2.0, 0.0]], np.float32)), 1),
    (remainder_in_place_by_a_cast, lambda: (np.array([5, 7, 9]), np.array([2.5, 0.0, 4.0])), 1),
    (division_of_a_sum, lambda: (np.array([0.0, 1.0, -2.0]),), 1),
    (division_stored_and_read_at_other_indices, lambda: (np.array([[0.0, 1.0, -2.0], [1.0, 0.0, 3.0]]),), 1),
    (repeated_ops_that_warn, lambda: (np.array([0.0, 1.0, -2.0]), np.array([0, 3, 2])), 6),
    (unread_divisions_then_out_write, lambda: (np.array([2, 3, 5]),), 0),
    (element_of_a_computed_value, lambda: (np.array([0, 2, 3]),), 2),
])
def test_fuzzer_found_warning_counts(backend, program, make_args, count):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for _ in range(3):
        expected = run_recorded(program, make_args())
        assert len(expected[2]) == count
        assert run_recorded(compiled, make_args()) == expected


def clip_with_signed_zero_bounds(x):
    # fuzz seed 1010253, backend c: clip(0.0, -0.0, hi) is 0.0 in NumPy (its clip loop keeps x on a
    # tie) but -0.0 when lowered as maximum then minimum; with one bound NumPy does call np.maximum
    return (np.clip(x, -0.0, 0.5), np.clip(x, 0.0, 0.0), np.clip(x, -0.0, -0.0), np.clip(x, np.nan, 2.0),
            np.clip(x, 2.0, 1.0), np.clip(x, 0.0, None), np.clip(x, None, -0.0), x.clip(-1, 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_keeps_numpy_signed_zeros_and_nans(backend):
    x = np.array([0.0, -0.0, 1.0, np.nan, 3.0, -2.0, np.inf, -np.inf])
    expected = clip_with_signed_zero_bounds(x.copy())
    got = dynamo.compile(clip_with_signed_zero_bounds, backend=backend)(x.copy())
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and np.array_equal(g, e, equal_nan=True)
        assert np.array_equal(np.signbit(g), np.signbit(e))


def complex_reciprocal(p):
    return (1 + 2j) / p


def divisions_in_a_helper(a):
    # fuzz seed 1000054, backend numpy: with sizes known only per call, a fused kernel's small-size
    # branch had no location comments, so the helper's warning pointed at the caller's line before
    v = np.where(a < 300, np.nan, -1.0)
    return complex_reciprocal(v / (a <= v))


@pytest.mark.parametrize("backend", BACKENDS)
def test_warnings_of_a_dynamic_kernel_point_at_the_users_lines(backend):
    def lines(fn, a):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(a)
        return [(w.filename, w.lineno, str(w.message)) for w in caught]

    dynamo.reset()
    compiled = dynamo.compile(divisions_in_a_helper, backend=backend)
    for shape in ((5, 2), (2, 4), (3, 3)):   # the third call compiles for sizes known only per call
        a = np.zeros(shape, np.float16)
        expected = lines(divisions_in_a_helper, a)
        assert expected and lines(compiled, a) == expected


def logical_ops_of_a_loaded_scalar(a, b):
    # fuzz seeds 2000074, 2000274, backend triton: a kernel's one-element load (the mean of a (3, 1)
    # array) compared with 0 and joined by `&` to a tile raised InterpreterError in Triton's interpreter
    m = np.mean(a, axis=0)
    return (np.logical_and(m, b), np.logical_or(m, b > 1), np.logical_xor(b, m), np.bitwise_and(m > 0, b > 0),
            np.where(m > 0.5, b, -b))


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_triton_logical_ops_of_a_loaded_scalar():
    dynamo.reset()
    compiled = dynamo.compile(logical_ops_of_a_loaded_scalar, backend="triton")
    for rows, value in ((3, 0.0), (3, 1.0), (4, -2.5)):
        a = np.full((rows, 1), value)
        b = np.arange(rows * 2, dtype=np.float64).reshape(rows, 2) - 2
        assert run_recorded(compiled, (a, b)) == run_recorded(logical_ops_of_a_loaded_scalar, (a, b))


def arg_extremes_with_columns_of_nans(a):
    # fuzz seed 2012340, backend triton: tl.argmax of a column of NaNs raised InterpreterError ('All-NaN
    # slice encountered': Triton's interpreter reduces with np.nanargmax)
    return np.argmax(a, axis=0, keepdims=True), np.argmin(a, axis=0), np.argmax(a, axis=1), a.argmin()


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_triton_arg_extremes_of_nans(dtype):
    dynamo.reset()
    compiled = dynamo.compile(arg_extremes_with_columns_of_nans, backend="triton")
    nan, inf = np.nan, np.inf
    for rows in ([[nan, 1.0], [nan, 2.0]], [[nan, nan], [nan, nan]], [[1.0, -inf], [-inf, 2.0]], [[inf, 1.0], [inf, nan]]):
        a = np.array(rows, dtype)
        assert run_recorded(compiled, (a,)) == run_recorded(arg_extremes_with_columns_of_nans, (a,))


def integer_reciprocals(a):
    # fuzz seed 2013244, backend triton: 1 // 0 in the kernel gave 0 where NumPy's integer reciprocal
    # of 0 gives its CPU's value (INT_MIN on x86)
    return np.reciprocal(a), np.reciprocal(a.astype(np.int8)), a ** -1 if a.dtype.kind == "f" else -a


@pytest.mark.parametrize("backend", BACKENDS + (["triton"] if HAS_TRITON else []))
def test_integer_reciprocals_are_numpys(backend):
    dynamo.reset()
    compiled = dynamo.compile(integer_reciprocals, backend=backend)
    for values in ([0, 1, -1, 2, 7], [0, 0, 3]):
        a = np.array(values, np.int32)
        assert run_recorded(compiled, (a,)) == run_recorded(integer_reciprocals, (a,))


G_SCALE = 0


def comparisons_of_constants_that_warn(a):
    # fuzz seed 1034446 (eager, numpy): max(2**31, np.float16 0.0) casts 2**31 to float16 and warns;
    # compared while tracing, the warning came from dynamo's frame, and three times on the first call
    small = G_SCALE * np.float16(0.1)
    return a + 1, max(2**31, small), min(small, 2**31), sorted([2**31, small])


@pytest.mark.parametrize("backend", BACKENDS)
def test_constants_compared_while_tracing_warn_at_the_users_line(backend):
    def seen(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(np.ones(3))
        return repr(result), [(w.filename, w.lineno, str(w.message)) for w in caught]

    dynamo.reset()
    compiled = dynamo.compile(comparisons_of_constants_that_warn, backend=backend)
    for _ in range(3):
        expected = seen(comparisons_of_constants_that_warn)
        assert len(expected[1]) == 3 and seen(compiled) == expected


def complex_value_set_into_real(a, c):
    # fuzz seed 1010067, backend c: the complex scalar, folded into the kernel as a constant cast to
    # uint8, warned (ComplexWarning) once at compile time, from the kernel IR's file, and again at run time
    v = np.log1p(c)
    f"{v!r}"   # a graph break: v reaches the next graph as a NumPy scalar
    a[:] = v
    return a


def warnings_of_fused_lines(x):
    # backend c: a kernel's flags were all reported at the line the graph was called from; NumPy warns
    # at each op's own line
    a = 1.0 / x
    b = np.sqrt(a - 2.0)
    return b * x


def split_by_a_sort(x):
    # backend c: NumPy steps split the kernels, so the first calls alternate with the numpy backend's
    # code (choose.FasterOf): the kernels' warnings pointed at backends/c_cpu/choose.py
    d = np.sort(x) * 2.0
    e = 1.0 / d
    return np.sort(e) + np.log(d - 1.0)


def run_located(fn, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return (describe(result, args), [(w.category, str(w.message), w.filename, w.lineno) for w in caught],
            [describe(a, args) for a in args])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, make_args, count", [
    (complex_value_set_into_real, lambda: (np.arange(6, dtype=np.uint8).reshape(2, 3), np.array(1 + 2j)), 1),
    (warnings_of_fused_lines, lambda: (np.array([0.0, 1.0, 0.25, -1.0] * 8),), 3),
    (split_by_a_sort, lambda: (np.array([0.0, 1.0, 0.25, -1.0] * 8),), 2),
])
def test_fuzzer_found_warnings_and_their_lines(backend, program, make_args, count):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for _ in range(5):   # the first call compiles; the chooser's turns; then the cached code
        expected = run_located(program, make_args())
        assert len(expected[1]) == count
        assert run_located(compiled, make_args()) == expected


def float16_quotient_widened(a, b, s):
    # fuzz seed 2000804, backend triton: Triton divides float16 in float32 and kept the float32
    # quotient, which np.where then read unrounded
    return np.where(a > 1, a, np.true_divide(s, b)), b / b[::-1]


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_triton_float16_quotients_are_rounded_as_numpy_rounds_them():
    dynamo.reset()
    compiled = dynamo.compile(float16_quotient_widened, backend="triton")
    a = np.array([[0.5], [2.16], [0.3]], np.float32)
    b = np.array([[0.33], [0.7], [1.7]], np.float16)
    assert run_recorded(compiled, (a, b, -6.9)) == run_recorded(float16_quotient_widened, (a, b, -6.9))


def complex_constants_with_signed_zeros(a):
    # fuzz seed 1051711 (eager, numpy): the graph printed the constant 0.0-1e300j as -1e+300j, which
    # evaluates to a real part of -0.0, so np.full_like(a, v) of a float array was -0.0, not 0.0
    values = [0.0 - (1j * 1e300), complex(-0.0, 2.0), complex(0.0, -0.0), complex(-0.0, -0.0), 1j * 0.0]
    return [np.full_like(a, v) for v in values], [a + v for v in values]


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex_constants_keep_the_signs_of_their_zeros(backend):
    dynamo.reset()
    compiled = dynamo.compile(complex_constants_with_signed_zeros, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        got, expected = compiled(np.ones(3)), complex_constants_with_signed_zeros(np.ones(3))
    for g, e in zip([*got[0], *got[1]], [*expected[0], *expected[1]]):
        assert g.dtype == e.dtype and g.tobytes() == e.tobytes()


def remainder_and_power_around_a_division(a):
    # fuzz seed 1045852 (numpy): with sizes known per call, remainder and ** became one kernel, scheduled
    # after the division between them, so 'divide by zero' came before remainder's 'invalid value'
    v = np.remainder(a, False)
    w = 1.5 // np.zeros_like(a)
    return v ** v, w


@pytest.mark.parametrize("backend", BACKENDS)
def test_fuzzer_found_warning_order(backend):
    dynamo.reset()
    compiled = dynamo.compile(remainder_and_power_around_a_division, backend=backend)
    for n, dtype in ((4, np.float64), (4, np.float64), (3, np.float32), (5, np.float32)):  # then dynamic sizes
        make_args = lambda: (np.linspace(-1.0, 2.0, n, dtype=dtype).reshape(1, n),)  # noqa: E731
        expected = run_recorded(remainder_and_power_around_a_division, make_args())
        assert [message.split(" encountered")[0] for _, message in expected[2]] == ["invalid value", "divide by zero"]
        assert run_recorded(compiled, make_args()) == expected


def cast_overflow_fused_with_a_read_of_a_later_remainder(a):
    # fuzz seed 1131727 (numpy): the comparison with 2**31 (its cast to float16 overflows) and the one with
    # the remainder became one kernel, scheduled after the remainder, whose 'invalid value' came first
    v = 2 ** 31 == a
    r = np.mod(float("inf"), 1)
    return np.where(a > r, 3.0, v)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_ops_warn_before_a_later_value_they_read(backend):
    dynamo.reset()
    compiled = dynamo.compile(cast_overflow_fused_with_a_read_of_a_later_remainder, backend=backend)
    for n in (3, 3, 7, 5):   # then dynamic sizes: a kernel whatever the size
        make_args = lambda: (np.linspace(-1.0, 2.0, 2 * n, dtype=np.float16).reshape(n, 2),)  # noqa: E731
        expected = run_recorded(cast_overflow_fused_with_a_read_of_a_later_remainder, make_args())
        assert [message.split(" encountered")[0] for _, message in expected[2]] == ["overflow", "invalid value"]
        assert run_recorded(compiled, make_args()) == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_and_its_atleast_2d_are_one_object(backend):
    dynamo.reset()
    compiled = dynamo.compile(view_returned_with_its_atleast_2d, backend=backend)
    for _ in range(3):
        a = np.array([1.5, -2.0, 3.0])
        expected = view_returned_with_its_atleast_2d(a)
        got = compiled(a)
        assert (got[1] is got[0]) == (expected[1] is expected[0]) is True
        assert_identical(tuple(got), tuple(expected))
