"""Corpus: every ufunc and Python operator of the op registry called from traced code, on several
dtypes and shapes, with out=/where=/dtype=, and NEP 50 promotion of Python scalars."""
import operator

import numpy as np
import pytest

from dynamo.fx_ir import ops
from numpy_samples import BOOL, C128, F32, F64, I64, SHAPES, check, sample
from support import compile_with_counter, fallbacks

# Input dtypes tried for every ufunc, where it has a loop taking them.
DTYPES = [np.dtype(t) for t in (np.float64, np.float32, np.int64, np.bool_, np.complex128)]
# Ufuncs whose inputs are not all of one dtype, or that are linear algebra (test_numpy_linalg.py).
SPECIAL = {"isnat", "ldexp", "matmul", "vecdot", "matvec", "vecmat"}
UFUNC_ROWS = sorted((row for row in ops.all_ops() if row.name.startswith("numpy.") and row.ufunc is not None),
                    key=lambda row: row.name)


def loop_dtypes(ufunc: np.ufunc) -> list[np.dtype]:
    """The dtypes of DTYPES for which `ufunc` has a loop whose inputs all have that dtype."""
    found = []
    for types in ufunc.types:
        inputs = types.split("->")[0]
        if len(set(inputs)) == 1 and np.dtype(inputs[0]) in DTYPES and np.dtype(inputs[0]) not in found:
            found.append(np.dtype(inputs[0]))
    return found


def operand_calls(nin: int, dtype: np.dtype) -> list[tuple]:
    """Argument tuples over the sample shapes; binary calls broadcast and mix 0-d arrays."""
    if nin == 1:
        return [(sample(shape, dtype),) for shape in SHAPES]
    return [(sample((3, 4), dtype), sample((4,), dtype)), (sample((), dtype), sample((), dtype)),
            (sample((0, 3), dtype), sample((1, 3), dtype)), (sample((1,), dtype), sample((), dtype))]


@pytest.mark.parametrize("row", [r for r in UFUNC_ROWS if r.ufunc.__name__ not in SPECIAL], ids=lambda r: r.name)
def test_every_ufunc_on_every_dtype(row):
    ufunc = row.ufunc
    dtypes = loop_dtypes(ufunc)
    assert dtypes, f"{ufunc.__name__} has no loop for the sample dtypes"

    def f(*args):
        return ufunc(*args)

    for dtype in dtypes:
        check(f, *operand_calls(ufunc.nin, dtype))


def test_ufuncs_of_mixed_operand_dtypes():
    check(lambda a, e: np.ldexp(a, e), (F64, I64), (F32, np.int32(3)), (sample((), np.float64), 2))
    dates = np.array(["2020-01-01", "NaT"], dtype="datetime64[D]")
    check(lambda a: np.isnat(a), (dates,), graph=False)  # datetimes are not modelled: they run in Python


def test_ufunc_type_errors_are_raised_by_the_compiled_function():
    check(lambda a: np.negative(a), (BOOL,), graph=False)
    check(lambda a, b: np.bitwise_and(a, b), (F64, F64), graph=False)
    check(lambda a: np.sin(a), (np.array(["x"]),), graph=False)


# ---- out=, where=, dtype=, casting= ------------------------------------------------------------------

def test_ufunc_out_writes_the_given_array_and_returns_it():
    def f(a, b, o):
        r = np.add(a, b, out=o)
        return r, o

    check(f, (F64, F64, np.zeros((3, 4))), (F32, F32, np.zeros((3, 4), np.float64)), (F64, 2.0, np.zeros((3, 4))))

    def positional(a, o):
        np.exp(a, o)
        return o

    check(positional, (F64, np.empty((3, 4))))


def test_ufunc_out_tuple_for_two_outputs():
    def f(a, q, r):
        np.divmod(a, 2.0, out=(q, r))
        m, e = np.frexp(a)
        return q, r, m, e, np.modf(a)

    check(f, (F64, np.zeros((3, 4)), np.zeros((3, 4))))


def test_ufunc_out_into_an_input_and_into_a_view():
    def into_input(a):
        np.multiply(a, 3, out=a)
        return a

    def into_view(a):
        np.negative(a[0], out=a[1])
        return a

    check(into_input, (F64.copy(),), (I64.copy(),))
    check(into_view, (F64.copy(),))


def test_ufunc_where_and_dtype():
    mask = F64 > 1.0

    def where_out(a, m, o):
        return np.sqrt(a, out=o, where=m)

    def dtype_kw(a, b):
        return np.add(a, b, dtype=np.float32), np.multiply(a, b, dtype="float64"), np.divide(a, b, dtype=np.complex64)

    check(where_out, (F64, mask, np.zeros((3, 4))), (F64, True, np.ones((3, 4))))
    check(dtype_kw, (I64, I64), (F64, F32))


def test_ufunc_casting_errors_are_raised():
    def f(a, o):
        return np.add(a, 1.5, out=o)

    check(f, (I64, np.zeros((3, 4), np.int64)), graph=False)  # UFuncTypeError: same_kind casting
    check(lambda a: np.add(a, 1, casting="no", dtype=np.int32), (I64,), graph=False)


def test_ufunc_out_of_a_wrong_shape_raises():
    check(lambda a, o: np.add(a, a, out=o), (F64, np.zeros((4, 3))), graph=False)


# ---- Python operators --------------------------------------------------------------------------------

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
          operator.pow, operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge]
BITWISE = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_binary_operators_on_arrays_and_scalars(op):
    def arrays(a, b):
        return op(a, b)

    def scalar_right(a):
        return op(a, 2)

    def scalar_left(a):
        return op(3.0, a)

    check(arrays, (F64, F32), (I64, F64), (F32, sample((4,), np.float32)), (sample((0, 4)), sample((4,))))
    check(scalar_right, (F64,), (F32,), (I64,), (sample((), np.int64),))
    check(scalar_left, (F64,), (F32,), (I64,))
    if op not in (operator.floordiv, operator.mod):
        check(arrays, (C128, F64))


@pytest.mark.parametrize("op", BITWISE, ids=lambda op: op.__name__)
def test_bitwise_operators(op):
    check(lambda a, b: op(a, b), (I64, sample((4,), np.int64)), (sample((3,), np.int8), sample((3,), np.int8)))
    check(lambda a: op(a, 1), (I64,), (sample((2,), np.uint8),))
    if op in (operator.and_, operator.or_, operator.xor):
        check(lambda a, b: op(a, b), (BOOL, BOOL), (BOOL, True))


def test_unary_operators_and_builtins():
    def f(a):
        return -a, +a, abs(a), operator.abs(a), operator.neg(a), operator.pos(a)

    def bits(a):
        return ~a, operator.invert(a), operator.inv(a)

    check(f, (F64 - 1,), (I64,), (C128,), (sample((), np.float32),))
    check(bits, (I64,), (BOOL,))
    check(lambda a: divmod(a, 3), (F64,), (I64,))
    check(lambda a: (pow(a, 2), pow(2, a), a ** 0.5), (F64,), (I64,))


def test_matmul_operators():
    def f(a, b):
        return a @ b

    def inplace(a, b):
        a @= b
        return a

    check(f, (F64, F64.T), (sample((4,)), sample((4, 2))), (F32, sample((4,), np.float32)))
    check(inplace, (sample((3, 3)), sample((3, 3))))


@pytest.mark.parametrize("op", [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                                operator.imod, operator.ipow], ids=lambda op: op.__name__)
def test_inplace_arithmetic_mutates_the_argument(op):
    def f(a, b):
        c = op(a, b)
        return c, a

    check(f, (F64.copy(), F64), (F64.copy(), 2.0), (F32.copy(), 2), (sample((3, 4)), sample((4,))))
    if op is not operator.itruediv:
        check(f, (I64.copy(), 2), (I64.copy(), sample((4,), np.int64)))


@pytest.mark.parametrize("op", [operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift],
                         ids=lambda op: op.__name__)
def test_inplace_bitwise(op):
    def f(a, b):
        c = op(a, b)
        return c, a

    check(f, (I64.copy(), 1), (I64.copy(), sample((4,), np.int64)))


def test_inplace_operator_statements():
    def f(a, b):
        a += b
        a *= 2
        a -= 1
        a /= 4
        a **= 2
        return a

    def ints(a):
        a //= 2
        a %= 3
        a <<= 1
        a >>= 1
        a &= 7
        a |= 8
        a ^= 1
        return a

    check(f, (F64.copy(), F64), (F32.copy(), sample((4,), np.float32)))
    check(ints, (I64.copy(),))


def test_inplace_operators_that_numpy_rejects_raise():
    def f(a, b):
        a += b
        return a

    check(f, (I64.copy(), 1.5), (I64.copy(), F64), (sample((4,)), F64), graph=False)


# ---- NEP 50: Python scalars are weak, NumPy scalars and arrays are strong ------------------------------

def test_python_scalars_keep_the_array_dtype():
    def f(a):
        return a * 2.0, a + 1, a - 1, a / 2, a ** 2, a > 1.5, 2.0 * a

    check(f, (F32,), (sample((3,), np.float16),), (sample((3,), np.int8),), (sample((3,), np.uint8),))
    _, counter = compile_with_counter(f)
    assert (f(F32)[0]).dtype == np.float32


def test_python_int_out_of_range_raises_as_numpy_does():
    def f(a):
        return a + 300

    compiled, _ = compile_with_counter(f)
    with pytest.raises(OverflowError):
        f(np.ones(3, np.int8))
    with pytest.raises(OverflowError):
        compiled(np.ones(3, np.int8))
    check(f, (np.ones(3, np.int8),), (np.ones(3, np.uint8),), graph=False)
    check(lambda a: a + 300, (np.ones(3, np.int16),))
    check(lambda a: a - (-1), (np.ones(3, np.uint8),), graph=False)  # -1 is out of range for uint8
    check(lambda a: a + 255, (np.ones(3, np.uint8),))  # in range: wraps around


def test_python_scalars_promote_by_kind():
    def f(a):
        return a + 1.5, a * 1j, a + True

    check(f, (I64,), (sample((3,), np.int8),), (BOOL,), (F32,))


def test_numpy_scalars_are_strong():
    def f(a, s):
        return a * s, s * a, a + s, s - a

    check(f, (F32, np.float64(2.0)), (F32, np.float32(2.5)), (sample((3,), np.int8), np.int64(3)),
          (sample((3,), np.int8), np.int8(100)), (F32, np.complex64(1 + 2j)), (I64, np.float16(0.5)))


def test_float16_overflow_and_integer_wraparound_match_numpy():
    check(lambda a: a + 1e10, (sample((3,), np.float16),))
    check(lambda a: a * np.int8(100), (np.full(3, 100, np.int8),))
    check(lambda a: a + 200, (np.full(3, 100, np.uint8),))


def test_operators_that_numpy_rejects_raise():
    check(lambda a, b: a + b, (F64, sample((3,))), graph=False)  # shapes do not broadcast
    check(lambda a: a & 1.5, (I64,), graph=False)
    check(lambda a: a << 1, (F64,), graph=False)


def test_operators_with_lists_and_tuples():
    check(lambda a: a + [1.0, 2.0, 3.0, 4.0], (F64,))
    check(lambda a: (0.5, 1, 2, 3) * a, (F32,))


def test_comparisons_with_none_and_strings_follow_numpy():
    # object comparisons are not modelled: they run in Python, with NumPy's own result
    check(lambda a: a == None, (F64,), graph=False)  # noqa: E711
    check(lambda a: a != "x", (F64,), graph=False)


def test_compiled_ufunc_graph_records_every_call():
    def f(a, b):
        return np.exp(a) + np.log(b) * np.sqrt(a)

    compiled, counter = compile_with_counter(f)
    compiled(F64, F64)
    assert counter.frame_count == 1
    ops_called = [n.target for n in counter.graphs[0].graph.nodes if n.op == "call_function"]
    assert ops_called == [np.exp, np.log, np.sqrt, operator.mul, operator.add]
    assert fallbacks(compiled) == []


def test_ufunc_attributes_are_constants():
    def f(a):
        return np.add.nin, np.exp.nout, np.multiply.identity, np.add.__name__, a + 1

    check(f, (F64,))


def test_the_sign_of_a_nan_constant_reaches_the_arrays():
    def f(a, mask):
        stored = a.copy()
        stored[mask] = -np.nan
        filled = a * 0 + (-np.nan)
        return np.signbit(stored), np.signbit(filled), np.signbit(np.copysign(a, -np.nan))

    check(f, (np.linspace(1.0, 2.0, 5, dtype=np.float32), np.array([True, False, True, False, True])),
          (np.ones(4), np.ones(4, dtype=bool)))
