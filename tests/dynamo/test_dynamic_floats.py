"""Float arguments whose value changes between calls (a time step, a learning rate) become run-time
graph inputs after the second value, like dynamic ints: one more compile, then every value hits the
cache. Wherever a trace needs the value (a branch, a shape), it is guarded exactly and pinned."""
import math
import sys

import numpy as np
import pytest

import dynamo
from dynamo import _C
from tests.support import same_value

VALUES = [0.1, 0.25, -3.5, 1e308, -0.0, 0.0, math.inf, -math.inf, math.nan, 5e-324, 2.0]


def entries(fn):
    return len(_C.cache_entries(fn.__code__))


def frames(compiled):
    return [frame for _, frame in compiled._dynamo_callback.compiled_frames]


def check_values(f, make_args, values=VALUES, backend="numpy", **options):
    compiled = dynamo.compile(f, backend=backend, **options)
    for value in values:
        with np.errstate(all="ignore"):  # inf * 0 and overflow warn, compiled or not
            got, want = compiled(*make_args(value)), f(*make_args(value))
        assert same_value(got, want), (value, got, want)
    return compiled


def step(u, dt):
    return u + dt * np.sin(u) - 0.5 * dt * u


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_a_changing_float_compiles_twice_then_every_value_hits(backend):
    u = np.linspace(-1, 1, 17)
    check_values(step, lambda dt: (u, dt), backend=backend)
    assert entries(step) == 2  # the first value as a constant, then any float


def test_the_run_time_float_has_no_value_guard():
    u = np.ones(4)
    compiled = check_values(step, lambda dt: (u, dt), [0.1, 0.2])
    guards = [str(g) for g in frames(compiled)[-1].guards]
    # (either type: float64 work gives the same with a Python float as with an np.float64)
    assert "type(L['dt']) is float or numpy.float64" in guards
    assert not any(g.startswith("L['dt'] ==") for g in guards)


def test_float_arithmetic_before_the_array_work_stays_run_time():
    def f(u, dt, k):
        half = 0.5 * dt * dt - k
        return u * half + (-dt) * abs(k)

    u = np.arange(6.0)
    check_values(f, lambda dt: (u, dt, dt * 3.0), VALUES[:6])
    assert entries(f) == 2


def test_a_branch_on_the_float_pins_it_to_its_value():
    def f(u, dt):
        if dt > 0.2:
            return u * dt
        return u - dt

    u = np.arange(5.0)
    compiled = check_values(f, lambda dt: (u, dt), [0.1, 0.3, 0.1, 0.3, 0.5])
    # one per value, as for any constant: the branch needed each; a third value would be a third
    # compile for values alone, so from 0.5 on the frame runs its original code
    assert len(frames(compiled)) == 2 and entries(f) == 0
    guards = [str(g) for g in frames(compiled)[-1].guards]
    assert "L['dt'] == 0.3" in guards
    assert [why for _, why in compiled._dynamo_callback.given_up]


def test_a_float_that_decides_a_shape_is_specialized():
    def f(u, t):
        return np.arange(0.0, t, 0.1) + u[0]

    compiled = check_values(f, lambda t: (np.ones(3), t), [0.5, 0.75, 1.0, 0.5])
    assert len(frames(compiled)) == 2  # from 1.0 on the original runs: a third compile for a value alone


def test_returned_and_kept_across_a_graph_break_exactly():
    def f(u, dt):
        w = dt * 3.0 - 1.0
        v = u * dt
        print("break", file=sys.stderr)  # a graph break: w and v live across it
        return v + w, w, dt

    u = np.linspace(0, 1, 8)
    compiled = check_values(f, lambda dt: (u, dt), [0.1, 0.2, 0.3, -0.0, math.nan])
    got = compiled(u, 0.7)
    assert type(got[1]) is float and got[1] == 0.7 * 3.0 - 1.0 and got[2] == 0.7


def test_float32_work_keeps_its_dtype_for_any_float_value():
    def f(x, s):
        return x * s, x + s

    x = np.arange(4, dtype=np.float32)
    check_values(f, lambda s: (x, s), [1.5, 2.5, 1e300, -1e300])


def test_keyword_only_and_clip_bounds():
    def f(u, lo, *, hi=0.9):
        return np.clip(u, lo, hi) * (hi - lo)

    u = np.linspace(0, 1, 9)
    compiled = dynamo.compile(f)
    for lo, hi in [(0.1, 0.9), (0.2, 0.8), (0.3, 0.7), (0.05, 0.95)]:
        assert same_value(compiled(u, lo, hi=hi), f(u, lo, hi=hi))
    assert entries(f) == 2


def test_dynamic_false_compiles_per_value_and_dynamic_true_once():
    u = np.ones(3)
    check_values(step, lambda dt: (u, dt), [0.1, 0.2, 0.3], dynamic=False)
    assert entries(step) == 3
    dynamo.reset()
    check_values(step, lambda dt: (u, dt), [0.1, 0.2, 0.3], dynamic=True)
    assert entries(step) == 1


def test_ints_and_bools_are_not_floats():
    def f(u, k):
        return u * k

    u = np.arange(3)
    check_values(f, lambda k: (u, k), [True, False])
    check_values(f, lambda k: (u, k), [2, 3, 4])


def test_explain_lists_the_run_time_float():
    u = np.ones(3)
    compiled = check_values(step, lambda dt: (u, dt), [0.1, 0.2])
    assert frames(compiled)[-1].dynamic == ["L['dt'] is a run-time float: any value hits this graph (traced with 0.2)"]
    report = str(dynamo.explain(step, dynamic=True)(u, 0.3))
    assert "L['dt'] is a run-time float" in report


def describe(a):
    m, s = a.mean(), a.std()
    q = np.percentile(a, [25, 50, 75]).tolist()  # a graph break: m and s (NumPy scalars) live across it
    return (a - m) / s, m * 2.0 - s, q


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_numpy_scalars_handed_to_a_resume_function_compile_it_twice(backend):
    rng = np.random.default_rng(5)
    compiled = dynamo.compile(describe, backend=backend)
    for _ in range(6):
        a = rng.gamma(2.0, 2.0, size=500)
        got, want = compiled(a), describe(a)
        assert same_value(got[0], want[0]) and same_value(got[1], want[1]) and got[2] == want[2]
    resumes = [code for code, _ in compiled._dynamo_callback.compiled_frames if "resume" in code.co_qualname]
    assert len(resumes) == 2  # a constant, then any value (was: one per call, up to the cache limit)


def test_numpy_scalar_arguments_keep_their_strong_dtype():
    def f(x, s):
        return x * s + s * 2.0

    x = np.arange(5, dtype=np.float32)
    compiled = dynamo.compile(f)
    for s in [np.float64(1.5), np.float64(2.5), np.float64(-0.0), np.float32(2.0), np.float32(3.0), np.float16(1.0)]:
        got, want = compiled(x, s), f(x, s)
        assert same_value(got, want) and got.dtype == want.dtype, (s, got.dtype, want.dtype)


def scalar_step(x, v, dt):
    v2 = (v + (-x) * 0.5 * dt) * 0.99
    return x + v2 * dt, v2


@pytest.mark.parametrize("backend", ["eager", "numpy", "c"])
def test_a_float_that_becomes_an_np_float64_costs_no_compile(backend):
    """A velocity that starts as the Python float 0.0 and is an np.float64 after one step (issue
    16's particles): one version takes both wherever the trace used it only in + - * (the graph
    computes with Python's operators, so each result has plain Python's type)."""
    compiled = dynamo.compile(scalar_step, backend=backend)
    state, plain = (np.float64(0.3), 0.0), (np.float64(0.3), 0.0)
    for call in range(8):
        dt = 0.01 if call < 5 else 0.02
        state, plain = compiled(*state, dt), scalar_step(*plain, dt)
        assert same_value(state, plain), (call, state, plain)
        pure = (float(call), 0.5 * call)  # Python floats only: Python float results
        assert same_value(compiled(*pure, dt), scalar_step(*pure, dt))
    assert len(frames(compiled)) == 2


def scale_float32(a, s):
    return a * s, s * 2.0


def test_a_float_whose_type_decides_a_dtype_is_pinned_to_its_type():
    """float32 array * 0.5 stays float32 (a Python float is weak), * np.float64(0.5) is float64."""
    a = np.arange(4, dtype=np.float32)
    compiled = dynamo.compile(scale_float32, backend="numpy")
    for s in [0.5, 0.25, np.float64(0.75), 1.5, np.float64(2.5), np.float64(3.5), 4.5]:
        assert same_value(compiled(a, s), scale_float32(a, s)), s
    guards = [str(g) for g in frames(compiled)[-1].guards]
    assert any(g.startswith("type(L['s']) is ") for g in guards)
    assert len(frames(compiled)) == 3  # the first value, then one version per type


def typed_branch(x, s):
    t = s * 2.0
    if isinstance(t, np.float64):
        return x + 1.0, t
    return x - 1.0, t


def test_a_branch_on_the_type_of_a_float_is_guarded_on_it():
    compiled = dynamo.compile(typed_branch, backend="numpy")
    x = np.ones(3)
    for s in [0.5, 0.25, np.float64(0.75), 1.5, np.float64(2.5)]:
        assert same_value(compiled(x, s), typed_branch(x, s)), s


def with_float32(s):
    return s * np.float32(2.0) + 1.0


def test_an_np_float32_operand_pins_the_type():
    compiled = dynamo.compile(with_float32, backend="numpy")
    for s in [0.5, 0.25, np.float64(0.75), 1.5, np.float64(2.5)]:
        assert same_value(compiled(s), with_float32(s)), s


def two_coefficients(u, a, b):
    return u * a + b


@pytest.mark.parametrize("backend", ["eager", "numpy", "c"])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex128])
def test_when_one_float_changes_the_frame_s_other_floats_become_inputs_too(backend, dtype):
    """b stays 1.0 until a has varied; then b varies too, and either may be a float or an
    np.float64 (an array of these dtypes promotes alike with both): still two versions."""
    u = np.arange(5).astype(dtype)
    compiled = dynamo.compile(two_coefficients, backend=backend)
    for a, b in [(0.1, 1.0), (0.2, 1.0), (0.3, 1.5), (np.float64(0.4), np.float64(2.0)), (0.5, -3.0)]:
        assert same_value(compiled(u, a, b), two_coefficients(u, a, b))
    assert len(frames(compiled)) == 2


def test_the_either_type_guard_takes_floats_and_np_float64_only():
    """`type(x) is float or numpy.float64` runs in C (the type compared with both): an int, a bool,
    an np.float32, a float subclass or an object whose __class__ claims float is another kind of
    input and compiles its own version."""
    class MyFloat(float):
        pass

    class Liar:
        __class__ = float  # type: ignore[assignment]

        def __rmul__(self, other):
            return other * 2.0

        __mul__ = __rmul__

    u = np.arange(4.0)
    compiled = check_values(step, lambda dt: (u, dt), [0.1, 0.2, np.float64(0.3)])
    assert entries(step) == 2
    for other in (3, True, np.float32(0.5), MyFloat(0.25), Liar()):
        before = entries(step)
        assert same_value(compiled(u, other), step(u, other)), other
        assert entries(step) == before + 1, other  # no version for floats took it
    assert entries(step) > 2
