"""Where kernels run: a CUDA GPU through CuPy, or Triton's interpreter on host memory.

Arrays are handed to Triton as objects with the torch-like methods it calls (data_ptr, stride, ...).
"""
from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from .. import settings


class TritonUnavailable(RuntimeError):
    """backend="triton" cannot run here; the message says what is missing."""


def interpreter_requested() -> bool:
    try:
        import triton
        knobs = getattr(triton, "knobs", None)
        if knobs is not None:
            return bool(knobs.runtime.interpret)
    except ImportError:
        pass
    return bool(settings.get("triton_interpret"))


def select_device() -> Device:
    """The interpreter under TRITON_INTERPRET=1, else the GPU; a clear error when neither is there."""
    if importlib.util.find_spec("triton") is None:
        raise TritonUnavailable(
            "backend='triton' needs the triton package, which is not installed: "
            "pip install 'dynamo-numpy[triton]' (or use backend='numpy')")
    if interpreter_requested():
        _check_interpreter_ready()
        return InterpreterDevice()
    problem = _gpu_problem()
    if problem is None:
        return CudaDevice()
    raise TritonUnavailable(
        f"backend='triton' needs a CUDA GPU ({problem}); to run the same kernels on the CPU with "
        "Triton's interpreter, set TRITON_INTERPRET=1 before the first compile (or use backend='numpy')")


def _check_interpreter_ready() -> None:
    """Triton decides at import whether its own library kernels (the combine functions of tl.argmax, ...)
    are interpreted: an import before TRITON_INTERPRET=1 was set leaves them compiled-only."""
    from triton.language import standard
    from triton.runtime.interpreter import InterpretedFunction
    probe = getattr(standard, "_argmax_combine_tie_break_left", None)
    if probe is not None and not isinstance(probe, InterpretedFunction):
        raise TritonUnavailable(
            "TRITON_INTERPRET=1 was set after triton had been imported, so Triton's own library kernels "
            "cannot run in the interpreter: set TRITON_INTERPRET=1 before anything imports triton")


def _gpu_problem() -> str | None:
    if importlib.util.find_spec("cupy") is None:
        return "CuPy, which holds the arrays on the GPU, is not installed"
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device was found"
    except Exception as exc:  # no driver, no device: CuPy raises its own errors
        return f"CUDA is not usable: {exc}"
    return None


# ---------------------------------------------------------------- interpreter (host memory)

class _HostStorage:
    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def data_ptr(self) -> int:
        return int(self.array.__array_interface__["data"][0])

    def cpu(self) -> _HostStorage:
        return self  # already host memory: the interpreter works on it in place

    def copy_(self, other: Any) -> None:
        pass  # the same memory: nothing to copy back


class HostArray:
    """A NumPy array as Triton's interpreter expects a tensor argument; bools travel as int8."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array.view(np.int8) if array.dtype == np.bool_ else array
        self.dtype = self.array.dtype

    def data_ptr(self) -> int:
        return int(self.array.__array_interface__["data"][0])

    def untyped_storage(self) -> _HostStorage:
        return _HostStorage(self.array)

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple[int, ...]:
        return self.array.shape

    def stride(self) -> tuple[int, ...]:
        return tuple(s // self.array.itemsize for s in self.array.strides)

    def new_empty(self, *args: Any, **kwargs: Any) -> HostArray:
        return HostArray(self.array)

    def set_(self, storage: Any, offset: int, size: Any, stride: Any) -> HostArray:
        return self  # the "host copy" the interpreter asks for is this same array


class Device:
    """Moves arrays and prepares kernel arguments for one kind of device."""

    name = "device"
    interpreted = False

    def to_device(self, array: np.ndarray) -> Any:
        raise NotImplementedError

    def to_host(self, array: Any) -> np.ndarray:
        raise NotImplementedError

    def copy_to_host(self, array: Any, host: np.ndarray) -> None:
        raise NotImplementedError

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        raise NotImplementedError

    def is_device_array(self, value: Any) -> bool:
        return False

    def model(self) -> str:
        """What the device is, for caches of choices that differ between devices."""
        return self.name

    def argument(self, array: Any) -> Any:
        raise NotImplementedError

    def address(self, array: Any) -> int:
        """Where the array's first element is, as a kernel's pointer argument."""
        raise NotImplementedError

    @staticmethod
    def strides(array: Any) -> tuple[int, ...]:
        return tuple(int(s) // array.itemsize for s in array.strides)


class InterpreterDevice(Device):
    """TRITON_INTERPRET=1: the "device" is host memory, so nothing is copied."""

    name = "Triton interpreter (CPU)"
    interpreted = True

    def to_device(self, array: np.ndarray) -> np.ndarray:
        return array

    def to_host(self, array: Any) -> np.ndarray:
        return array

    def copy_to_host(self, array: Any, host: np.ndarray) -> None:
        if array is not host:
            np.copyto(host, array)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def argument(self, array: Any) -> HostArray:
        return HostArray(array)


class _CupyArgument:
    """A CuPy array as a Triton pointer argument."""

    def __init__(self, array: Any) -> None:
        self.array = array
        self.dtype = np.dtype(np.int8) if array.dtype == np.bool_ else array.dtype

    def data_ptr(self) -> int:
        return int(self.array.data.ptr)


class CudaDevice(Device):
    """A CUDA GPU; arrays live in CuPy. NumPy inputs are copied in and results copied back;
    CuPy arrays (anything with __cuda_array_interface__) are used in place."""

    name = "CUDA GPU"

    def __init__(self) -> None:
        import cupy
        self.cupy = cupy

    def to_device(self, array: Any) -> Any:
        if self.is_device_array(array):
            return array
        return self.cupy.asarray(array)

    def to_host(self, array: Any) -> np.ndarray:
        if isinstance(array, np.ndarray):
            return array
        return self.cupy.asnumpy(array)

    def copy_to_host(self, array: Any, host: np.ndarray) -> None:
        if array is host:
            return
        if isinstance(array, np.ndarray):
            np.copyto(host, array)
        else:
            np.copyto(host, self.cupy.asnumpy(array))

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.cupy.empty(shape, dtype)

    def is_device_array(self, value: Any) -> bool:
        # CuPy's own arrays by type: the interface attribute is a property that builds a dict
        return type(value) is self.cupy.ndarray or hasattr(value, "__cuda_array_interface__")

    def argument(self, array: Any) -> _CupyArgument:
        return _CupyArgument(array)

    def address(self, array: Any) -> int:
        return int(array.data.ptr)

    def model(self) -> str:
        import triton
        device = self.cupy.cuda.Device()
        props = self.cupy.cuda.runtime.getDeviceProperties(device.id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        return f"{name} (sm_{device.compute_capability}), triton {triton.__version__}"
