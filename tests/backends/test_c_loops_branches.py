"""Loop bodies with branches as C loops (a cond node as C if/else, loop_codegen.LoopWriter.branch):
every loop of tests/dynamo/test_loops_branches.py runs as C, bitwise equal to plain NumPy, and an arm
that does not run raises no floating-point warning."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import c_helpers
import dynamo
from test_c_loops import native_runs, run_both
from tests.dynamo.test_loops_branches import CASES, INDEX_CASES, inputs, newton_with_damping

pytestmark = c_helpers.needs_compiler


@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_each_branching_loop_runs_as_c(fn, make):
    nan = inputs(4)
    nan[3::11] = np.nan
    rec = run_both(fn, [make(inputs(0)), make(nan)])
    assert native_runs(rec) == [2]


def test_a_while_loop_with_a_branch_runs_as_c():
    rec = run_both(newton_with_damping, [(inputs(0), 1e-9), (inputs(1) + 3.0, 1e-6)])
    assert sum(native_runs(rec)) == 2  # a second tol may recompile: each graph's loop ran as C


def scale_huge(a, out):
    for i in range(a.shape[0]):
        x = a[i]
        if x > 1e300:
            out[i] = x * 1e10  # overflows: warns only where it runs
        else:
            out[i] = x
    return out


def warned(fn, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        result = fn(*args)
    return result, sorted(str(w.message) for w in caught)


def test_only_the_arm_that_runs_raises_its_warnings():
    compiled = dynamo.compile(scale_huge, backend="c")
    for a in (inputs(0), np.concatenate([inputs(1), [1e308]])):
        ours, our_warnings = warned(compiled, (a, np.zeros_like(a)))
        plain, plain_warnings = warned(scale_huge, (a, np.zeros_like(a)))
        assert c_helpers.bits(ours) == c_helpers.bits(plain)
        assert our_warnings == plain_warnings


@pytest.mark.parametrize("fn, make", INDEX_CASES, ids=[c[0].__name__ for c in INDEX_CASES])
def test_a_branch_on_loop_variables_runs_as_c(fn, make):
    rec = run_both(fn, [make(0), make(1)])
    assert native_runs(rec) == [2]
