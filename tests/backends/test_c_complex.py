"""backend="c" with complex64/complex128 values in its kernels: add, subtract, negative, conjugate, compares
and casts by parts in C, every other complex op (multiply, divide, abs, exp, ...) by NumPy's own loop
inside the kernel; bitwise NumPy's (NaN bits, signed zeros, infinities, huge and tiny parts) with its warnings."""
from __future__ import annotations

import numpy as np
import pytest

from c_helpers import needs_compiler
from dynamo import config
from dynamo.backends.kernel_ir.rules_elementwise import numpy_fast_power
from test_c_numpy_loops import fused, run_both

pytestmark = needs_compiler

SPECIALS = [complex(np.inf, np.nan), complex(np.nan, np.inf), complex(-0.0, -0.0), complex(0.0, -0.0),
            complex(-0.0, 0.0), complex(1e308, 1e308), complex(-1e300, 1e300), complex(5e-324, -5e-324),
            complex(1e-310, 1e-320), complex(np.nan, 0.0), complex(0.0, -np.nan), complex(-np.inf, 0.0),
            complex(np.inf, -np.inf), 1.0, -1j, 3 + 4j, complex(1e200, 1e-200)]


def complex_values(n, dtype, seed=0, nan=True):
    """Random values of many scales with NaN and infinite parts, zeros of both signs, denormals (`nan`:
    with the NaNs, else those values' parts are 2.5: an op of two NaNs returns the one its operand order
    picks, which the C compiler may swap, for complex parts as for float kernels: test_c_nan_bits.py)."""
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * 10.0 ** rng.integers(-30, 30, n)
    with np.errstate(all="ignore"):
        z = rng.permutation(np.concatenate([z, SPECIALS])).astype(dtype)
    if not nan:
        z.real[np.isnan(z.real)] = 2.5
        z.imag[np.isnan(z.imag)] = 2.5
    return z


@pytest.fixture(autouse=True)
def keep_c():
    with config.patch(c_choose_faster=False):
        yield


@pytest.mark.parametrize("dtype", ["c16", "c8"])
def test_arithmetic_by_parts_fused_bitwise(dtype):
    """+ - negative conjugate and a real operand widened to complex (imaginary +0.0: -0.0 + 0.0 is 0.0)."""
    def f(a, b, x):
        return -(a + b) - np.conj(b - x) + (x - b), np.positive(a) + 0.5, x - a

    for n in (1, 40, 300):
        a, b = complex_values(n, dtype, seed=n), complex_values(n, dtype, seed=n + 1, nan=False)
        x = np.real(complex_values(n, dtype, seed=n + 2, nan=False)).copy()
        fused(run_both(f, a, b, x))
        fused(run_both(f, a, b, x, errstate={"all": "ignore"}))


@pytest.mark.parametrize("dtype", ["c16", "c8"])
def test_compares_and_tests_fused_bitwise(dtype):
    def f(a, b):
        return (a == b) | np.isnan(a), (a != b) & np.isfinite(b), np.isinf(a + b), np.where(a == a, a, b)

    a = complex_values(200, dtype, seed=3)
    b = np.where(np.arange(len(a)) % 3 == 0, a, complex_values(200, dtype, seed=4))
    fused(run_both(f, a, b))


@pytest.mark.parametrize("dtype", ["c16", "c8"])
def test_numpy_loops_inside_kernels_bitwise(dtype):
    """multiply (NumPy's FMA form here, not C's), division, abs (npy_hypot), exp, log, sqrt, power, square:
    NumPy's loops on the kernel's tiles and, in the checked variant that finds which op warned, on one
    value with the items' steps (with an output step of 0 NumPy's multiply is another formula)."""
    def f(a, b):
        return a / b - 1, np.exp(a) + 2j, np.sqrt(b) * np.abs(a), a ** 2 + 1, np.log(a * b) * (1 + 2j), -np.square(b)

    for n in (5, 300):
        a, b = complex_values(n, dtype, seed=n), complex_values(n, dtype, seed=n + 7, nan=False)
        fused(run_both(f, a, b))
        fused(run_both(f, a, b, errstate={"all": "ignore"}))


@pytest.mark.parametrize("dtype", ["c16", "c8"])
def test_power_of_a_real_base_and_a_complex_exponent(dtype):
    """np.power(real array, complex array) is a complex power in the kernel (it was refused as an integer
    power: the result's kind was checked against float only, and the NumPy step reordered the warnings)."""
    a, b = complex_values(40, dtype, seed=8), complex_values(40, dtype, seed=9, nan=False)
    fused(run_both(lambda a, b: (np.power(np.abs(a), b - a), np.abs(b) ** (a * 2)), a, b))


def test_values_do_not_depend_on_the_errstate():
    """A kernel that raised flags is rerun in its checked variant to find which op raised them; that rerun
    writes into scratch arrays. Written back, its results were the program's, and its code differs: a
    product of two NaN values (NumPy's multiply loop on one value, not on the tile) gave nan where the
    kernel and NumPy give -nan (complex fuzz seed 166)."""
    a = complex_values(7, "c16", seed=166)

    def f(a):
        return (a - a) * a.astype(np.complex64)

    fused(run_both(f, a))
    fused(run_both(f, a, errstate={"all": "ignore"}))


def test_python_complex_constants_and_real_arrays():
    """`x * 1j` of a float array (normalize_complex_arr), a float32 array with a Python complex (complex64),
    ints widened to complex128, and a constant whose parts are -1.0 or NaN (kept from the compiler's folds)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(257)
    x[:4] = [np.nan, -0.0, np.inf, 0.0]
    n = np.arange(-128, 129)

    def f(x, n):
        return x * 1j + n, x.astype(np.float32) * (2 - 1j), -x + complex(-1.0, np.nan), (x + 1j) * (-1 + 0j)

    fused(run_both(f, x, n))


def test_casts_between_complex_and_to_bool():
    """complex128 -> complex64 rounds each part (GCC 12 folded the round trip back to complex128 into the
    value itself where the C built the complex from its parts with __real__/__imag__: a difference of 0 for
    every element at -O2, for a loop's last element at -O3)."""
    def f(z):
        return z.astype(np.complex64) + 1, z.astype(np.complex64).astype(np.complex128) - z, z.astype(bool)

    for n in (1, 300):
        z = complex_values(n, "c16", seed=6)
        fused(run_both(f, z))
        fused(run_both(f, z, errstate={"all": "ignore"}))


def test_what_stays_numpy_code():
    """A complex value cast to a real one (NumPy's ComplexWarning), a complex sum (NumPy's pairwise order)
    and NumPy complex scalars (scalar math: the naive product, not the loop's FMA) run as NumPy code, with
    NumPy's bits and warning."""
    z = complex_values(100, "c16", seed=7)
    cases = [(lambda z: z.astype(np.float64) * 2, "ComplexWarning"), (lambda z: (z * 2).sum(), "reduction of complex"),
             (lambda z: z[3] * z[4] + z[0], "NumPy scalar arithmetic")]
    for fn, reason in cases:
        (graph,) = run_both(fn, z)
        assert reason in " ".join(graph.notes)
    run_both(lambda a, b: a * b, np.complex128(z[5]), np.complex128(z[6]))


@pytest.mark.parametrize("dtype", ["f8", "f4", "c16"])
def test_powers_follow_numpys_fast_paths(dtype):
    """`x ** 2` calls np.square, `x ** 2.0` np.power (NumPy 2: only the Python int 2 and -1 and the float 0.5
    take the fast path): the warnings name the same ufunc as NumPy's, and the bits are its loop's."""
    x = np.array([3e38, 0.0, -1.0, 2.5, np.nan], dtype=dtype) if dtype != "c16" else complex_values(50, dtype)

    def f(x):
        return x ** 2, x ** 2.0, x ** -1, x ** -1.0, x ** 0.5, x ** np.int64(2), x ** 1

    run_both(f, x)
    assert (numpy_fast_power(np.dtype(dtype), 2), numpy_fast_power(np.dtype(dtype), 0.5)) == (np.square, np.sqrt)


def test_mandelbrot_step_is_one_kernel():
    """npbench mandelbrot1's step: |Z| < horizon and Z**2 + C (NumPy's abs and square loops) in one kernel."""
    def step(Z, C):
        return np.less(abs(Z), 2.0), Z ** 2 + C

    X = np.linspace(-2.25, 0.75, 64)
    Y = np.linspace(-1.25, 1.25, 48)
    C = X + Y[:, None] * 1j
    Z = np.zeros(C.shape, np.complex128)
    for _ in range(4):
        fused(run_both(step, Z, C))
        Z = Z ** 2 + C


def test_kernels_calling_numpy_loops_on_complex_values_are_timed_against_numpy_code():
    """A graph whose kernels call NumPy's loops on complex values goes through the chooser (c or the numpy
    backend's blocked code, whichever is faster: the tiles lost to the blocks, 1.58x against 2.08x plain);
    by-parts arithmetic alone stays C kernels."""
    z, w = complex_values(300, "c16", seed=10), complex_values(300, "c16", seed=11, nan=False)
    with config.patch(c_choose_faster=True):
        (chain,) = run_both(lambda z, w: np.abs(z - w * 1j) < 2.0, z, w)
        (by_parts,) = run_both(lambda z, w: -(z + w) - np.conj(w), z, w)
    assert hasattr(chain, "chosen") and "complex values" in " ".join(chain.notes)
    assert not hasattr(by_parts, "chosen") and by_parts.kernel_count == 1
