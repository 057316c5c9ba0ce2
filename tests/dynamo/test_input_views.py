"""Input arrays that are slices of other input arrays (issue 16: Gray-Scott keeps `u = U[1:-1, 1:-1]`
in a global and writes `u += ...`): one graph that makes the view from its base, writes in place
with NumPy's aliasing, keeps the global the same object, and recompiles when the view changes."""
import numpy as np
import pytest

import dynamo

from support import fallbacks, graph_breaks

GRAY_SCOTT = '''
import numpy as np

n = 24
rng = np.random.default_rng(7)
U, V = 1.0 - 0.02 * rng.random((n, n)), 0.02 * rng.random((n, n))
U[8:16, 8:16], V[8:16, 8:16] = 0.5, 0.25
u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]
Du, Dv, F, k = 0.16, 0.08, 0.035, 0.065


def step():
    global u, v
    Lu = U[:-2, 1:-1] + U[2:, 1:-1] + U[1:-1, :-2] + U[1:-1, 2:] - 4 * u
    Lv = V[:-2, 1:-1] + V[2:, 1:-1] + V[1:-1, :-2] + V[1:-1, 2:] - 4 * v
    uvv = u * v * v
    u += Du * Lu - uvv + F * (1 - u)
    v += Dv * Lv + uvv - (F + k) * v


def laplacian(Z):
    return Z[:-2, 1:-1] + Z[2:, 1:-1] + Z[1:-1, :-2] + Z[1:-1, 2:] - 4 * Z[1:-1, 1:-1]


def step_views_first():  # u and v are read (and written) before U and V
    global u, v
    uvv = u * v * v
    u += Du * laplacian(U) - uvv + F * (1 - u)
    v += Dv * laplacian(V) + uvv - (F + k) * v


def run(steps, views_first=False):
    for _ in range(steps):
        step_views_first() if views_first else step()
    return U.sum() + V.sum()
'''


def program():
    namespace: dict = {}
    exec(compile(GRAY_SCOTT, "<gray_scott>", "exec"), namespace)
    return namespace


def compiled_frames(compiled):
    return [frame for _, frame in compiled._dynamo_callback.compiled_frames]


@pytest.mark.parametrize("backend", ["eager", "numpy", "c"])
@pytest.mark.parametrize("steps", [3, 80])  # unrolled, and a loop node
@pytest.mark.parametrize("views_first", [False, True])
def test_gray_scott_writes_through_global_views_in_one_graph(backend, steps, views_first):
    plain, jitted = program(), program()
    u_object = jitted["u"]
    compiled = dynamo.compile(jitted["run"], backend=backend)
    for _ in range(3):
        expected, result = plain["run"](steps, views_first), compiled(steps, views_first)
        assert type(result) is type(expected) and result == expected
        for name in ("U", "V", "u", "v"):
            np.testing.assert_array_equal(jitted[name], plain[name])
        assert jitted["u"] is u_object and jitted["u"].base is jitted["U"]  # the global keeps its object
    assert graph_breaks(compiled) == [] and fallbacks(compiled) == []
    frames = compiled_frames(compiled)
    assert len(frames) == 1 and len(frames[0].graphs) == 1, frames
    guards = [str(g) for g in frames[0].guards]
    assert "G['u'] is a view G['U'][1:23, 1:23]" in guards, guards


def test_a_global_rebound_to_another_view_recompiles():
    plain, jitted = program(), program()
    compiled = dynamo.compile(jitted["run"], backend="numpy")
    compiled(2), plain["run"](2)
    for namespace in (plain, jitted):  # the program moves its view: now one row lower, every other column
        namespace["u"] = namespace["U"][2:, ::2]
        namespace["v"] = namespace["V"][2:, ::2]
    with pytest.raises(ValueError) as expected:
        plain["run"](2)
    with pytest.raises(ValueError) as raised:
        compiled(2)
    assert str(raised.value) == str(expected.value)
    for namespace in (plain, jitted):  # and a copy: no longer a view of U at all
        namespace["u"] = namespace["U"][1:-1, 1:-1].copy()
        namespace["v"] = namespace["V"][1:-1, 1:-1].copy()
    assert compiled(2) == plain["run"](2)
    for name in ("U", "V", "u", "v"):
        np.testing.assert_array_equal(jitted[name], plain[name])
    assert len(compiled_frames(compiled)) >= 2


def overlapping_update(a, b):
    t = a[:len(b)] * 2  # a is read first: b, read next, is made from it
    b += t[::-1]
    a[1:3] = b[:2] + 1
    return a.sum(), b.copy()


@pytest.mark.parametrize("backend", ["eager", "numpy", "c"])
@pytest.mark.parametrize("views", [lambda x: x[1:-1], lambda x: x[::2], lambda x: x[::-1], lambda x: x[:]],
                         ids=["interior", "strided", "reversed", "whole"])
def test_an_argument_that_views_another_is_written_with_numpys_aliasing(backend, views):
    x_plain, x_jitted = np.arange(10.0), np.arange(10.0)
    compiled = dynamo.compile(overlapping_update, backend=backend)
    for _ in range(2):
        expected = overlapping_update(x_plain, views(x_plain))
        result = compiled(x_jitted, views(x_jitted))
        np.testing.assert_array_equal(x_jitted, x_plain)
        assert result[0] == expected[0]
        np.testing.assert_array_equal(result[1], expected[1])
    assert graph_breaks(compiled) == [] and fallbacks(compiled) == []
    assert len(compiled_frames(compiled)) == 1


def view_read_first(a, b):
    b *= 3  # b is written before a is read: once a is seen, b becomes a view made from it
    c = a * 2
    a[0] = b[-1]
    return c, a.sum()


@pytest.mark.parametrize("backend", ["eager", "numpy", "c"])
def test_a_view_read_before_its_base_is_made_from_the_base(backend):
    x_plain, x_jitted = np.arange(8.0), np.arange(8.0)
    compiled = dynamo.compile(view_read_first, backend=backend)
    for _ in range(2):
        expected = view_read_first(x_plain, x_plain[2:7:2])
        result = compiled(x_jitted, x_jitted[2:7:2])
        np.testing.assert_array_equal(x_jitted, x_plain)
        np.testing.assert_array_equal(result[0], expected[0])
        assert result[1] == expected[1]
    assert graph_breaks(compiled) == [] and fallbacks(compiled) == []
    frames = compiled_frames(compiled)
    assert len(frames) == 1 and "L['b'] is a view L['a'][2:7:2]" in [str(g) for g in frames[0].guards]


def test_a_view_of_another_layout_is_not_a_slice():
    # a transposed view and a reshaped one: no slice of the base makes them, so they stay inputs of
    # their own and the write runs in Python, as before
    for make in (lambda x: x.T, lambda x: x.reshape(-1)[2:8].reshape(2, 3)):
        x_plain, x_jitted = np.arange(12.0).reshape(3, 4), np.arange(12.0).reshape(3, 4)
        if make(x_plain).shape != x_plain.shape:
            def f(a, b):
                b += 1
                return a * 2
        else:
            def f(a, b):
                b += a
                return a * 2
        expected = f(x_plain, make(x_plain))
        result = dynamo.compile(f, backend="numpy")(x_jitted, make(x_jitted))
        np.testing.assert_array_equal(result, expected)
        np.testing.assert_array_equal(x_jitted, x_plain)
        dynamo.reset()


WRITE_BEFORE_BASE = '''
import numpy as np

U = np.arange(12.0).reshape(3, 4)
u = U[1:, 1:]


def f():
    global u
    u += 1.0  # written while it is still an input of its own; U, read next, then makes it
    return U.sum()
'''


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_a_global_written_before_its_base_is_read_keeps_its_object(backend):
    plain, jitted = {}, {}
    for namespace in (plain, jitted):
        exec(compile(WRITE_BEFORE_BASE, "<write_before_base>", "exec"), namespace)
    u_object = jitted["u"]
    compiled = dynamo.compile(jitted["f"], backend=backend)
    for _ in range(2):
        assert compiled() == plain["f"]()
        assert jitted["u"] is u_object
        np.testing.assert_array_equal(jitted["U"], plain["U"])
    assert graph_breaks(compiled) == [] and len(compiled_frames(compiled)) == 1


def write_after_read(U, V):
    v = V[1:]
    w = U * 2.0  # reads U before the write below: a lazy value that must keep the old contents
    U += 1.0
    v += w
    v += V[:-1]


def two_steps_through_views(U, V):
    u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]
    for _ in range(2):
        Lu = U[:-2, 1:-1] + U[2:, 1:-1] - 4 * u
        Lv = V[:-2, 1:-1] + V[2:, 1:-1] - 4 * v
        uvv = u * v * v  # read again after `u += ...` wrote U through the view (the second step)
        u += 0.16 * Lu - uvv
        v += 0.08 * Lv + uvv


@pytest.mark.parametrize("backend", ["eager", "numpy", "c"])
@pytest.mark.parametrize("fn, shapes", [(write_after_read, ((4,), (5,))), (two_steps_through_views, ((6, 6), (6, 6)))])
def test_values_read_before_a_write_through_a_view_keep_the_old_contents(backend, fn, shapes):
    rng = np.random.default_rng(3)
    U, V = (rng.random(s) for s in shapes)
    plain_U, plain_V = U.copy(), V.copy()
    fn(plain_U, plain_V)
    dynamo.compile(fn, backend=backend)(U, V)
    np.testing.assert_array_equal(U, plain_U)
    np.testing.assert_array_equal(V, plain_V)


def test_a_view_moved_to_another_offset_of_the_same_shape_recompiles():
    """The view guard remembers the last pair of arrays that passed (their offset is read once):
    another view of the same shape and strides at another offset (U[2:, 2:] for U[1:-1, 1:-1])
    must still fail it, and the pair that passed before must pass again."""
    plain, jitted = program(), program()
    compiled = dynamo.compile(jitted["run"], backend="numpy")
    originals = {name: jitted[name] for name in ("u", "v")}
    for moved in (False, True, False):
        for namespace in (plain, jitted):
            if moved:
                namespace["u"], namespace["v"] = namespace["U"][2:, 2:], namespace["V"][:-2, :-2]
            else:
                namespace["u"], namespace["v"] = (namespace["U"][1:-1, 1:-1], namespace["V"][1:-1, 1:-1]) \
                    if namespace is plain else (originals["u"], originals["v"])
        for _ in range(2):  # the second call passes the guard on the pair it remembered
            assert compiled(2) == plain["run"](2)
            for name in ("U", "V"):
                np.testing.assert_array_equal(jitted[name], plain[name])
    assert len(compiled_frames(compiled)) == 2
