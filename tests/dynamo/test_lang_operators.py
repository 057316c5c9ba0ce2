"""Corpus: operators, constant folding, comparisons, identity and membership, compiled vs plain; what
Python raises must still be raised by the compiled function."""
import enum
import inspect
import operator

import numpy as np

import dynamo

from support import assert_matches_python, compile_with_counter, fallbacks

A = np.arange(6.0).reshape(2, 3)
B = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
I = np.arange(-3, 3, dtype=np.int64)


def check(fn, *calls, graph=True):
    for args in calls:
        assert_matches_python(fn, *args, expect_graph=graph)


# ---- folding of Python numbers -------------------------------------------------------------------

def test_int_arithmetic_folds_with_python_semantics():
    def f(a, b):
        return (a + b, a - b, a * b, a // b, a % b, a ** 2, -a, +a, abs(a), divmod(a, b), a / b)

    check(f, (7, 3), (-7, 3), (7, -3), (0, 5), (2**70, 3))


def test_float_and_complex_arithmetic():
    def f(a, b):
        c = complex(a, b)
        return a / b, a // b, a % b, a ** 0.5 if a >= 0 else -a, c * c, c.real, c.imag, abs(c)

    check(f, (7.5, 2.0), (-7.5, 2.0), (1e300, 1e-10), (0.0, -3.0))


def test_bitwise_and_shift_operators():
    def f(a, b):
        return a & b, a | b, a ^ b, ~a, a << 3, a >> 1, (a & 0xF) << b

    check(f, (12, 5), (-12, 3), (255, 0))


def test_bool_arithmetic_and_mixed_types():
    def f(a, b):
        return True + True, a + 1.5, a * True, b + 1j, a == 1.0, a < b, not a, not b

    check(f, (1, 2.5), (0, -1.0), (3, 0.0))


def test_folded_constants_feed_array_ops():
    def f(x, n):
        k = (n * 2 + 1) / 3
        m = n ** 2 - n // 2
        return x * k + m

    check(f, (A, 1), (A, 5), (B, -4))


def test_division_by_zero_is_raised_like_python():
    def f(x, d):
        return x + 1 / d

    check(f, (A, 2.0))
    check(f, (A, 0), graph=False)


def test_string_and_sequence_operators():
    def f(s, t):
        return s + t, s * 2, t * 0, (1, 2) + (3,), [0] * 3, "ab" in s, s < t

    check(f, ("ab", "cd"), ("xyz", ""), ("", "ab"))


# ---- array operators -----------------------------------------------------------------------------

def test_array_binary_operators():
    def f(x, y):
        return x + y, x - y, x * y, x / (y + 3), x // 2, x % 3, x ** 2, x @ y.T, -x, +x, abs(y)

    check(f, (A, B), (B, A))


def test_array_integer_operators():
    def f(x):
        return x & 3, x | 1, x ^ 5, ~x, x << 2, x >> 1

    check(f, (I,), (I[::-1].copy(),))


def test_array_comparisons_produce_bool_arrays():
    def f(x, y):
        return x < y, x <= y, x == y, x != y, x > y, x >= y, (x > 0) & (y < 0), ~(x > 1)

    check(f, (A, B), (B, B))


def test_reflected_operators_with_python_numbers():
    def f(x):
        return 1 - x, 2 / (x + 10), 3 ** (x / 10), 5 // (x + 1), 7 % (x + 1), 2 * x

    check(f, (A,), (np.arange(1, 5),))


def test_in_place_array_operators_mutate_argument():
    def f(x, y):
        x += y
        x *= 2
        x -= 1
        return x

    check(f, (A.copy(), B), (B.copy(), A))


def test_numpy_scalar_arithmetic():
    def f(x):
        s = np.float32(1.5)
        t = np.int64(3)
        return x * s + t, s * t, s + 1, t // 2

    check(f, (A,), (A.astype(np.float32),))


# ---- comparisons, identity, membership, not --------------------------------------------------------

def test_chained_comparisons_on_constants():
    def f(x, a, b, c):
        if a < b < c:
            return x + 1
        if a == b != c:
            return x - 1
        return x * 0 if 0 <= a <= 10 < c else x

    check(f, (A, 1, 2, 3), (A, 2, 2, 3), (A, 3, 2, 11), (A, 5, 1, 0))


def test_chained_comparison_on_arrays_raises_like_python():
    def f(x):
        return 0 < x < 1

    check(f, (A,), graph=False)


def test_is_and_is_not():
    def f(x, y, flag):
        out = x
        if y is None:
            out = out + 1
        if y is not None:
            out = out + y
        if flag is True:
            out = out * 2
        return out, x is x, y is None, flag is not False

    check(f, (A, None, True), (A, B, False), (A, None, 1))


class _Mode(enum.IntEnum):  # members are ints, yet each is one object
    FAST = 0
    EXACT = 1


def test_identity_of_int_enum_members_reached_by_two_paths():
    def f(x, mode, kind):
        picked = x * 2 if mode is _Mode.EXACT else x
        return picked, mode is _Mode.FAST, kind is inspect.Parameter.POSITIONAL_ONLY, mode is not _Mode.EXACT

    check(f, (A, _Mode.EXACT, inspect.Parameter.POSITIONAL_ONLY), (A, _Mode.FAST, inspect.Parameter.KEYWORD_ONLY))


def test_in_and_not_in():
    def f(x, mode, opts):
        out = x
        if mode in ("a", "b"):
            out = out + 1
        if "scale" in opts:
            out = out * opts["scale"]
        if 3 not in [1, 2]:
            out = out - 1
        return out, "z" in mode, mode not in opts

    check(f, (A, "a", {"scale": 2.0}), (A, "c", {}), (A, "scale", {"scale": 0.5}))


def test_not_and_truthiness_of_containers():
    def f(x, items, d, s):
        out = x
        if not items:
            out = out + 1
        if d:
            out = out + 2
        if not s:
            out = out + 3
        return out, not None, not 0.0, bool([]), bool((0,))

    check(f, (A, [], {}, ""), (A, [1], {"a": 1}, "x"))


def test_and_or_return_operands():
    def f(a, b, x):
        return (a and b), (a or b), (a and x) if a else (b or x), None or a, 0 and x

    check(f, (0, 5, A), (3, 0, A), ("", "s", B))


def test_conditional_expression():
    def f(x, n):
        y = x * 2 if n > 2 else x - 2
        z = "big" if n > 100 else "small"
        return y, z

    check(f, (A, 3), (A, 1), (B, 1000))


def test_walrus_in_conditions_and_comprehension():
    def f(x, n):
        if (m := n * 2) > 4:
            x = x + m
        vals = [y for i in range(n) if (y := i * i) % 2 == 0]
        return x, vals, m

    with dynamo.config.patch(recompiles_for_values=8):  # a compile per n (the loop needs it), not Python
        check(f, (A, 3), (A, 1), (B, 5))


def test_tuple_and_list_comparisons():
    def f(a, b):
        return a < b, a == b, a >= b, [1, 2] < [1, 3], (1, "a") == (1, "a")

    check(f, ((1, 2), (1, 3)), ((2,), (1, 9)), ((), ()))


def test_operator_module_functions():
    def f(x, y):
        return operator.add(x, y), operator.mul(x, 2), operator.neg(y), operator.getitem((1, 2), 1)

    check(f, (A, B), (B, A))


def test_matmul_chain_and_power_of_constants():
    def f(x, y):
        n = 2 ** 3
        return (x @ y.T) @ x * n, pow(2, 5), pow(3, 2, 5)

    check(f, (A, B))


def test_folded_arithmetic_makes_no_graph_nodes():
    def f(x, n):
        k = n * 3 + 1 - n // 2
        return x + k

    compiled, counter = compile_with_counter(f)
    np.testing.assert_array_equal(compiled(A, 4), f(A, 4))
    assert counter.op_counts() == [1]
    assert fallbacks(compiled) == []
