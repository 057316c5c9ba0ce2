"""Corpus: shape operations, joining and splitting, creation functions, astype/copy and array
attributes from traced code, compared with plain NumPy (values, dtypes, shapes, aliasing)."""
import numpy as np
import pytest

from numpy_samples import BOOL, C128, F32, F64, I64, check, sample
from support import compile_with_counter

CUBE = sample((2, 3, 4))


def test_transposes_and_axis_moves():
    def f(a):
        return (a.T, np.transpose(a), a.transpose(1, 0, 2), a.transpose((2, 0, 1)), np.transpose(a, (0, 2, 1)),
                np.swapaxes(a, 0, 2), a.swapaxes(1, 2), np.moveaxis(a, 0, -1), np.moveaxis(a, [0, 1], [2, 0]),
                np.rollaxis(a, 2), np.matrix_transpose(a), a.mT)

    check(f, (CUBE,), (sample((1, 0, 2), np.int64),))


def test_reshapes_and_flattening():
    def f(a):
        return (a.reshape(4, 3), a.reshape((2, -1)), np.reshape(a, (-1,)), a.ravel(), a.flatten(),
                a.reshape(12, 1))

    check(f, (F64,), (F32.T,), (I64[::-1],))
    # only C order is modelled by the registry: Fortran-order reshapes run in Python
    check(lambda a: (np.reshape(a, (4, 3), order="F"), np.ravel(a, order="F"), a.flatten("F")), (F64,), graph=False)
    check(lambda a: a.reshape(5, -1), (F64,), graph=False)  # ValueError: cannot reshape


def test_dimension_insertion_and_removal():
    def f(a):
        return (np.expand_dims(a, 0), np.expand_dims(a, (0, 3)), a[None], a[:, None, :], np.squeeze(a[None]),
                a[None].squeeze(0), np.atleast_1d(a), np.atleast_2d(a[0]), np.atleast_3d(a), np.squeeze(a))

    check(f, (F64,), (sample((1, 4)),), (sample((3, 1), np.int64),))
    check(lambda a: (np.atleast_1d(a), np.atleast_2d(a), np.atleast_3d(a)), (sample(()),))
    check(lambda a: np.squeeze(a, axis=0), (F64,), graph=False)  # ValueError: axis has size 3


def test_broadcasting_views():
    def f(a, b):
        x, y = np.broadcast_arrays(a, b)
        return np.broadcast_to(a, (2, 3, 4)), x, y, np.broadcast_to(b, (3, 4)).copy()

    check(f, (F64, sample((4,))), (sample((1, 4)), sample((3, 1))))


def test_flips_and_diagonals():
    def f(a):
        return (np.flip(a), np.flip(a, 0), np.flip(a, axis=(0, 1)), np.fliplr(a), np.flipud(a), np.diagonal(a),
                a.diagonal(1), np.diagonal(a, -1), np.diag(a), np.diag(a[0]), np.diag(a, k=1), np.trace(a), a.trace(1))

    check(f, (F64,), (I64,), (sample((4, 4), np.complex64),))


def test_real_imag_conj_views():
    def f(a):
        return a.real, a.imag, np.real(a), np.imag(a), a.conj(), a.conjugate(), np.conj(a), np.angle(a)

    check(f, (C128,), (F64,), (I64,))

    def write_real(a):
        r = a.real
        r += 1
        return a

    check(write_real, (C128.copy(),))


def test_splits():
    def f(a):
        return (np.split(a, 2, axis=1), np.split(a, [1, 2]), np.array_split(a, 3, axis=1), np.hsplit(a, 2),
                np.vsplit(a, 3), np.dsplit(CUBE_LIKE(a), 2), np.unstack(a), np.unstack(a, axis=1))

    def CUBE_LIKE(a):
        return a.reshape(3, 2, 2)

    check(f, (F64,), (I64,))
    check(lambda a: np.split(a, 5, axis=1), (F64,), graph=False)  # ValueError: not an equal division


def test_joins_and_repeats():
    def f(a, b):
        return (np.concatenate([a, b]), np.concatenate((a, b), axis=1), np.concatenate([a, b], axis=None),
                np.stack([a, b]), np.stack((a, b), axis=-1), np.hstack([a, b]), np.vstack((a, b)), np.dstack([a, b]),
                np.column_stack([a[:, 0], b[:, 1]]), np.tile(a, 2), np.tile(a, (2, 1, 1)), np.repeat(a, 2),
                np.repeat(a, 3, axis=1), a.repeat(2, axis=0), np.repeat(a, [1, 2, 0], axis=0))

    check(f, (F64, F64 + 1), (F32, I64), (BOOL, I64))
    check(lambda a, b: np.concatenate([a, b]), (F64, sample((4,))), graph=False)  # ValueError: ndim mismatch


def test_roll_diff_tri_sort():
    def f(a):
        return (np.roll(a, 1), np.roll(a, -2, axis=1), np.roll(a, (1, 1), axis=(0, 1)), np.diff(a), np.diff(a, n=2, axis=0),
                np.tril(a), np.triu(a, 1), np.tril(a, -1), np.sort(a), np.sort(a, axis=0), np.sort(a, axis=None),
                np.argsort(a), a.argsort(axis=0), np.argsort(a, kind="stable"))

    check(f, (F64,), (I64,), (BOOL,))


def test_sort_method_sorts_in_place():
    def f(a):
        a.sort()
        b = a.T.copy()
        b.sort(axis=1)
        return a, b

    check(f, (F64.copy(),), (I64.copy(),))


def test_creation_functions():
    def f():
        return (np.zeros(3), np.zeros((2, 3), dtype=np.int32), np.ones((2, 2), np.float32), np.full((2, 3), 7),
                np.full(4, 1.5, dtype=np.float32), np.arange(5), np.arange(1, 10, 2), np.arange(0.0, 1.0, 0.25),
                np.arange(5, dtype=np.float32), np.linspace(0, 1, 5), np.linspace(0, 1, 4, endpoint=False),
                np.logspace(0, 2, 3), np.geomspace(1, 8, 4), np.eye(3), np.eye(3, 4, k=1, dtype=int), np.identity(2),
                np.asarray([1, 2, 3]), np.array([[1.0, 2.0], [3.0, 4.0]]), np.array(5), np.asanyarray((1, 2)),
                np.array([1, 2], dtype=np.uint8), np.empty(0), np.zeros(()), np.ones((0, 3)),
                np.meshgrid(np.arange(3), np.arange(2)), np.indices((2, 3)))

    check(f, ())


def test_empty_is_created_with_the_right_shape_and_dtype():
    def f(a):
        e = np.empty((2, 3), np.float32)
        e[...] = 1
        l = np.empty_like(a)
        l.fill(2)
        return e, l

    check(f, (F64,), (I64,))


def test_ndarray_constructor_is_an_empty_array_in_the_graph():
    def f(a):
        I, J = a.shape
        col = np.ndarray((I, J), dtype=a.dtype)  # NPBench vadv: np.empty's uninitialised array
        col[:] = a * 2
        row = np.ndarray(J)
        row[...] = 3
        return col + 1, row

    check(f, (F64,), (I64,))
    # over a buffer it is a view of other memory: that runs in Python
    check(lambda a: np.ndarray((2,), dtype=a.dtype, buffer=a) + 1, (F64,), graph=False)


def test_like_functions_follow_the_argument():
    def f(a):
        return (np.zeros_like(a), np.ones_like(a, dtype=np.float32), np.full_like(a, 3), np.full_like(a, 0.5, dtype=float),
                np.zeros_like(a, shape=(2,)), np.ones_like(a.T))

    check(f, (F64,), (I64,), (BOOL,), (sample(()),), (C128,))


def test_creation_from_arrays_and_shapes_of_inputs():
    def f(a):
        n, m = a.shape
        return (np.zeros(a.shape), np.ones((n, m + 1), a.dtype), np.arange(n) * a[:, 0], np.linspace(0, 1, m),
                np.eye(n, dtype=a.dtype), np.full(a.shape[::-1], a.ndim), np.asarray(a), np.array(a), np.array(a, copy=True),
                np.asarray(a, dtype=np.float32), np.ascontiguousarray(a.T), np.array([a, a]), np.asarray([a[0], a[1]]))

    check(f, (F64,), (I64,), (sample((2, 5), np.float32),))


def test_asarray_of_an_input_is_the_input_itself():
    def f(a):
        b = np.asarray(a)
        b[0] = -1
        return a

    check(f, (F64.copy(),), (I64.copy(),))


def test_astype_and_copy():
    def f(a):
        return (a.astype(np.float32), a.astype("int64"), a.astype(bool), a.astype(a.dtype), a.astype(np.float64, copy=False),
                np.astype(a, np.complex64), a.copy(), np.copy(a), a.copy(order="F"), np.copy(a.T))

    check(f, (F64,), (I64,), (BOOL,), (sample(()),), (sample((0, 2), np.float32),))


def test_copy_is_not_an_alias():
    def f(a):
        b = a.copy()
        b += 1
        c = a.astype(a.dtype)
        c *= 3
        return a, b, c

    check(f, (F64.copy(),))


def test_array_attributes():
    def f(a):
        return a.shape, a.dtype, a.ndim, a.size, a.itemsize, a.nbytes, len(a), np.shape(a), np.ndim(a), np.size(a)

    check(f, (F64,), (F32,), (I64,), (BOOL,), (C128,), (sample((0, 3)),), (sample((1,)),))
    check(lambda a: (a.shape, a.dtype, a.ndim, a.size, a.itemsize, a.T.shape), (sample(()),))


def test_attributes_are_python_values_that_fold():
    def f(a):
        n = a.shape[0] * a.shape[1] + a.ndim
        kind = a.dtype.kind
        name = a.dtype.name
        return a.reshape(-1)[: n // 2], kind, name, a.dtype == np.float64, a.dtype.itemsize, str(a.dtype)

    compiled, counter = compile_with_counter(f)
    compiled(F64)
    assert counter.frame_count == 1 and counter.op_count == 2  # reshape, getitem: the rest folded
    check(f, (F64,), (F32,), (I64,))


def test_dtype_queries_fold():
    def f(a):
        if np.issubdtype(a.dtype, np.floating):
            a = a * 2
        if a.dtype == np.float32 or np.iscomplexobj(a):
            a = a + 1
        info = np.finfo(a.dtype) if a.dtype.kind == "f" else np.iinfo(a.dtype)
        return a, np.result_type(a, 1.0), info.max, np.dtype("float32"), np.isrealobj(a), np.promote_types(a.dtype, np.int8)

    check(f, (F64,), (F32,), (I64,), (C128[:, :2].real.copy(),))


def test_len_of_0d_array_raises():
    check(lambda a: len(a), (sample(()),), graph=False)


def test_nbytes_and_size_of_views():
    check(lambda a: (a[::2].nbytes, a.T.size, a[:, 1:].shape, a[..., None].ndim), (F64,), (I64,))


@pytest.mark.parametrize("shape", [(3, 4), (0, 4), (1, 1), ()], ids=str)
def test_shape_ops_on_edge_shapes(shape):
    a = sample(shape)

    def f(a):
        return a.reshape(-1), a.T, a[None], np.expand_dims(a, -1), a.ravel(), np.atleast_2d(a), a.astype(np.int64)

    check(f, (a,))
