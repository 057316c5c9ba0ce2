"""Runs a generated program plain and compiled (three calls each) and compares what each call left:
return value, arguments, globals, stdout, exception and warnings, bit for bit."""
from __future__ import annotations

import contextlib
import io
import linecache
import logging
import re
import signal
import struct
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import dynamo

CALL_NAMES = ("first call", "cached call", "call with new shapes/dtypes/values")
CALL_SECONDS = 30          # of the process's CPU time: a machine at load 12 took 60 s of wall time for 14 s of it
CALL_WALL_SECONDS = 100    # and of wall time (a compiler in a child process, or a call that waits); below the
                           # campaign watchdog's 120 s without a word


class Timeout(BaseException):
    """A call ran past CALL_SECONDS (a BaseException: the program's `except Exception` must not catch it)."""


@dataclass
class CallRecord:
    result: Any
    arguments: Any
    globals: Any
    stdout: str
    exception: tuple | None
    warnings: list[tuple]
    internal: list[str] = field(default_factory=list)


@dataclass
class Failure:
    seed: int
    backend: str
    call: int
    what: str          # "return", "arguments", "globals", "stdout", "exception", "warnings", "internal"
    detail: str
    source: str

    @property
    def signature(self) -> str:
        """What the minimizer keeps failing: the compared field (and the exception types)."""
        if self.what != "exception":
            return self.what
        # the exception types only: messages name lines, which the minimizer changes
        compiled, _, plain = self.detail.partition(" != ")
        kinds = [re.match(r"\('(\w+)'", side) for side in (compiled, plain)]
        return "exception:" + "/".join(k.group(1) if k else "None" for k in kinds)

    def report(self) -> str:
        detail = self.detail if len(self.detail) <= 1200 else self.detail[:600] + " ... " + self.detail[-600:]
        return (f"seed {self.seed}, backend {self.backend}, {CALL_NAMES[self.call]}: {self.what} differs\n"
                f"  {detail}\n--- program ---\n{self.source}")


def backend_callable(name: str) -> Any:
    """The backend for a fuzzer backend name; "numpy-tiny" is the numpy backend with tiny blocks and
    two threads (every fusable chain becomes a blocked kernel, as for large arrays)."""
    if name == "numpy-tiny":
        from dynamo.backends.numpy_cpu import Machine, NumpyBackend

        return NumpyBackend(Machine(cache_bytes=2048, cores=2, min_kernel_bytes=0, min_block_elements=1,
                                    thread_work=0), strict=True)
    return name


class _InternalErrors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "internal error" in record.getMessage():
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                text += f": {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
            self.messages.append(text)


def _on_alarm(signum: int, frame: Any) -> None:
    if signum == signal.SIGPROF:
        raise Timeout(f"call ran past {CALL_SECONDS} s of CPU time")
    raise Timeout(f"call ran past {CALL_WALL_SECONDS} s")


def execute(source: str, arguments: Callable[[int], list[Any]], backend: Any | None, tag: str) -> list[CallRecord]:
    """Three calls of `f` from `source` (fresh module); compiled for `backend` unless it is None."""
    filename = f"<fuzz-{tag}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"fuzz_{tag}"}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the generated program
    fn = namespace["f"]
    if backend is not None:
        fn = dynamo.compile(fn, backend=backend)
    records = []
    internal = _InternalErrors()
    logger = logging.getLogger("dynamo")
    logger.addHandler(internal)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    previous_prof = signal.signal(signal.SIGPROF, _on_alarm)
    try:
        for call in range(3):
            args = arguments(call)
            out = io.StringIO()
            result, error = None, None
            with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
                warnings.simplefilter("always")
                signal.alarm(CALL_WALL_SECONDS)
                signal.setitimer(signal.ITIMER_PROF, CALL_SECONDS)
                try:
                    result = fn(*args)
                except Exception as exc:  # noqa: BLE001 - the program's own exception is compared
                    error = exc
                finally:
                    signal.setitimer(signal.ITIMER_PROF, 0)
                    signal.alarm(0)
            records.append(CallRecord(
                result=digest(result, args),
                arguments=digest(args, args),
                globals=digest(user_globals(namespace), args),
                stdout=out.getvalue(),
                exception=None if error is None else (type(error).__name__, str(error)),
                warnings=[(w.category.__name__, str(w.message), w.filename, w.lineno) for w in caught],
                internal=list(internal.messages)))
            internal.messages.clear()
    finally:
        signal.signal(signal.SIGALRM, previous)
        signal.signal(signal.SIGPROF, previous_prof)
        logger.removeHandler(internal)
    return records


def user_globals(namespace: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in namespace.items() if k.startswith("G_")}


# ---- digests: everything observable about a value, taken right after the call ---------------------------
def digest(value: Any, args: list[Any], seen: dict[int, str] | None = None, path: str = "") -> Any:
    seen = {} if seen is None else seen
    if isinstance(value, (np.ndarray, list, dict, tuple)) and not isinstance(value, np.generic):
        if id(value) in seen:
            return ("same object as", seen[id(value)])
        seen[id(value)] = path or "value"
    if isinstance(value, np.ndarray):
        alias = next((f"argument {k}" for k, a in enumerate(args) if a is value), None)
        if alias is None:
            shared = [k for k, a in enumerate(args) if isinstance(a, np.ndarray) and np.shares_memory(a, value)]
            alias = f"view of argument {shared}" if shared else ("owns its data" if value.base is None else "a view")
        flags = value.flags
        return ("ndarray", value.dtype.str, value.shape, value.strides, flags.c_contiguous, flags.f_contiguous,
                flags.writeable, alias, value.copy(order="K"))
    if isinstance(value, np.generic):
        return ("numpy scalar", type(value).__name__, value.dtype.str, np.array(value))
    if isinstance(value, float):
        return ("float", "nan" if value != value else struct.pack("<d", value))
    if isinstance(value, complex):
        return ("complex", digest(value.real, args), digest(value.imag, args))
    if isinstance(value, (bool, int, str, type(None), bytes)):
        return (type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [digest(v, args, seen, f"{path}[{k}]") for k, v in enumerate(value)])
    if isinstance(value, dict):
        return ("dict", [(digest(k, args), digest(v, args, seen, f"{path}[{k!r}]")) for k, v in value.items()])
    if isinstance(value, BaseException):
        return ("exception", type(value).__name__, str(value))
    if isinstance(value, type):
        return ("class", value.__qualname__)
    if type(value).__module__.startswith("fuzz_"):   # an instance of the program's class: its attributes,
        # read without running the program's __getattr__ or taking a __call__ for a function
        return ("object", type(value).__qualname__,
                digest(object.__getattribute__(value, "__dict__"), args, seen, path + ".__dict__"))
    if callable(value):
        return ("callable", type(value).__name__, getattr(value, "__qualname__", ""))
    return ("object", type(value).__name__, digest(getattr(value, "__dict__", None), args, seen, path + ".__dict__"))


def _array_difference(a: np.ndarray, b: np.ndarray, tolerant: bool) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return True
    if a.dtype.kind in "fc":
        if tolerant:
            rtol = {2: 2e-3, 4: 2e-5}.get(a.dtype.itemsize // (2 if a.dtype.kind == "c" else 1), 1e-12)
            return not np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)
        same_nan = np.array_equal(np.isnan(a), np.isnan(b))
        a_bits, b_bits = np.where(np.isnan(a), 0, a), np.where(np.isnan(b), 0, b)
        return not same_nan or a_bits.tobytes() != b_bits.tobytes()
    return a.tobytes() != b.tobytes()


def difference(plain: Any, compiled: Any, tolerant: bool = False, path: str = "") -> str | None:
    """Where two digests differ (None if they do not): the first difference, readable."""
    if isinstance(plain, np.ndarray) and isinstance(compiled, np.ndarray):
        if _array_difference(plain, compiled, tolerant):
            return f"{path or 'value'}: values {np.array2string(compiled, threshold=20)} != {np.array2string(plain, threshold=20)} (compiled != plain)"
        return None
    if isinstance(plain, (tuple, list)) and isinstance(compiled, (tuple, list)) and len(plain) == len(compiled):
        if plain and plain[0] == "ndarray" and compiled[0] == "ndarray":
            labels = ["dtype", "shape", "strides", "C-contiguous", "F-contiguous", "writeable", "aliasing"]
            for label, p, c in zip(labels, plain[1:8], compiled[1:8]):
                if p != c:
                    return f"{path or 'value'}: {label} {c} != {p} (compiled != plain)"
            return difference(plain[8], compiled[8], tolerant, path)
        for k, (p, c) in enumerate(zip(plain, compiled)):
            found = difference(p, c, tolerant, f"{path}.{k}" if path else str(k))
            if found:
                return found
        return None
    if type(plain) is not type(compiled) or plain != compiled:
        if tolerant and isinstance(plain, bytes) and isinstance(compiled, bytes) and len(plain) == 8 == len(compiled):
            p, c = struct.unpack("<d", plain)[0], struct.unpack("<d", compiled)[0]
            if abs(p - c) <= 1e-12 * max(1.0, abs(p)):
                return None
        return f"{path or 'value'}: {_short(compiled)} != {_short(plain)} (compiled != plain)"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:300] + "..."


def compare(plain: list[CallRecord], compiled: list[CallRecord], tolerant: bool = False) -> tuple[int, str, str] | None:
    """The first difference between the two runs: (call, field, detail)."""
    for call, (p, c) in enumerate(zip(plain, compiled)):
        if p.exception != c.exception:
            return call, "exception", f"{c.exception} != {p.exception} (compiled != plain)"
        for what in ("result", "arguments", "globals"):
            found = difference(getattr(p, what), getattr(c, what), tolerant)
            if found:
                return call, "return" if what == "result" else what, found
        if p.stdout != c.stdout:
            return call, "stdout", f"{c.stdout[-400:]!r} != {p.stdout[-400:]!r} (compiled != plain)"
        if [w[:2] for w in p.warnings] != [w[:2] for w in c.warnings]:
            return call, "warnings", f"{[w[:2] for w in c.warnings]} != {[w[:2] for w in p.warnings]} (compiled != plain)"
        if [w[2:] for w in p.warnings] != [w[2:] for w in c.warnings]:
            return call, "warning location", f"{[w[2:] for w in c.warnings]} != {[w[2:] for w in p.warnings]} (compiled != plain)"
        if c.internal:
            return call, "internal", c.internal[0][:400]
    return None


def check_source(source: str, arguments: Callable[[int], list[Any]], backend: str, seed: int = 0) -> Failure | None:
    """Runs `source` plain and compiled; the first difference as a Failure, or None."""
    plain = execute(source, arguments, None, str(seed))
    try:
        compiled = execute(source, arguments, backend_callable(backend), str(seed))
    finally:
        dynamo.reset()
    found = compare(plain, compiled, tolerant=backend == "triton")
    if found is None:
        return None
    call, what, detail = found   # whole: the known classes read both sides (report() shortens it)
    return Failure(seed, backend, call, what, detail, source)
