"""Linear algebra against NumPy: dot/vdot/inner/outer/tensordot, einsum, norm, trace, diag.

einsum subscripts cover explicit, implicit, ellipsis and diagonal forms; errors match NumPy's.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ops_harness import DTYPES, check, examples, sample

from dynamo.fx_ir.ops import Method, UnsupportedArguments, infer_meta
from dynamo.fx_ir.tensor_meta import TensorMeta

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


@examples(80)
@given(a=SHAPES, b=SHAPES, dtypes=st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)))
def test_products_match_numpy(a: tuple[int, ...], b: tuple[int, ...], dtypes: tuple[np.dtype, np.dtype]) -> None:
    x, y = sample(a, dtypes[0]), sample(b, dtypes[1])
    check(np.dot, x, y)
    check(Method("dot"), x, y)
    check(np.inner, x, y)
    check(np.vdot, x, y)
    check(np.outer, x, y)
    check(np.matmul, x, y)
    check(np.tensordot, x, y, 1)
    check(np.tensordot, x, y, 0)
    check(np.kron if False else np.multiply, x, y)


def test_product_cases() -> None:
    check(np.dot, sample((2, 3)), sample((4, 5)))
    check(np.dot, sample((2, 3)), sample((2, 3, 5)))
    check(np.dot, sample((2, 3)), 2.0)
    check(np.dot, sample((2, 3)), sample((3, 4)), out=sample((2, 4)))
    check(np.dot, sample((2, 3)), sample((3, 4)), out=sample((2, 4), np.float32))
    check(np.dot, sample((2, 3)), sample((3, 4)), out=sample((2, 5)))
    check(np.dot, sample((3,)), [1.0, 2.0, 3.0])
    check(np.inner, sample((2, 3)), sample((4, 5)))
    check(np.vdot, sample((2, 3)), sample((6,)))
    check(np.vdot, sample((3,)), sample((4,)))
    check(np.outer, sample((3, 2)), sample((4,)), out=sample((6, 4)))
    check(np.outer, sample((3,)), sample((4,)), out=sample((3, 4), np.int8))
    check(np.tensordot, sample((2, 3, 4)), sample((3, 4, 5)))
    check(np.tensordot, sample((2, 3, 4)), sample((3, 5, 4)), axes=([1, 2], [0, 2]))
    check(np.tensordot, sample((2, 3, 4)), sample((4, 5, 4)), axes=([1, 2], [0, 2]))
    check(np.tensordot, sample((2, 3)), sample((3, 2)), axes=(1, 0))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij,kj", [(2, 3), (4, 3)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]), ("ij,jk->ik", [(2, 3), (4, 4)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("ii->i", [(3, 4)]), ("ij->ji", [(2, 3)]), ("ba", [(2, 3)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]), ("...ij,...jk", [(5, 2, 3), (2, 3, 4)]),
    ("ij...,jk...->ik...", [(2, 3, 5), (3, 4, 1)]), ("i,i", [(3,), (3,)]), ("i,i->", [(3,), (3,)]),
    ("i", [(3,)]), ("i,j->ij", [(3,), (4,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->", [(2, 3)]), ("i->j", [(3,)]), ("ij", [(2,)]), ("ij,jk", [(2, 3)]), ("...i->i", [(2, 3)]),
    ("...i->...", [(2, 3)]), ("i...->", [(2, 3)]), ("ijk->kji", [(2, 3, 4)]), ("iij->ij", [(3, 3, 2)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]), ("a b, b c -> a c", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(subscripts: str, shapes: list[tuple[int, ...]]) -> None:
    arrays = [sample(s) for s in shapes]
    check(np.einsum, subscripts, *arrays)


def test_einsum_dtypes_and_keywords() -> None:
    check(np.einsum, "ij,j->i", sample((2, 3), np.int8), sample((3,), np.float32))
    check(np.einsum, "i,j->ij", sample((3,)), sample((4,)), dtype=np.float32)
    check(np.einsum, "i,j->ij", sample((3,)), sample((4,)), dtype=np.float32, casting="unsafe")
    check(np.einsum, "ij,jk->ik", sample((2, 3)), sample((3, 4)), optimize=True)
    check(np.einsum, "ij,jk->ik", sample((2, 3)), sample((3, 4)), out=sample((2, 4)))
    for dtype in DTYPES:
        check(np.einsum, "ij,j->i", sample((2, 3), dtype), sample((3,), dtype))
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.einsum, TensorMeta((2, 3), np.float64), [0, 1])


@examples(50)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
       ord=st.sampled_from([None, 1, 2, -1, np.inf, -np.inf, "fro", "nuc", 0, 3]),
       axis=st.sampled_from([None, 0, -1, 1, (0, 1), (1, 0), (0, 0), (-2, -1)]),
       keepdims=st.booleans(), dtype=st.sampled_from(DTYPES))
def test_norm(shape: tuple[int, ...], ord: object, axis: object, keepdims: bool, dtype: np.dtype) -> None:
    check(np.linalg.norm, sample(shape, dtype), ord, axis, keepdims)


def test_vector_and_matrix_norm() -> None:
    check(np.linalg.vector_norm, sample((2, 3)))
    check(np.linalg.vector_norm, sample((2, 3)), axis=1, keepdims=True, ord=1)
    check(np.linalg.matrix_norm, sample((4, 2, 3)))
    check(np.linalg.matrix_norm, sample((3,)))


def test_trace_diag_and_square_matrices() -> None:
    for dtype in DTYPES:
        check(np.trace, sample((2, 3), dtype))
        check(np.trace, sample((2, 3, 4), dtype), 1, 1, 2)
        check(Method("trace"), sample((3, 3), dtype), -1)
    check(np.trace, sample((3,)))
    check(np.trace, sample((3, 3)), dtype=np.int8)
    check(np.trace, sample((3, 3)), out=sample(()))
    for k in (-4, -1, 0, 2, 5):
        check(np.diag, sample((3,)), k)
        check(np.diag, sample((3, 4)), k)
    check(np.diag, sample(()))
    check(np.linalg.inv, sample((3, 3)) + 3 * np.eye(3))
    check(np.linalg.inv, sample((2, 3)))
    check(np.linalg.inv, sample((3,)))
    check(np.linalg.det, sample((4, 2, 2)))
    check(np.linalg.cholesky, np.eye(3))
    check(np.linalg.solve, np.eye(3), sample((3,)))
    check(np.linalg.solve, np.eye(3)[None].repeat(2, 0), sample((3, 2)))
    check(np.linalg.solve, np.eye(3), sample((2, 3)))
    check(np.linalg.solve, np.eye(3), sample((4,)))


def test_kron() -> None:
    check(np.kron, sample((2, 3)), sample((4,)))
    check(np.kron, sample((2,), np.int8), sample((3, 1, 2)))
    check(np.kron, 2.0, sample((3,)))
