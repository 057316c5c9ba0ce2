"""The small integer expressions of loop variables (fx_ir/int_expr.py) against sympy: the same values,
and the same decisions (or the same IterationDependent) as ShapeEnv's sympy path, on random expressions."""
from __future__ import annotations

import random

import pytest
import sympy

from dynamo.fx_ir.int_expr import IntExpr, extremum, lift
from dynamo.shapes.env import ShapeEnv
from dynamo.shapes.loop_symbols import IterationDependent, LoopBounds, SmallLoop, decide_small

NAMES = ("i0_i", "i1_j")
KINDS = ("Eq", "Ne", "Lt", "Le", "Gt", "Ge")


def random_expr(rng: random.Random, depth: int) -> IntExpr | None:
    """A random expression of the fragment (None where an operation leaves it)."""
    if depth == 0 or rng.random() < 0.25:
        return IntExpr.symbol(rng.choice(NAMES)) if rng.random() < 0.7 else lift(rng.randint(-6, 6))
    a = random_expr(rng, depth - 1)
    if a is None:
        return None
    op = rng.choice(("add", "sub", "mul", "floordiv", "mod", "min", "max", "neg"))
    if op in ("add", "sub"):
        b = random_expr(rng, depth - 1)
        return None if b is None else a.add(b, 1 if op == "add" else -1)
    if op == "mul":
        return a.mul(rng.randint(-3, 3))
    if op == "neg":
        return a.neg()
    if op in ("floordiv", "mod"):
        divisor = rng.choice((1, 2, 3, 5, 50))
        return a.floordiv(divisor) if op == "floordiv" else a.mod(divisor)
    b = random_expr(rng, depth - 1)
    return None if b is None else extremum("Min" if op == "min" else "Max", [a, b])


def sympy_env(bounds: dict[str, tuple[int, int]]) -> tuple[ShapeEnv, dict[str, sympy.Symbol]]:
    """A ShapeEnv with each loop both in its small form and (made on demand) as a bound sympy symbol."""
    env = ShapeEnv()
    symbols = {name: sympy.Symbol(name, integer=True) for name in bounds}

    def make(name: str) -> sympy.Symbol:
        symbol = symbols[name]
        lower, upper = bounds[name]
        env.loop_bounds[symbol] = LoopBounds(symbol, lower, upper, name.split("_")[1])
        env.hints[symbol] = lower
        return symbol

    for name, (lower, upper) in bounds.items():
        env.small_loops[name] = SmallLoop(lower, upper, name.split("_")[1], lambda name=name: make(name))
    return env, symbols


def outcome(decide) -> object:
    try:
        return decide()
    except IterationDependent as error:
        return ("iteration dependent", error.loop_symbols)


def test_values_match_python_and_sympy():
    rng = random.Random(7)
    checked = 0
    for _ in range(600):
        expr = random_expr(rng, 4)
        if expr is None:
            continue
        as_sympy = expr.to_sympy(lambda name: sympy.Symbol(name, integer=True))
        for _ in range(3):
            values = {name: rng.randint(-40, 40) for name in NAMES}
            expected = as_sympy.xreplace({sympy.Symbol(n, integer=True): v for n, v in values.items()})
            assert expr.value(values) == int(expected), (expr, values)
            checked += 1
    assert checked > 600


@pytest.mark.parametrize("seed", range(4))
def test_decisions_match_the_sympy_path(seed):
    rng = random.Random(seed)
    answered = raised = 0
    for _ in range(250):
        a = random_expr(rng, 3)
        b = random_expr(rng, 1) if rng.random() < 0.4 else lift(rng.randint(-3, 3))
        if a is None or b is None:
            continue
        bounds = {name: sorted((rng.randint(-5, 20), rng.randint(-5, 20))) for name in NAMES}
        kind = rng.choice(KINDS)
        env, _ = sympy_env({n: tuple(b_) for n, b_ in bounds.items()})
        native = outcome(lambda: decide_small(env, kind, a, b))
        if native is None:
            continue
        env, _ = sympy_env({n: tuple(b_) for n, b_ in bounds.items()})
        resolve = lambda name: env.small_loops[name].make_sympy()  # noqa: E731
        relation = getattr(sympy, kind)(a.to_sympy(resolve), b.to_sympy(resolve))
        expected = outcome(lambda: env.decide_relation(relation))
        assert native == expected, (kind, a, b, bounds, relation)
        answered += not isinstance(native, tuple)
        raised += isinstance(native, tuple)
    assert answered > 40 and raised > 20  # both kinds of answer are exercised


def test_gd_condition_raises_without_sympy_and_names_the_variable():
    env, _ = sympy_env({"i0_i": (0, 199)})
    condition = IntExpr.symbol("i0_i").mod(50)
    with pytest.raises(IterationDependent, match=r"whether Mod\(i, 50\) == 0 depends on the iteration"):
        decide_small(env, "Eq", condition, 0)
    assert decide_small(env, "Ge", condition, 0) is True  # sympy: a remainder is >= 0
    assert decide_small(env, "Lt", IntExpr.symbol("i0_i"), 200) is True
