"""Failures the differential fuzzer (tests/fuzz/) found in graphs recompiled with dynamic sizes (its third
call brings new shapes), on every CPU backend: results, dtypes and warnings as NumPy's."""
from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np
import pytest
from triton_helpers import INTERPRET

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import

import dynamo  # noqa: E402
from dynamo.backends.registry import list_backends  # noqa: E402

BACKENDS = [b for b in ("eager", "numpy", "c") if b in list_backends()]


def observed(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = fn(*args)
    return [(r.dtype, r.shape, r.strides, r.tobytes()) for r in results], [str(w.message) for w in caught]


def float16_input_names_the_shared_size(half, wide):
    # fuzz seeds 1130709 and 1131022, backend c: the trace guards the two sizes equal, and the size is named
    # by the first input, float16; a kernel reading only `wide` got `half` for its shape, and declared a
    # pointer to its data in a C type float16 has none of (KeyError 'f2', on the call with new sizes)
    w = np.where(half >= 1, half, 0.0)   # float16: NumPy code on c
    return w, wide <= 1.0, wide * half


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, make_args", [
    (float16_input_names_the_shared_size,
     lambda n: (np.linspace(-2, 2, 3 * n).reshape(n, 3).astype(np.float16), np.linspace(3, -1, 3 * n).reshape(n, 3))),
])
def test_a_recompile_with_new_sizes_computes_as_numpy(backend, program, make_args):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for n in (5, 5, 4, 7):
        assert observed(compiled, *make_args(n)) == observed(program, *make_args(n))


def first_extremes_of_three_axes(a):
    # fuzz seed 2061294, backend triton: the flat position of an argmin over every axis of a (2, s0, s1) array
    # reads element r at r // (s0*s1) of axis 0, printed `r // s0*s1`: (r // s0) * s1 in Python
    return np.argmin(a), np.argmax(a)


@pytest.mark.parametrize("backend", [*BACKENDS, "triton"])
def test_flat_positions_with_new_sizes(backend):
    if backend == "triton" and importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    dynamo.reset()
    compiled = dynamo.compile(first_extremes_of_three_axes, backend=backend)
    rng = np.random.default_rng(5)
    for shape in ((2, 5, 4), (2, 5, 4), (2, 7, 3), (2, 6, 5), (3, 4, 9)):
        a = np.round(rng.uniform(-3, 3, shape), 2)
        a[0, shape[1] // 2 + 1, 0] = np.nan if shape[1] != 6 else 9.0
        assert compiled(a) == first_extremes_of_three_axes(a)


def four_axes_against_their_last_three(a):
    # fuzz seed 2080908, backend triton: a kernel over a 4-d grid splits the program id by the counts of
    # the later axes, printed `pid // c2*c3*s1`: ((pid // c2) * c3) * s1 in Python, so programs after the
    # first wrote other elements than their own (on the call with new sizes)
    return a != a[-1], a * 2.0


@pytest.mark.parametrize("backend", [*BACKENDS, "triton"])
def test_four_grid_axes_with_new_sizes(backend):
    if backend == "triton" and importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    dynamo.reset()
    compiled = dynamo.compile(four_axes_against_their_last_three, backend=backend)
    for shape in ((4, 2, 4, 2), (4, 2, 4, 2), (5, 6, 5, 6), (3, 4, 2, 5)):
        a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) % 7
        assert observed(compiled, a) == observed(four_axes_against_their_last_three, a)
