"""Running a Program: a generated Python function that allocates temporaries, calls each compiled
kernel through dynamo._C.call_native (no ctypes per call), runs NumPy steps between them, and turns
floating-point flags a kernel raised into NumPy's warnings or errors under the caller's np.errstate.
"""
from __future__ import annotations

import linecache
import sys
import warnings
from collections.abc import Callable
from itertools import count
from typing import Any

import numpy as np
import sympy

from ...fx_ir import ForLoop, WhileLoop
from ...fx_ir.user_lines import exec_at_user_lines
from ..kernel_ir import HostStep, Kernel, Program, Ref
from ..kernel_ir.result_layout import ResultLayouts, layout_class
from ..kernel_ir.values import is_symbolic
from .codegen import KernelSource, SizeSource
from .emitters import QUIET_OPS
from .loops import native_loop
from .memory import MIN_CACHED_BYTES
from .memory import empty as cached_empty
from .pairwise import layout_ok

_filenames = count()

# NumPy's order of checks (PyUFunc_handlefperr): divide, over, under, invalid
FP_CATEGORIES = (("divide", "divide by zero", 1), ("over", "overflow", 2), ("under", "underflow", 4),
                 ("invalid", "invalid value", 8))


def call_native_function() -> Callable[..., int]:
    """dynamo._C.call_native, imported without importing the frontend package's modules."""
    module = sys.modules.get("dynamo._C")
    if module is None:
        import importlib
        module = importlib.import_module("dynamo._C")
    return module.call_native


def report_fp(reports: list[tuple[Any, ...]], fe_bits: tuple[int, int, int, int], stacklevel: int,
              seen: dict[tuple[Any, ...], int], where: Callable[[Any], tuple[str, int, dict[str, Any]] | None]
              = lambda node: None) -> None:
    """As NumPy does after each ufunc call: per (kernel, ufunc name, raised flags[, graph node]), per
    category in NumPy's order, what np.errstate says: ignore, warn, raise, call, print or log. `seen`
    counts what kernels of this run reported: a value two kernels compute (each inlines it) is reported
    once; once per graph node where the report names it (identical nodes are one computation). A warning
    of a graph node is shown at that node's line of the program, as NumPy's (`where(node)`: file, line
    and the globals whose registry and name the warnings filters read), else `stacklevel` frames up."""
    modes: dict[str, object] = dict(np.geterr())
    here: dict[tuple[Any, ...], int] = {}   # per kernel
    if reports and all(len(r) == 4 for r in reports):
        reports = sorted(reports, key=lambda r: r[3])   # in the program's order, as NumPy runs them
    for kernel, name, flags, *node in reports:
        for (category, label, numpy_bit), bit in zip(FP_CATEGORIES, fe_bits):
            if not flags & bit:
                continue
            key = (name, category, *node)
            here[(kernel, key)] = count = here.get((kernel, key), 0) + 1
            if count <= seen.get(key, 0):
                continue
            seen[key] = count
            if node:   # the op inlined elsewhere at other indices (its node not known there) counts it too
                seen[(name, category)] = seen.get((name, category), 0) + 1
            mode = modes[category]
            message = f"{label} encountered in {name}"
            if mode == "ignore":
                continue
            if mode == "warn":
                place = where(node[0]) if node else None
                if place is None:
                    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)
                else:
                    filename, lineno, module_globals = place
                    warnings.warn_explicit(message, RuntimeWarning, filename, lineno,
                                           module=module_globals.get("__name__") or filename,
                                           registry=module_globals.setdefault("__warningregistry__", {}),
                                           module_globals=module_globals)
            elif mode == "raise":
                raise FloatingPointError(message)
            elif mode == "call":
                np.geterrcall()(label, numpy_bit)  # type: ignore[operator,misc]
            elif mode == "print":
                sys.stderr.write(f"Warning: {message}\n")
            elif mode == "log":
                np.geterrcall().write(f"Warning: {message}\n")  # type: ignore[union-attr]


class RunFlags:
    """One run's floating-point reports: what was warned (`seen`, see report_fp) and what kernels raised
    since the last NumPy step, not yet warned (`pending`)."""

    __slots__ = ("seen", "pending", "kernels")

    def __init__(self) -> None:
        self.seen: dict[tuple[Any, ...], int] = {}
        self.pending: list[tuple[Any, ...]] = []
        self.kernels = 0   # kernel calls that raised flags: reports are counted per kernel call


class FlagReporter:
    """What a kernel that raised flags tells the user: which of its ops raised them (from the checked
    variant, rerun on the same arrays when the kernel reads nothing it writes), as NumPy would."""

    def __init__(self, program: Program, kernels: list[KernelSource], checked: Callable[[], dict[str, Any]],
                 fe_bits: tuple[int, int, int, int], node_lines: dict[int, tuple[str, int]] | None = None) -> None:
        self.program = program
        # graph node position -> its line in the program (file, line); the runner's globals, set by make_runner
        self.node_lines = node_lines or {}
        self.runner_globals: dict[str, Any] = {}
        self.kernels = kernels
        self.checked = checked  # -> {kernel name: (address, op names, op keys, graph nodes)}, compiled on first use
        self.fe_bits = fe_bits

    def __call__(self, index: int, flags: int, arrays: tuple[Any, ...], state: RunFlags | None) -> RunFlags:
        state = RunFlags() if state is None else state
        modes: dict[str, object] = dict(np.geterr())
        actions = [modes[category] for (category, _, _), bit in zip(FP_CATEGORIES, self.fe_bits) if flags & bit]
        if all(action == "ignore" for action in actions):
            return state  # nothing to say (underflow, NumPy's default 'ignore', or the caller's errstate)
        ks = self.kernels[index]
        kernel = self.program.kernels[index]
        reports: list[tuple[Any, ...]]
        if set(kernel.reads()) & set(kernel.writes()):
            reports = self.attribute(ks.name, flags)
        else:
            address, ops, keys, origins = self.checked()[ks.name + "_checked"]
            # the op flags are the last buffer: call_native holds every argument's buffer through the
            # call (a ctypes rerun built addresses of temporaries by hand: a use-after-free that read
            # garbage strides, wrote wrong values into the outputs or crashed, seen only in long runs)
            opflags = np.zeros(max(len(ops), 1), np.intc)
            written = sum(1 << i for i, name in enumerate(ks.args) if name in ks.written)
            # the rerun writes into scratch arrays: its code (a flag test after each op) is compiled apart,
            # and an op of two NaNs may return the other one there (x86 returns its first operand's, and
            # the compiler orders the operands of + and * as it likes); the program's values are the fast
            # kernel's whatever its errstate (complex fuzz seed 166: (a - a) * b was nan under 'warn', -nan
            # under 'ignore', NumPy's -nan)
            scratch = [np.empty_like(x) if written >> i & 1 and isinstance(x, np.ndarray) else x
                       for i, x in enumerate(arrays)]
            call_native_function()(address, written | 1 << len(arrays), *scratch, opflags)
            # a computation the kernel makes in two places (each inlined) is one op of the program, reported
            # once per graph node whose op it is (fuzz seeds 1001769, 1002867: an op of an unrolled loop that
            # warned three times in NumPy warned once)
            merged: dict[str, list[Any]] = {}
            for name, key, raised, nodes in zip(ops, keys, opflags.tolist(), origins):
                if raised:
                    entry = merged.setdefault(key, [name, 0, set()])
                    entry[1] |= raised
                    entry[2].update(nodes)
            # one report per graph node: an op computed at other indices too (inlined into a concatenate's
            # branches) is the node's one NumPy call (fuzz seed 1020342: `v ** 0.1` warned three times)
            by_node: dict[tuple[Any, ...], int] = {}
            for name, raised, nodes in merged.values():
                for node in sorted(nodes):
                    by_node[(name, node)] = by_node.get((name, node), 0) | raised
            reports = [(name, raised, node) for (name, node), raised in by_node.items()]
            reports += [(name, raised) for name, raised, nodes in merged.values() if not nodes]
            if not reports:
                reports = self.attribute(ks.name, flags)
        state.kernels += 1
        reports = [(state.kernels, *report) for report in reports]
        if all(action in ("ignore", "warn") for action in actions):
            # warned at the next NumPy step or the end, with the kernels' since, in the program's order:
            # a kernel may run an op the program runs later first (fuzz seed 1006984: an unread `//`
            # before the multiplications stored into a global at the end)
            state.pending.extend(reports)
            return state
        # raise, call, print or log: now, after what earlier kernels found (the runner's frame: its line is
        # the kernel's in the program, compile_at_user_lines)
        reports, state.pending = state.pending + reports, []
        report_fp(reports, self.fe_bits, stacklevel=3, seen=state.seen, where=self.where)
        return state

    def flush(self, state: RunFlags) -> None:
        """Warns what the kernels since the last NumPy step raised (before the next one, or the return)."""
        if state.pending:
            reports, state.pending = state.pending, []
            report_fp(reports, self.fe_bits, stacklevel=3, seen=state.seen, where=self.where)

    def where(self, node: int) -> tuple[str, int, dict[str, Any]] | None:
        line = self.node_lines.get(node)
        return None if line is None else (*line, self.runner_globals)

    def attribute(self, name: str, flags: int) -> list[tuple[Any, ...]]:
        """Without a rerun: each raised flag is reported for the kernel's first op that can raise it
        (a division by zero only by an op that divides: fuzz seed 1007127, `v %= w` after a cast blamed
        the cast), and for that op's graph nodes, as a rerun reports them: a report without its node
        does not match another kernel's of the same op (fuzz seeds 1010085, a `//` lost, and 1020200,
        a `%` warned twice)."""
        _, fn_ops, keys, origins = self.checked()[name + "_checked"]
        can_raise = [k for k, op in enumerate(fn_ops) if op not in QUIET_OPS]
        by_op: dict[int, int] = {}
        for bit in self.fe_bits:
            if not flags & bit:
                continue
            fitting = [k for k in can_raise if (bit != self.fe_bits[0] or fn_ops[k] in DIVIDING_OPS)
                       and (bit != self.fe_bits[3] or not _never_invalid(fn_ops[k], keys[k]))] or can_raise
            k = fitting[0] if fitting else (0 if fn_ops else -1)
            by_op[k] = by_op.get(k, 0) | bit
        reports: list[tuple[Any, ...]] = []
        for k, raised in by_op.items():
            op = fn_ops[k] if k >= 0 else name
            nodes = sorted(origins[k]) if k >= 0 and k < len(origins) else []
            reports.extend([(op, raised, node) for node in nodes] or [(op, raised)])
        return reports


def _never_invalid(op: str, key: str) -> bool:
    """Ops that never raise the invalid flag: 1 / x (fuzz seed 1181710: `a **= np.reciprocal(a)` of
    negative numbers blamed the reciprocal before the power), a cast to a float type (fuzz seed 1071929:
    `f32 //= np.int64(7)` of -inf blamed the cast to float64 before the floor_divide)."""
    return op == "reciprocal" or op == "cast" and _to_inexact(key)


def _to_inexact(key: str) -> bool:
    """Whether an op key (a formatted expression, `cast(...):float64`) makes a float or complex value."""
    return key.rpartition(":")[2].startswith(("float", "complex"))


# ops that can raise division by zero
DIVIDING_OPS = frozenset({"divide", "true_divide", "floor_divide", "remainder", "fmod", "divmod", "reciprocal",
                          "log", "log2", "log10", "log1p", "power", "float_power", "arctanh"})


class RunnerWriter:
    """The Python source of one Program's runner, and the globals it needs."""

    def __init__(self, program: Program, kernels: list[KernelSource], sizes: dict[str, SizeSource],
                 compile_graph: Callable[..., Any] | None = None,
                 fallback: Callable[[], Callable[..., Any]] | None = None,
                 lines: dict[str, tuple[str, int]] | None = None,
                 layouts: ResultLayouts | None = None) -> None:
        self.compile_graph = compile_graph  # compiles loop bodies
        self.layouts = layouts  # the results in NumPy's layout (temporaries are C-ordered)
        self.node_lines = lines or {}  # graph node name -> its line in the program (file, line)
        self.fallback = fallback  # the graph as other code, for inputs whose layout the kernels' sums do not fit
        self.program = program
        self.kernels = kernels
        self.sizes = sizes
        self.globals: dict[str, Any] = {}
        self.lines: list[str] = []
        self.count = 0

    def constant(self, value: Any) -> str:
        name = f"_c{self.count}"
        self.count += 1
        self.globals[name] = value
        return name

    def expr(self, x: Any) -> str:
        """Source for an argument structure: Refs are the run's variables, the rest constants."""
        if isinstance(x, Ref):
            return f"v_{x.name}[()]" if x.scalar else f"v_{x.name}"
        if isinstance(x, tuple) and type(x) is tuple:
            return "(" + "".join(f"{self.expr(v)}, " for v in x) + ")"
        if isinstance(x, list) and type(x) is list:
            return "[" + ", ".join(self.expr(v) for v in x) + "]"
        if isinstance(x, dict) and type(x) is dict:
            return "{" + ", ".join(f"{self.constant(k)}: {self.expr(v)}" for k, v in x.items()) + "}"
        if isinstance(x, slice) and any(isinstance(v, Ref) for v in (x.start, x.stop, x.step)):
            return f"slice({self.expr(x.start)}, {self.expr(x.stop)}, {self.expr(x.step)})"
        if x is None or isinstance(x, (bool, int)) and type(x) in (bool, int):
            return repr(x)
        if isinstance(x, sympy.Basic):
            return self.size_expr(x)  # a size known at run time (a symbolic shape's entry)
        return self.constant(x)

    def size_expr(self, n: sympy.Basic) -> str:
        """Python computing a size expression from the sizes bound at the top of the run."""
        if n.is_number:
            return repr(int(n))
        symbols = sorted(n.free_symbols, key=lambda s: s.name)
        missing = [s.name for s in symbols if s.name not in self.sizes]
        if missing:
            raise NotImplementedError(f"sizes {missing} are not dimensions of an input")
        fn = sympy.lambdify(symbols, n, modules="math")
        return f"int({self.constant(fn)}({', '.join(f'size_{s.name}' for s in symbols)}))"

    def shape_expr(self, shape: tuple[Any, ...]) -> str:
        parts = [self.size_expr(n) if is_symbolic(n) else str(int(n)) for n in shape]
        return "(" + "".join(f"{p}, " for p in parts) + ")"

    def write(self, addresses: list[int]) -> str:
        program = self.program
        params = ", ".join(f"v_{name}" for name in program.placeholders)
        body = self.lines
        rows = list(dict.fromkeys(name for ks in self.kernels for name in ks.row_inputs))
        if rows:
            if self.fallback is None:
                raise NotImplementedError("float sums in C need a fallback for other layouts")
            # NumPy sums these inputs' rows pairwise only where the last axis is the innermost
            self.globals.update(_layout_ok=layout_ok, _other=self.fallback)
            checks = " and ".join(f"_layout_ok(v_{name})" for name in rows)
            body.append(f"if not ({checks}):")
            body.append(f"    return _other()({params})  # NumPy sums these rows in another order")
        if program.kernels and self.fallback is not None:
            # a kernel steps through an array by whole elements (stride / itemsize): a field of a record
            # array (a['b'] of [('a', int32), ('b', float64)]: stride 12) runs as NumPy code instead
            self.globals.update(_whole_elements=whole_elements, _other=self.fallback)
            body.append(f"if not _whole_elements({params}):")
            body.append(f"    return _other()({params})  # strides that are not whole elements")
        if program.kernels:
            body.append("_seen = None  # floating-point flags reported by this run's kernels")
        self.globals.update(_call=call_native_function(), _empty=np.empty, _asarray=np.asarray)
        for name, src in self.sizes.items():
            body.append(f"size_{name} = v_{src.buffer}.shape[{src.dim}]")
        for name, value in program.constants.items():
            if _holds_symbols(value):  # computed from this call's sizes
                body.append(f"v_{name} = {self.expr(value)}")
            elif value is not None or name in program.buffers:
                self.globals[f"v_{name}"] = value
        allocated: set[str] = set()
        kernel_index = 0
        last_use = last_uses(program, self.kernels)
        kept = set(refs_in(program.output))
        for index, step in enumerate(program.steps):
            self.locate(step.origins if isinstance(step, Kernel) else [step.node])
            if isinstance(step, Kernel):
                ks = self.kernels[kernel_index]
                for name in ks.written:
                    buf = program.buffers[name]
                    if buf.kind == "temp" and name not in allocated:
                        allocated.add(name)
                        body.append(f"v_{name} = {self.allocator(buf.shape, buf.dtype)}"
                                    f"({self.shape_expr(buf.shape)}, {self.constant(np.dtype(buf.dtype))})")
                args = []
                for name in ks.args:
                    buf = program.buffers[name]
                    if buf.kind == "host" and name not in program.constants:
                        args.append(f"_host(v_{name}, {self.constant((tuple(buf.shape), buf.dtype))})")
                    else:
                        args.append(f"v_{name}")
                mask = sum(1 << i for i, name in enumerate(ks.args) if name in ks.written)
                arglist = ", ".join(args)
                body.append(f"_f = _call({addresses[kernel_index]}, {mask}, {arglist})")
                body.append(f"if _f: _seen = _fp({kernel_index}, _f, ({arglist},), _seen)")
                kernel_index += 1
            else:
                if program.kernels:
                    body.append("if _seen is not None: _fp.flush(_seen)")
                self.host_step(step)
                if step.result is not None:
                    allocated.add(step.result)
            # a value nobody reads any more is freed now, as plain NumPy frees its temporaries: kept
            # alive to the end, each full-size temporary is fresh memory whose page faults (and the
            # kernel's huge-page compaction) cost more than the kernel (Black-Scholes: 7 C kernels 3x slower)
            done = sorted(name for name in allocated if last_use.get(name) == index and name not in kept)
            if done:
                body.append("del " + ", ".join(f"v_{name}" for name in done))
        if program.kernels:
            body.append("if _seen is not None: _fp.flush(_seen)")
        if self.layouts is None:
            body.append(f"return {self.expr(program.output)}")
        else:  # the results in NumPy's layouts: known to be so for most calls (one lookup)
            self.globals.update(_layouts=self.layouts, _known_layouts=self.layouts.known, _lc=layout_class)
            body.append(f"_r = {self.expr(program.output)}")
            body.append(f"_k = {self.layouts.key_of([f'v_{name}' for name in program.placeholders])}")
            body.append("if _known_layouts.get(_k, 0) is None: return _r")
            body.append(f"return _layouts.relay(_k, ({params}{',' if len(program.placeholders) == 1 else ''}), _r)")
        self.globals["_host"] = host_array
        return f"def run({params}):\n" + "".join(f"    {line}\n" for line in body)

    def allocator(self, shape: tuple[Any, ...], dtype: Any) -> str:
        """The function a buffer is allocated with: np.empty, or through the cache of freed large
        blocks (memory.py) where it may be large enough for fresh pages to cost."""
        if not any(is_symbolic(n) for n in shape) and \
                int(np.prod([int(n) for n in shape])) * np.dtype(dtype).itemsize < MIN_CACHED_BYTES:
            return "_empty"
        self.globals["_cached_empty"] = cached_empty
        return "_cached_empty"

    def locate(self, nodes: list[str]) -> None:
        """A `# File ..., line N` comment: the step's lines run at its first node's line in the program,
        where NumPy's warnings and errors of that step point (compile_at_user_lines)."""
        line = next((self.node_lines[n] for n in nodes if n in self.node_lines), None)
        if line is not None:
            self.lines.append(f'# File "{line[0]}", line {line[1]}')

    def loop_builder(self) -> Callable[[str, list[Any]], int]:
        """(C source of a loop node, NumPy loops it calls) -> the address of its function, compiled
        through the disk cache, the NumPy loops' addresses bound."""
        backend = self.compile_graph

        def build(source: str, numpy_loops: list[Any]) -> int:
            from . import diskcache
            from .codegen import KernelSource
            from .toolchain import toolchain

            calls = [KernelSource("loop0", source, [], [], loops=list(numpy_loops))]
            module, _ = backend.load(source, toolchain(diskcache.cache_root()), calls)  # type: ignore[union-attr]
            return int(module.address("loop0"))
        return build

    def host_step(self, step: HostStep) -> None:
        kind, target = step.call
        if isinstance(target, (ForLoop, WhileLoop)) and self.compile_graph is not None:
            target = native_loop(target, self.compile_graph, self.loop_builder())
        args = [self.expr(a) for a in step.args]
        kwargs = [f"{k}={self.expr(v)}" for k, v in step.kwargs.items()]
        if kind == "method":
            call = f"{args[0]}.{target}({', '.join(args[1:] + kwargs)})"
        else:
            call = f"{self.constant(target)}({', '.join(args + kwargs)})"
        if step.result is not None:
            self.lines.append(f"v_{step.result} = {call}  # {step.node}: {step.reason}")
        else:
            self.lines.append(f"{call}  # {step.node}: {step.reason}")


def whole_elements(*values: Any) -> bool:
    """Whether every array among `values` has strides that are whole numbers of its elements
    (C-contiguous ones have: checked first, it is the cheap common case)."""
    for value in values:
        if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
            size = value.itemsize
            for stride in value.strides:
                if stride % size:
                    return False
    return True


def refs_in(x: Any) -> list[str]:
    """The value names an argument structure (of a step or the output) reads."""
    if isinstance(x, Ref):
        return [x.name]
    if type(x) in (tuple, list):
        return [name for v in x for name in refs_in(v)]
    if type(x) is dict:
        return [name for v in x.values() for name in refs_in(v)]
    if isinstance(x, slice):
        return refs_in((x.start, x.stop, x.step))
    return []


def last_uses(program: Program, kernels: list[KernelSource]) -> dict[str, int]:
    """Each value name's last step (index in program.steps) that reads or writes it."""
    last: dict[str, int] = {}
    sources = iter(kernels)
    for index, step in enumerate(program.steps):
        if isinstance(step, Kernel):
            names = list(next(sources).args)
        else:
            names = refs_in(step.args) + refs_in(step.kwargs)
            if step.result is not None:
                names.append(step.result)
        for name in names:
            last[name] = index
    return last


def _holds_symbols(value: Any) -> bool:
    if isinstance(value, sympy.Basic):
        return True
    if type(value) in (tuple, list):
        return any(_holds_symbols(v) for v in value)
    return False


class HostValueMismatch(RuntimeError):
    """A NumPy step returned a value whose shape or dtype differs from what the kernels were made for."""


def host_array(value: Any, expected: tuple[tuple[int, ...], np.dtype]) -> np.ndarray:
    """A NumPy step's result as a kernel argument: an array of the shape and dtype kernels read."""
    array = np.asarray(value)
    shape, dtype = expected
    if array.dtype != dtype or (array.shape != shape and not any(is_symbolic(n) for n in shape)):
        raise HostValueMismatch(f"a NumPy step returned {array.dtype}{list(array.shape)}, kernels read "
                                f"{dtype}{list(shape)}")
    return array


def make_runner(program: Program, kernels: list[KernelSource], sizes: dict[str, SizeSource],
                addresses: list[int], reporter: FlagReporter, compile_graph: Callable[..., Any] | None = None,
                fallback: Callable[[], Callable[..., Any]] | None = None,
                lines: dict[str, tuple[str, int]] | None = None,
                layouts: ResultLayouts | None = None) -> Any:
    writer = RunnerWriter(program, kernels, sizes, compile_graph, fallback, lines, layouts)
    src = writer.write(addresses)
    filename = f"<c-backend-{next(_filenames)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(keepends=True), filename)
    namespace = dict(writer.globals)
    namespace["_fp"] = reporter
    reporter.runner_globals = namespace
    exec_at_user_lines(src, filename, namespace)
    run = namespace["run"]
    run.python_source = src
    return run
