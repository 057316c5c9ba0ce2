"""Short loops whose unrolled trace runs past config.trace_instruction_budget (a few time steps whose
body calls a function with a loop of its own, as NPBench cavity_flow) are captured as loop nodes on
the retrace instead of leaving the whole frame uncompiled; compared with plain on several inputs."""
from __future__ import annotations

import numpy as np
import pytest

import dynamo
from dynamo.fx_ir import count_loops
from tests.support import compile_with_counter, fallbacks, same_value


@pytest.fixture(autouse=True)
def small_budget():
    """Unrolling 12 steps of 3 sweeps passes 600 instructions; one step traced once does not."""
    with dynamo.config.patch(trace_instruction_budget=600):
        yield


def relax(p, b, sweeps):
    for _ in range(sweeps):
        pn = p.copy()
        p[1:-1] = 0.5 * (pn[2:] + pn[:-2]) - b[1:-1]
        p[0] = p[1]


def time_steps(steps, sweeps, u, p, b):
    for n in range(steps):
        b[1:-1] = u[2:] - u[:-2]
        relax(p, b, sweeps)
        u[1:-1] = u[1:-1] - 0.1 * (p[2:] - p[:-2])
    return u.sum()


def inputs(steps):
    rng = np.random.default_rng(steps)
    return steps, 3, rng.random(40), rng.random(40), np.zeros(40)


def time_steps_logged(steps, sweeps, u, p, b, log):
    for n in range(steps):
        log.append(n)  # a Python list mutated in the body: unrolled fine, not capturable
        b[1:-1] = u[2:] - u[:-2]
        relax(p, b, sweeps)
        u[1:-1] = u[1:-1] - 0.1 * (p[2:] - p[:-2])
    return u.sum()


def check(fn, compiled, steps_list):
    for steps in steps_list:
        plain_args, compiled_args = inputs(steps), inputs(steps)
        want = fn(*plain_args)
        got = compiled(*compiled_args)
        assert same_value(got, want), steps
        for p, c in zip(plain_args, compiled_args):
            assert same_value(c, p), steps


@pytest.mark.parametrize("backend", ["numpy", "eager"])
def test_a_short_loop_unrolled_past_the_budget_becomes_a_loop_node(backend):
    compiled = dynamo.compile(time_steps, backend=backend)
    check(time_steps, compiled, [12, 12])
    frames = compiled._dynamo_callback.compiled_frames
    assert fallbacks(compiled) == []
    assert [frame.loop_count for _, frame in frames] == [1]  # relax inlined, its sweeps unrolled in the body


def test_counts_exact_and_a_new_step_count_recompiles_once():
    compiled, counter = compile_with_counter(time_steps)
    check(time_steps, compiled, [12, 13, 14, 9])
    # 12 steps: the forced capture; 13: the count becomes a symbol (automatic dynamic); 14 and 9 reuse it
    assert counter.frame_count == 2
    assert [count_loops(g.graph) for g in counter.graphs] == [1, 1]


def test_explain_lists_the_loop_captured_after_the_budget():
    report = dynamo.explain(time_steps, backend="numpy")(*inputs(12))
    assert report.loop_count == 1 and report.graph_break_count == 0
    text = str(report)
    assert "loop over n at" in text and "12 iterations" in text


def test_a_loop_that_cannot_be_captured_still_runs_as_before():
    compiled = dynamo.compile(time_steps_logged, backend="numpy")
    for _ in range(2):
        plain_log, compiled_log = [], []
        plain_args, compiled_args = inputs(12), inputs(12)
        want = time_steps_logged(*plain_args, plain_log)
        got = compiled(*compiled_args, compiled_log)
        assert same_value(got, want) and compiled_log == plain_log == list(range(12))
        assert all(same_value(c, p) for p, c in zip(plain_args, compiled_args))
    assert len(fallbacks(compiled)) == 1  # the frame runs as written, as without loop capture
    report = dynamo.explain(time_steps_logged, backend="numpy")(*inputs(12), [])
    assert report.loop_count == 0
    notes = [line for _, lines in report.loops_by_frame for line in lines]
    # the step loop names its construct; a sweep loop open when the budget ran out again (where the
    # trace stands then depends on the Python version's bytecode) ran past it in its first step
    assert notes[0].startswith("loop over n at") and "not captured: the body mutates a list" in notes[0]
    assert all(note.startswith("loop over _ at") and "trace_instruction_budget" in note for note in notes[1:])


def many_short_loops(a):
    for i in range(60):
        a[0] += a[1] * 0.5
    for i in range(60):
        a[1] += a[2] * 0.5
    for i in range(60):
        a[2] += a[3] * 0.5
    for i in range(60):
        a[3] += a[4] * 0.5
    for i in range(60):
        a[4] += a[5] * 0.5
    for i in range(60):
        a[5] += a[0] * 0.5
    return a.sum()


@pytest.mark.parametrize("most_forced, loops", [(4, None), (8, 6)])
def test_each_loop_past_the_budget_is_captured_up_to_most_forced_of_them(monkeypatch, most_forced, loops):
    """Each of the six loops (60 iterations: short) alone runs past a budget of 250 when unrolled: each
    is captured on a retrace of its own, which traces up to the budget again; past MOST_FORCED such
    retraces the frame runs as written, as before."""
    import dynamo.loop_capture

    monkeypatch.setattr(dynamo.loop_capture, "MOST_FORCED", most_forced)
    with dynamo.config.patch(trace_instruction_budget=250):
        compiled = dynamo.compile(many_short_loops, backend="numpy")
        for _ in range(2):
            a, b = np.arange(6.0), np.arange(6.0)
            assert same_value(compiled(a), many_short_loops(b)) and same_value(a, b)
    frames = compiled._dynamo_callback.compiled_frames
    assert len(frames) == 1
    if loops is None:
        assert len(fallbacks(compiled)) == 1 and frames[0][1].loop_count == 0
    else:
        assert fallbacks(compiled) == [] and frames[0][1].loop_count == loops
