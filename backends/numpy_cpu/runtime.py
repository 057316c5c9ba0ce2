"""What generated code calls at run time: the block loop (serial or on a thread pool) and layout checks.

NumPy releases the GIL inside ufunc loops, so blocks of one kernel run in parallel on a small pool.
"""
from __future__ import annotations

import contextvars
import itertools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

_pool: ThreadPoolExecutor | None = None
_pool_pid = -1
_pool_lock = threading.Lock()

# Scratch sets kept between calls, over all compiled functions: enough for a few hot kernels,
# bounded so that thousands of compiled graphs do not each pin megabytes (the rest are reallocated).
SCRATCH_CACHE_BYTES = 64 << 20
_scratch_cached = [0]


def _forget_pool_in_child() -> None:
    # the child of a fork has none of the pool's threads, and the lock may have been copied held
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)


def _thread_pool(workers: int) -> ThreadPoolExecutor:
    """The process's worker pool, created on first use (and again in a forked child, whose threads are gone)."""
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid() or _pool._max_workers < workers:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dynamo-numpy")
            _pool_pid = os.getpid()
        return _pool


_load = [-1.0, 0.0]  # when the load average was last read (monotonic seconds), and its value


def busy(limit: float | None) -> bool:
    """True if the 1-minute load average is above `limit` (read at most twice a second).

    Our own threads count in it too, so the limit sits a core above the machine's count.
    """
    if limit is None:
        return False
    now = time.monotonic()
    if now - _load[0] > 0.5:
        try:
            _load[1] = os.getloadavg()[0]
        except OSError:  # no load average on this platform: assume a free core
            _load[1] = 0.0
        _load[0] = now
    return _load[1] > limit


def c_ordered(*arrays: Any) -> bool:
    """True if every array's strides run in C order without overlap (what blocking assumes).

    NumPy gives such inputs C-ordered results and sums them in the same order block by block; any
    other layout (transposed, reversed, broadcast with stride 0), and any ndarray subclass, takes
    the kernel's straight code.
    """
    for a in arrays:
        if type(a) is not np.ndarray:
            if isinstance(a, np.ndarray):
                return False  # a subclass (matrix, masked array) has its own ufunc behaviour: straight code
            continue
        if a.flags.c_contiguous:
            continue
        span = 0
        for size, stride in zip(reversed(a.shape), reversed(a.strides)):
            if size == 1:
                continue
            if stride <= 0 or stride < span:
                return False
            span = stride * size
    return True


def errors_raise() -> bool:
    """True if a floating-point error or RuntimeWarning would raise right now (np.errstate, warnings filters).

    A kernel writing straight into a user's array must then not run: it could stop half-way, after
    changing part of the array, where NumPy would raise before the assignment.
    """
    if _extobj_state is None:
        return modes_raise(np.geterr()) or runtime_warnings_raise()
    if _extobj_state.get() is not _modes_seen[0]:
        error_modes()
    return bool(_modes_seen[2]) or runtime_warnings_raise()


def modes_raise(modes: Any) -> bool:
    """Whether NumPy error modes (np.geterr()'s dict) make a floating-point error an exception."""
    return any(mode in ("raise", "call") for mode in modes.values())


# NumPy 2 keeps its error state in a context variable whose value np.errstate replaces on entry
# and restores on exit: the modes are read again only when that object changes (np.geterr()
# costs microseconds, and generated code and guards ask on every call)
_extobj_state: Any = getattr(getattr(getattr(np, "_core", None), "_multiarray_umath", None), "_extobj_contextvar", None)
_modes_seen: list[Any] = [None, None, False]  # [the state object, its modes, whether they raise]


def error_modes() -> dict[str, Any]:
    """np.geterr() now (do not mutate the dict: it is shared until the state changes)."""
    if _extobj_state is None:
        return dict(np.geterr())
    state = _extobj_state.get()
    if state is not _modes_seen[0]:
        modes = np.geterr()
        _modes_seen[:] = [state, modes, modes_raise(modes)]
    return _modes_seen[1]


_filters_seen: list[Any] = [None, -1, None, None, False]  # list, length, first and last item, answer


def runtime_warnings_raise() -> bool:
    """Whether the warnings filters turn a RuntimeWarning into an exception now. Answered again when
    the filter list changes: another list (catch_warnings), another length, first or last item
    (simplefilter and filterwarnings insert at the front, or append)."""
    filters = warnings.filters
    first, last = (filters[0], filters[-1]) if filters else (None, None)
    seen = _filters_seen
    if filters is seen[0] and len(filters) == seen[1] and first is seen[2] and last is seen[3]:
        return bool(seen[4])
    answer = False
    for action, _, category, _, _ in filters:
        if not isinstance(category, type):
            continue
        if issubclass(RuntimeWarning, category) or issubclass(category, RuntimeWarning):
            answer = action == "error"
            break
    seen[:] = [filters, len(filters), first, last, answer]
    return answer


# the order in which NumPy reports the floating-point flags one ufunc call raised
_FLAG_ORDER = ("divide by zero", "overflow", "underflow", "invalid value")


def _flag_rank(caught: warnings.WarningMessage) -> int:
    """Where a warning of one kernel line goes among that line's: NumPy's flag order (blocks may
    raise the flags of one op in another order: negatives in the first, zeros in the second)."""
    text = str(caught.message)
    return next((k for k, flag in enumerate(_FLAG_ORDER) if text.startswith(flag)), len(_FLAG_ORDER))


def warnings_repeat() -> bool:
    """True if a RuntimeWarning may be shown on every occurrence right now (an "always" filter applies).

    The first filter for all RuntimeWarnings decides; an "always" filter before it, for some
    messages or modules only, may apply too.
    """
    for action, message, category, module, lineno in warnings.filters:
        if not isinstance(category, type) or not (issubclass(RuntimeWarning, category) or issubclass(category, RuntimeWarning)):
            continue
        if action == "always":
            return True
        if issubclass(RuntimeWarning, category) and message is None and module is None and not lineno:
            return False
    return False


def overlaps(target: np.ndarray, *arrays: Any) -> bool:
    """True if writing into `target` could change one of `arrays` (a cheap bounds check)."""
    return any(isinstance(a, np.ndarray) and np.may_share_memory(target, a) for a in arrays)


class ScratchSet:
    """One thread's scratch buffers for a kernel: full blocks, and views of them for a shorter last block."""

    def __init__(self, slots: list[tuple[tuple[int, ...], np.dtype, int]], block: int) -> None:
        self.nbytes = 0
        full = []
        self.axes = [axis for _, _, axis in slots]
        for shape, dtype, axis in slots:
            block_shape = tuple(block if i == axis else size for i, size in enumerate(shape))
            buffer = np.empty(block_shape, dtype)
            self.nbytes += buffer.nbytes
            full.append(buffer)
        self.full = tuple(full)
        self._tails: dict[int, tuple[np.ndarray, ...]] = {}

    def tail(self, rows: int) -> tuple[np.ndarray, ...]:
        """The buffers cut to `rows` along their block axes (kept: a loop asks for the same few)."""
        views = self._tails.get(rows)
        if views is None:
            if len(self._tails) >= 8:
                self._tails.clear()
            views = tuple(b[(slice(None),) * axis + (slice(0, rows),)] for b, axis in zip(self.full, self.axes))
            self._tails[rows] = views
        return views


def scratch_key(slots: list[tuple[tuple[int, ...], np.dtype, int]], block: int) -> tuple[Any, ...]:
    """What decides whether two loops can share scratch sets: the shapes and dtypes of their blocks."""
    return tuple((tuple(block if i == axis else n for i, n in enumerate(shape)), dtype, axis)
                 for shape, dtype, axis in slots)


class BlockedLoop:
    """Runs `kernel(lo, hi, scratch, *arrays)` over [0, extent) in blocks; one per kernel, built at compile time.

    Scratch sets are pooled, so concurrent calls of a compiled function never share one; loops of
    one dynamic kernel whose blocks have the same shapes share their pool (`free`).
    """

    def __init__(self, kernel: Callable[..., Any], extent: int, block: int, threads: int,
                 slots: list[tuple[tuple[int, ...], np.dtype, int]], free: list[ScratchSet] | None = None,
                 busy_load: float | None = None) -> None:
        self.kernel, self.extent, self.block, self.threads = kernel, extent, block, threads
        self.busy_load = busy_load
        self.slots = slots
        self.blocks = -(-extent // block)
        self.tail = extent - (self.blocks - 1) * block if self.blocks else 0
        self._free: list[ScratchSet] = [] if free is None else free

    def _acquire(self) -> ScratchSet:
        try:
            scratch = self._free.pop()
        except IndexError:
            return ScratchSet(self.slots, self.block)
        _scratch_cached[0] -= scratch.nbytes
        return scratch

    def _release(self, scratch: ScratchSet) -> None:
        if _scratch_cached[0] + scratch.nbytes <= SCRATCH_CACHE_BYTES:
            _scratch_cached[0] += scratch.nbytes  # a racy count is fine: it only bounds a cache
            self._free.append(scratch)

    def __call__(self, *arrays: Any) -> None:
        if self.blocks <= 1 or not warnings_repeat():
            # One block warns as NumPy does. Under the "default", "once" and "module" filters the
            # registry shows a warning of one kernel line once however many blocks raise it; where
            # warnings raise, the first block raises as NumPy would.
            self._run_blocks(arrays)
            return
        # Under "always", every block would warn again for each fused ufunc, where NumPy warns once
        # per ufunc call: the blocks' warnings are collected and each distinct one is warned once, in
        # the kernel's op order (the kernel instruction running when it was raised: an op that warns
        # only in the second block still warns before the next op), then in the order NumPy gives them.
        seen: dict[tuple, tuple[int, int, int, warnings.WarningMessage]] = {}
        kernel_code = getattr(self.kernel, "__code__", None)

        def collect(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            frame = sys._getframe(1)
            while frame is not None and frame.f_code is not kernel_code:
                frame = frame.f_back  # type: ignore[assignment]
            # the instruction, not the line: kernel lines may carry the user's line numbers
            op_line = frame.f_lasti if frame is not None else 1 << 30
            key = (filename, lineno, category, str(message))
            if key not in seen:
                place = next((p for (f, n, _, _), (o, p, _, _) in seen.items() if (f, n, o) == (filename, lineno, op_line)),
                             len(seen))
                caught = warnings.WarningMessage(message, category, filename, lineno, file, line)
                seen[key] = (op_line, place, _flag_rank(caught), caught)

        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = collect  # called in the thread that warns, with its frames
            self._run_blocks(arrays)
        if seen:
            self._warn_once_each([w for *_, w in sorted(seen.values(), key=lambda item: item[:3])])

    def _warn_once_each(self, caught: list[warnings.WarningMessage]) -> None:
        module_globals = getattr(self.kernel, "__globals__", {})
        registry = module_globals.setdefault("__warningregistry__", {})
        for w in caught:
            # module=None would match no filter (warn_explicit takes it as the module's name)
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                                   module=module_globals.get("__name__") or w.filename, registry=registry,
                                   module_globals=module_globals)

    def _run_blocks(self, arrays: tuple[Any, ...]) -> None:
        if self.threads <= 1 or busy(self.busy_load):
            scratch = self._acquire()
            try:
                self._run(iter(range(self.blocks)), scratch, arrays, [False])
            finally:
                self._release(scratch)
            return
        self._run_parallel(arrays)

    def _run(self, indices: Any, scratch: ScratchSet, arrays: tuple[Any, ...], stop: list[bool]) -> None:
        kernel, block, extent, last = self.kernel, self.block, self.extent, self.blocks - 1
        full, tail = scratch.full, scratch.tail(self.tail)
        for i in indices:
            if i > last or stop[0]:
                return
            lo = i * block
            if i == last:
                kernel(lo, extent, tail, *arrays)
            else:
                kernel(lo, lo + block, full, *arrays)

    def _work(self, counter: Any, arrays: tuple[Any, ...], stop: list[bool]) -> None:
        scratch = self._acquire()
        try:
            self._run(counter, scratch, arrays, stop)
        except BaseException:
            stop[0] = True
            raise
        finally:
            self._release(scratch)

    def _run_parallel(self, arrays: tuple[Any, ...]) -> None:
        counter = itertools.count()  # next() on it is atomic: blocks go to whichever thread is free
        stop = [False]
        pool = _thread_pool(self.threads - 1)
        # the worker runs in a copy of this context, so np.errstate and friends apply there too
        futures: list[Future[None]] = [
            pool.submit(contextvars.copy_context().run, self._work, counter, arrays, stop)
            for _ in range(self.threads - 1)
        ]
        try:
            self._work(counter, arrays, stop)
        finally:
            stop_error: BaseException | None = None
            for future in futures:
                # A worker that has not started yet (its core is busy elsewhere) is cancelled rather
                # than waited for: this thread took its blocks. A started one may be writing: wait.
                if future.cancel():
                    continue
                error = future.exception()
                if error is not None and stop_error is None:
                    stop_error = error
        if stop_error is not None:
            raise stop_error


class DynamicLoop:
    """A kernel of symbolic sizes: `loop(sizes, *arrays)` blocks it for those sizes (the symbols' values).

    `layout(*sizes)` returns (extent, row bytes, row elements, work, scratch slot shapes); the
    resulting BlockedLoop is kept for the last few distinct sizes. Loops whose blocks have the same
    shapes (sizes that differ only along the block axis, past one block) share scratch sets.
    """

    KEEP = 4

    def __init__(self, kernel: Callable[..., Any], layout: Callable[..., Any],
                 decide: Callable[[int, int, int, float], Any], slots: list[tuple[np.dtype, int]],
                 busy_load: float | None = None) -> None:
        self.kernel, self.layout, self.decide, self.slots = kernel, layout, decide, slots
        self.busy_load = busy_load
        self._loops: dict[tuple[int, ...], BlockedLoop] = {}
        self._pools: dict[tuple[Any, ...], list[ScratchSet]] = {}

    def loop_for(self, sizes: tuple[int, ...]) -> BlockedLoop:
        loop = self._loops.get(sizes)
        if loop is not None:
            return loop
        extent, row_bytes, row_elements, work, shapes = self.layout(*sizes)
        b = self.decide(extent, row_bytes, row_elements, work)
        slots = [(shape, dtype, axis) for shape, (dtype, axis) in zip(shapes, self.slots)]
        free = self._pools.setdefault(scratch_key(slots, b.block), [])
        loop = BlockedLoop(self.kernel, extent, b.block, b.threads, slots, free, self.busy_load)
        self._loops[sizes] = loop
        while len(self._loops) > self.KEEP:  # drop the oldest sizes, and scratch no kept loop uses
            try:
                del self._loops[next(iter(self._loops))]
            except (StopIteration, KeyError, RuntimeError):  # another thread got there first
                break
            live = {id(kept._free) for kept in list(self._loops.values())}
            for key, pool in list(self._pools.items()):
                if id(pool) not in live and self._pools.pop(key, None) is not None:
                    _scratch_cached[0] -= sum(scratch.nbytes for scratch in pool)
        return loop

    def __call__(self, sizes: tuple[int, ...], *arrays: Any) -> None:
        self.loop_for(sizes)(*arrays)
