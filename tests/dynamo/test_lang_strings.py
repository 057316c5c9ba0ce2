"""Corpus: f-strings, str methods and string-driven control flow, compiled vs plain; a string built from
an array's data cannot be known while tracing and must give up, never guess."""
import numpy as np

from support import assert_matches_python

A = np.arange(6.0).reshape(2, 3)


def check(fn, *calls, graph=True):
    for args in calls:
        assert_matches_python(fn, *args, expect_graph=graph)


def test_fstring_with_conversions_and_specs():
    def f(x, name, n, v):
        label = f"{name}-{n:03d}-{v:.2f}-{name!r}-{n!s}-{v:>8.1e}-{'lit'}-{n + 1}"
        return x * len(label), label

    check(f, (A, "w", 7, 3.14159), (A, "bias", 123, -0.5))


def test_fstring_of_shape_and_dtype():
    def f(x):
        return x + 1, f"{x.shape}|{x.dtype}|{x.ndim}"

    check(f, (A,), (A.astype(np.float32),), (np.ones(4, dtype=np.int32),))


def test_fstring_nested_format_spec():
    def f(x, width, prec):
        return x, f"{3.14159:{width}.{prec}f}|{'ab':^{width}}"

    check(f, (A, 8, 2), (A, 5, 0))


def test_fstring_of_array_data_gives_up_and_matches():
    def f(x):
        return f"{x.sum()}"

    check(f, (A,), graph=False)


def test_string_methods_fold():
    def f(x, s):
        parts = s.split(",")
        joined = "+".join(p.strip().upper() for p in parts)
        return (x * len(parts), joined, s.replace(",", ";"), s.startswith("a"), s.endswith("z"),
                s.find("b"), s.lower(), s.title(), s.count(","), s.partition(","), s.zfill(12), s.isdigit())

    check(f, (A, "a, b,c"), (A, "xyz"), (A, ""))


def test_string_format_and_percent():
    def f(x, name, n):
        a = "{}:{:>4}".format(name, n)
        b = "%s=%d" % (name, n)
        c = "{k}/{v:.1f}".format(k=name, v=n / 3)
        return x, a, b, c

    check(f, (A, "n", 5), (A, "long", -12))


def test_string_selects_operation():
    def f(x, mode):
        if mode == "sum":
            return x.sum()
        elif mode.startswith("me"):
            return x.mean()
        elif mode in {"max", "maximum"}:
            return x.max()
        return x

    check(f, (A, "sum"), (A, "mean"), (A, "max"), (A, "other"))


def test_string_indexing_iteration_and_concatenation():
    def f(x, s):
        out = ""
        for ch in s:
            out = ch + out
        return x * len(out), out, s[0] if s else "", s[-2:], s * 2, "-".join([s, s])

    check(f, (A, "abc"), (A, "z"))


def test_str_repr_int_float_builtins():
    def f(x, n):
        return x, str(n), repr(n), int("12") + n, float("1.5"), str(True), repr("q"), chr(65 + n), ord("a")

    check(f, (A, 3), (A, 0))


def test_einsum_subscripts_built_from_strings():
    def f(x, y):
        letters = "ij"
        spec = f"{letters},{letters[::-1]}->{letters[0]}"
        return np.einsum(spec, x, y.T)

    check(f, (A, A + 1))


def test_bytes_and_encode():
    def f(x, s):
        b = s.encode()
        return x * len(b), b + b"!", b.decode().upper()

    check(f, (A, "héllo"), (A, ""))


def test_fstring_of_containers_of_constants():
    def f(x, d):
        return x, f"{d}", f"{[1, 'a']}", f"{(1,)}", f"{None}", f"{d['k']:>5}", f"{ {1} }"

    check(f, (A, {"k": "v"}))


def test_split_join_reversed_and_conversions():
    def f(x, s, n):
        words = s.split()
        return (x, words, " ".join(reversed(words)), s.upper().lower(), bool(n), int(True), float(n),
                str(n), "{:,}".format(n * 1000))

    check(f, (A, "a b  c", 3), (A, "", 0))


def test_percent_formatting_and_min_max_defaults():
    def f(x, n, items):
        return (x, "%d items, %.2f, %s" % (n, n / 3, "z"), "%(a)s-%(b)r" % {"a": 1, "b": "q"},
                min(items), max(items, default=0), min(3, 1, 2), max([], default=None))

    check(f, (A, 7, [3, 1, 2]), (A, 0, [5]))
