"""Loops that do no array work run in Python (dynamo/python_loops.py): past config.python_loop_limit
items without the graph growing, the loop breaks the graph; results, compiles and breaks are checked."""
import sys

import numpy as np
import pytest

import dynamo
from dynamo.exc import Category

from support import same_value


def compiles_of(compiled, fn):
    return sum(1 for code, _ in compiled._dynamo_callback.compiled_frames if code is fn.__code__)


def cumulative(xs):
    total = 0.0
    sums = []
    for x in xs:
        total += x
        sums.append(total)
    return sums


def test_a_long_pure_python_loop_runs_in_python_and_new_contents_do_not_recompile():
    compiled = dynamo.compile(cumulative)
    for start in range(6):
        items = list(range(start, start + 1000))
        assert compiled(items) == cumulative(items)
    # one trace: the loop broke the graph, so no guard is on an item's value
    assert compiles_of(compiled, cumulative) == 1
    report = dynamo.explain(cumulative)(list(range(1000)))
    assert report.graph_count == 0
    assert [r.category for r in report.break_reasons if r.kind == "graph break"] == [Category.PYTHON_LOOP]
    assert not any("L['xs'][" in guard for guard in report.guards)


def array_work_around_a_python_loop(x, names):
    y = x * 2.0
    n = 0
    for name in names:
        n += len(name)
    return y + n


def test_the_code_after_the_loop_is_compiled_and_takes_what_the_loop_computed():
    x = np.arange(6.0)
    compiled = dynamo.compile(array_work_around_a_python_loop)
    for k in (100, 100, 120, 300):
        names = [f"item{i}" * (i % 3) for i in range(k)]
        assert same_value(compiled(x, names), array_work_around_a_python_loop(x, names))
    report = dynamo.explain(array_work_around_a_python_loop)(x, [f"n{i}" for i in range(100)])
    assert report.graph_count == 2 and report.graph_break_count == 1


def scaled(x, weights):
    for w in weights:
        x = x * w + 1.0
    return x


def test_a_loop_with_array_work_still_unrolls_into_one_graph():
    x = np.linspace(0.0, 1.0, 8)
    weights = [1.0 + i / 1000 for i in range(100)]
    compiled = dynamo.compile(scaled)
    assert same_value(compiled(x, weights), scaled(x, weights))
    report = dynamo.explain(scaled)(x, weights)
    assert report.graph_count == 1 and report.graph_break_count == 0


def test_a_short_pure_python_loop_still_unrolls():
    def short(x, items):
        total = 0
        for v in items:
            total += v
        return x * total

    x = np.ones(3)
    items = list(range(dynamo.config.python_loop_limit))
    assert same_value(dynamo.compile(short)(x, items), short(x, items))
    report = dynamo.explain(short)(x, items)
    assert report.graph_count == 1 and report.graph_break_count == 0


def test_a_pure_inner_loop_inside_a_loop_with_array_work_is_left_unrolled():
    # a break there would push the whole outer loop into Python: keep unrolling as before
    def nest(x, rows):
        for row in rows:
            s = 0
            for v in row:
                s += v
            x = x + s
        return x

    x = np.zeros(4)
    rows = [list(range(i, i + 80)) for i in range(3)]
    assert same_value(dynamo.compile(nest)(x, rows), nest(x, rows))
    report = dynamo.explain(nest)(x, rows)
    assert report.graph_count == 1 and report.graph_break_count == 0


def test_nested_pure_python_loops_break_once_before_the_outer_loop():
    def table(n):
        cells = []
        for i in range(n):
            for j in range(n):
                cells.append(i * j % 5)
        return np.asarray(cells).sum()

    compiled = dynamo.compile(table)
    for n in (12, 12, 15):
        assert same_value(compiled(n), table(n))
    report = dynamo.explain(table)(12)
    assert [r.category for r in report.break_reasons if r.kind == "graph break"] == [Category.PYTHON_LOOP]


@pytest.mark.parametrize("n", [10, 300])
def test_a_comprehension_without_array_work(n):
    def squares(x, n):
        return x + sum([i * i for i in range(n)])

    x = np.arange(3.0)
    assert same_value(dynamo.compile(squares)(x, n), squares(x, n))
    if sys.version_info >= (3, 12) and n > dynamo.config.python_loop_limit:
        # comprehensions are part of the frame's code from 3.12 on: that loop runs in Python
        report = dynamo.explain(squares)(x, n)
        assert [r.category for r in report.break_reasons if r.kind == "graph break"] == [Category.PYTHON_LOOP]
