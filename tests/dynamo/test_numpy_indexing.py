"""Corpus: indexing, item assignment, in-place updates and views that alias inputs, compared with
plain NumPy, mutations of the arguments included; boolean masks must give up, never guess."""
import numpy as np

from numpy_samples import BOOL, C128, F32, F64, I64, check, sample
from support import compile_with_counter, fallbacks

CUBE = sample((2, 3, 4))


def test_basic_indexing():
    def f(a):
        return (a[0], a[-1], a[1, 2], a[0, -1], a[1:], a[:, 1], a[::2], a[::-1], a[1:3, ::-2], a[..., 0], a[None],
                a[:, None], a[..., None, 1:], a[()], a[0][1], a[-1:], a[10:], a[:, -3:-1])

    check(f, (F64,), (I64,), (BOOL,), (C128,), (sample((3, 4), np.float32),))


def test_indexing_0d_and_1d():
    check(lambda a: (a[()], a[...], a[None]), (sample(()),), (np.array(3, np.int64),))
    check(lambda a: (a[0], a[-1], a[1:], a[::-1], a[None, :], a[:, None]), (sample((5,)),), (sample((1,), np.int64),))


def test_scalar_indexing_returns_numpy_scalars():
    def f(a):
        return a[1, 2], a[0][0], a[-1, -1] * 2.0

    compiled, _ = compile_with_counter(f)
    result = compiled(F32)
    assert type(result[0]) is np.float32 and type(result[2]) is np.float32
    check(f, (F32,), (I64,), (BOOL,))


def test_index_out_of_bounds_raises():
    check(lambda a: a[3], (F64,), graph=False)
    check(lambda a: a[0, 0, 0], (F64,), graph=False)
    check(lambda a: a[()], (F64,))


def test_integer_array_indexing():
    idx = np.array([2, 0, 2])

    def f(a, i):
        return a[i], a[:, i[:2]], a[i, i], a[[0, 1]], a[[0, 1], [1, 2]], a[i, 1:], a[np.array([[0], [1]]), i], a[-1, [0, -1]]

    check(f, (F64, idx), (I64, np.array([0, 1, 1], np.int32)), (sample((3, 4), np.float32), np.array([1])))
    check(lambda a, i: a[i], (F64, np.array([3])), graph=False)  # IndexError at run time: runs in Python


def test_take_and_take_along_axis():
    order = np.argsort(F64, axis=1)

    def f(a, o):
        return np.take(a, [0, 3], axis=1), a.take([1, 1]), np.take_along_axis(a, o, axis=1), np.take(a, 5)

    check(f, (F64, order), (I64, order))


def test_boolean_masks_give_up_with_a_reason():
    def f(a):
        return a[a > 1.0]

    compiled, counter = compile_with_counter(f)
    np.testing.assert_array_equal(compiled(F64), f(F64))
    reasons = fallbacks(compiled) + [str(r) for _, frame in compiled._dynamo_callback.compiled_frames
                                     for r in getattr(frame, "breaks", ())]
    assert any("data-dependent shape" in r and "boolean" in r for r in reasons), reasons
    check(lambda a, m: a[m], (F64, F64 > 1), graph=False)
    check(lambda a: (np.nonzero(a), np.argwhere(a), np.flatnonzero(a), np.unique(a)), (I64 - 3,), graph=False)


def test_boolean_mask_assignment_is_captured():
    def f(a, b):
        a[a > 1.5] = 0.0  # a write of the masked elements: no shape depends on the data
        b[b > 1.0] = a[0, 0]
        return a, b

    def update(a):
        a[a > 1.0] += 1  # reads a[mask] first: its length is the data's
        return a

    check(f, (F64.copy(), F64.copy()), (I64.copy(), sample((5,))))
    check(update, (F64.copy(),), graph=False)


def test_explicit_dunder_calls_are_the_operators():
    def f(a, b):
        a.__setitem__(0, 1.0)
        a.__iadd__(b)
        return a.__add__(b), a.__getitem__((1, 2)), a.__neg__(), a.__lt__(b), a.__matmul__(b.T)

    check(f, (F64.copy(), F64), (F32.copy(), F32))


def test_setitem_forms():
    def f(a, v):
        a[0] = v[0]
        a[1, 2] = 7
        a[:, 0] = -1.5
        a[2, 1:] = v[1:]
        a[..., -1] = a[..., 0]
        a[[0, 2], 1] = 9
        a[np.array([1])] = 3
        return a

    check(f, (F64.copy(), sample((4,))), (I64.copy(), sample((4,), np.int64)), (F32.copy(), sample((4,))))


def test_setitem_with_broadcasting_and_casting():
    def f(a, b):
        a[:] = b
        a[...] = a * 2
        a[0] = 1.9  # truncates into an integer array
        return a

    check(f, (I64.copy(), sample((4,), np.int64)), (F64.copy(), sample((3, 1))))

    def bad(a):
        a[0] = np.ones(5)  # ValueError: cannot broadcast (5,) into (4,)

    check(bad, (F64.copy(),), graph=False)


def test_setitem_on_0d_and_scalars():
    def f(a):
        a[()] = 5
        return a

    check(f, (sample(()),), (np.array(1, np.int8),))


def test_views_alias_their_input():
    def f(a):
        v = a[1:]
        v *= 2
        w = a.T
        w[0] += 100
        r = a.reshape(-1)
        r[-1] = -1
        return a, v

    check(f, (F64.copy(),), (I64.copy(),), (F64.T.copy().T,))


def test_view_of_a_view_and_of_a_transposed_input():
    def f(a):
        v = a[:, 1:][::-1]
        v[0] = 0
        d = np.diagonal(a)
        e = a.ravel()  # a view only when `a` is contiguous: NumPy decides at run time
        e[0] = 42
        return a, d

    check(f, (F64.copy(),), (F64.T,), (F64[::-1].copy(),), (F64[:, ::2].copy(),), (F64[::-1],))


def test_inplace_on_a_computed_array_does_not_touch_inputs():
    def f(a):
        b = a + 1
        b += a
        b[0] = 0
        return a, b

    check(f, (F64,), (I64,))


def test_fill_and_copyto_and_put():
    def f(a, b):
        a.fill(2)
        b[1:].fill(0)
        np.copyto(a[0], b[0])
        np.copyto(a, 1, where=a > 1.9)
        np.fill_diagonal(b, -1)
        return a, b

    check(f, (F64.copy(), F64.copy()), (I64.copy(), sample((3, 4), np.int64)))


def test_out_parameter_of_reductions_and_functions():
    def f(a, o):
        np.sum(a, axis=1, out=o)
        np.clip(a, 0.7, 1.2, out=a)
        np.round(a, 1, out=a)
        return a, o

    check(f, (F64.copy(), np.zeros(3)), (F32.copy(), np.zeros(3, np.float32)))


def test_mutation_visible_through_a_second_name():
    def f(a):
        b = a
        b += 1
        c = a[0]
        return a, c

    check(f, (F64.copy(),))


def test_mutation_of_an_input_inside_an_inlined_function():
    def helper(x):
        x[0] = -5
        x *= 2

    def f(a, b):
        helper(a)
        helper(b[1:])
        return a.sum() + b.sum()

    check(f, (F64.copy(), F64.copy()), (I64.copy(), I64.copy()))


def test_iterating_over_the_first_axis():
    def f(a):
        total = np.zeros(a.shape[1:], a.dtype)
        for row in a:
            total += row
        rows = [r * 2 for r in a]
        x, y, z = a
        return total, rows, x + y + z

    check(f, (F64,), (I64,))


def test_inputs_in_containers():
    def f(arrays, d):
        arrays[0][0] = 5
        return arrays[0] + arrays[1], d["x"] * 2, [a.sum() for a in arrays]

    check(f, ([F64.copy(), F64.copy()], {"x": I64}))


def test_indexing_with_numpy_integer_scalars_and_slices_of_them():
    check(lambda a, i: (a[i], a[i:], a[:, i]), (F64, np.int64(1)), (F64, np.int32(-1)))
    check(lambda a, s: a[s], (F64, slice(1, None)), (F64, slice(None, None, -1)))
