"""Dynamic sizes in their small form (fx_ir/small_size.py) against sympy's: the same decisions, the
same guards (printed alike, true for the same sizes), the same text and Python source, on random
sums of sizes; and a trace that leaves the fragment is redone with sympy (the same result)."""
from __future__ import annotations

import logging
import math
import operator
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy

import dynamo
from dynamo.fx_ir import TensorMeta
from dynamo.fx_ir.lazy_sympy import SympyNeeded, sympy_forbidden
from dynamo.fx_ir.ops import infer_meta, using_oracle
from dynamo.fx_ir.size_source import python_source
from dynamo.fx_ir.small_size import Relation, SizeExpr, graph_to_sympy, size_symbol
from dynamo.shapes.env import ShapeEnv
from dynamo.shapes.guards import size_program
from dynamo.sources import LocalSource
from tests.support import compile_with_counter

ROOT = Path(__file__).resolve().parents[2]


def random_sum(rng: random.Random, symbols: list) -> object:
    """c + sum(k * s) over a few of `symbols` (an int when no term is left)."""
    total: object = rng.randint(-7, 7)
    for symbol in rng.sample(symbols, rng.randint(1, len(symbols))):
        total = total + rng.choice((-3, -2, -1, 1, 1, 2, 4)) * symbol
    return total


def two_envs(hints: list[int], specialize: set[int]) -> tuple[ShapeEnv, ShapeEnv]:
    """The same dynamic ints in a small ShapeEnv and a sympy one; `specialize`: symbols fixed."""
    with sympy_forbidden():
        small = ShapeEnv()
    big = ShapeEnv()
    assert small.small and not big.small
    for env in (small, big):
        for k, hint in enumerate(hints):
            env.int_symbol(LocalSource(k, f"n{k}"), hint, "test")
        for k in sorted(specialize):
            env.specialize(list(env.symbols)[k], "test")
    return small, big


def as_sympy(value: object) -> object:
    return value.to_sympy_expr() if isinstance(value, SizeExpr) else value


@pytest.mark.parametrize("seed", range(6))
def test_decisions_and_guards_match_sympy(seed):
    rng = random.Random(seed)
    for _ in range(60):
        hints = [rng.randint(2, 9) for _ in range(3)]
        small, big = two_envs(hints, {k for k in range(3) if rng.random() < 0.15})
        small_symbols, big_symbols = list(small.symbols), list(big.symbols)
        for _ in range(4):
            state = rng.getstate()
            a, b = random_sum(rng, small_symbols), random_sum(rng, small_symbols)
            rng.setstate(state)
            sa, sb = random_sum(rng, big_symbols), random_sum(rng, big_symbols)
            assert str(a) == str(sa) and str(b) == str(sb)
            with sympy_forbidden():
                got = (small.sizes_equal(a, b), small.is_nonnegative(a - b) if not isinstance(a - b, int) else None)
            want = (big.sizes_equal(sa, sb), big.is_nonnegative(sa - sb) if not isinstance(a - b, int) else None)
            assert got == want, (a, b)
        assert [str(r) for r in small.relations] == [str(r) for r in big.relations], hints
        assert list(small.relations.values()) == list(big.relations.values())


@pytest.mark.parametrize("seed", range(3))
def test_text_source_and_guard_programs_match_sympy(seed):
    rng = random.Random(seed)
    small_symbols = [size_symbol(f"s{k}") for k in range(4)]
    big_symbols = [sympy.Symbol(f"s{k}", integer=True, positive=True) for k in range(4)]
    names = {s: f"v[{k}]" for k, s in enumerate(small_symbols)}
    big_names = {s: f"v[{k}]" for k, s in enumerate(big_symbols)}
    where = {s: (k, None) for k, s in enumerate(small_symbols)}
    for _ in range(200):
        state = rng.getstate()
        e = random_sum(rng, small_symbols)
        rng.setstate(state)
        want = random_sum(rng, big_symbols)
        if isinstance(e, int):
            continue
        assert str(e) == str(want) and e.to_sympy_expr() == want
        v = [rng.randint(2, 50) for _ in range(4)]
        value = want.xreplace(dict(zip(big_symbols, v)))
        assert eval(python_source(e, names)) == eval(python_source(want, big_names)) == value
        kind = rng.choice(("Eq", "Ne", "Ge", "Gt", "Le", "Lt"))
        relation = Relation(kind, e, 3)
        assert str(relation) == str(getattr(sympy, kind)(want, 3, evaluate=False))
        assert eval(python_source(relation, names)) == relation.holds({f"s{k}": n for k, n in enumerate(v)})
        arrays, code = size_program(relation, where)
        assert arrays and code  # a program the C guards run (their semantics: tests/csrc)


def test_arithmetic_that_leaves_the_fragment_needs_sympy():
    s0, s1 = size_symbol("s0"), size_symbol("s1")
    assert s0 - s0 == 0 and isinstance(s0 + 1 - 1, SizeExpr) and s0 * 2 - s0 == s0
    with sympy_forbidden():
        for leave in (lambda: s0 * s1, lambda: s0 // 2, lambda: s0 % 3, lambda: int(s0), lambda: s0 < 4,
                      lambda: s0.free_symbols and s0.is_positive, lambda: abs(s0 - 3), lambda: float(s0)):
            with pytest.raises(SympyNeeded):
                leave()
    assert s0 * s1 == sympy.Symbol("s0", integer=True, positive=True) * sympy.Symbol("s1", integer=True, positive=True)
    assert (s0 // 2) == sympy.floor(s0.to_sympy_expr() / 2)
    assert abs(s0 - 3) == abs(s0.to_sympy_expr() - 3)


def scaled_by_distance_from_three(x):
    return x * abs(x.shape[0] - 3)


def test_abs_of_a_size_is_traced_again_with_sympy():
    # abs() of a dynamic size raised TypeError inside the trace (an internal error; fuzz seed 1170204)
    compiled = dynamo.compile(scaled_by_distance_from_three, backend="numpy")
    for n in (2, 5, 6, 9):
        x = np.linspace(0.0, 1.0, n)
        assert np.array_equal(compiled(x), scaled_by_distance_from_three(x))


# every Python int operation of a dynamic size, in an array op or a shape: the fragment keeps + - * neg
# abs min max, sympy takes // % ** (a trace redone), the frontend specializes the rest (round, divmod,
# bitwise, bool, float, math): each must compute as plain Python, without an internal error
SIZE_USES = [
    lambda x, n: x * round(n - 3), lambda x, n: x * divmod(20, n)[0], lambda x, n: np.zeros(divmod(n, 2)[1] + 1),
    lambda x, n: x * 2 ** n, lambda x, n: np.zeros(n ** 2), lambda x, n: x * (n & 6), lambda x, n: x * (5 ^ n),
    lambda x, n: x * (1 << n), lambda x, n: x * (100 >> n), lambda x, n: x * ~n, lambda x, n: x[:-(n % 3) or None],
    lambda x, n: x * min(n, n - 1, 7), lambda x, n: x[min(n, 4):max(n, 4)], lambda x, n: np.zeros(max(3, n - 2)),
    lambda x, n: x if n - 5 else -x, lambda x, n: x * float(n) / 3, lambda x, n: np.zeros(math.ceil(n / 3)),
    lambda x, n: x * math.trunc(n - 9), lambda x, n: x[abs(n - 8):], lambda x, n: x * np.int64(n),
]


@pytest.mark.parametrize("use", SIZE_USES, ids=[f"use{k}" for k in range(len(SIZE_USES))])
def test_python_int_operations_of_a_size(use, caplog):
    def program(x):
        return use(x, x.shape[0])

    compiled = dynamo.compile(program, backend="numpy")
    with caplog.at_level(logging.WARNING, logger="dynamo"):
        for n in (5, 5, 6, 7, 9, 4):
            x = np.arange(float(n))
            got, expected = compiled(x), program(x)
            assert (got.dtype, got.shape, got.tobytes()) == (expected.dtype, expected.shape, expected.tobytes())
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]


def estimate(n, rng):
    x = rng.random(n)
    y = rng.random(n)
    return 4.0 * np.count_nonzero(x * x + y * y <= 1.0) / n


def blur_rows(img):
    return img[1:-1] - 0.5 * (img[:-2] + img[2:])


def every_other(x):
    return x[::2] * 2.0


def compiled_frames(compiled):
    return [frame for _, frame in compiled._dynamo_callback.compiled_frames]


def graphs_of(compiled):
    return [g.graph_module for frame in compiled_frames(compiled) for g in frame.graphs]


@pytest.mark.parametrize("fn, make", [
    (estimate, lambda n: (n, np.random.default_rng(n))),
    (blur_rows, lambda n: (np.linspace(0.0, 1.0, n),)),
    (every_other, lambda n: (np.arange(float(n)),)),  # a floor division: traced again with sympy
])
def test_small_and_sympy_traces_compile_alike(fn, make, caplog):
    # the same results, graphs, guards and recompiles whichever form the sizes take
    runs = []
    for small in (True, False):
        dynamo.reset()
        compiled = dynamo.compile(fn, backend="numpy")
        with caplog.at_level(logging.DEBUG, logger="dynamo.guards"), dynamo.config.patch(small_sizes=small):
            for n in (40, 50, 61, 70):
                got, want = compiled(*make(n)), fn(*make(n))
                assert np.array_equal(got, want) and type(got) is type(want)
        frames = compiled_frames(compiled)
        runs.append(([str(gm.graph) for gm in graphs_of(compiled)], [frame.dynamic for frame in frames],
                     [[str(g) for g in frame.guards] for frame in frames]))
        if small:
            again = [r.getMessage() for r in caplog.records if "traced again with sympy" in r.getMessage()]
    assert runs[0] == runs[1]
    assert bool(again) == (fn is every_other), again


def test_backend_c_gets_sympy_sizes():
    def f(x):
        return x[1:] * 2.0 + x[:-1]

    compiled = dynamo.compile(f, backend="numpy", dynamic=True)
    x = np.linspace(0.0, 1.0, 9)
    assert np.array_equal(compiled(x), f(x))
    gm = graphs_of(compiled)[0]
    shapes = lambda: [d for n in gm.graph.nodes if n.op == "call_function" for d in n.meta["val"].shape]  # noqa: E731
    assert any(isinstance(d, SizeExpr) for d in shapes())
    graph_to_sympy(gm)
    assert all(isinstance(d, sympy.Expr) for d in shapes()) and "s0 - 1" in [str(d) for d in shapes()]


def test_a_script_with_changing_sizes_imports_no_sympy(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np

        def estimate(n, rng):
            x = rng.random(n)
            y = rng.random(n)
            return 4.0 * np.count_nonzero(x * x + y * y <= 1.0) / n

        def smooth(u):
            return u[1:-1] + 0.25 * (u[2:] - 2.0 * u[1:-1] + u[:-2])

        rng = np.random.default_rng(2)
        for n in (1000, 10000, 100000):
            print(n, estimate(n, rng), float(smooth(np.linspace(0.0, 1.0, n) ** 2).sum()))
        print("sympy" in sys.modules)
    """))
    outputs = []
    for command in ([str(script)], ["-m", "dynamo", "run", str(script)]):
        done = subprocess.run([sys.executable, *command], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0].endswith("False\n") and outputs[1] == outputs[0]


def _op_cases(x, y, z):
    """(target, args, kwargs) over arrays whose sizes are the env's symbols: x (a, b), y (c,), z (a, 3)."""
    T = lambda *shape: TensorMeta(shape, np.float64)  # noqa: E731
    a, b, c = x, y, z
    return [
        (np.add, (T(a, b), T(a, b)), {}), (np.add, (T(a), T(c)), {}), (np.multiply, (T(a, 1), T(1, b)), {}),
        (np.add, (T(a, 3), T(1, 3)), {}), (np.subtract, (T(c), 2.0), {}), (np.add, (T(a), T(3)), {}),
        (np.sum, (T(a, b),), {"axis": 0}), (np.mean, (T(a, 3),), {"axis": 1, "keepdims": True}),
        (np.max, (T(c, 2),), {"axis": 0}), (np.argmin, (T(a, b),), {"axis": 1}), (np.cumsum, (T(c, 1),), {"axis": 0}),
        (np.concatenate, ([T(a, 3), T(c, 3), T(2, 3)],), {}), (np.stack, ([T(a), T(c)],), {}),
        (np.concatenate, ([T(a, b), T(a, 2)],), {"axis": 1}), (np.where, (T(a, 1), T(a, b), 0.0), {}),
        (operator.getitem, (T(a, b), (slice(1, -1), slice(None, -2))), {}),
        (operator.getitem, (T(c), slice(3, None)), {}), (operator.getitem, (T(c), slice(-4, None)), {}),
        (operator.getitem, (T(a, b), (0, slice(2, 5))), {}), (operator.getitem, (T(a, b), (None, Ellipsis, -1)), {}),
        (np.transpose, (T(a, b, 3),), {}), (np.reshape, (T(c), (-1, 1)), {}),
        (np.dot, (T(a), T(c)), {}), (np.outer, (T(a), T(c)), {}), (np.zeros_like, (T(a, b),), {}),
        (operator.getitem, (T(c), slice(None, None, 2)), {}),  # floor division: sympy's
        (np.reshape, (T(a, b), (-1,)), {}),  # a product: sympy's
    ]


@pytest.mark.parametrize("seed", range(4))
def test_shape_rules_decide_as_with_sympy(seed):
    # the op registry's rules on small sizes: the same shapes and the same guards as on sympy's,
    # or SympyNeeded (the trace is then redone with sympy)
    rng = random.Random(seed)
    for _ in range(12):
        hints = [rng.choice((2, 3, 4, 5, 9)) for _ in range(3)]
        small, big = two_envs(hints, set())
        for case in range(len(_op_cases(*small.symbols))):
            small_env, big_env = two_envs(hints, set())
            target, args, kwargs = _op_cases(*small_env.symbols)[case]
            _, big_args, big_kwargs = _op_cases(*big_env.symbols)[case]
            outcomes = []
            for env, a, k in ((small_env, args, kwargs), (big_env, big_args, big_kwargs)):
                try:
                    with sympy_forbidden(env is small_env), using_oracle(env):
                        meta = infer_meta(target, *a, **k)
                    outcomes.append((str(meta), [str(r) for r in env.relations]))
                except SympyNeeded:
                    outcomes.append("sympy")
                except (ValueError, IndexError) as error:  # NumPy's error for these sizes, both ways
                    outcomes.append(type(error).__name__)
            assert outcomes[0] in ("sympy", outcomes[1]), (target, hints, outcomes)
