"""Ordinary patterns that used to recompile on every call (issue 16): objects made anew per call
(nested functions, per-object lambdas, context managers, bound ufunc methods) are guarded by what
the trace relied on, not their identity. Each test counts compiles exactly and compares with plain."""
import warnings

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
    # the frame and its resume function once each (and iterate once, called by the original
    # code in the timed turns)
    per_code = {}
    for code, _ in compiled._dynamo_callback.compiled_frames:
        per_code[code.co_qualname] = per_code.get(code.co_qualname, 0) + 1
    assert per_code.get("helper_after_break") == 1 and max(per_code.values()) == 1, per_code
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


class Gain:
    def __init__(self, g):
        self.g = g

    def apply(self, v):
        return v * self.g


def apply_twice(method, x):
    y = method(x)
    print(end="")
    return method(y) + 1


def test_bound_methods_passed_per_call_are_traced_and_compile_twice():
    """`obj.method` as a callback, a new object each call: guarded by its function and its object,
    and called inside the graph (calling a method object was a graph break at each call)."""
    compiled = run_both(apply_twice, [lambda g=g: (Gain(g).apply, np.arange(4.0)) for g in (0.5, 1.5, 2.5, 3.5, 4.5)])
    assert compiles(compiled, "apply_twice") == 4  # the frame and its resume function, twice each
    assert compiles(compiled, "Gain") == 0  # never a frame of its own: inlined
    report = dynamo.explain(apply_twice)(Gain(2.0).apply, np.arange(4.0))
    assert report.graph_break_count == 1, report.format()  # the print only


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


# ---- values that change on every call ------------------------------------------------------------------

def escape(c, max_iter=30):
    z = 0j
    for n in range(max_iter):
        z = z * z + c
        if abs(z) > 2.0:  # the trace needs c's value: one compiled version per value
            return n
    return max_iter


POINTS = [complex(x, y) for x in (-1.5, -0.5, 0.25) for y in (-0.5, 0.1, 0.7)]


def test_a_complex_argument_compiles_twice_then_runs_the_original():
    compiled = dynamo.compile(escape)
    for _ in range(2):
        assert [compiled(c) for c in POINTS] == [escape(c) for c in POINTS]
    callback = compiled._dynamo_callback
    assert compiles(compiled, "escape") == 2
    assert entries(escape) == 0  # the original runs for every point, no guard checked first
    assert len(callback.given_up) == 1
    code, why = callback.given_up[0]
    assert code is escape.__code__ and "L['c'] ==" in why and "original code" in why


def test_explain_says_which_frames_stopped_recompiling():
    from dynamo.explain import report_from

    compiled = dynamo.compile(escape)
    for c in POINTS[:4]:
        compiled(c)
    text = str(report_from(compiled._dynamo_callback))
    assert "Stopped recompiling (these frames now run their original code):" in text
    assert "escape: recompiled 1 time for new values" in text


def test_config_allows_more_recompiles_for_values():
    with dynamo.config.patch(recompiles_for_values=3):
        compiled = dynamo.compile(escape)
        assert [compiled(c) for c in POINTS] == [escape(c) for c in POINTS]
    assert compiles(compiled, "escape") == 4


def test_dynamic_false_still_compiles_per_value():
    compiled = dynamo.compile(escape, dynamic=False)
    assert [compiled(c) for c in POINTS[:4]] == [escape(c) for c in POINTS[:4]]
    assert compiles(compiled, "escape") == 4 and not compiled._dynamo_callback.given_up


def life_row(row):
    return [1 if row[i - 1] + row[i] + row[(i + 1) % len(row)] == 2 else 0 for i in range(len(row))]


def test_a_list_argument_whose_items_change_compiles_at_most_twice():
    rows = [[(i * k) % 3 % 2 for i in range(8)] for k in range(1, 9)]
    compiled = run_both(life_row, [lambda r=r: (list(r),) for r in rows])
    assert entries(life_row) <= 2
    assert compiles(compiled, "life_row") <= 3  # life_row twice; on 3.11 its comprehension's code once


def mean_then_center(x):
    m = x.mean()
    print(end="")  # m reaches the resume function: a NumPy float that changes every call
    return x - m


def test_a_numpy_float_handed_to_a_resume_function_compiles_twice():
    rng = np.random.default_rng(0)
    data = [rng.random(5) for _ in range(6)]
    compiled = run_both(mean_then_center, [lambda d=d: (d,) for d in data])
    assert compiles(compiled, "mean_then_center.<resume") == 2
    assert compiles(compiled, "mean_then_center") == 3


class Coefficients:
    def __init__(self, alpha, beta):
        self.alpha, self.beta = alpha, beta


def build_then_apply(x, a):
    c = Coefficients(a, a * 2)  # a is dead after this line: the resume function reads c only
    print(end="")
    return x * c.alpha + c.beta


def test_floats_handed_to_a_resume_function_become_inputs_in_every_version():
    """Once the frame's floats vary, its next version passes them to the same resume function as
    before (a dead float is not handed on, which would make another code object), and a resume
    function made by a version whose floats vary takes its floats as inputs from the start."""
    compiled = run_both(build_then_apply, [lambda a=a: (np.arange(4.0), a) for a in (0.5, 1.5, 2.5, 3.5, 4.5, 5.5)])
    assert compiles(compiled, "build_then_apply.<resume") == 2
    assert compiles(compiled, "build_then_apply") == 4


mouse = {"x": 0.0, "y": 0.0}


def follow(points):
    return points + (mouse["x"] - points) * 0.5


def test_a_value_in_a_global_dict_changed_between_calls_compiles_twice():
    pts = np.arange(4.0)
    compiled = dynamo.compile(follow)
    for t in range(6):
        mouse["x"] = 0.1 * t + 0.3
        assert same_value(compiled(pts), follow(pts))
    assert compiles(compiled, "follow") == 2


def test_new_array_shapes_are_no_value_churn():
    def f(x):
        return x * 2

    compiled = dynamo.compile(f)
    for shape in [(2,), (3, 3), (2, 2, 2), (4,)]:
        assert same_value(compiled(np.ones(shape)), np.ones(shape) * 2)
    assert not compiled._dynamo_callback.given_up


# ---- the trace budget -----------------------------------------------------------------------------------

def long_loop(x, n):
    # pure Python: with config.python_loop_limit it would run in Python after 64 items, before the budget
    total = 0.0
    for i in range(n):
        for j in range(n):
            total += (i * j) % 7
    return x * total


def test_a_frame_past_the_trace_budget_is_traced_once():
    with dynamo.config.patch(trace_instruction_budget=2000, python_loop_limit=10**9):
        compiled = dynamo.compile(long_loop)
        for x in (np.ones(3), 2.0, np.ones(3), 3, 1.5):  # a new type: a new fallback guarded by it
            assert same_value(compiled(x, 40), long_loop(x, 40))
    frames = [frame for code, frame in compiled._dynamo_callback.compiled_frames if code is long_loop.__code__]
    assert len(frames) == 3  # ndarray, float, int
    assert all("trace_instruction_budget" in str(f.fallback_reason) for f in frames)
    assert list(compiled._dynamo_callback.over_budget) == [long_loop.__code__]


# ---- readable reasons -------------------------------------------------------------------------------

def test_recompile_reasons_name_stack_values_readably_and_once():
    def f(x):
        return np.add(x * 2, print(end="") or 1)  # np.add and x * 2 are on the stack at the break

    compiled = dynamo.compile(f)
    for dtype in (np.float64, np.int64, np.float32, np.int64):
        assert same_value(compiled(np.ones(3, dtype)), f(np.ones(3, dtype)))
    reasons = [r for _, why in compiled._dynamo_callback.recompiles for r in why]
    assert any("stack[" in r for r in reasons), reasons
    assert not any("___stack" in r or "held weakly" in r for r in reasons), reasons
    for _, why in compiled._dynamo_callback.recompiles:
        assert len(why) == len(set(why))


def outer_calls_long_loop(x, n):
    y = x * 2
    return y + long_loop(1.0, n)


def test_a_function_past_the_trace_budget_is_not_inlined_again_at_a_recompile(monkeypatch):
    # its calls broke the graph at the first trace, and it ran past the budget as a frame of its
    # own: recompiles of the caller (new dtypes) leave the call to that frame instead of tracing
    # it to the budget again each time
    from dynamo import symbolic_convert

    inlined = []
    original_init = symbolic_convert.InliningTranslator.__init__

    def counting_init(self, code, *args, **kwargs):
        inlined.append(code)
        original_init(self, code, *args, **kwargs)

    monkeypatch.setattr(symbolic_convert.InliningTranslator, "__init__", counting_init)
    inlined_per_call = []
    with dynamo.config.patch(trace_instruction_budget=2000, python_loop_limit=10**9):
        compiled = dynamo.compile(outer_calls_long_loop)
        for dtype in (np.float64, np.float32, np.int64, np.int32):
            x = np.ones(3, dtype)
            assert same_value(compiled(x, 40), outer_calls_long_loop(x, 40))
            inlined_per_call.append(inlined.count(long_loop.__code__))
            inlined.clear()
    callback = compiled._dynamo_callback
    assert inlined_per_call[0] > 0 and inlined_per_call[1:] == [0, 0, 0]  # the first compile's traces only
    assert list(callback.over_budget) == [long_loop.__code__]
    outer_frames = [frame for code, frame in callback.compiled_frames if code is outer_calls_long_loop.__code__]
    assert len(outer_frames) == 4
    assert all("long_loop ran past the trace instruction budget" in str(frame.breaks[0]) for frame in outer_frames[1:])


class _Bouncing:
    """Particles whose velocities flip where they leave the box: the masked selection's length is
    the number of particles out, 0, 1 or more from one step to the next."""

    def __init__(self, n):
        rng = np.random.default_rng(5)
        self.pos = rng.random(n)
        self.vel = rng.standard_normal(n)

    def step(self, dt):
        self.pos += self.vel * dt
        out = (self.pos < 0.0) | (self.pos > 1.0)
        # a break: its resume function takes the selection (len(out.nonzero())); `*= -0.8` is one graph
        self.vel[out] = self.vel[out] * -0.8
        np.clip(self.pos, 0.0, 1.0, out=self.pos)
        return self.pos.sum()


def _step_through(plain, compiled_system, compiled, lengths):
    for position in ([0.5] * 8, [1.2] + [0.5] * 7, [-1.0, 2.0, 3.0] + [0.5] * 5, [0.5] * 8, [1.1] * 6 + [0.5] * 2,
                     [-0.1] + [0.5] * 7):
        for system in (plain, compiled_system):
            system.pos[:] = position
            system.vel[:] = np.linspace(-1.0, 1.0, 8)
        lengths.append(int(((plain.pos < 0.0) | (plain.pos > 1.0)).sum()))
        assert same_value(compiled(compiled_system, 0.0), _Bouncing.step(plain, 0.0))
        assert same_value(compiled_system.vel, plain.vel) and same_value(compiled_system.pos, plain.pos)


def test_a_masked_selection_of_0_1_then_more_elements_compiles_twice():
    """The resume function after the masked read takes arrays 0, 1, then 3 or 6 long: 0 compiles
    a static version, 1 (which no dynamic version takes either) runs the original code, 3 compiles
    the dynamic version that every longer selection runs: two versions, not three (issue #16)."""
    plain, compiled_system = _Bouncing(8), _Bouncing(8)
    compiled = dynamo.compile(_Bouncing.step)
    lengths = []
    with dynamo.config.patch(timed_turns=0):  # (which could drop a version before the next size comes)
        _step_through(plain, compiled_system, compiled, lengths)
    assert lengths == [0, 1, 3, 0, 6, 1]
    traced = {}
    for code, frame in compiled._dynamo_callback.compiled_frames:
        if frame.fallback_reason is None:
            traced[code.co_qualname] = traced.get(code.co_qualname, 0) + 1
    resumed = [name for name in traced if "<resume" in name]
    assert traced["_Bouncing.step"] == 1 and len(resumed) == 2, traced
    assert max(traced.values()) == 2 and traced[resumed[0]] == 2, traced
    reasons = [str(frame.fallback_reason).splitlines()[0] for _, frame in compiled._dynamo_callback.compiled_frames
               if frame.fallback_reason is not None]
    assert reasons == ["size 0 or 1 of a varying dimension: stack[0].shape[0] == 1: a dimension whose size varies, "
                       "0 or 1 long here: no dynamic version takes that size, and a version for each such size "
                       "would compile the frame again and again"], reasons


def test_under_fullgraph_a_small_size_of_a_varying_dimension_compiles():
    """fullgraph=True asks for the whole frame as a graph: a varying dimension 1 long then gets a
    static version of its own, as before, rather than the original code."""
    def scaled(x):
        return x * 2.0 + 1.0

    compiled = dynamo.compile(scaled, fullgraph=True)
    for n in (0, 1, 4, 1, 7):
        x = np.arange(float(n))
        assert same_value(compiled(x), scaled(x))
    frames = [frame for _, frame in compiled._dynamo_callback.compiled_frames]
    assert len(frames) == 3 and all(frame.fallback_reason is None for frame in frames)


def test_a_varying_dimension_gets_a_version_for_the_first_small_size_it_meets():
    """Sizes 3, 5 (dynamic), then 1: a static version for 1 (NumPy broadcasts it: no dynamic version
    takes it); then 0, the other small size, runs the original code; 1 and 6 run their versions."""
    def centred(x, w):
        return (x - x.mean(axis=0)) * w

    compiled = dynamo.compile(centred)
    w = np.arange(1.0, 4.0)
    for rows in (3, 5, 1, 0, 1, 6):
        x = np.arange(rows * 3.0).reshape(rows, 3)
        with np.errstate(all="ignore"), warnings.catch_warnings():  # (the mean of no rows)
            warnings.simplefilter("ignore", RuntimeWarning)
            assert same_value(compiled(x, w), centred(x, w))
    frames = [frame for _, frame in compiled._dynamo_callback.compiled_frames]
    assert [frame.fallback_reason is None for frame in frames] == [True, True, True, False]
    assert "L['x'].shape[0] == 0" in str(frames[3].fallback_reason)
