"""A loop nest too long to unroll gives up after config.trace_instruction_budget traced instructions
and runs in Python with the same results; the budget keeps that cost to a fraction of a second."""
import numpy as np

import dynamo
from dynamo import config

from support import same_value


def lu(A):
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A


def lu_logged(A):
    """lu with a Python list appended to in its loops: no loop node can hold that, so the nest unrolls."""
    log = []
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
            log.append(j)
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A, len(log)


def spd(n):
    rng = np.random.default_rng(3)
    m = rng.random((n, n))
    return m @ m.T + n * np.eye(n)


def test_a_loop_nest_past_the_budget_runs_in_python_with_the_same_results():
    A = spd(48)  # 48 * 48 inner iterations: well past the budget
    compiled = dynamo.compile(lu_logged)
    for _ in range(2):
        assert same_value(compiled(A.copy()), lu_logged(A.copy()))
    report = dynamo.explain(lu_logged)(A.copy())
    assert any("trace_instruction_budget" in r.explanation for r in report.break_reasons)


def test_a_loop_nest_that_is_captured_is_traced_once_whatever_its_size():
    A = spd(48)
    assert same_value(dynamo.compile(lu)(A.copy()), lu(A.copy()))
    report = dynamo.explain(lu)(A.copy())
    assert report.graph_count == 1 and report.loop_count == 3 and not report.break_reasons


def test_the_budget_counts_instructions_of_one_frame_and_what_it_inlines():
    A = spd(6)  # small enough to unroll whole
    compiled = dynamo.compile(lu_logged)
    assert same_value(compiled(A.copy()), lu_logged(A.copy()))
    assert dynamo.explain(lu_logged)(A.copy()).graph_count == 1
    with config.patch(trace_instruction_budget=200):
        dynamo.reset()
        assert same_value(dynamo.compile(lu_logged)(A.copy()), lu_logged(A.copy()))
        assert dynamo.explain(lu_logged)(A.copy()).graph_count == 0
