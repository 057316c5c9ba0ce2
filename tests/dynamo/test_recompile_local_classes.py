"""Classes defined inside a compiled function (issue 16): a class statement makes a new class object
on every call, so guards on its identity recompiled every call. It is guarded by its shape (names,
MRO, attribute names and kinds) and its methods by their code; where the trace relies on which
class object it is (is, isinstance, objects made from it), that is guarded or read at run time."""
import collections
import dataclasses
import io

import numpy as np
import pytest

import dynamo

from semantics_helpers import BACKENDS
from support import same_value

SINK = io.StringIO()


def per_code(compiled):
    """Versions compiled per code object of the program (its resume functions counted apart)."""
    counts = {}
    for code, _ in compiled._dynamo_callback.compiled_frames:
        counts[code] = counts.get(code, 0) + 1
    return counts


def run_both(fn, make_args, backend, calls=10):
    compiled = dynamo.compile(fn, backend=backend)
    for i in range(calls):
        want, got = fn(*make_args(i)), compiled(*make_args(i))
        assert same_value(got, want), (i, got, want)
    return compiled


def vectors_after_a_break(X, k):
    class Vec:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def __add__(self, other):
            return Vec(self.x + other.x, self.y + other.y)

        def scale(self, s):
            return Vec(self.x * s, self.y * s)

    print("rows", file=SINK)  # a graph break: the resume function reads the class from its cell
    v = (Vec(X[0], X[1]) + Vec(X[1], X[0])).scale(k)
    return v.x - v.y * k


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_class_defined_inside_compiles_at_most_twice(backend):
    compiled = run_both(vectors_after_a_break, lambda i: (np.arange(10.0).reshape(2, 5) + i, 0.5 + i), backend)
    counts = per_code(compiled)
    assert max(counts.values()) <= 2, counts
    assert not compiled._dynamo_callback.given_up
    guards = [str(g) for _, frame in compiled._dynamo_callback.compiled_frames for g in frame.guards]
    assert not any("(held weakly)" in g or "Vec is <" in g for g in guards), guards


def make_and_return(x, k):
    class Point:
        def __init__(self, v):
            self.v = v

        def moved(self, d):
            return Point(self.v + d)

    return Point, Point(x).moved(k)


@pytest.mark.parametrize("backend", BACKENDS)
def test_objects_made_from_a_local_class_are_of_this_call_s_class(backend):
    compiled = dynamo.compile(make_and_return, backend=backend)
    for i in range(6):
        cls, point = compiled(np.arange(3.0), float(i))
        assert type(point) is cls and isinstance(point, cls)
        assert same_value(point.v, np.arange(3.0) + i)
    assert max(per_code(compiled).values()) <= 2


def scaled_sum(x, k, old):
    class Scaled:
        def __init__(self, v):
            self.v = v

        def __add__(self, other):
            if isinstance(other, Scaled):
                return Scaled(self.v + other.v)
            return Scaled(self.v + other)

    total = Scaled(x) + Scaled(x * k) + k
    return total, isinstance(old, Scaled), type(old) is Scaled


@pytest.mark.parametrize("backend", BACKENDS)
def test_isinstance_and_is_between_calls_classes(backend):
    """isinstance() inside the class's own method compiles once; an object of an earlier call's
    class (the same shape, another object) is no instance of this call's class."""
    compiled = dynamo.compile(scaled_sum, backend=backend)
    for i in range(8):
        x = np.arange(4.0) + i
        got = compiled(x, 2.0 + i, None)
        want = scaled_sum(x, 2.0 + i, None)
        assert same_value(got[0].v, want[0].v) and got[1:] == want[1:] == (False, False), (got, want)
    counts = per_code(compiled)
    assert max(counts.values()) <= 2, counts
    old = scaled_sum(x, 1.0, None)[0]  # an object of a plain call's class: the same shape, another class
    for i in range(3):
        assert compiled(x, 1.0, old)[1:] == (False, False)


def keep_instance(x, old):
    class Box:
        def __init__(self, v):
            self.v = v

    fresh = Box(x)
    return isinstance(old, Box), type(old) is type(fresh), fresh


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_an_instance_of_an_earlier_call_s_class_is_told_apart(backend):
    compiled = dynamo.compile(keep_instance, backend=backend)
    old = keep_instance(np.ones(2), None)[2]  # a Box of a plain call
    for i in range(4):
        got = compiled(np.ones(2) * i, old)
        assert got[:2] == (False, False), got
        assert same_value(got[2].v, np.ones(2) * i)
        old = got[2]  # the compiled call's Box: the next call's class is another one


def method_reads_cell(x, k, flag):
    class Op:
        if flag:
            def apply(self, v):
                return v * k
        else:
            def apply(self, v):
                return v - k

    print(end="", file=SINK)
    return Op().apply(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_method_s_cells_and_code_are_guarded(backend):
    """The cell a method reads is guarded by its contents, and a class statement that defines its
    method with other code gives another version, never the first one's result."""
    compiled = dynamo.compile(method_reads_cell, backend=backend)
    x = np.arange(5.0)
    for k, flag in [(1.0, True), (2.0, True), (3.0, False), (4.0, True), (5.0, False), (6.0, False)]:
        assert same_value(compiled(x, k, flag), method_reads_cell(x, k, flag)), (k, flag)


def attribute_sets(x, extra):
    class Config:
        gain = 2.0

    if extra:
        Config.__add__ = lambda self, other: other * 10.0
    print(end="", file=SINK)
    cfg = Config()
    try:
        return cfg + x
    except TypeError:
        return x * cfg.gain


def test_a_class_with_other_attribute_names_is_another_version():
    compiled = dynamo.compile(attribute_sets, backend="numpy")
    x = np.arange(3.0)
    for extra in (False, False, True, False, True):
        assert same_value(compiled(x, extra), attribute_sets(x, extra)), extra


def named_pair(x, k):
    Pair = collections.namedtuple("Pair", "a b")  # a class made by a call, its module does not hold it
    pair = Pair(x * k, x + k)
    print(end="", file=SINK)
    return pair.a - pair.b


def configured(x, k):
    @dataclasses.dataclass
    class Config:
        gain: float
        bias: float = 0.0

    config = Config(k, bias=k * 2)
    print(end="", file=SINK)
    return x * config.gain + config.bias


@pytest.mark.parametrize("program", [named_pair, configured])
def test_namedtuples_and_dataclasses_made_per_call_compile_at_most_twice(program):
    """A namedtuple's class (qualname without <locals>) and a dataclass's generated methods (a new
    code object per class, equal text) are guarded by shape and by equal code."""
    compiled = run_both(program, lambda i: (np.arange(6.0) + i, 0.5 + i), "numpy", calls=12)
    counts = per_code(compiled)
    assert max(counts.values()) <= 2, {code.co_qualname: n for code, n in counts.items()}
    assert not compiled._dynamo_callback.given_up


def only_a_class_statement(x):
    class Offset:
        shift = 1.5

    return x + Offset.shift


def test_a_class_statement_is_one_graph_break():
    report = dynamo.explain(only_a_class_statement)(np.arange(3.0))
    assert report.graph_break_count == 1, report.format()
    assert "class statement (class Offset)" in report.break_reasons[0].reason
    compiled = run_both(only_a_class_statement, lambda i: (np.arange(3.0) + i,), "numpy", calls=6)
    assert sorted(per_code(compiled).values()) == [1, 1]  # the frame and its one resume function


def test_class_shape_guards_run_in_c():
    # a Python predicate per check cost ~1.3 us per guarded class or object on every call
    compiled = run_both(vectors_after_a_break, lambda i: (np.arange(10.0).reshape(2, 5) + i, 0.5 + i), "eager", 3)
    ops = [instruction[0] for _, frame in compiled._dynamo_callback.compiled_frames
           for instruction in frame.guards.compile().instructions]
    assert "class_shape" in ops and "call" not in ops and "call_many" not in ops, ops
