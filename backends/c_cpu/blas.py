"""The BLAS ddot that NumPy itself calls for a float64 dot product, found in the process and checked
bitwise against np.dot, so that a C loop's `x @ y` on 1-d slices sums in NumPy's (BLAS's) order.

Why: NumPy's dot of two float64 vectors (np.dot, and `@` on 1-d operands) calls its BLAS's ddot
(OpenBLAS in the wheels: several accumulators, FMA where the CPU has it), not a plain loop; only
the same function gives the same bits. The address is found once per process; None where NumPy
links no BLAS we can find or where the function found does not reproduce np.dot (dots then stay
NumPy code, as before).
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
from dataclasses import dataclass

import numpy as np

# ddot's name per BLAS build NumPy may link, with the width of its int arguments
SYMBOLS = (("scipy_cblas_ddot64_", 64), ("cblas_ddot64_", 64), ("scipy_cblas_ddot", 32), ("cblas_ddot", 32))


@dataclass(frozen=True)
class Ddot:
    address: int
    int_bits: int  # 64 for an ILP64 BLAS (NumPy's wheels), else 32
    library: str


def candidate_libraries() -> list[str]:
    """Shared libraries of this process whose name says BLAS (NumPy's, loaded with numpy)."""
    found: list[str] = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "blas" in os.path.basename(path).lower() and path not in found:
                    found.append(path)
    except OSError:
        pass
    libs_dir = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs_dir, "*blas*"))):
        if path not in found:
            found.append(path)
    return found


@functools.cache
def numpy_ddot() -> Ddot | None:
    """NumPy's ddot, or None (see the module docstring)."""
    for path in candidate_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol, bits in SYMBOLS:
            fn = getattr(lib, symbol, None)
            if fn is None:
                continue
            entry = Ddot(int(ctypes.cast(fn, ctypes.c_void_p).value or 0), bits, path)
            if entry.address and reproduces_numpy(entry):
                return entry
    return None


def reproduces_numpy(entry: Ddot) -> bool:
    """Whether `0.0 + ddot(n, x, sx, y, sy)` equals np.dot bitwise on vectors of several lengths
    and strides (NumPy's own arraytype dot adds the BLAS result to 0.0)."""
    int_type = ctypes.c_int64 if entry.int_bits == 64 else ctypes.c_int32
    ddot = ctypes.CFUNCTYPE(ctypes.c_double, int_type, ctypes.c_void_p, int_type, ctypes.c_void_p,
                            int_type)(entry.address)
    rng = np.random.default_rng(1234)
    for n in (2, 3, 7, 17, 64, 101, 1000):
        for step in (1, 3):
            x = rng.standard_normal(n * step)[::step]
            y = rng.standard_normal(n * 2)[::2]
            ours = 0.0 + ddot(n, x.ctypes.data, step, y.ctypes.data, 2)
            if np.float64(ours).tobytes() != np.dot(x, y).tobytes():
                return False
            if np.float64(ours).tobytes() != np.float64(x @ y).tobytes():
                return False
    return True
