"""NumPy's own ufunc inner loops, called from generated C: which (ufunc, dtypes) have one, the C
symbol a module holds its address in, and the addresses, read once per loaded module.

Why: exp, log, tanh, power, ... are computed by NumPy with its own SIMD code (chosen at import for
this CPU), whose bits libm does not reproduce. A kernel that calls the very loop NumPy calls, on
blocks of contiguous values, gets NumPy's bits and flags and keeps the graph fused in C.
"""
from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence

import numpy as np

# The head of PyUFuncObject (numpy/ufuncobject.h, unchanged from NumPy 1.x to 2.x): read once per
# loop at load time, checked against the ufunc's own nin, nargs, ntypes and name before any use.


class _UFuncHead(ctypes.Structure):
    _fields_ = [
        ("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
        ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int), ("identity", ctypes.c_int),
        ("functions", ctypes.POINTER(ctypes.c_void_p)), ("data", ctypes.POINTER(ctypes.c_void_p)),
        ("ntypes", ctypes.c_int), ("reserved1", ctypes.c_int),
        ("name", ctypes.c_char_p), ("types", ctypes.POINTER(ctypes.c_ubyte)),
    ]


# dtypes whose loops take and give C's float and double, their complex types (and bool for results like signbit)
_FLOAT_KEYS = {"f4": "f", "f8": "d", "c8": "F", "c16": "D"}
_RESULT_KEYS = {**_FLOAT_KEYS, "b": "b"}


def dtype_key(dtype: np.dtype) -> str:
    """A dtype's short name: b, i1..i8, u1..u8, f2..f8, c8, c16."""
    dtype = np.dtype(dtype)
    return "b" if dtype.kind == "b" else f"{dtype.kind}{dtype.itemsize}"


def loop_symbol(name: str, arg_dtypes: Sequence[np.dtype], out: np.dtype) -> str:
    """The C global holding this loop's address in a module (`<symbol>_data`: its data pointer)."""
    sig = "".join(_RESULT_KEYS[dtype_key(d)] for d in arg_dtypes) + "_" + _RESULT_KEYS[dtype_key(out)]
    return f"dyn_np_{name}_{sig}"


def refuse_numpy_loop(name: str, arg_dtypes: Sequence[np.dtype], out: np.dtype) -> str | None:
    """Why NumPy's loop for this op cannot be called from C (None: it can)."""
    ufunc = getattr(np, name, None)
    if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or ufunc.signature is not None:
        return f"no exact C code for {name}"
    if len(arg_dtypes) != ufunc.nin or not all(dtype_key(d) in _FLOAT_KEYS for d in arg_dtypes) \
            or dtype_key(out) not in _RESULT_KEYS or not all(np.dtype(d).isnative for d in (*arg_dtypes, out)):
        return f"NumPy's {name} loop for these dtypes is not called from C"
    if numpy_loop(name, tuple(np.dtype(d) for d in arg_dtypes), np.dtype(out)) is None:
        return f"NumPy's {name} has no inner loop for these dtypes"
    return None


@functools.cache
def numpy_loop(name: str, arg_dtypes: tuple[np.dtype, ...], out: np.dtype) -> tuple[int, int] | None:
    """(address of the loop function, its data pointer) of the ufunc's loop for exactly these dtypes,
    the one NumPy's legacy loop table holds (the SIMD code NumPy dispatched at import); None if the
    ufunc object does not look like NumPy's PyUFuncObject or has no such loop."""
    ufunc = getattr(np, name, None)
    if not isinstance(ufunc, np.ufunc):
        return None
    head = _UFuncHead.from_address(id(ufunc))
    if (head.nin, head.nout, head.nargs, head.ntypes) != (ufunc.nin, ufunc.nout, ufunc.nin + ufunc.nout,
                                                         ufunc.ntypes) \
            or head.name is None or head.name.decode() != ufunc.__name__:
        return None
    wanted = [np.dtype(d).num for d in (*arg_dtypes, out)]
    wanted_dtypes = [np.dtype(d) for d in (*arg_dtypes, out)]
    for i, sig in enumerate(ufunc.types):
        codes = sig.replace("->", "")
        if len(codes) != head.nargs or any(c == "O" for c in codes):
            continue
        numbers = [head.types[i * head.nargs + k] for k in range(head.nargs)]
        if [np.dtype(c).num for c in codes] != numbers:
            return None  # the table does not match what the ufunc says: do not trust it
        if numbers == wanted or [np.dtype(c) for c in codes] == wanted_dtypes:
            function, data = head.functions[i], head.data[i]
            return (int(function), int(data or 0)) if function else None
    return None


def bind(lib: ctypes.CDLL, loops: Sequence[tuple[str, str, tuple[np.dtype, ...], np.dtype]]) -> None:
    """Set a loaded module's loop globals: (symbol, ufunc name, argument dtypes, result dtype) each."""
    for symbol, name, arg_dtypes, out in loops:
        found = numpy_loop(name, arg_dtypes, out)
        if found is None:
            raise ValueError(f"NumPy's {name} loop for {arg_dtypes} -> {out} went away")
        ctypes.c_void_p.in_dll(lib, symbol).value = found[0]
        ctypes.c_void_p.in_dll(lib, symbol + "_data").value = found[1] or None


def declarations(loops: Sequence[tuple[str, str, tuple[np.dtype, ...], np.dtype]]) -> str:
    """The module's globals for its loops, set by `bind` when it is loaded."""
    lines = [f"dyn_loop_fn {symbol} = 0; void *{symbol}_data = 0;  /* np.{name} */"
             for symbol, name, _, _ in dict.fromkeys(loops)]
    return "\n".join(lines) + ("\n" if lines else "")
