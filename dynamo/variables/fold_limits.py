"""Limits on Python values computed while tracing: an operation whose result (or whose work) would be
huge runs in Python instead, so that `(a,) * 2**31` or `sum(range(10**12))` never hangs a compile, and so
does one that warns (its warning must come from the user's line, on every call)."""
from __future__ import annotations

import contextlib
import math
import operator
import types
import warnings
from typing import Any, Callable, Iterator

from .. import config
from ..exc import Category, unsupported

_SIZED = (str, bytes, bytearray, tuple, list)


def _repeat_size(seq: Any, count: Any) -> int | None:
    if isinstance(seq, _SIZED) and isinstance(count, int):
        return len(seq) * max(count, 0)
    return None


def _mul(a: Any, b: Any = None, *rest: Any) -> int | None:
    size = _repeat_size(a, b)
    return size if size is not None else _repeat_size(b, a)


def _bits_of_power(base: Any, exponent: Any = None, modulus: Any = None) -> int | None:
    if modulus is not None or not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 0:
        return None
    return (abs(base).bit_length() - 1) * exponent  # 0 for bases -1..1: those never grow


def _bits_of_shift(value: Any, shift: Any = None) -> int | None:
    if isinstance(value, int) and isinstance(shift, int) and value:
        return value.bit_length() + max(shift, 0)
    return None


def _width(text: Any, width: Any = None, *rest: Any) -> int | None:
    return width if isinstance(text, (str, bytes)) and isinstance(width, int) else None


def _factorial_bits(n: Any) -> int | None:
    return n * max(n.bit_length(), 1) if isinstance(n, int) and n > 0 else None


def _count_argument(n: Any = None, *rest: Any) -> int | None:
    return n if isinstance(n, int) and not isinstance(n, bool) else None


# What each operation makes (items, characters or bits), keyed by function or method name:
# the ones whose result or work can grow without bound from small constants.
_ESTIMATES: dict[str, Callable[..., int | None]] = {
    "mul": _mul, "imul": _mul, "__mul__": _mul, "__rmul__": _mul, "__imul__": _mul,
    "pow": _bits_of_power, "ipow": _bits_of_power, "__pow__": _bits_of_power,
    "lshift": _bits_of_shift, "ilshift": _bits_of_shift, "__lshift__": _bits_of_shift,
    "ljust": _width, "rjust": _width, "center": _width, "zfill": _width,
    "factorial": _factorial_bits, "bytes": _count_argument, "bytearray": _count_argument,
}

# Builtins that consume a whole iterable argument: their work is its length.
_CONSUMERS = {tuple, list, set, frozenset, sorted, sum, min, max, any, all, bytes, bytearray, math.prod,
              math.fsum, dict, str.join, bytes.join, operator.countOf, operator.indexOf}


def check_fold_size(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> None:
    """Give up (the call runs in Python, where it makes its huge value or raises MemoryError)
    when calling `fn(*args, **kwargs)` on constants would make more than config.fold_size_limit
    items, characters or bits, or walk an iterable longer than that."""
    limit = config.fold_size_limit
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", "")
    if owner is not None and not isinstance(owner, type) and not isinstance(owner, types.ModuleType):
        args = [owner, *args]  # a bound method ("ab".__mul__): its object is the first operand
    estimate = _ESTIMATES.get(name)
    size = estimate(*args) if estimate is not None and args and not kwargs else None
    if size is None and (fn in _CONSUMERS or getattr(fn, "__func__", None) in _CONSUMERS or name == "join"):
        size = max((len(a) for a in args if isinstance(a, (range, *_SIZED))), default=None)
    if size is not None and size > limit:
        unsupported(Category.UNSUPPORTED_VALUE,
                    f"{name or fn}() would make or walk {size} items (or bits) while tracing, more than "
                    f"config.fold_size_limit ({limit})",
                    "the operation runs in Python; raise dynamo.config.fold_size_limit to fold it")


def check_container_size(length: int, what: str, knob: str = "container_size_limit") -> None:
    """A container with more items than the limit `knob` names is not traced item by item
    (container_size_limit for those read from the frame, fold_size_limit for those made here)."""
    limit = getattr(config, knob)
    if length > limit:
        unsupported(Category.UNSUPPORTED_VALUE, f"{what} of {length} items is longer than config.{knob} ({limit})",
                    f"pass it as an array, or raise dynamo.config.{knob}")


def repeated_length(items: list[Any], count: Any) -> int:
    """The count of `sequence * count` for a sequence tracked item by item, checked against the limit."""
    try:
        times = max(operator.index(count), 0)
    except TypeError:  # `[1] * 3.0`, `[1] * np.float64(3)`: Python raises, at the program's line
        unsupported(Category.EXCEPTION,
                    f"can't multiply sequence by non-int of type '{type(count).__name__}' (TypeError)",
                    "the original code runs and raises it")
    check_container_size(len(items) * times, "a repeated sequence", "fold_size_limit")
    return times


@contextlib.contextmanager
def warnings_run_in_python(what: str) -> Iterator[None]:
    """Around a computation on constants made while tracing (comparing NumPy scalars in max() or
    sorted(), say): if it warns, the trace breaks there and the program's line runs it in Python,
    which warns at that line on every call; folded, the warning came from dynamo's frame, once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    if caught:
        first = caught[0]
        unsupported(Category.EXCEPTION, f"{what} warns ({first.category.__name__}: {first.message})")
