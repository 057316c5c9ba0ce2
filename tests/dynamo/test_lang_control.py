"""Corpus: branches on values known while tracing, early returns, assert, match statements and
data-dependent branches (which must give up and still return what Python returns)."""
import numpy as np

from support import same_value, assert_matches_python, compile_with_counter, fallbacks, graph_breaks

A = np.arange(6.0).reshape(2, 3)
B = np.linspace(-1.0, 1.0, 6).reshape(2, 3)


def check(fn, *calls, graph=True):
    for args in calls:
        assert_matches_python(fn, *args, expect_graph=graph)


class Struct:
    """Test objects compare by their attributes, so mutated arguments can be compared."""

    def __eq__(self, other):
        return type(self) is type(other) and same_value(vars(self), vars(other))



def test_if_elif_else_on_arguments():
    def f(x, n):
        if n < 0:
            y = -x
        elif n == 0:
            y = x * 0
        elif n < 10 and n % 2:
            y = x + n
        else:
            y = x - n
        return y

    check(f, (A, -1), (A, 0), (A, 3), (A, 4), (A, 20))


def test_branch_on_shape_dtype_and_ndim():
    def f(x):
        if x.ndim == 1:
            return x * 2
        if x.shape[0] > 1 and x.dtype == np.float64:
            return x.sum(axis=0)
        return x

    check(f, (A,), (np.arange(3.0),), (A.astype(np.float32),), (np.ones((1, 3)),))


def test_branch_on_none_and_optional_argument():
    def f(x, w=None, b=None):
        if w is not None:
            x = x * w
        if b:
            x = x + b
        return x

    check(f, (A,), (A, 2.0), (A, None, 1.0), (A, B, 0.0))


def test_early_returns_in_loop():
    def f(x, items):
        for i, v in enumerate(items):
            if v < 0:
                return x * i
        return x

    check(f, (A, [1, 2, -1, 3]), (A, [1]), (A, []))


def test_assert_that_holds_is_captured():
    def f(x, n):
        assert n > 0, "n must be positive"
        assert x.ndim == 2
        return x * n

    check(f, (A, 2), (B, 5))


def test_assert_that_fails_raises_like_python():
    def f(x, n):
        assert n > 0, f"bad n {n}"
        return x * n

    check(f, (A, -1), graph=False)


def test_data_dependent_branch_gives_up_and_matches():
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    check(f, (A,), (-A,), graph=False)
    compiled, counter = compile_with_counter(f)
    compiled(A)
    assert fallbacks(compiled) == []
    (reason,) = graph_breaks(compiled)
    assert "data-dependent branch" in reason
    assert counter.frame_count == 2  # the sum and comparison, then the taken branch


def test_while_loop_on_array_value_gives_up_and_matches():
    def f(x):
        while x.max() < 100:
            x = x * 2 + 1
        return x

    check(f, (A,), graph=False)


def test_raise_in_user_code_is_raised():
    def f(x, n):
        if n > 3:
            raise ValueError("too big")
        return x + n

    check(f, (A, 1))
    check(f, (A, 5), graph=False)


def test_try_except_falls_back_correctly():
    def f(x, d):
        try:
            return x / d["k"]
        except KeyError:
            return x

    check(f, (A, {"k": 2.0}), (A, {}), graph=False)


def test_with_block_falls_back_correctly():
    def f(x):
        with np.errstate(divide="ignore"):
            return x / 0

    check(f, (A + 1,), graph=False)


def test_match_statement_on_constants():
    def f(x, cmd):
        match cmd:
            case "double":
                return x * 2
            case ("scale", k):
                return x * k
            case {"shift": s}:
                return x + s
            case [a, b, *rest]:
                return x + a + b + len(rest)
            case int(n) if n > 0:
                return x - n
            case _:
                return x

    check(f, (A, "double"), (A, ("scale", 3.0)), (A, {"shift": 1.0}), (A, [1, 2, 3, 4]), (A, 5), (A, None))


def test_match_class_pattern():
    class Op(Struct):
        __match_args__ = ("name", "arg")

        def __init__(self, name, arg):
            self.name = name
            self.arg = arg

    def f(x, op):
        match op:
            case Op("add", v):
                return x + v
            case Op(name="mul", arg=v):
                return x * v
        return x

    check(f, (A, Op("add", 1.0)), (A, Op("mul", 2.0)), (A, Op("nop", 0)))


def test_ternaries_and_boolean_operators_in_branches():
    def f(x, a, b):
        if (a or b) and not (a and b):
            x = x + 1
        y = x if a else -x
        return y if b is None else y * b

    check(f, (A, 1, 0), (A, 0, None), (A, 1, 2), (A, 0, 0))


def test_while_else_with_break():
    def f(x, n):
        i = 0
        while i < n:
            i += 1
            if i == 10:
                break
        else:
            x = x + 100
        return x, i

    check(f, (A, 3), (A, 12))


def test_chained_comparison_evaluates_middle_once():
    def f(x):
        calls = []

        def middle():
            calls.append(1)
            return 5
        return x, 1 < middle() < 10, calls

    check(f, (A,))


def test_print_gives_up_and_prints_once(capsys):
    def f(x):
        print("hello")
        return x + 1

    check(f, (A,), graph=False)
    assert capsys.readouterr().out == "hello\nhello\n"  # plain run, then the compiled one


def test_any_short_circuits_lazily():
    def f(x):
        seen = []

        def big(v):
            seen.append(v)
            return v > 1
        return x, any(big(v) for v in [0, 2, 3]), all(big(v) for v in [5, 0, 7]), seen

    check(f, (A,))


def test_unbound_local_raises_like_python():
    def f(x, flag):
        if flag:
            y = x
        return y

    check(f, (A, True))
    check(f, (A, False), graph=False)


def test_class_statement_falls_back_correctly():
    def f(x):
        class Local:
            scale = 2
        return x * Local.scale

    check(f, (A,), graph=False)
