"""Dynamic shapes: automatic dynamic sizes, 0/1 specialization, size guards, specialization of
sizes used as Python values, mark_dynamic/mark_static, and the cache limit."""
import numpy as np
import pytest
import sympy

import dynamo
from dynamo import config
from dynamo.fx_ir.ops.symbolic import is_symbolic
from tests.support import compile_with_counter, fallbacks


def frames(compiled):
    return [frame for _, frame in compiled._dynamo_callback.compiled_frames]


def size_guards(compiled, index=-1):
    from dynamo.guards import GuardKind

    return [str(g) for g in frames(compiled)[index].guards if g.kind is GuardKind.SIZES]


def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("backend", ["numpy", "eager"])
def test_lengths_5_to_100_compile_exactly_twice(backend):
    def f(x, y):
        return np.sin(x) * 2 + y.sum()

    compiled = dynamo.compile(f, backend=backend)
    for n in range(5, 101):
        x, y = np.linspace(0, 1, n), np.arange(n, dtype=np.float64)
        np.testing.assert_array_equal(compiled(x, y), f(x, y))
    assert len(frames(compiled)) == 2 and fallbacks(compiled) == []
    graph = frames(compiled)[1].graphs[0].graph_module.graph
    placeholder = next(n for n in graph.nodes if n.op == "placeholder")
    assert is_symbolic(placeholder.meta["val"].shape[0])  # sympy's form or the small one (backend numpy)


def test_kmeans_step_with_varying_points_compiles_once_after_the_first_change():
    compiled, counter = compile_with_counter(kmeans_step)
    rng = np.random.default_rng(0)
    means = rng.random((3, 2))
    for n in (50, 60, 70, 80, 90):
        X = rng.random((n, 2))
        np.testing.assert_array_equal(compiled(X, means), kmeans_step(X, means))
    assert counter.frame_count == 2 and fallbacks(compiled) == []
    assert [str(d) for d in [n for n in counter.graphs[1].graph.nodes if n.op == "output"][0].args[0][0].meta["val"].shape] == ["s0"]


@pytest.mark.parametrize("backend", ["numpy", "eager"])
def test_softmax_with_varying_rows_compiles_once_after_the_first_change(backend):
    compiled = dynamo.compile(softmax, backend=backend)
    rng = np.random.default_rng(1)
    for rows in (4, 9, 16, 33, 100, 7):
        x = rng.random((rows, 8))
        np.testing.assert_allclose(compiled(x), softmax(x), rtol=1e-12)
    assert len(frames(compiled)) == 2 and fallbacks(compiled) == []


def test_broadcasting_with_a_size_of_1_recompiles_into_a_specialized_graph():
    def f(x, y):
        return x + y

    compiled, counter = compile_with_counter(f)
    for n in (3, 4, 5):
        x, y = np.ones((n, 2)), np.arange(2 * n, dtype=float).reshape(n, 2)
        np.testing.assert_array_equal(compiled(x, y), f(x, y))
    assert counter.frame_count == 2
    assert "Eq(s0, s1)" in size_guards(compiled)
    x, y = np.ones((6, 2)), np.arange(2.0).reshape(1, 2)  # broadcasts: must not reuse Eq(s0, s1)
    np.testing.assert_array_equal(compiled(x, y), f(x, y))
    assert counter.frame_count == 3
    shapes = [str(n.meta["val"].shape) for n in counter.graphs[2].graph.nodes if n.op == "placeholder"]
    assert shapes == ["(s0, 2)", "(1, 2)"]
    x = np.ones((7, 2))
    with pytest.raises(ValueError):  # a mismatch raises as in NumPy, whatever was compiled
        compiled(x, np.ones((3, 2)))


def test_sizes_0_and_1_stay_static():
    compiled, counter = compile_with_counter(lambda x: x * 2, dynamic=True)
    for n in (0, 1, 5, 6):
        x = np.arange(float(n))
        np.testing.assert_array_equal(compiled(x), x * 2)
    assert counter.frame_count == 3  # 0, 1, then one symbolic graph for 5 and 6


def test_a_size_driven_python_loop_specializes_with_a_readable_guard():
    def f(x):
        total = x[0]
        for i in range(1, x.shape[0]):
            total = total + x[i]
        return total, i  # the loop variable read after the loop: not a loop node, the loop unrolls

    compiled, counter = compile_with_counter(f, dynamic=True)
    x = np.arange(7.0)
    assert compiled(x) == f(x)
    guards = size_guards(compiled)
    specialized = [g for g in guards if g.startswith("Eq(s0, 7)")]
    assert specialized and "specialized" in specialized[0] and "test_dynamic_shapes.py" in specialized[0]
    assert compiled(np.arange(8.0)) == f(np.arange(8.0))  # Eq(s0, 7) fails: a new compile
    assert counter.frame_count == 2
    recompile = compiled._dynamo_callback.recompiles[-1][1]
    assert any("Eq(s0, 7) failed: L['x'].shape[0] is 8" in r for r in recompile), recompile


def test_branch_on_a_size_specializes():
    def f(x):
        if x.shape[0] > 100:
            return x * 2
        return x - 1

    compiled = dynamo.compile(f, dynamic=True)
    for n in (5, 200, 6):
        x = np.arange(float(n))
        np.testing.assert_array_equal(compiled(x), f(x))


def test_mark_dynamic_on_a_specialized_dimension_names_the_line():
    def f(x):
        out = x
        for _ in range(x.shape[0]):  # forces the size
            out = out + 1
        return out + _  # the loop variable read after the loop: the loop unrolls (no loop node)

    x = np.arange(4.0)
    dynamo.mark_dynamic(x, 0)
    compiled = dynamo.compile(f)
    with pytest.raises(dynamo.DynamicShapeError) as info:
        compiled(x)
    message = str(info.value)
    assert "L['x'].shape[0]" in message and "mark_dynamic" in message
    assert "for _ in range(x.shape[0]):  # forces the size" in message


def test_mark_dynamic_makes_a_dimension_symbolic_from_the_first_call():
    compiled, counter = compile_with_counter(lambda x: x.sum(axis=0))
    x = np.ones((5, 3))
    dynamo.mark_dynamic(x, 0)
    np.testing.assert_array_equal(compiled(x), x.sum(axis=0))
    y = np.ones((9, 3))
    np.testing.assert_array_equal(compiled(y), y.sum(axis=0))
    assert counter.frame_count == 1


def test_mark_static_and_dynamic_false_keep_sizes_static():
    compiled, counter = compile_with_counter(lambda x: x + 1, dynamic=False)
    for n in (3, 4, 5):
        compiled(np.ones(n))
    assert counter.frame_count == 3
    compiled, counter = compile_with_counter(lambda x: x + 1, dynamic=True)
    a, b = np.ones((3, 4)), np.ones((3, 5))
    dynamo.mark_static(a, 1)
    compiled(a)
    assert [str(n.meta["val"].shape) for n in counter.graphs[0].graph.nodes if n.op == "placeholder"] == ["(s0, 4)"]
    with pytest.raises(ValueError):
        dynamo.mark_dynamic(b, 2)
    with pytest.raises(TypeError):
        dynamo.mark_dynamic([1, 2], 0)


def test_size_guards_print_as_relations():
    def f(x, y):
        return x.reshape(-1, 4) + y

    compiled = dynamo.compile(f, backend="eager")
    x, y = np.ones(32), np.ones((8, 4))
    dynamo.mark_dynamic(x, 0)
    dynamo.mark_dynamic(y, 0)
    np.testing.assert_array_equal(compiled(x, y), f(x, y))
    guards = size_guards(compiled)
    assert "s0 >= 2  (s0 = L['x'].shape[0])" in guards
    assert "s1 >= 2  (s1 = L['y'].shape[0])" in guards
    assert "L['y'].shape[1] == 4" in guards
    assert any(g.startswith("Eq(Mod(s0, 4), 0)") for g in guards), guards
    np.testing.assert_array_equal(compiled(np.ones(48), np.ones((12, 4))), f(np.ones(48), np.ones((12, 4))))
    assert len(frames(compiled)) == 1
    x = np.ones(30)  # 30 % 4 != 0: NumPy raises, as it does uncompiled
    with pytest.raises(ValueError):
        compiled(x, y)


def test_size_guards_compile_to_one_predicate():
    from dynamo.shapes import ShapeEnv
    from dynamo.shapes.guards import SizeGuards
    from dynamo.sources import LocalSource

    env = ShapeEnv()
    a, b = LocalSource(0, "a"), LocalSource(1, "b")
    s0, = (d for d in env.array_shape(a, (6, 3), {0}, set()) if not isinstance(d, int))
    s1, = env.array_shape(b, (6,), {0}, set())
    assert env.decide_equal(s0, s1) and not env.decide_equal(s0, 1)  # the second from s >= 2
    assert env.decide_nonnegative(s0 - 4)
    guards = SizeGuards(env)
    assert guards.texts[-2:] == ["Eq(s0, s1)", "s0 >= 4"]
    assert guards.check((6, 3), (6,)) and guards.check((9, 3), (9,))
    assert not guards.check((6, 3), (7,)) and str(guards) == "Eq(s0, s1) failed: L['a'].shape[0] is 6, L['b'].shape[0] is 7"
    assert not guards.check((3, 3), (3,)) and str(guards).startswith("s0 >= 4 failed")
    assert not guards.check((6, 2), (6,)) and str(guards) == "L['a'].shape[1] == 3 failed: L['a'].shape[1] is 2"
    assert "sympy" not in guards.source


def test_cache_never_grows_past_the_limit_with_many_shapes(caplog):
    def f(x):
        total = 0
        for i in range(x.shape[0]):  # an unrolled loop over a size: specialized every time
            total += i
        return x * total

    compiled, counter = compile_with_counter(f)
    with config.patch(cache_size_limit=4):
        for n in range(2, 40):
            x = np.arange(float(n))
            np.testing.assert_array_equal(compiled(x), f(x))
    assert [r for r in caplog.records if "cache_size_limit" in r.getMessage()]
    assert counter.frame_count <= 4
    assert len(frames(compiled)) <= 4


def test_size_arithmetic_in_python_stays_symbolic_for_many_shapes():
    def f(x):
        return x[: x.shape[0] // 2] * 2

    compiled, counter = compile_with_counter(f)
    with config.patch(cache_size_limit=4):
        for n in range(2, 40):
            x = np.arange(float(n))
            np.testing.assert_array_equal(compiled(x), f(x))
    assert counter.frame_count == 2 and fallbacks(compiled) == []


def test_dynamic_graph_results_match_for_shape_arithmetic_in_ops():
    def f(x, y):
        z = np.concatenate([x, y])
        return z[1:].reshape(-1) * 2, x.T @ y.T.T

    compiled = dynamo.compile(f)
    for n in (3, 5, 8):
        x, y = np.ones((n, 3)) * n, np.arange(3.0 * n).reshape(n, 3)
        for got, want in zip(compiled(x, y), f(x, y)):
            np.testing.assert_array_equal(got, want)
    assert len(frames(compiled)) == 2 and fallbacks(compiled) == []


def test_automatic_dynamic_can_be_switched_off():
    compiled, counter = compile_with_counter(lambda x: x + 1)
    with config.patch(automatic_dynamic_shapes=False):
        for n in (3, 4, 5):
            compiled(np.ones(n))
    assert counter.frame_count == 3


def test_explain_lists_dynamic_dimensions_specializations_and_static_sizes():
    def f(x, y):
        for i in range(y.shape[0]):  # specializes s0
            x = x + i
        x = x + i  # the loop variable read after the loop: the loop unrolls (no loop node)
        if x.shape[0] > 4:
            return x[: x.shape[0] // 2]
        return x

    report = dynamo.explain(f, dynamic=True)(np.ones((6, 1)), np.ones(3))
    text = str(report)
    section = text[text.index("Dynamic dimensions:"):]
    assert "s0 = L['y'].shape[0]  (dynamic=True; traced with 3)" in section  # read first
    assert "s1 = L['x'].shape[0]  (dynamic=True; traced with 6)" in section
    assert "specialized s0 = 3 (L['y'].shape[0]): range() of a size" in section
    assert "for i in range(y.shape[0]):  # specializes s0" in section
    assert "static L['x'].shape[1] == 1: sizes 0 and 1 stay specialized" in section
    assert "size guards: s1 > 4" in section


def test_explain_names_automatic_dynamic_and_readable_recompile_reasons():
    from dynamo.explain import report_from

    compiled = dynamo.compile(lambda x: x * 2, backend="eager")
    for n in (5, 6, 7, 1):
        compiled(np.ones(n))
    report = report_from(compiled._dynamo_callback)
    assert any("automatic: its size changed between compiles" in line
               for _, lines in report.dynamic_by_frame for line in lines)
    assert report.recompiles[0].endswith("L['x'].shape == (5,)")
    assert "s0 >= 2 failed: L['x'].shape[0] is 1" in report.recompiles[1]


def test_dynamic_log_artifact(caplog):
    import logging

    from dynamo.logs import ARTIFACTS

    assert "dynamic" in ARTIFACTS

    def f(x):
        return x * len(range(x.shape[0]))

    with caplog.at_level(logging.DEBUG, logger="dynamo.dynamic"):
        dynamo.compile(f, backend="eager", dynamic=True)(np.ones(4))
    messages = [r.getMessage() for r in caplog.records if r.name == "dynamo.dynamic"]
    assert any(m.startswith("s0 = L['x'].shape[0]") for m in messages), messages
    assert any("specialized to 4" in m for m in messages), messages


def test_relations_run_in_c_and_a_failure_names_the_relation_that_failed():
    from dynamo.guards import SizeCheck

    compiled = dynamo.compile(lambda x, y, z: x + y + z, backend="eager", dynamic=True)
    compiled(np.ones(5), np.ones(5), np.ones(5))
    program = frames(compiled)[0].guards.compile()
    checks = [info for info in program.info if isinstance(info, SizeCheck)]
    assert len(checks) == 1 and not any(callable(i) and not isinstance(i, SizeCheck) for i in program.info)
    np.testing.assert_array_equal(compiled(np.ones(7), np.ones(7), np.ones(7)), np.full(7, 3.0))
    with pytest.raises(ValueError):
        compiled(np.ones(7), np.ones(7), np.ones(6))
    reasons = compiled._dynamo_callback.recompiles[-1][1]
    assert reasons == ["Eq(s1, s2) failed: L['y'].shape[0] is 7, L['z'].shape[0] is 6"]


def test_facts_that_follow_from_bounds_need_no_guard():
    from dynamo.shapes import ShapeEnv
    from dynamo.sources import LocalSource

    env = ShapeEnv()
    s0, = env.array_shape(LocalSource(0, "a"), (9,), {0}, set())
    for always in (s0 - sympy.floor(s0 / 2), s0 - sympy.Min(5, s0), sympy.Max(s0, 3) - 3,
                   s0 - sympy.floor(sympy.Min(10, 2 * s0 + 2) / 3), 3 - sympy.Mod(s0, 4)):
        assert env.decide_nonnegative(always)
    assert not env.decide_nonnegative(-1 - sympy.Mod(s0, 4))
    assert env.relations == {}  # all decided from the bounds
    assert env.decide_nonnegative(s0 - 8) and list(env.relations) == [s0 >= 8]  # from the hint: a guard
