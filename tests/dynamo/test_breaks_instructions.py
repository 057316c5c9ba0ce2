"""Graph breaks at every kind of instruction: calls of unsupported callables (positional,
keyword, *args and **kwargs arguments, with NULLs and methods pending below them), attribute
loads, data-dependent jumps of every form, comprehensions (separate code objects on 3.11,
inlined on 3.12+), calls inlined several levels deep, closures and cells, *args/**kwargs
frames, methods, generators, and the very first instruction. Each compiled run must equal the
plain run; the counts are exact."""
import itertools
import json
import sys
import zlib

import numpy as np
import pytest

import dynamo
from dynamo.exc import Category

from breaks_helpers import arange, assert_positive, compare

PY311 = sys.version_info < (3, 12)


def counts(run):
    return run.graphs, len(run.breaks), len(run.fallbacks)


# ---- calls -------------------------------------------------------------------------------------

def call_with_data_dependent_shape_argument(x):
    y = x + 1
    mask = y > 2
    total = np.sum(y[mask])            # NULL + np.sum pending below the subscript
    return y * total


def call_keyword_arguments(x):
    y = x * 2
    print("sum", y.sum(), sep="|", end="!\n")
    return y - 1


def call_star_args(x, extra):
    y = x * 2
    args = (y.shape, "s", *extra)
    print(*args)
    return y + len(args)


def call_star_kwargs(x, options):
    y = x * 2
    print(1, 2, **options)
    return y


def call_library_with_keywords(x, items):
    y = x * 2
    text = json.dumps(items, indent=len(items), sort_keys=True)
    return y, text


def call_library_star_star(x, args, kwargs):
    y = x * 2
    return y, json.dumps(*args, **kwargs)


def call_c_function_of_bytes(x):
    y = x + 1
    return zlib.crc32(y.tobytes()), y


def inner_two(a, b):
    return a * 2


def call_nested_in_arguments(x):
    y = x + 1
    return inner_two(y, print(x.sum()))


def call_nested_in_numpy_arguments(x):
    y = x + 1
    z = np.maximum(y, print(x.sum()) or 0.0)
    return z * 2


class Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, value, unused=None):
        return value * self.k


def call_method_with_break_in_argument(x, obj):
    y = x + 1
    r = obj.scale(y, print(y.sum()))
    return r + 1


def call_method_kept_in_a_local(x, obj):
    method = obj.scale
    y = x + 1
    print(y.sum())
    return method(y)


def call_list_method_with_break_in_argument(x, items):
    y = x + 1
    items.append(print(y.sum()))
    return y, items


CALLS = [
    (call_with_data_dependent_shape_argument, (arange(5),), (2, 1, 0)),
    (call_keyword_arguments, (arange(3),), (2, 1, 0)),
    (call_star_args, (arange(3), ("a", 1)), (2, 1, 0)),
    (call_star_kwargs, (arange(3), {"sep": "-"}), (1, 1, 0)),
    (call_library_with_keywords, (arange(3), [1, 2]), (1, 1, 0)),
    (call_library_star_star, (arange(3), ([1, 2],), {"indent": 1}), (1, 1, 0)),
    (call_c_function_of_bytes, (arange(3),), (1, 2, 0)),
    (call_nested_in_arguments, (arange(3),), (2, 1, 0)),
    (call_nested_in_numpy_arguments, (arange(3),), (2, 1, 0)),
    (call_method_with_break_in_argument, (arange(3), Scaler(3.0)), (2, 1, 0)),
    # the bound method kept in a local reaches the resume function as its function bound to obj
    # (guarded by __func__ and __self__), so the call is inlined there: the print is the one break
    (call_method_kept_in_a_local, (arange(3), Scaler(3.0)), (2, 1, 0)),
    (call_list_method_with_break_in_argument, (arange(3), [0]), (1, 1, 0)),
]


@pytest.mark.parametrize("fn, args, expected", CALLS, ids=[c[0].__name__ for c in CALLS])
def test_break_at_a_call(fn, args, expected):
    assert counts(compare(fn, *args)) == expected


# ---- attributes ----------------------------------------------------------------------------------

def attribute_of_unsupported_object(x):
    y = x + 1
    writeable = y.flags.writeable
    return writeable, y


def attribute_dunder_of_array(x):
    y = x + 1
    shape = y.__array_interface__["shape"]
    return shape, y * 2


@pytest.mark.parametrize("fn", [attribute_of_unsupported_object, attribute_dunder_of_array])
def test_break_at_an_attribute_load(fn):
    run = compare(fn, arange(2, 3))
    assert counts(run)[1:] == (1, 0)


# ---- data-dependent jumps --------------------------------------------------------------------------

def jump_and(x, flag):
    y = x + 1
    if flag and y.sum() > 2:
        return y
    return -y


def jump_or(x):
    y = x + 1
    if y.sum() > 100 or y.max() > 1:
        return y
    return -y


def jump_not(x):
    y = x + 1
    if not (y > 0).all():
        y = y * 10
    return y


def jump_value_of_and_or(x):
    y = x + 1
    z = y.sum() > 3 or y.sum()
    w = y.sum() > 1 and y.max()
    return z, w


def jump_ternary(x):
    y = x + 1
    return y * 2 if y.mean() > 0 else y * 3


def jump_is_none_of_a_value_from_python(x, table):
    y = x + 1
    found = table.get(print(y.sum()))     # None at run time: known only after the break
    if found is None:
        return y
    return y * found


def jump_is_not_none(x, table):
    y = x + 1
    found = table.get(print(y.sum()))
    if found is not None:
        return y * found
    return -y


def jump_chained_comparison(x):
    y = x + 1
    if 0 < y.sum() < 10:
        return y
    return -y


def jump_any(x):
    y = x - 1
    if y.any():
        return y
    return x


def jump_while(x):
    n = 0
    while x.sum() > 1:
        x = x / 2
        n = n * 2 + 1  # an int that may pass 64 bits: the loop is not one loop node, it breaks at the test
    return x, n


# (function, [(arguments, (graphs, breaks, parts run in Python)), ...])
JUMPS = [
    (jump_and, [((arange(3), True), (1, 1, 0)), ((arange(3) - 5, True), (2, 1, 0)), ((arange(3), False), (1, 0, 0))]),
    (jump_or, [((arange(3),), (2, 2, 0)), ((arange(3) - 3,), (3, 2, 0))]),
    (jump_not, [((arange(3),), (1, 1, 0)), ((arange(3) - 3,), (2, 1, 0))]),
    (jump_value_of_and_or, [((arange(3),), (3, 2, 0)), ((arange(3) - 3,), (2, 2, 0))]),
    (jump_ternary, [((arange(3),), (2, 1, 0)), ((arange(3) - 3,), (2, 1, 0))]),
    (jump_is_none_of_a_value_from_python, [((arange(3), {}), (1, 1, 0)), ((arange(3), {None: 2.0}), (2, 1, 0))]),
    (jump_is_not_none, [((arange(3), {}), (2, 1, 0)), ((arange(3), {None: 2.0}), (2, 1, 0))]),
    (jump_chained_comparison, [((np.ones(2),), (1, 1, 0)), ((np.ones(20),), (2, 1, 0)), ((-np.ones(2),), (2, 1, 0))]),
    (jump_any, [((np.ones(2),), (1, 1, 0)), ((np.zeros(2),), (1, 1, 0))]),
    # the failing assert: the branch, then AssertionError made and raised by the frame itself in Python
    (assert_positive, [((np.ones(2),), (1, 1, 0)), ((-np.ones(2) * 3,), (1, 3, 0))]),
    # the loop body after the first test runs in Python (it would break on every iteration)
    (jump_while, [((np.ones(4),), (1, 1, 1)), ((np.full(3, 40.0),), (1, 1, 1))]),
]


@pytest.mark.parametrize("fn, calls", JUMPS, ids=[c[0].__name__ for c in JUMPS])
def test_break_at_a_data_dependent_jump(fn, calls):
    for args, expected in calls:
        run = compare(fn, *args)
        assert counts(run) == expected, args
        assert all(f.startswith(Category.LOOP_BREAK) for f in run.fallbacks)


def test_toy_branch_counts_exactly():
    assert counts(compare(jump_ternary, arange(3))) == (2, 1, 0)
    assert counts(compare(jump_not, arange(3) - 3)) == (2, 1, 0)
    assert counts(compare(jump_and, arange(3), False)) == (1, 0, 0)  # short-circuits while tracing
    assert counts(compare(jump_or, arange(3))) == (2, 2, 0)  # two tests, the second in the resume


# ---- comprehensions and generators ----------------------------------------------------------------

def comprehension_with_break(x):
    y = x + 1
    values = [float(v) for v in y]
    return y, values


def comprehension_with_branch(x):
    y = x * 2
    return [(v * 2 if v.sum() > 2 else v) for v in y]


def set_and_dict_comprehensions(x):
    y = x * 2
    s = {int(v) for v in y}
    d = {i: float(v) for i, v in enumerate(y)}
    return s, d


def generator_expression_consumed_by_sum(x):
    y = x + 1
    return sum(float(v) for v in y) + 1


def generator_function_with_print_in_loop(x):
    def batches():
        for row in x:
            yield row * 2

    out = []
    for batch in batches():
        print(batch.sum())
        out.append(batch)
    return np.stack(out) + 1


def generator_with_state_across_yields(x):
    def running():
        total = x[0] * 0
        for row in x:
            total = total + row
            yield total, row

    seen = []
    for total, row in running():
        if total.sum() > 3:
            seen.append(row)
    return seen


@pytest.mark.parametrize("fn, args, expected", [
    # 3.11 breaks at the call of the comprehension's function, whose loop then runs in Python;
    # 3.12+ break inside the inlined loop: the same counts
    (comprehension_with_break, (arange(3),), {True: (1, 1, 1), False: (1, 1, 1)}),
    (comprehension_with_branch, (arange(3, 2),), {True: (1, 1, 1), False: (1, 1, 1)}),
    # 3.11: enumerate(y) of the dict comprehension is made before its call and reads no row: no
    # second graph; 3.12+ inline it, and its rows are read (a graph) before float() breaks
    (set_and_dict_comprehensions, (arange(3),), {True: (1, 2, 2), False: (2, 2, 2)}),
    (generator_expression_consumed_by_sum, (arange(3),), {True: (1, 1, 0), False: (1, 1, 0)}),
    (generator_function_with_print_in_loop, (arange(3, 2),), {True: (2, 1, 1), False: (2, 1, 1)}),
    (generator_with_state_across_yields, (arange(4, 2),), {True: (1, 1, 1), False: (1, 1, 1)}),
], ids=lambda v: getattr(v, "__name__", "")[:40])
def test_break_inside_comprehensions_and_generators(fn, args, expected):
    run = compare(fn, *args)
    assert counts(run) == expected[PY311]
    assert all(f.startswith(Category.LOOP_BREAK) or "exists only at run time, so the loop runs in Python" in f
               for f in run.fallbacks)


# ---- inlining, closures, frames of every shape --------------------------------------------------------

def level3(x):
    print("deep", x.sum())
    return x + 3


def level2(x):
    return level3(x * 2) - 1


def level1(x):
    return level2(x + 1) * 2


def three_levels_deep(x):
    return level1(x) + 1


def test_break_three_inlined_levels_deep():
    run = compare(three_levels_deep, arange(3))
    # every caller keeps its graph before the call and its resume after it: 4 frames broke
    assert counts(run) == (7, 4, 0)
    report = dynamo.explain(three_levels_deep)(arange(3))
    deepest = max(report.break_reasons, key=lambda r: len(r.user_stack))
    assert [loc.function for loc in deepest.user_stack] == ["three_levels_deep", "level1", "level2", "level3"]


def make_closure(k):
    def inner(x):
        y = x * k
        print(y.sum())
        return y + k
    return inner


def frame_with_cells(x):
    y = x + 1
    scale = lambda: y * 2      # y is a cell of this frame
    print(y.sum())
    y = y + 1                  # the lambda sees the new y
    return scale()


def frame_with_cells_changed_before_break(x):
    total = x * 0

    def add(v):
        nonlocal total
        total = total + v

    add(x)
    add(x * 2)
    print("total", total.sum())
    add(x)
    return total


def frame_with_varargs(*arrays, **options):
    s = arrays[0] + arrays[1]
    print(s.sum(), sorted(options))
    return s * options["m"]


class Model:
    def __init__(self, w):
        self.w = w
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        h = x @ self.w
        if h.sum() > 0:
            h = np.maximum(h, 0)
        print("forward", h.shape, self.calls)
        return h


def break_at_first_instruction(x):
    print("first")
    return x + 1


def branch_at_first_instruction(x):
    if x.sum() > 1:
        return x
    return -x


@pytest.mark.parametrize("fn, args, expected", [
    (make_closure(3.0), (arange(3),), (2, 1, 0)),
    (frame_with_cells, (arange(3),), (2, 1, 0)),
    (frame_with_cells_changed_before_break, (arange(3),), (2, 1, 0)),
    (frame_with_varargs, (arange(3), np.ones(3)), (2, 1, 0)),
    (break_at_first_instruction, (arange(3),), (1, 1, 0)),
    (branch_at_first_instruction, (arange(3),), (1, 1, 0)),
    (branch_at_first_instruction, (-arange(3),), (2, 1, 0)),
], ids=lambda v: getattr(v, "__name__", "")[:40])
def test_break_in_frames_of_every_shape(fn, args, expected):
    kwargs = {"m": 2.0, "z": 1} if fn is frame_with_varargs else {}
    run = compare(fn, *args, **kwargs)
    assert counts(run) == expected


def test_break_in_methods():
    run = compare(Model.forward, Model(np.ones((3, 2))), arange(3))
    assert counts(run) == (2, 2, 0) and run.result is not None
    run = compare(Model.forward, Model(np.ones((3, 2))), -arange(3))
    assert counts(run) == (1, 2, 0)
    model, twin = Model(np.ones((3, 2))), Model(np.ones((3, 2)))
    bound = dynamo.compile(model.forward, backend="eager")   # a bound method, compiled
    for x in (arange(3), -arange(3), arange(3)):
        assert np.array_equal(bound(x), twin.forward(x))
    assert model.calls == twin.calls == 3


def test_mutated_cell_is_seen_by_the_closure_after_the_break():
    def f(x):
        acc = [x]
        get = lambda: acc[-1] * 2
        acc.append(x + 1)
        print(len(acc))
        acc.append(x + 5)
        return get()

    run = compare(f, arange(2))
    assert np.array_equal(run.result, (arange(2) + 5) * 2)


# ---- where no break is possible: the frame falls back, and explain says why -------------------------

def test_closures_made_by_inlined_calls_survive_a_break():
    def make_adder(k):
        def add(v):
            return v + k
        return add

    def counter_pair():
        n = 0

        def inc():
            nonlocal n
            n += 1
            return n
        return inc, lambda: n

    def f(x):
        add = make_adder(2.0)              # its cell was made while tracing
        inc, get = counter_pair()          # two closures sharing one cell
        inc()
        print(x.sum())
        inc()
        return add(x) * get()

    run = compare(f, arange(3))
    assert counts(run) == (2, 1, 0) and np.array_equal(run.result, (arange(3) + 2) * 2)


def test_match_statement_on_an_object_from_python():
    import fractions

    def f(x, value):
        y = x + 1
        match value:
            case fractions.Fraction(numerator=n):
                return y * n
            case _:
                return y

    assert counts(compare(f, arange(2), fractions.Fraction(3, 4))) == (2, 1, 0)
    assert counts(compare(f, arange(2), 1.5)) == (1, 0, 0)


def unbound_local(x):
    if x.shape[0] > 5:
        z = 1
    return x + z


def generator_with_cells(x):
    def rows():
        k = 2.0
        scale = lambda v: v * k       # k is a cell of the generator
        for row in x:
            yield scale(row)

    out = []
    for v in rows():
        print(v.sum())
        out.append(v)
    return out


@pytest.mark.parametrize("fn, args, why", [
    (unbound_local, (arange(2),), "local variable 'z' is read before it is assigned"),
    (generator_with_cells, (arange(2, 2),), "has variables captured by inner functions"),
])
def test_unbreakable_frame_falls_back_and_explain_says_why(fn, args, why):
    run = compare(fn, *args)
    assert len(run.fallbacks) == 1 and why in run.fallbacks[0]
    assert "cannot continue after a graph break" in run.fallbacks[0]
    report = dynamo.explain(fn)(*args) if run.error is None else None
    if report is not None:
        (reason,) = [r for r in report.break_reasons if r.kind == "frame ran uncompiled"]
        assert why in str(reason) and reason.source_line and reason.lineno > fn.__code__.co_firstlineno


def test_loop_over_opaque_iterator_runs_in_python_and_compiles_after():
    def f(x, source):
        y = x * 2
        acc = 0.0
        for value in source:               # an iterator that exists only at run time
            acc += value
        return np.sin(y) + acc

    expected = f(arange(3), iter([1.0, 2.0, 3.0]))
    from support import CompileCounter, fallbacks, graph_breaks

    counter = CompileCounter()
    compiled = dynamo.compile(f, backend=counter)
    assert np.array_equal(compiled(arange(3), iter([1.0, 2.0, 3.0])), expected)
    assert counter.frame_count == 2 and len(graph_breaks(compiled)) == 1
    (reason,) = fallbacks(compiled)
    assert reason.startswith(Category.LOOP_BREAK)


class WithStatic:
    @staticmethod
    def squash(z):
        return 1 / (1 + np.exp(-z))

    def forward(self, x):
        return self.squash(x) * 2


def test_staticmethod_called_through_self_is_guarded_once():
    # the guard on the static method once read `type(self).squash.__func__`, which does not
    # exist (the class attribute is the function itself): every call recompiled
    from support import CompileCounter

    counter = CompileCounter()
    compiled = dynamo.compile(WithStatic.forward, backend=counter)
    model = WithStatic()
    for _ in range(4):
        assert np.array_equal(compiled(model, arange(3)), model.forward(arange(3)))
    assert counter.frame_count == 1


# ---- super(), displays under construction, call keywords, values leaving the frame ---------------

class Base:
    def scale(self, x):
        return x * 2


class Child(Base):
    def scale(self, x):
        y = x + 1
        print("child")              # super() below reads the first local of the resume function
        return super().scale(y) + 1

    def scale_stored(self, x):
        y = x + 1
        print("child")
        parent = super()
        return parent.scale(y)


class Located(Exception):
    def __init__(self, where):
        super().__init__(where)
        self.where = where


@pytest.mark.parametrize("method", [Child.scale, Child.scale_stored])
def test_zero_argument_super_after_a_break(method):
    run = compare(method, Child(), arange(3))
    assert run.fallbacks == [] and len(run.breaks) >= 1


def test_exception_class_calling_super_init():
    def f(x):
        error = Located(x.shape[0])
        return error.where + x, error.args

    run = compare(f, arange(2))
    assert run.result[1] == (2,) and run.fallbacks == []


def test_displays_under_construction_across_a_break():
    def f(x, items):
        y = x * 2
        listed = [*items, print(y.sum()), len(items)]
        mapped = {**{"a": 1}, "b": print("b"), "c": 3}
        return listed, mapped, y

    run = compare(f, arange(2), [1, 2])
    assert run.result[0] == [1, 2, None, 2] and run.result[1] == {"a": 1, "b": None, "c": 3}


def test_repeated_keyword_raises_with_the_functions_name():
    def g(**kw):
        return kw

    def f(x, extra):
        return g(a=1, **extra), x

    run = compare(f, arange(2), {"a": 2})      # TypeError naming g, as CPython words it
    assert isinstance(run.error, TypeError) and "g() got multiple values" in str(run.error)
    assert compare(f, arange(2), {"b": 2}).fallbacks == []


def test_closure_generator_and_method_returned_by_the_frame():
    def closure(x):
        y = x * 2

        def scaled(v):
            return v * y
        return scaled

    def generator(x):
        y = x + 1
        return (v * 2 for v in y)

    def method(x, items):
        return items.append, x

    compiled = dynamo.compile(closure, backend="eager")
    assert np.array_equal(compiled(arange(2))(3.0), closure(arange(2))(3.0))
    compiled = dynamo.compile(generator, backend="eager")
    assert [float(v) for v in compiled(arange(2))] == [float(v) for v in generator(arange(2))]
    items = []
    append, _ = dynamo.compile(method, backend="eager")(arange(2), items)
    append(1)
    assert items == [1]


# ---- values only known at run time -----------------------------------------------------------

def as_float(x):
    y = x * 2
    return y * float(y.sum())


def as_int(x):
    y = x + 1
    return y[: int(y.max())]


def as_bool(x):
    m = x > 1
    return x * bool(m.any())


def as_item(x):
    y = x - 1
    return y + y.sum().item()


def as_len_of_mask(x):
    picked = x[x > 1]
    return x * len(picked)


def as_list(x):
    y = x * 3
    return y.tolist() + [1]


@pytest.mark.parametrize("fn, category", [
    (as_float, Category.DATA_DEPENDENT_VALUE), (as_int, Category.DATA_DEPENDENT_VALUE),
    (as_bool, Category.DATA_DEPENDENT_VALUE), (as_item, Category.DATA_DEPENDENT_VALUE),
    (as_len_of_mask, Category.DATA_DEPENDENT_SHAPE), (as_list, Category.DATA_DEPENDENT_VALUE),
], ids=lambda v: getattr(v, "__name__", ""))
def test_break_at_a_value_known_only_at_run_time(fn, category):
    run = compare(fn, arange(4))
    assert run.breaks[0].startswith(category) and run.fallbacks == []
    assert counts(run)[1] == 1


class _Collector:
    def __init__(self):
        self.got = []

    def add(self, pair, **attr):
        self.got.append((list(pair[0]), list(pair[1]), attr))
        return self.got


def _method_call_with_star_star_around_a_break(box, xs, **attr):
    # obj.m(..., **kw) keeps [NULL, bound method] below the arguments (CALL_FUNCTION_EX); the
    # break is at a two-argument call above it (on 3.11 PRECALL 2 then CALL 2)
    return box.add(itertools.tee(iter(xs), 2), **attr)


def test_break_under_a_method_called_with_star_star_keeps_the_bound_method():
    run = compare(_method_call_with_star_star_around_a_break, _Collector(), [1, 2, 3], w=1)
    assert run.result == [([1, 2, 3], [1, 2, 3], {"w": 1})]
