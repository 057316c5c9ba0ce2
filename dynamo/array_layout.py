"""Where an ndarray keeps its ndim, shape and dtype in its C struct (NumPy's documented
PyArrayObject_fields), verified on live arrays at import, so that a guard on an array input is
a few word compares in C (the `struct_is` guard instruction) while csrc stays NumPy-agnostic."""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

_WORD = ctypes.sizeof(ctypes.c_void_p)
# PyObject_HEAD (refcount, type), then: char *data; int nd; npy_intp *dimensions;
# npy_intp *strides; PyObject *base; PyArray_Descr *descr; int flags
_ND = 3 * _WORD
_DIMENSIONS = 4 * _WORD
_STRIDES = 5 * _WORD
_DESCR = 7 * _WORD


def _layout_holds() -> bool:
    """Read the fields of a few arrays through the offsets and compare with the Python API."""
    samples: list[np.ndarray] = [np.zeros((3, 4, 5), np.float32), np.arange(7), np.ones(()), np.zeros((2, 0)), np.ones((4, 6))[::2, 1:]]
    for array in samples:
        address = id(array)
        if ctypes.c_int.from_address(address + _ND).value != array.ndim:
            return False
        if ctypes.c_void_p.from_address(address + _DESCR).value != id(array.dtype):
            return False
        for offset, expected in ((_DIMENSIONS, array.shape), (_STRIDES, array.strides)):
            pointer = ctypes.c_void_p.from_address(address + offset).value
            if array.ndim and (pointer is None or tuple((ctypes.c_ssize_t * array.ndim).from_address(pointer)) != expected):
                return False
    return np.ndarray.__basicsize__ >= _DESCR + _WORD


LAYOUT_VERIFIED = _layout_holds()


def struct_spec(array: np.ndarray) -> Any | None:
    """The struct_is spec `exact ndarray, same ndim, shape and dtype object as `array``, or None
    when the layout could not be verified (then guards read .dtype and .shape as attributes)."""
    if type(array) is not np.ndarray:
        return None
    return layout_spec(array.shape, array.dtype)


def layout_spec(shape: tuple[int, ...], dtype: np.dtype) -> Any | None:
    """struct_spec from a shape and the dtype object itself (what the guards record), or None."""
    if not LAYOUT_VERIFIED:
        return None
    return (np.ndarray, ((_ND, "int", len(shape)), (_DIMENSIONS, "ssize_array", tuple(shape)), (_DESCR, "ptr", dtype)))



def pattern_layout_spec(pattern: tuple[int, ...], dtype: np.dtype) -> Any | None:
    """struct_is spec for an array with dynamic sizes: exact ndarray, this ndim and dtype object,
    and sizes matching `pattern` (an int: that size; -m: any size >= m, see dynamo/shapes)."""
    if not LAYOUT_VERIFIED:
        return None
    return (np.ndarray, ((_ND, "int", len(pattern)), (_DIMENSIONS, "ssize_pattern", tuple(pattern)),
                         (_DESCR, "ptr", dtype)))


def sizes_spec(program: tuple[int, ...]) -> Any | None:
    """Spec of the `sizes` guard instruction (a relation between array sizes, run in C): ndarray,
    where ndim and the shape pointer sit, and the program; None without a verified layout."""
    if not LAYOUT_VERIFIED:
        return None
    return (np.ndarray, _ND, _DIMENSIONS, tuple(program))
