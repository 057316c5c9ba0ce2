"""A question in a nested loop body that depends only on enclosing loops' variables (NPBench
scattering_self_energies: `if E - w >= 0` four loops deeper) rejects the outermost of those loops, not
the loop it was asked in: the retrace unrolls that one and captures the rest (one loop node around the
nest) instead of retracing once per level. Compared with plain on several inputs, exact counts."""
from __future__ import annotations

import numpy as np
import pytest

import dynamo
from dynamo.fx_ir import count_loops
from tests.support import compile_with_counter, same_value


@pytest.fixture(autouse=True)
def short_loops_stay_loops():
    with dynamo.config.patch(loop_unroll_threshold=4):
        yield


def guarded_nest(G, D, S):
    for k in range(G.shape[0]):
        for E in range(G.shape[1]):
            for w in range(D.shape[0]):
                for a in range(D.shape[1]):
                    if E - w >= 0:
                        S[k, E] += G[k, E - w] * D[w, a]


def inputs(ks):
    rng = np.random.default_rng(ks)
    return rng.random((ks, 4, 3)), rng.random((2, 6, 3)), np.zeros((ks, 4, 3))


def check(compiled, sizes):
    for size in sizes:
        plain_args, compiled_args = inputs(size), inputs(size)
        assert compiled(*compiled_args) is None
        guarded_nest(*plain_args)
        for p, c in zip(plain_args, compiled_args):
            assert same_value(c, p), size


def test_the_outermost_loop_the_condition_mentions_is_the_one_unrolled():
    compiled, counter = compile_with_counter(guarded_nest)
    check(compiled, [2, 3, 5])
    # 2 ks, then the k count as a symbol (automatic dynamic): 5 reuses it
    assert counter.frame_count == 2
    # k is one loop node; E (4 values) unrolls in its body: for E = 0 the w loop unrolls too (w = 1
    # fails the test) around 2 a loops, for E = 1..3 the w loop and its a loop are captured
    assert [count_loops(g.graph) for g in counter.graphs] == [9, 9]
    assert counter.op_counts()[0] == 1  # the k loop node alone (the dynamic one also reads the size)


@pytest.mark.parametrize("backend", ["numpy", "eager"])
def test_results_equal_plain_on_every_backend(backend):
    check(dynamo.compile(guarded_nest, backend=backend), [2, 3, 5])


def test_explain_names_the_condition_once_per_rejected_loop_in_the_programs_names():
    report = dynamo.explain(guarded_nest, backend="numpy")(*inputs(2))
    notes = [line.strip() for _, lines in report.loops_by_frame for line in lines if "not captured" in line]
    assert len(notes) == 2
    assert notes[0].startswith("loop over E at") and "whether E - w >= 0 depends on the iteration (loop variables E, w)" in notes[0]
    assert notes[1].startswith("loop over w at") and "whether -w >= 0 depends on the iteration (loop variable w)" in notes[1]
    assert report.loop_count == 9 and report.graph_count == 1 and report.graph_break_count == 0
