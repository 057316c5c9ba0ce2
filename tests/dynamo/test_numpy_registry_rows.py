"""Every row of the op registry is called from traced code: a table of one program per row, each
checked against plain NumPy and against the rows the trace really looked up."""
import builtins
import operator

import numpy as np
import pytest

from dynamo.fx_ir import ops
from dynamo.variables.numpy_api import NumpyOps
from numpy_samples import BOOL, C128, F32, F64, I64, check, sample

SQ = sample((3, 3)) + 3 * np.eye(3)
V = sample((4,))
WITH_NAN = np.where(F64 > 1.5, np.nan, F64)
ORDER = np.argsort(F64, axis=1)
SORTED = np.sort(sample((6,)))

# row name -> (program, argument tuples, captured in one graph?)
CASES = {
    # views
    "numpy.transpose": (lambda a: np.transpose(a, (1, 0)), [(F64,), (I64,)]),
    "ndarray.transpose": (lambda a: a.transpose(), [(F64,)]),
    "numpy.matrix_transpose": (lambda a: np.matrix_transpose(a), [(F64,)]),
    "numpy.swapaxes": (lambda a: np.swapaxes(a, 0, 1), [(F64,)]),
    "ndarray.swapaxes": (lambda a: a.swapaxes(1, 0), [(F64,)]),
    "numpy.moveaxis": (lambda a: np.moveaxis(a, 0, 1), [(F64,)]),
    "numpy.rollaxis": (lambda a: np.rollaxis(a, 1), [(F64,)]),
    "numpy.expand_dims": (lambda a: np.expand_dims(a, 0), [(F64,), (sample(()),)]),
    "numpy.squeeze": (lambda a: np.squeeze(a), [(sample((1, 3, 1)),)]),
    "ndarray.squeeze": (lambda a: a.squeeze(axis=0), [(sample((1, 3)),)]),
    "numpy.broadcast_to": (lambda a: np.broadcast_to(a, (2, 3, 4)), [(F64,)]),
    "numpy.flip": (lambda a: np.flip(a, 1), [(F64,)]),
    "numpy.fliplr": (lambda a: np.fliplr(a), [(F64,)]),
    "numpy.flipud": (lambda a: np.flipud(a), [(F64,)]),
    "numpy.diagonal": (lambda a: np.diagonal(a, 1), [(F64,)]),
    "ndarray.diagonal": (lambda a: a.diagonal(), [(F64,)]),
    "ndarray.view": (lambda a: a.view(), [(F64,)]),
    "numpy.reshape": (lambda a: np.reshape(a, (2, 6)), [(F64,), (F64.T,)]),
    "ndarray.reshape": (lambda a: a.reshape(6, -1), [(F64,)]),
    "numpy.ravel": (lambda a: np.ravel(a), [(F64,), (F64.T,)]),
    "ndarray.ravel": (lambda a: a.ravel(), [(F64,)]),
    "numpy.broadcast_arrays": (lambda a, b: np.broadcast_arrays(a, b), [(F64, V)]),
    "numpy.atleast_1d": (lambda a: np.atleast_1d(a), [(sample(()),)]),
    "numpy.atleast_2d": (lambda a: np.atleast_2d(a), [(V,)]),
    "numpy.atleast_3d": (lambda a: np.atleast_3d(a), [(F64,)]),
    "numpy.split": (lambda a: np.split(a, 2, axis=1), [(F64,)]),
    "numpy.array_split": (lambda a: np.array_split(a, 3, axis=1), [(F64,)]),
    "numpy.hsplit": (lambda a: np.hsplit(a, 2), [(F64,)]),
    "numpy.vsplit": (lambda a: np.vsplit(a, 3), [(F64,)]),
    "numpy.dsplit": (lambda a: np.dsplit(a, 2), [(sample((2, 2, 4)),)]),
    "numpy.unstack": (lambda a: np.unstack(a), [(F64,)]),
    "ndarray.T": (lambda a: a.T, [(F64,)]),
    "ndarray.mT": (lambda a: a.mT, [(F64,)]),
    "ndarray.real": (lambda a: a.real, [(C128,), (F64,)]),
    "ndarray.imag": (lambda a: a.imag, [(C128,)]),
    "numpy.real": (lambda a: np.real(a), [(C128,)]),
    "numpy.imag": (lambda a: np.imag(a), [(C128,), (F64,)]),
    # metadata
    "ndarray.shape": (lambda a: a.shape, [(F64,)]),
    "ndarray.ndim": (lambda a: a.ndim, [(F64,)]),
    "ndarray.size": (lambda a: a.size, [(F64,)]),
    "ndarray.dtype": (lambda a: a.dtype, [(F64,)]),
    "ndarray.itemsize": (lambda a: a.itemsize, [(F32,)]),
    "ndarray.nbytes": (lambda a: a.nbytes, [(F32,)]),
    "builtins.len": (lambda a: len(a), [(F64,)]),
    "numpy.shape": (lambda a: np.shape(a), [(F64,)]),
    "numpy.ndim": (lambda a: np.ndim(a), [(F64,)]),
    "numpy.size": (lambda a: np.size(a, 1), [(F64,)]),
    "numpy.result_type": (lambda a: np.result_type(a, 1.0), [(F32,), (I64,)]),
    "numpy.iscomplexobj": (lambda a: np.iscomplexobj(a), [(C128,)]),
    "numpy.isrealobj": (lambda a: np.isrealobj(a), [(F64,)]),
    # copies and in-place methods
    "numpy.copy": (lambda a: np.copy(a), [(F64,)]),
    "ndarray.copy": (lambda a: a.copy(), [(I64,)]),
    "ndarray.flatten": (lambda a: a.flatten(), [(F64,)]),
    "ndarray.astype": (lambda a: a.astype(np.float32), [(F64,), (BOOL,)]),
    "numpy.astype": (lambda a: np.astype(a, np.int8), [(I64,)]),
    "numpy.sort": (lambda a: np.sort(a, axis=0), [(F64,)]),
    "numpy.argsort": (lambda a: np.argsort(a), [(F64,)]),
    "ndarray.argsort": (lambda a: a.argsort(axis=0), [(F64,)]),
    "ndarray.sort": (lambda a: (a.sort(), a), [(F64.copy(),)]),
    "numpy.roll": (lambda a: np.roll(a, 2), [(F64,)]),
    "numpy.diff": (lambda a: np.diff(a, axis=0), [(F64,)]),
    "numpy.tril": (lambda a: np.tril(a), [(F64,)]),
    "numpy.triu": (lambda a: np.triu(a, -1), [(F64,)]),
    "ndarray.fill": (lambda a: (a.fill(7), a), [(F64.copy(),)]),
    "numpy.copyto": (lambda a, b: (np.copyto(a, b), a), [(F64.copy(), V)]),
    "numpy.fill_diagonal": (lambda a: (np.fill_diagonal(a, 0), a), [(F64.copy(),)]),
    # creation
    "numpy.zeros": (lambda: np.zeros((2, 3)), [()]),
    "numpy.ones": (lambda: np.ones(4, np.int8), [()]),
    "numpy.empty": (lambda: np.empty((2, 0)), [()]),
    "numpy.ndarray": (lambda: np.ndarray((2, 0), dtype=np.float32), [()]),
    "numpy.zeros_like": (lambda a: np.zeros_like(a), [(F64,)]),
    "numpy.ones_like": (lambda a: np.ones_like(a), [(I64,)]),
    "numpy.empty_like": (lambda a: np.empty_like(a).shape, [(F64,)]),
    "numpy.full_like": (lambda a: np.full_like(a, 2), [(F32,)]),
    "numpy.full": (lambda: np.full((2, 2), 1.5), [()]),
    "numpy.arange": (lambda: np.arange(2, 11, 3), [()]),
    "numpy.linspace": (lambda: np.linspace(0, 2, 9), [()]),
    "numpy.logspace": (lambda: np.logspace(0, 1, 4), [()]),
    "numpy.geomspace": (lambda: np.geomspace(1, 16, 5), [()]),
    "numpy.eye": (lambda: np.eye(2, 3), [()]),
    "numpy.identity": (lambda: np.identity(3, int), [()]),
    "numpy.asarray": (lambda a: np.asarray(a, np.float32), [(F64,)]),
    "numpy.asanyarray": (lambda a: np.asanyarray(a), [(F64,)]),
    "numpy.array": (lambda a: np.array([a, a]), [(V,)]),
    "numpy.meshgrid": (lambda a, b: np.meshgrid(a, b), [(V, sample((3,)))]),
    "numpy.indices": (lambda: np.indices((2, 2)), [()]),
    "numpy.ascontiguousarray": (lambda a: np.ascontiguousarray(a.T), [(F64,)]),
    # elementwise functions that are not ufuncs
    "numpy.where": (lambda a, b: np.where(a > 1, a, b), [(F64, F32)]),
    "numpy.clip": (lambda a: np.clip(a, 0.8, 1.2), [(F64,)]),
    "ndarray.clip": (lambda a: a.clip(max=1.0), [(F64,)]),
    "numpy.round": (lambda a: (np.round(a, 2), np.around(a)), [(F64,)]),
    "ndarray.round": (lambda a: a.round(1), [(F64,)]),
    "numpy.isclose": (lambda a, b: np.isclose(a, b), [(F64, F64 + 1e-9)]),
    "numpy.nan_to_num": (lambda a: np.nan_to_num(a, nan=-1.0), [(WITH_NAN,)]),
    "numpy.interp": (lambda x, xp: np.interp(x, xp, xp ** 2), [(V, SORTED)]),
    "numpy.angle": (lambda a: np.angle(a, deg=True), [(C128,)]),
    "numpy.fix": (lambda a: np.fix(a * 3 - 3), [(F64,)]),
    "numpy.isreal": (lambda a: np.isreal(a), [(C128,)]),
    "numpy.iscomplex": (lambda a: np.iscomplex(a), [(C128,)]),
    "numpy.isposinf": (lambda a: np.isposinf(a / 0.0), [(F64 - 1.5,)]),
    "numpy.isneginf": (lambda a: np.isneginf(a / 0.0), [(F64 - 1.5,)]),
    "numpy.sinc": (lambda a: np.sinc(a), [(F64,)]),
    "numpy.i0": (lambda a: np.i0(a), [(F64,)]),
    "ndarray.conj": (lambda a: a.conj(), [(C128,)]),
    "ndarray.conjugate": (lambda a: a.conjugate(), [(C128,)]),
    # indexing
    "operator.getitem": (lambda a: a[1:, ::2], [(F64,)]),
    "operator.setitem": (lambda a: (operator.setitem(a, 0, 1.0), a), [(F64.copy(),)]),
    "numpy.take": (lambda a: np.take(a, [0, 2]), [(F64,)]),
    "ndarray.take": (lambda a: a.take([1], axis=1), [(F64,)]),
    "numpy.searchsorted": (lambda s, v: np.searchsorted(s, v), [(SORTED, V)]),
    "ndarray.searchsorted": (lambda s, v: s.searchsorted(v, side="right"), [(SORTED, V)]),
    "numpy.take_along_axis": (lambda a, o: np.take_along_axis(a, o, 1), [(F64, ORDER)]),
    # joining
    "numpy.concatenate": (lambda a, b: np.concatenate([a, b], axis=1), [(F64, F64)]),
    "numpy.stack": (lambda a, b: np.stack([a, b], 1), [(F64, F64)]),
    "numpy.hstack": (lambda a, b: np.hstack((a, b)), [(F64, I64)]),
    "numpy.vstack": (lambda a, b: np.vstack([a, b]), [(F64, F32)]),
    "numpy.dstack": (lambda a, b: np.dstack([a, b]), [(F64, F64)]),
    "numpy.column_stack": (lambda a, b: np.column_stack([a, b]), [(V, V)]),
    "numpy.tile": (lambda a: np.tile(a, (2, 1)), [(F64,)]),
    "numpy.repeat": (lambda a: np.repeat(a, 2, axis=0), [(F64,)]),
    "ndarray.repeat": (lambda a: a.repeat(3), [(V,)]),
    # linear algebra
    "numpy.dot": (lambda a, b: np.dot(a, b), [(F64, F64.T)]),
    "ndarray.dot": (lambda a, b: a.dot(b), [(F64, V)]),
    "numpy.inner": (lambda a, b: np.inner(a, b), [(F64, F64)]),
    "numpy.vdot": (lambda a, b: np.vdot(a, b), [(C128, C128)]),
    "numpy.outer": (lambda a, b: np.outer(a, b), [(V, V)]),
    "numpy.tensordot": (lambda a, b: np.tensordot(a, b, axes=([1], [0])), [(F64, F64.T)]),
    "numpy.kron": (lambda a, b: np.kron(a, b), [(V, V)]),
    "numpy.einsum": (lambda a, b: np.einsum("ij,kj->ik", a, b), [(F64, F64)]),
    "numpy.trace": (lambda a: np.trace(a), [(F64,)]),
    "ndarray.trace": (lambda a: a.trace(offset=1), [(F64,)]),
    "numpy.diag": (lambda a: np.diag(a), [(V,), (F64,)]),
    "numpy.linalg.norm": (lambda a: np.linalg.norm(a, axis=1), [(F64,)]),
    "numpy.linalg.inv": (lambda a: np.linalg.inv(a), [(SQ,)]),
    "numpy.linalg.cholesky": (lambda a: np.linalg.cholesky(a @ a.T), [(SQ,)]),
    "numpy.linalg.det": (lambda a: np.linalg.det(a), [(SQ,)]),
    "numpy.linalg.solve": (lambda a, b: np.linalg.solve(a, b), [(SQ, V[:3])]),
    "numpy.linalg.vector_norm": (lambda a: np.linalg.vector_norm(a, axis=0), [(F64,)]),
    "numpy.linalg.matrix_norm": (lambda a: np.linalg.matrix_norm(a, ord=1), [(F64,)]),
    "numpy.matmul": (lambda a, b: np.matmul(a, b), [(F64, F64.T)]),
    "numpy.matvec": (lambda a, b: np.matvec(a, b), [(F64, V)]),
    "numpy.vecmat": (lambda a, b: np.vecmat(a, b), [(V[:3], F64)]),
    "numpy.vecdot": (lambda a, b: np.vecdot(a, b), [(F64, V)]),
    # reductions and scans
    "numpy.sum": (lambda a: np.sum(a, axis=0), [(F64,)]),
    "ndarray.sum": (lambda a: a.sum(), [(I64,)]),
    "numpy.prod": (lambda a: np.prod(a, axis=1), [(F64,)]),
    "ndarray.prod": (lambda a: a.prod(), [(I64,)]),
    "numpy.mean": (lambda a: np.mean(a), [(F32,)]),
    "ndarray.mean": (lambda a: a.mean(axis=1), [(I64,)]),
    "numpy.std": (lambda a: np.std(a, ddof=1), [(F64,)]),
    "ndarray.std": (lambda a: a.std(axis=0), [(F64,)]),
    "numpy.var": (lambda a: np.var(a, axis=1), [(F64,)]),
    "ndarray.var": (lambda a: a.var(), [(F32,)]),
    "numpy.max": (lambda a: (np.max(a, axis=0), np.amax(a)), [(F64,)]),
    "ndarray.max": (lambda a: a.max(), [(I64,)]),
    "numpy.min": (lambda a: (np.min(a, axis=1), np.amin(a)), [(F64,)]),
    "ndarray.min": (lambda a: a.min(0), [(F64,)]),
    "numpy.argmax": (lambda a: np.argmax(a), [(F64,)]),
    "ndarray.argmax": (lambda a: a.argmax(axis=1), [(F64,)]),
    "numpy.argmin": (lambda a: np.argmin(a, axis=0), [(F64,)]),
    "ndarray.argmin": (lambda a: a.argmin(), [(F64,)]),
    "numpy.any": (lambda a: np.any(a, axis=0), [(BOOL,)]),
    "ndarray.any": (lambda a: a.any(), [(F64,)]),
    "numpy.all": (lambda a: np.all(a), [(BOOL,)]),
    "ndarray.all": (lambda a: a.all(axis=1), [(I64,)]),
    "numpy.nansum": (lambda a: np.nansum(a), [(WITH_NAN,)]),
    "numpy.nanprod": (lambda a: np.nanprod(a, axis=0), [(WITH_NAN,)]),
    "numpy.nanmean": (lambda a: np.nanmean(a, axis=1), [(WITH_NAN,)]),
    "numpy.nanstd": (lambda a: np.nanstd(a), [(WITH_NAN,)]),
    "numpy.nanvar": (lambda a: np.nanvar(a, axis=0), [(WITH_NAN,)]),
    "numpy.nanmax": (lambda a: np.nanmax(a), [(WITH_NAN,)]),
    "numpy.nanmin": (lambda a: np.nanmin(a, axis=1), [(WITH_NAN,)]),
    "numpy.nanargmax": (lambda a: np.nanargmax(a), [(WITH_NAN,)]),
    "numpy.nanargmin": (lambda a: np.nanargmin(a, axis=0), [(F64,)]),
    "numpy.ptp": (lambda a: np.ptp(a, axis=0), [(F64,)]),
    "numpy.median": (lambda a: np.median(a, axis=1), [(F64,)]),
    "numpy.nanmedian": (lambda a: np.nanmedian(a), [(WITH_NAN,)]),
    "numpy.cumsum": (lambda a: np.cumsum(a, axis=1), [(F64,)]),
    "ndarray.cumsum": (lambda a: a.cumsum(), [(I64,)]),
    "numpy.cumprod": (lambda a: np.cumprod(a), [(F64,)]),
    "ndarray.cumprod": (lambda a: a.cumprod(axis=0), [(F64,)]),
    "numpy.nancumsum": (lambda a: np.nancumsum(a, axis=0), [(WITH_NAN,)]),
    "numpy.nancumprod": (lambda a: np.nancumprod(a), [(WITH_NAN,)]),
    "numpy.cumulative_sum": (lambda a: np.cumulative_sum(a, axis=1), [(F64,)]),
    "numpy.cumulative_prod": (lambda a: np.cumulative_prod(a, axis=0), [(F64,)]),
    "numpy.count_nonzero": (lambda a: np.count_nonzero(a, axis=0), [(BOOL,)]),
    "numpy.percentile": (lambda a: np.percentile(a, 30), [(F64,)]),
    "numpy.nanpercentile": (lambda a: np.nanpercentile(a, [10, 90]), [(WITH_NAN,)]),
    "numpy.quantile": (lambda a: np.quantile(a, 0.5, axis=0), [(F64,)]),
    "numpy.nanquantile": (lambda a: np.nanquantile(a, 0.25), [(WITH_NAN,)]),
    "numpy.average": (lambda a, w: np.average(a, axis=1, weights=w), [(F64, V)]),
    # Python operators and builtins (the ufunc behind each is tested in test_numpy_ufuncs.py)
    "builtins.divmod": (lambda a: divmod(a, 2.0), [(F64,)]),
    "builtins.pow": (lambda a: builtins.pow(a, 3), [(I64,)]),
    "builtins.abs": (lambda a: abs(a), [(F64 - 1,)]),
    "operator.abs": (lambda a: operator.abs(a), [(I64 - 5,)]),
    "operator.neg": (lambda a: -a, [(F64,)]),
    "operator.pos": (lambda a: +a, [(F64,)]),
    "operator.invert": (lambda a: ~a, [(I64,), (BOOL,)]),
    "operator.inv": (lambda a: operator.inv(a), [(I64,)]),
    "operator.matmul": (lambda a, b: a @ b, [(F64, F64.T)]),
    "operator.imatmul": (lambda a, b: operator.imatmul(a, b), [(SQ.copy(), SQ)]),
}

# Rows whose every call has a data-dependent shape: they must give up, never guess.
DATA_DEPENDENT = {
    "numpy.nonzero": lambda a: np.nonzero(a), "ndarray.nonzero": lambda a: a.nonzero(),
    "numpy.argwhere": lambda a: np.argwhere(a), "numpy.flatnonzero": lambda a: np.flatnonzero(a),
    "numpy.unique": lambda a: np.unique(a), "numpy.extract": lambda a: np.extract(a > 2, a),
    "numpy.compress": lambda a: np.compress(a[0] > 2, a, axis=1), "ndarray.compress": lambda a: a.compress(a[0] > 2, 1),
    "numpy.trim_zeros": lambda a: np.trim_zeros(a[0]), "numpy.unique_values": lambda a: np.unique_values(a),
    "numpy.unique_counts": lambda a: np.unique_counts(a), "numpy.unique_inverse": lambda a: np.unique_inverse(a),
    "numpy.unique_all": lambda a: np.unique_all(a),
}

BINARY_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
                    "and_": "&", "or_": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}
COMPARISONS = ["lt", "le", "eq", "ne", "ge", "gt"]
SCALAR_TYPES = [r.name for r in ops.all_ops() if r.kind is ops.OpKind.ELEMENTWISE and r.ufunc is None
                and isinstance(getattr(np, r.name.split(".")[-1], None), type)]


def _operator_cases():
    cases = {}
    for name in BINARY_OPERATORS:
        op, iop = getattr(operator, name), getattr(operator, "i" + name.rstrip("_"))
        args = [(I64, sample((4,), np.int64))] if name in ("and_", "or_", "xor", "lshift", "rshift") else [(F64, V)]
        cases[f"operator.{name}"] = (lambda a, b, op=op: op(a, b), args)
        cases[f"operator.{iop.__name__}"] = (lambda a, b, iop=iop: (iop(a, b), a), [(a.copy(), b) for a, b in args])
    for name in COMPARISONS:
        cases[f"operator.{name}"] = (lambda a, b, op=getattr(operator, name): op(a, b), [(F64, V)])
    for name in SCALAR_TYPES:
        cases[name] = (lambda a, t=getattr(np, name.split(".")[-1]): t(a), [(F64[:1, :1],), (I64,)])
    return cases


def _ufunc_cases():
    from test_numpy_ufuncs import SPECIAL, loop_dtypes, operand_calls

    cases = {}
    for row in ops.all_ops():
        if row.name.startswith("numpy.") and row.ufunc is not None and row.ufunc.__name__ not in SPECIAL:
            ufunc = row.ufunc
            cases[row.name] = (lambda *a, u=ufunc: u(*a), operand_calls(ufunc.nin, loop_dtypes(ufunc)[0])[:1])
    cases["numpy.ldexp"] = (lambda a, e: np.ldexp(a, e), [(F64, I64)])
    return cases


ALL_CASES = {**CASES, **_operator_cases(), **_ufunc_cases()}
UNCAPTURED = {"numpy.isnat"}  # datetime dtypes are not modelled: it runs in Python
# len(array) is answered by the builtins' own handler from the meta (the same rule as the row)
ANSWERED_ELSEWHERE = {"builtins.len"}


def test_every_row_has_a_case():
    rows = {row.name for row in ops.all_ops()}
    missing = rows - set(ALL_CASES) - set(DATA_DEPENDENT) - UNCAPTURED
    assert not missing, sorted(missing)
    assert not (set(ALL_CASES) | set(DATA_DEPENDENT)) - rows, "cases for rows that do not exist"


@pytest.fixture
def rows_used(monkeypatch):
    """The names of the registry rows the trace asked for shapes and dtypes."""
    used = []
    infer = NumpyOps._infer

    def recording(self, op, meta_args, meta_kwargs, label):
        used.append(op.name)
        return infer(self, op, meta_args, meta_kwargs, label)

    monkeypatch.setattr(NumpyOps, "_infer", recording)
    return used


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_row_from_traced_code(name, rows_used):
    fn, calls = ALL_CASES[name]
    check(fn, *calls)
    assert name in rows_used or name in ANSWERED_ELSEWHERE, f"the trace never used the row {name}: {rows_used}"


@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_data_dependent_rows_give_up(name, rows_used):
    check(DATA_DEPENDENT[name], (I64 - 3,), graph=False)
    assert name in rows_used
