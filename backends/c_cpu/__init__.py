"""The "c" backend: a graph becomes fused C loops from the shared kernel IR, compiled once by the system
compiler and cached on disk, with NumPy code for the nodes that do not lower exactly.

Stages: kernels (kernel IR program) -> c_src (one C module) -> callable; each logged to
`dynamo.output_code` at DEBUG (DYNAMO_LOGS=output_code).
"""
from __future__ import annotations

import ctypes
import logging
import operator
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from ...fx_ir import ForLoop, GraphModule, TensorMeta
from ...fx_ir.user_lines import graph_lines
from ..kernel_ir import Expr, HostStep, Op, Program, Reduce, lower_graph, specialize
from ..kernel_ir.result_layout import ResultLayouts
from ..numpy_cpu import EagerOnDevice, device_library, numpy_backend
from .. import settings
from ..registry import register_backend
from . import diskcache
from .choose import FasterOf
from . import ufunc_loops
from .codegen import CALL_MACROS, CHECK_MACRO, KernelSource, KernelWriter, SizeSource
from .pairwise import refuse_sum
from .loops import loop_notes
from .emitters import PRELUDE, SUPPORTED_OPS, refuse_op, supported_dtype, uses_numpy_loop, with_nan_safe_helpers
from .rewrites import slice_updates_as_stores
from .runtime import FlagReporter, make_runner
from .toolchain import CCompilerUnavailable, Toolchain, toolchain

log = logging.getLogger("dynamo.output_code")

__all__ = ["CBackend", "CCompilerUnavailable", "c_backend"]

FE_BITS_SOURCE = "const int dyn_fe_bits[4] = {FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID};\n"


def refuse(expr: Expr, last_strides: dict[str, str] | None = None, blas: frozenset[str] = frozenset()) -> str | None:
    """Why an expression cannot be in a C kernel (None: it can, with NumPy's exact bits).
    `last_strides`: each graph input's last stride symbol -> its name (float sums along it are exact);
    `blas`: the graph's matmul/dot nodes (NumPy sums their floats in BLAS's order, not pairwise)."""
    if isinstance(expr, Op):
        return refuse_op(expr.name, [a.dtype for a in expr.args], expr.dtype)
    if isinstance(expr, Reduce):
        if not supported_dtype(expr.dtype) or not supported_dtype(expr.body.dtype):
            return f"dtype {expr.dtype} has no C kernel support"
        if "c" in (expr.dtype.kind, expr.body.dtype.kind):
            return "a reduction of complex values keeps NumPy's order as NumPy code"
        if expr.kind == "sum" and expr.dtype.kind == "f" and expr.origin in blas:
            return "a float matmul keeps BLAS's summation order as NumPy code"
        if expr.kind == "sum" and expr.dtype.kind == "f" and last_strides is not None:
            return refuse_sum(expr, last_strides)  # NumPy's add loop sums the rows (pairwise.py)
        if expr.kind in ("sum", "prod") and expr.dtype.kind == "f":
            # NumPy adds floats pairwise over the contiguous axis (and BLAS orders matmul): left to NumPy
            return f"a float {expr.kind} keeps NumPy's summation order as NumPy code"
        return None
    if not supported_dtype(expr.dtype):
        return f"dtype {expr.dtype} has no C kernel support"
    return None


class Module:
    """One loaded shared object: its kernels' addresses, the flag bits, its thread knobs."""

    def __init__(self, path: str, sources: list[KernelSource] | None = None) -> None:
        self.lib = ctypes.CDLL(path)
        self.path = path
        self.fe_bits = tuple((ctypes.c_int * 4).in_dll(self.lib, "dyn_fe_bits"))
        # NumPy's loops the kernels call: their addresses in this process, set once
        ufunc_loops.bind(self.lib, [(lp.symbol, lp.name, lp.arg_dtypes, lp.out) for lp in module_loops(sources or [])])

    def address(self, name: str) -> int:
        return int(ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value or 0)

    def configure(self) -> None:
        ctypes.c_int.in_dll(self.lib, "dyn_threads").value = int(settings.get("c_threads"))
        ctypes.c_int64.in_dll(self.lib, "dyn_parallel_work").value = int(settings.get("c_parallel_work"))
        # a core above the machine's count: our own threads count in the load average too
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        busy = float(cores + 1) if int(settings.get("c_threads")) == 0 else 1e9
        ctypes.c_double.in_dll(self.lib, "dyn_busy_load").value = busy


class CBackend:
    """`backend(graph_module, example_inputs) -> callable` (a generated Python function with `.program`,
    `.c_source`, `.notes`, `.kernel_count`, `.compiled` (whether this call ran the compiler))."""

    compiles_loops = True  # loop nodes become C loops: the frontend keeps nested short loops as loops

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.compiles = 0  # modules this process compiled (a disk-cache hit compiles none)
        # a child forked while a thread compiled here would find the lock held forever
        os.register_at_fork(after_in_child=self._new_lock_in_child)

    def _new_lock_in_child(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, graph_module: GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        library = device_library(graph_module, example_inputs)
        if library is not None:
            return EagerOnDevice(graph_module, library)
        start = time.perf_counter()
        tc = toolchain(diskcache.cache_root())  # raises CCompilerUnavailable first: nothing else to do
        try:
            program = self.kernels(graph_module, example_inputs)
            sizes = size_sources(program)
            sources = [KernelWriter(k, program.buffers, sizes).write() for k in program.kernels]
            src = module_source(sources)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("[c_src]\n%s", src)
            module, compiled = self.load(src, tc, sources)
            addresses = [module.address(s.name) for s in sources]
            checked = self.checked_variants(program, sizes, tc)
            by_name, by_position = graph_lines(graph_module)
            reporter = FlagReporter(program, sources, checked, module.fe_bits, by_position)
            run = make_runner(program, sources, sizes, addresses, reporter, self,
                              other_code(graph_module, example_inputs), by_name, ResultLayouts(graph_module))
        except (NotImplementedError, TypeError, ValueError) as why:
            if not has_symbolic_sizes(graph_module):
                raise
            log.info("c backend: kernels made for these sizes, not every size: %s", why)
            return self(specialize(graph_module, example_inputs), example_inputs)
        run.program = program
        run.c_source = src
        run.module = module
        run.compiled = compiled
        run.kernel_count = len(sources)
        run.fallback_nodes = list(program.fallbacks)
        loop_nodes = {n.name for n in graph_module.graph.nodes if n.op == "call_module"}
        run.notes = [f"{node} runs as NumPy code: {reason}" for node, reason in program.fallbacks
                     if node not in loop_nodes] + loop_notes(run)
        run.compile_seconds = time.perf_counter() - start
        log.debug("[callable] %d kernels, %s in %.1f ms", len(sources),
                  "compiled" if compiled else "from the disk cache", run.compile_seconds * 1e3)
        reason = numpy_code_may_be_faster(program, sources)
        if settings.get("c_choose_faster") and reason:
            return self.faster_of(run, graph_module, example_inputs, reason)
        return run

    def faster_of(self, run: Any, graph_module: GraphModule, example_inputs: list[Any], why: str) -> Any:
        """The C kernels or the numpy backend's code for the same graph, whichever runs faster."""
        other = numpy_backend(graph_module, example_inputs)
        if hasattr(other, "__globals__"):
            # one graph, one warning registry: a warning either side showed is not shown again by the
            # other (the 'default' filters show one per line of the program, as plain NumPy does)
            other.__globals__["__warningregistry__"] = run.__globals__.setdefault("__warningregistry__", {})
        chooser = FasterOf(run, other, ("c", "numpy"))
        for name in ("program", "c_source", "module", "compiled", "kernel_count", "fallback_nodes",
                     "compile_seconds", "python_source"):
            setattr(chooser, name, getattr(run, name))
        chooser.notes = run.notes + [f"{why}: the first calls time them against the numpy backend's blocked "
                                     "code and keep the faster"]
        return chooser

    def kernels(self, gm: GraphModule, example_inputs: list[Any]) -> Program:
        gm = slice_updates_as_stores(gm)
        last_strides = {f"s_{node.name}_{np.ndim(x) - 1}": node.name
                        for node, x in zip([n for n in gm.graph.nodes if n.op == "placeholder"], example_inputs)
                        if isinstance(x, np.ndarray) and x.ndim}
        blas = frozenset(n.name for n in gm.graph.nodes if n.target in (operator.matmul, np.matmul, np.dot)
                         or (n.op == "call_method" and n.target == "dot"))
        program = lower_graph(gm, example_inputs, SUPPORTED_OPS, check=lambda e: refuse(e, last_strides, blas),
                              costly=lambda op: uses_numpy_loop(op.name, [a.dtype for a in op.args], op.dtype),
                              dtype_kinds="biufc")
        if log.isEnabledFor(logging.DEBUG):
            log.debug("[kernels]\n%s", program.describe())
        for node, reason in program.fallbacks:
            log.info("c backend: %s runs as NumPy code: %s", node, reason)
        return program

    def load(self, src: str, tc: Toolchain, sources: list[KernelSource] | None = None) -> tuple[Module, bool]:
        with self._lock:
            path, compiled = diskcache.build(src, tc)
            if compiled:
                self.compiles += 1
        module = Module(str(path), sources)
        module.configure()
        return module, compiled

    def checked_variants(self, program: Program, sizes: dict[str, SizeSource],
                         tc: Toolchain) -> Callable[[], dict[str, Any]]:
        """The kernels with a flag test after each op, compiled the first time a kernel raises a flag."""
        made: dict[str, Any] = {}

        def get() -> dict[str, Any]:
            if not made:
                sources = [KernelWriter(k, program.buffers, sizes, checked=True,
                                        op_origins=program.origins_in(k)).write()
                           for k in program.kernels]
                module, _ = self.load(module_source(sources, checked=True), tc, sources)
                for s in sources:
                    made[s.name] = (module.address(s.name), s.ops, s.op_keys, s.origins)
            return made
        return get


def other_code(graph_module: GraphModule, example_inputs: list[Any]) -> Callable[[], Callable[..., Any]]:
    """The numpy backend's code for the graph, made on first need (inputs whose layout the C kernels'
    float sums do not fit: NumPy would add their values in another order)."""
    made: list[Callable[..., Any]] = []

    def get() -> Callable[..., Any]:
        if not made:
            made.append(numpy_backend(graph_module, example_inputs))
        return made[0]
    return get


def module_source(sources: list[KernelSource], checked: bool = False) -> str:
    loops = [(lp.symbol, lp.name, lp.arg_dtypes, lp.out) for lp in module_loops(sources)]
    head = PRELUDE + FE_BITS_SOURCE + CALL_MACROS + (CHECK_MACRO if checked else "") + ufunc_loops.declarations(loops)
    return with_nan_safe_helpers(head, "\n" + "\n".join(s.src for s in sources))


def module_loops(sources: list[KernelSource]) -> list[Any]:
    """NumPy's loops a module's kernels call, each once."""
    return list(dict.fromkeys(lp for s in sources for lp in s.loops))


def size_sources(program: Program) -> dict[str, SizeSource]:
    """Each size symbol's value is a dimension of an input buffer."""
    found: dict[str, SizeSource] = {}
    for name in program.placeholders:
        buf = program.buffers.get(name)
        if buf is None or buf.kind != "input":
            continue
        for d, n in enumerate(buf.shape):
            if isinstance(n, sympy.Symbol):
                found.setdefault(n.name, SizeSource(name, d))
    return found


def splits_into_numpy_steps(program: Program) -> bool:
    """Whether NumPy steps run between kernels on full arrays (a loop node's body is compiled apart)."""
    steps = [s for s in program.steps if isinstance(s, HostStep)]
    return bool(steps) and bool(program.kernels) and not any(isinstance(s.call[1], ForLoop) for s in steps)


def numpy_code_may_be_faster(program: Program, sources: list[KernelSource]) -> str | None:
    """Why the numpy backend's blocked code may beat the kernels (None: it does not): NumPy steps between
    them on full arrays, or NumPy's loops called on complex values, tile by tile, between passes of by-parts
    C that a float compare keeps scalar (np.abs(z - w + x * 1j) < 2.0: 1.58x plain, the blocked code 2.08x)."""
    if splits_into_numpy_steps(program):
        return "NumPy steps split the C kernels"
    if any(np.dtype(d).kind == "c" for s in sources for lp in s.loops for d in (*lp.arg_dtypes, lp.out)):
        return "the C kernels call NumPy's loops on complex values"
    return None


def has_symbolic_sizes(gm: GraphModule) -> bool:
    return any(isinstance(m := n.meta.get("val"), TensorMeta) and not m.is_static
               for n in gm.graph.nodes if n.op == "placeholder")


c_backend: Callable[..., Any] = register_backend(CBackend(), name="c")

