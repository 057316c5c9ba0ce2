"""Loop nodes (fx_ir ForLoop) under backend "c": one C loop where the body lowers (loop_codegen.py),
else each iteration runs the body's own compiled program (one per layout of the body's arguments).
"""
from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ...fx_ir import ForLoop, GraphModule, WhileLoop
from ..kernel_ir import specialize
from ..numpy_cpu import numpy_backend
from ..numpy_cpu.loop_source import loop_function, while_function
from .blas import numpy_ddot
from .choose import FasterOf
from .loop_codegen import Refused, loop_source
from .loop_reductions import NO_IDENTITY

log = logging.getLogger("dynamo.output_code")


PLAIN_TYPES = frozenset({int, float, bool, complex, type(None)})


def signature(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a body compiled for these arguments relies on: array shapes and dtypes, other types.
    (Computed on every iteration of a Python loop over a compiled body: Python's numbers are asked
    first, then NumPy's arrays; dtypes are keys as they are.)"""
    return tuple([t if (t := type(a)) in PLAIN_TYPES else (a.shape, a.dtype)
                  if t is np.ndarray or isinstance(a, np.generic) or hasattr(a, "shape") and hasattr(a, "dtype") else t
                  for a in args])


def kinds(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a C loop compiled for these values relies on: the rank and dtype of arrays, other types."""
    return tuple((np.ndarray, v.ndim, v.dtype) if isinstance(v, np.ndarray) else type(v) for v in values)


class CompiledBody:
    """`run_body` of a ForLoop: the body compiled by `compile_graph` per argument signature, for the
    first MAX_LAYOUTS signatures; past them the body's own NumPy code (its graph's forward) runs.

    Why: a body's arguments may change shape every iteration (a slice `A[i, :i]` computed by an outer
    loop and captured by this one): one C compile per iteration took a symm-like nest 15 minutes."""

    MAX_LAYOUTS = 2

    def __init__(self, body: GraphModule, compile_graph: Callable[[GraphModule, list[Any]], Any]) -> None:
        self.body = body
        self.compile_graph = compile_graph
        self.programs: dict[tuple[Any, ...], Any] = {}

    def __call__(self, *args: Any) -> Any:
        key = signature(args)
        program = self.programs.get(key)
        if program is None:
            if len(self.programs) >= self.MAX_LAYOUTS:
                return self.body.forward(*args)
            program = self.programs[key] = self.compile_graph(specialize(self.body, list(args)), list(args))
        return program(*args)


def compiled_loop(loop: ForLoop, compile_graph: Callable[[GraphModule, list[Any]], Any]) -> ForLoop:
    return loop.with_body(CompiledBody(loop.body, compile_graph))


class NumpyLoop:
    """The whole loop as the numpy backend runs it, made on its first call: the body (nested loops
    included) as the numpy backend's code, inlined in one Python `for` or `while` statement.

    Why: where the C emitter refuses a loop, each iteration of the Python loop over the body compiled
    by backend "c" costs a call chain (signature, runner, its nested loops' own), which the numpy
    backend's inlined loop does not pay: scattering_self_energies' refused nest made 882 body calls
    per kernel call, 3x slower than plain NumPy, where the numpy backend is as fast as plain."""

    def __init__(self, loop: ForLoop | WhileLoop) -> None:
        self.loop = loop
        self.run: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        if self.run is None:
            self.run = self.make()
        return self.run(*args)

    def make(self) -> Callable[..., Any]:
        # a copy of the body module: the numpy backend sets its nested loops' compiled bodies on it
        module = GraphModule(self.loop.body, self.loop.body.graph.copy())
        body = numpy_backend(module, [])
        inline = (loop_function if isinstance(self.loop, ForLoop) else while_function)(body, self.loop.num_carried)
        return inline if inline is not None else partial(self.loop.iterate, body)


class NativeLoop:
    """`run_loop` of a ForLoop under backend "c": the whole loop as one C function (loop_codegen.py)
    per kinds of its carried and captured values; where the body does not lower (the reason is logged
    and kept in `refused`), the Python loop over the body compiled by backend "c" or the numpy
    backend's inlined loop, whichever its first calls time faster (`python_run`)."""

    def __init__(self, loop: ForLoop | WhileLoop, fallback: Callable[..., Any], build: Callable[[str, list[Any]], int]) -> None:
        self.loop = loop
        self.fallback = fallback  # the per-iteration Python loop: (start, stop, step, *values) -> tuple
        self.build = build  # (C source, NumPy loops it calls) -> the address of its function `loop0`
        self.compiled: dict[tuple[Any, ...], tuple[Any, int] | None] = {}
        self.refused: dict[tuple[Any, ...], str] = {}
        self.native_runs = 0
        self.paused = False  # whether the last run of a while loop returned before its end
        self.python_run: FasterOf | None = None

    def refused_run(self) -> FasterOf:
        """The loop where C refuses it: the per-iteration calls of c's compiled body (its nested
        loops may be C loops) or the numpy backend's inlined loop, timed in turn."""
        if self.python_run is None:
            # process CPU time: wall time on a loaded machine is mostly other processes' turns
            self.python_run = FasterOf(self.fallback, NumpyLoop(self.loop), ("c", "numpy"), time.process_time)
        return self.python_run

    def __call__(self, start: int, stop: int, step: int, *values: Any) -> tuple[Any, ...]:
        key = kinds(values)
        if key in self.compiled:
            entry = self.compiled[key]
        else:
            entry = self.compiled[key] = self.compile(key, values)
        if entry is None:
            return self.refused_run()(start, stop, step, *values)
        if not self.native_allowed(start, stop, step, values, entry[0]):
            return self.fallback(start, stop, step, *values)
        writer, address = entry
        return self.run(writer, address, [start, stop, step], values, len(range(start, stop, step)) == 0)

    def compile(self, key: tuple[Any, ...], values: tuple[Any, ...]) -> tuple[Any, int] | None:
        try:
            writer = loop_source(self.loop, "loop0", values)
        except Refused as why:
            self.refused[key] = str(why)
            log.info("c backend: %s runs as a Python loop over its compiled body: %s", self.loop, why)
            return None
        return writer, self.build(writer.source, writer.numpy_loops)

    def native_allowed(self, start: int, stop: int, step: int, values: tuple[Any, ...], writer: Any) -> bool:
        """Whether the C loop gives exactly the Python loop's behaviour on this call."""
        if step == 0 or any(type(n) is not int or not -INT_LIMIT < n < INT_LIMIT for n in (start, stop, step)):
            return False  # range() raises, or i + step could leave int64
        for position in writer.int_slots:
            if not -INT_LIMIT < values[position] < INT_LIMIT:
                return False
        for name, position in zip(writer.array_names, writer.arrays):
            if name in writer.written and not values[position].flags.writeable:
                return False  # NumPy raises at the store: the Python loop does it at the same point
        if (writer.ops or any(writer.vec.dots.values())) and not warnings_only():
            return False  # an errstate that raises or calls stops at the op: only the Python loop can
        if writer.vec.used and not all(values[p].flags.aligned and all(s % values[p].itemsize == 0
                                                                       for s in values[p].strides)
                                       for p in writer.arrays):
            return False  # NumPy copies such arrays before a dot; slices assume whole items' steps
        for var, position in zip(writer.array_vars, writer.arrays):
            if var in writer.vec.contiguous and not values[position].flags.c_contiguous:
                return False  # NumPy sums another layout in another order
        return True

    def run(self, writer: Any, address: int, head: list[int], values: tuple[Any, ...], empty: bool) -> tuple[Any, ...]:
        """The C loop on these values (`head`: the int slots before them), its errors raised and flags
        warned as NumPy's; the carried values after it (`empty`: it runs no iteration)."""
        ddot = numpy_ddot()
        ints = np.array([*head, *(values[p] for p in writer.int_slots),
                         ddot.address if ddot is not None else 0, 0, 0], dtype=np.int64)
        floats = np.array([*(values[p] for p in writer.float_slots), 0.0], dtype=np.float64)
        arrays = [values[p] for p in writer.arrays]
        mask = 3 | sum(1 << (2 + n) for n, name in enumerate(writer.array_names) if name in writer.written)
        from .runtime import call_native_function  # runtime imports this module

        status = call_native_function()(address, mask, ints, floats, *arrays)
        self.native_runs += 1
        error = status & 7
        if error == 1:
            raise IndexError(f"index {ints[0]} is out of bounds for axis {ints[1]} with size {ints[2]}")
        if error == 2:
            raise OverflowError("an int of the loop passed 64 bits inside backend c's C loop")
        if error == 3:
            raise ValueError(f"operands could not be broadcast together with shapes ({ints[0]},) ({ints[1]},)")
        if error == 4:
            raise MemoryError("backend c's C loop could not allocate a scratch vector")
        if error == 6:
            raise ValueError(f"zero-size array to reduction operation {NO_IDENTITY[ints[0]]} which has no identity")
        self.paused = error == 5  # a while loop that ran 50 ms: called again (Python sees signals between)
        for flags, ops in ((int(ints[writer.dot_slot + 1]), ["dot"]), (int(ints[writer.dot_slot + 2]), ["matmul"]),
                           (status >> 3, writer.ops)):
            if flags and ops:
                report_flags(flags, ops)
        if empty:
            return tuple(values[:self.loop.num_carried])
        results = []
        int_slot = {p: 3 + n for n, p in enumerate(writer.int_slots)}
        float_slot = {p: n for n, p in enumerate(writer.float_slots)}
        for k, kind in enumerate(writer.result_types):
            if kind is int:
                results.append(int(ints[int_slot[k]]))
            else:
                results.append(kind(floats[float_slot[k]]))
        return tuple(results)


class NativeWhile(NativeLoop):
    """`run_loop` of a WhileLoop under backend "c": the whole loop as one C `while` where its body
    lowers, else the Python loop over the compiled body."""

    def __call__(self, condition: Any, *values: Any) -> tuple[Any, ...]:
        go = bool(condition)  # Python's test of the first condition, as the while statement makes it
        key = kinds(values)
        if key in self.compiled:
            entry = self.compiled[key]
        else:
            entry = self.compiled[key] = self.compile(key, values)
        if entry is None:
            return self.refused_run()(go, *values)
        if not self.native_allowed(0, 1, 1, values, entry[0]):
            return self.fallback(go, *values)
        writer, address = entry
        while True:
            carried = self.run(writer, address, [int(go), 0, 0], values, not go)
            if not self.paused:
                return carried
            values, go = (*carried, *values[len(carried):]), True


INT_LIMIT = 2 ** 62


def warnings_only() -> bool:
    """NumPy's errstate either ignores or warns, and no warnings filter turns a RuntimeWarning into an
    error or shows every occurrence: reporting a C loop's flags once after it is then what the user sees."""
    if any(mode not in ("ignore", "warn") for mode in np.geterr().values()):
        return False
    for action, _, category, _, _ in warnings.filters:
        if issubclass(RuntimeWarning, category) and action in ("error", "always"):
            return False
    return True


def report_flags(flags: int, ops: list[str]) -> None:
    """Each raised flag as NumPy's scalar arithmetic words it, for the first op that can raise it."""
    from .runtime import FP_CATEGORIES  # runtime imports this module

    modes: dict[str, Any] = dict(np.geterr())
    for (category, label, _), bit in zip(FP_CATEGORIES, (FE_BITS["divide"], FE_BITS["over"], FE_BITS["under"],
                                                           FE_BITS["invalid"])):
        if not flags & bit or modes[category] != "warn":
            continue
        op = next((o for o in ops if o.endswith("divide")), ops[0]) if category == "divide" else ops[0]
        warnings.warn(f"{label} encountered in {op}", RuntimeWarning, stacklevel=4)


# glibc's x86-64 FE_* bits (MXCSR's); what fetestexcept returns in the generated loop
FE_BITS = {"invalid": 0x01, "divide": 0x04, "over": 0x08, "under": 0x10}


def native_loop(loop: ForLoop | WhileLoop, compile_graph: Callable[[GraphModule, list[Any]], Any],
                build: Callable[[str, list[Any]], int]) -> ForLoop | WhileLoop:
    """`loop` running as a C loop where its body lowers, else as the Python loop over its compiled body."""
    body = CompiledBody(loop.body, compile_graph)
    kind = NativeLoop if isinstance(loop, ForLoop) else NativeWhile
    return loop.with_body(body, kind(loop, partial(loop.iterate, body), build))


class LoopNote:
    """explain()'s line on one loop node under backend "c": whether it ran as a C loop or as a Python
    loop over its compiled body (and why), which is known only once it has run."""

    def __init__(self, loop: ForLoop | WhileLoop) -> None:
        self.loop = loop

    def __str__(self) -> str:
        where = f"the loop from {self.loop.description}" if self.loop.description else "a loop node"
        native = self.loop.run_loop
        assert isinstance(native, NativeLoop)
        if native.refused:
            return f"{where} runs as a Python loop over its compiled body: {next(iter(native.refused.values()))}"
        entries = [e for e in native.compiled.values() if e is not None]
        if entries and native.native_runs:
            nested = max(e[0].nested for e in entries)
            return f"{where} runs as one C loop" + (f" ({nested} nested loops in it)" if nested else "")
        if entries:
            return f"{where} is a C loop; its calls so far ran the Python loop (inputs the C loop does not take)"
        return f"{where} becomes a C loop at its first run where its body lowers"


def loop_notes(run: Any) -> list[LoopNote]:
    """A LoopNote for each loop node of the graph that `run` (backend c's runner) calls."""
    return [LoopNote(value) for value in getattr(run, "__globals__", {}).values()
            if isinstance(value, (ForLoop, WhileLoop)) and isinstance(value.run_loop, NativeLoop)]


def loop_counts(run: Any) -> tuple[int, int]:
    """(loops that ran as C, nested ones included; loops that ran as Python loops over a compiled body)
    in what backend "c" returned for one graph (benchmarks and tests count them)."""
    native = python = 0
    for candidate in getattr(run, "candidates", ()):  # choose.FasterOf: each graph's c and numpy versions
        inner_native, inner_python = loop_counts(candidate)
        native, python = native + inner_native, python + inner_python
    for value in getattr(run, "__globals__", {}).values():
        if not isinstance(value, (ForLoop, WhileLoop)) or not isinstance(value.run_loop, NativeLoop):
            continue
        entries = [e for e in value.run_loop.compiled.values() if e is not None]
        if entries and value.run_loop.native_runs:
            native += 1 + max(e[0].nested for e in entries)
        if value.run_loop.refused:
            python += 1
            for program in getattr(value.run_body, "programs", {}).values():
                inner_native, inner_python = loop_counts(program)
                native, python = native + inner_native, python + inner_python
    return native, python
