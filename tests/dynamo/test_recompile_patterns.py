"""Ordinary patterns that used to recompile on every call (issue 16): objects made anew per call
(nested functions, per-object lambdas, context managers, bound ufunc methods) are guarded by what
the trace relied on, not their identity. Each test counts compiles exactly and compares with plain."""
import numpy as np

import dynamo
from dynamo import _C

from support import same_value


def compiles(compiled, name):
    """Frames compiled for code objects whose qualified name starts with `name`."""
    return sum(1 for code, _ in compiled._dynamo_callback.compiled_frames if code.co_qualname.startswith(name))


def entries(fn):
    return len(_C.cache_entries(fn.__code__))


def run_both(fn, calls):
    compiled = dynamo.compile(fn)
    for args in calls:
        want, got = fn(*args()), compiled(*args())
        assert same_value(got, want), (got, want)
    return compiled


def helper_after_break(x, k):
    def iterate(v):
        return v * k + 1
    print(end="")
    return iterate(iterate(x))


def test_a_helper_defined_inside_and_called_after_a_break_compiles_once_per_frame():
    compiled = run_both(helper_after_break, [lambda: (np.arange(4.0), 2.0)] * 6)
    assert compiles(compiled, "helper_after_break") == 2  # the frame and its resume function, once each
    guards = [str(g) for code, frame in compiled._dynamo_callback.compiled_frames if "resume" in code.co_qualname
              for g in frame.guards]
    assert not any("(held weakly)" in g or " is <function" in g for g in guards), guards


def test_the_helper_reads_its_cells_each_call():
    # k changes: the cell's contents are guarded (a float becomes a run-time input on its second value)
    compiled = run_both(helper_after_break, [lambda k=k: (np.arange(4.0), k) for k in (2.0, 3.0, 4.0, 5.0)])
    assert compiles(compiled, "helper_after_break.<resume") == 2


def test_a_helper_compared_by_identity_is_guarded_by_identity():
    seen = []

    def f(x):
        def g(v):
            return v + 1
        seen.append(g)
        print(end="")
        return g(x) if g is seen[-1] else x

    compiled = dynamo.compile(f)
    for _ in range(3):
        assert same_value(compiled(np.ones(2)), np.full(2, 2.0))


class Keyed:
    def __init__(self, scale):
        self.key = lambda v: v * scale


def apply_key(obj, x):
    return obj.key(x) - x


def test_functions_stored_per_object_compile_once():
    compiled = run_both(apply_key, [lambda: (Keyed(3.0), np.arange(5.0))] * 5)
    assert entries(apply_key) == 1 and compiles(compiled, "apply_key") == 1


def test_a_per_object_function_with_other_cell_contents_is_not_reused_wrongly():
    # the scale in the lambda's cell is guarded like any value: 2, 3, then a run-time float
    run_both(apply_key, [lambda s=s: (Keyed(s), np.arange(5.0)) for s in (2.0, 3.0, 4.0, 7.0)])
    assert entries(apply_key) == 2


def log_safely(x):
    with np.errstate(all="ignore"):
        y = np.log(x)
    return y + 1


def test_errstate_context_manager_is_guarded_by_type():
    compiled = run_both(log_safely, [lambda: (np.array([1.0, 0.0, -1.0]),)] * 5)
    per_code = {}
    for code, _ in compiled._dynamo_callback.compiled_frames:
        per_code[code] = per_code.get(code, 0) + 1
    assert max(per_code.values()) == 1, per_code


def block_sums(Z):
    i = np.arange(0, Z.shape[0], 2)
    j = np.arange(0, Z.shape[1], 2)
    return np.add.reduceat(np.add.reduceat(Z, i, axis=0), j, axis=1)


def test_bound_ufunc_methods_made_per_access_compile_once():
    compiled = run_both(block_sums, [lambda: (np.arange(36.0).reshape(6, 6),)] * 5)
    per_code = {}
    for code, _ in compiled._dynamo_callback.compiled_frames:
        per_code[code] = per_code.get(code, 0) + 1
    assert per_code and max(per_code.values()) == 1, per_code


def test_a_bound_method_of_another_ufunc_is_not_reused():
    def f(op, Z):
        print(end="")
        return op(Z, [0, 2], axis=0)

    Z = np.arange(12.0).reshape(4, 3)
    compiled = dynamo.compile(f)
    for op in (np.add.reduceat, np.multiply.reduceat, np.add.reduceat, np.maximum.reduceat):
        assert same_value(compiled(op, Z), f(op, Z))
