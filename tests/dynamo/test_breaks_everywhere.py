"""A graph break forced at every instruction of a function in turn: each time, the graph so far,
the instruction run in Python and the resume functions must reproduce plain Python exactly
(or the frame must fall back, never crash). This exercises the stack spans, NULLs, method
pairs, cells, iterators and side-effect ordering of every kind of instruction a break can meet."""
import copy
import sys

import numpy as np
import pytest

import dynamo
from dynamo.exc import Category, Unsupported
from dynamo.translator.core import InstructionTranslatorBase

from breaks_helpers import arange, same

FORCED: dict = {}


@pytest.fixture(autouse=True)
def forced_breaks(monkeypatch):
    original = InstructionTranslatorBase.step

    def step(self):
        target = FORCED.get(self.code)
        if target is not None and self.parent is None and self.break_at is None and self.steps == target:
            self.steps += 1
            self.current = self.instructions[self.ip]
            self.ip += 1
            error = Unsupported(Category.UNSUPPORTED_CALL, "a break forced by the test")
            error.forced = True
            self._annotate(error)
            raise error
        return original(self)

    monkeypatch.setattr(InstructionTranslatorBase, "step", step)
    yield
    FORCED.clear()


def break_everywhere(fn, *args):
    """Force a break at step 0, 1, 2, ... of fn's frame until a run no longer reaches it."""
    steps = 0
    for step in range(1000):
        dynamo.reset()
        FORCED.clear()
        FORCED[fn.__code__] = step
        plain, compiled_args = copy.deepcopy(args), copy.deepcopy(args)
        try:
            expected, expected_error = fn(*plain), None
        except Exception as error:
            expected, expected_error = None, error
        compiled = dynamo.compile(fn, backend="eager")
        try:
            result, error = compiled(*compiled_args), None
        except Exception as raised:
            result, error = None, raised
        where = f"break forced at step {step}"
        if expected_error is not None:
            assert type(error) is type(expected_error) and str(error) == str(expected_error), where
        else:
            assert error is None, f"{where}: {error!r}"
            assert same(result, expected), f"{where}: {result!r} != {expected!r}"
        assert same(compiled_args, plain), f"{where}: arguments mutated differently"
        frames = compiled._dynamo_callback.compiled_frames
        assert not [f for _, f in frames if f.fallback_reason is not None and "internal" in f.fallback_reason.category]
        mine = [f for code, f in frames if code is fn.__code__]
        reached = any(getattr(b, "forced", False) for f in mine for b in f.breaks) or any(
            f.fallback_reason is not None and ("forced by the test" in str(f.fallback_reason)
                                               or "exists only at run time" in str(f.fallback_reason)) for f in mine)
        if not reached:
            return steps
        steps += 1
    raise AssertionError("never ran to the end")


class Box:
    def __init__(self, value):
        self.value = value

    def scaled(self, k, *, offset=0.0):
        return self.value * k + offset


class Base:
    def grow(self, x):
        return x + 1


class Derived(Base):
    def grow(self, x):
        y = super().grow(x) * 2
        return y + len(self.__class__.__name__)


def containers(x, items, table):
    first, *rest = items
    pairs = [(k, table[k]) for k in sorted(table)]
    merged = {**table, "extra": len(rest)}
    seen = {v for v in rest if v > 1}
    table["new"] = first
    items.append(x.shape[0])
    return x * first, pairs, merged, sorted(seen), f"{first:>4}|{len(pairs)!r}"


def calls_and_methods(x, box, options):
    y = box.scaled(2.0, offset=options.get("offset", 0.0))
    z = np.maximum(y, x, **{"out": None})
    parts = [np.sum(z), np.prod(z[:2])]
    box.value = box.value + 1
    return max(parts), min(*parts), box.scaled(1.0), sorted(options)


def loops_and_iterators(x, rows, mapping):
    total = x * 0
    for i, row in enumerate(rows):
        total = total + row * i
    for key, value in mapping.items():
        total = total + value
    for a, b in zip(x, x[::-1]):
        total = total - a * b
    n = 0
    while n < 3:
        n += 1
    else:
        total = total + n
    return total, [k for k in mapping if k != "b"]


def closures_and_cells(x, k):
    acc = []

    def add(v):
        acc.append(v * k)
        return len(acc)

    add(x)
    scale = lambda v, s=2: v * s + k
    add(scale(x))
    counter = [0]

    def bump():
        counter[0] += 1
        return counter[0]

    bump()
    return acc, bump(), scale(1.0)


def generators_and_blocks(x, log):
    def halves(v):
        for item in v:
            yield item / 2

    total = sum(halves(x))
    gen = (v * 3 for v in x)
    first = next(gen)
    try:
        log.append("try")
        value = x[10]
    except IndexError:
        log.append("caught")
        value = first
    finally:
        log.append("finally")
    return total, value, list(gen)


def branches_and_match(x, mode, flag):
    y = x * 2
    if flag and mode == "double":
        y = y * 2
    elif not flag or mode is None:
        y = -y
    match mode:
        case "double" | "triple":
            label = mode.upper()
        case None:
            label = "none"
        case _:
            label = "other"
    z = y if y.sum() > 0 else -y
    return z, label, 0 < y.max() < 100


def method_with_super(obj, x):
    return obj.grow(x)


CASES = [
    (containers, (arange(3), [1, 2, 3], {"a": 1, "b": 2})),
    (calls_and_methods, (arange(3), Box(np.ones(3)), {"offset": 1.0})),
    (loops_and_iterators, (arange(3), arange(2, 3), {"a": 1.0, "b": 2.0})),
    (closures_and_cells, (arange(2), 3.0)),
    (generators_and_blocks, (arange(4), [])),
    (branches_and_match, (arange(3), "double", True)),
    (branches_and_match, (arange(3) - 5, None, False)),
    (method_with_super, (Derived(), arange(2))),
    (Derived.grow, (Derived(), arange(2))),
]


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_break_forced_at_every_instruction(fn, args):
    steps = break_everywhere(fn, *args)
    assert steps >= 5
