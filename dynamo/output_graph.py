"""OutputGraph: the graph being recorded for one frame, its inputs and guards, and the step that
finishes it: compile with the backend and generate the code that replaces the frame."""
from __future__ import annotations

import operator
import time
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from . import _C, config
from .exc import BackendCompilerFailed, Category, SourceLocation, Unsupported, unsupported
from .fx_ir.graph import Graph
from .fx_ir.graph_module import GraphModule
from .fx_ir.tensor_meta import TensorMeta
from .loop_records import LoopRecords
from .guards import GuardKind, GuardSet, IsDouble, OnDevice, dtype_guard
from .logs import get_artifact_logger
from .side_effects import SideEffects
from .sources import Source
from .variables.arrays import ArrayVariable
from .variables.base import VariableTracker
from .variables.builder import VariableBuilder
from .variables.numpy_api import NumpyOps

if TYPE_CHECKING:
    from .variables.symbolic import SymbolicIntVariable, UnspecializedFloatVariable

graph_log = get_artifact_logger("graph")


@dataclass
class GraphInput:
    source: Source
    value: Any
    variable: ArrayVariable | SymbolicIntVariable | UnspecializedFloatVariable  # each holds its placeholder in .node


@dataclass
class CompiledGraph:
    """A finished graph: the module, what the backend made of it, and which inputs it takes."""

    graph_module: GraphModule
    compiled_fn: Any
    inputs: list[GraphInput]
    outputs: list[ArrayVariable]
    compile_seconds: float
    ops: list[Any] = field(default_factory=list)
    notes: list[Any] = field(default_factory=list)  # what the backend says of it, str() each (backend_notes)
    inlined: bool = False  # its code runs inside the transformed code (graph_inline), not called
    # the transformed code runs with the hook off (codegen.starts_no_frames): it calls the backend's
    # callable itself, not compiled_fn (whose only job is to turn the hook off), so that a Python
    # callable's frame is entered inline by the interpreter, not through one more C call
    called_unhooked: bool = False


class OutputGraph:
    def __init__(self, code: types.CodeType, f_globals: dict, backend: Any, backend_name: str) -> None:
        self.code = code
        self.f_globals = f_globals
        self.backend = backend
        self.backend_name = backend_name
        self.graph = Graph()  # where nodes go now: a loop body's graph while one is traced (loop_capture)
        self.root_graph = self.graph  # the frame's graph, which takes the inputs
        self.submodules: dict[str, Any] = {}  # loop_<n> -> ForLoop, for every graph of this trace
        self.loops = LoopRecords()
        # functions that ran past the trace budget as frames of their own (ConvertFrame.over_budget):
        # a call of one is not inlined, which would trace it to the budget again at every recompile
        self.over_budget: Mapping[types.CodeType, Unsupported] = {}
        self.guards = GuardSet()
        self.inputs: dict[Source, GraphInput] = {}
        self.current_globals: dict = f_globals  # of the function whose instruction is traced now
        self.errstate: list[Any] = []  # settings of the np.errstate blocks open while tracing, outermost first
        self.input_views: dict[Source, ArrayVariable] = {}  # arrays the graph makes as views of inputs
        self.numpy = NumpyOps(self)
        self.builder = VariableBuilder(self)
        self.side_effects = SideEffects()
        self.root_globals = f_globals
        self.current_location: SourceLocation | None = None
        self.instructions_traced = 0
        # arithmetic, NumPy calls or type tests on the frame's inputs (variables.input_work): with no
        # graph, such a frame keeps its guards, since other inputs (arrays) would make one
        self.computes_on_inputs = False
        # dynamic sizes: the policy of the frame being compiled, and this trace's symbols
        from .shapes import ShapeEnv, current_policy

        self.shape_policy = current_policy()
        self.shape_env = ShapeEnv(lambda: self.current_location)
        self.shape_policy.env = self.shape_env
        self.policy_changes = self.shape_policy.changes()  # as this trace starts (break_reuse)

    def extent(self) -> tuple:
        """How much this trace has recorded: graph nodes, inputs, guards, side effects, sizes, wrapped
        objects, loops. Equal before and after an instruction when that instruction recorded nothing
        (dynamo/break_reuse.py; computes_on_inputs, a flag, is put back there)."""
        return (len(self.graph), len(self.root_graph), len(self.guards), len(self.inputs), len(self.input_views),
                len(self.errstate), len(self.submodules), len(self.numpy.memory.writes),
                self.numpy.order.raising_after_effects, self.side_effects.extent(), self.shape_env.extent(),
                self.builder.extent(), len(self.loops.captured), len(self.loops.unrolled),
                len(self.loops.unmade_indices), self.loops.depth)

    def count_instruction(self) -> None:
        self.instructions_traced += 1
        if self.instructions_traced > config.trace_instruction_budget:
            unsupported(Category.LOOP_BUDGET, f"tracing ran past config.trace_instruction_budget "
                        f"({config.trace_instruction_budget}) bytecode instructions",
                        "a long Python loop: raise the budget, or let this loop run in Python")

    # ---- guards ----------------------------------------------------------------------------------
    def guard(self, source: Source | None, kind: GuardKind, value: Any) -> None:
        if source is not None:
            self.guards.add(source, kind, value)

    # ---- graph inputs and nodes ----------------------------------------------------------------------
    def add_array_input(self, source: Source, value: Any) -> ArrayVariable:
        """A real ndarray (or device array) from the frame becomes a placeholder, guarded on its type,
        dtype and shape (and device)."""
        if source in self.inputs:
            known = self.inputs[source].variable
            assert isinstance(known, ArrayVariable)  # a source holds one kind of value
            return known
        if source in self.input_views:
            return self.input_views[source]
        self.guard(source, GuardKind.TYPE_IS, type(value))
        view = self._view_of_input(source, value)
        if view is not None:
            return view
        from .device_arrays import device_of, entry_of
        from .sources import AttrSource

        device_type = entry_of(type(value))
        if device_type is not None:
            self.guard(source, GuardKind.CALL, OnDevice(device_type.device(value), device_of))

        self.guard(AttrSource(source, "dtype"), GuardKind.EQUALS, value.dtype)
        kind, exact = dtype_guard(value.dtype)
        if kind is GuardKind.CALL:  # a record or structured dtype, or one with metadata: == is not enough
            self.guard(AttrSource(source, "dtype"), kind, exact)
        # device arrays keep static shapes: their graphs run as the library's own calls
        meta = TensorMeta(value.shape, value.dtype) if device_type is not None else TensorMeta.from_value(value)
        if isinstance(value, np.ndarray):
            dynamic, marked = self.shape_policy.dynamic_dims(source.name(), value)
            small = self.shape_policy.small_varying_dims(source.name(), value.shape, dynamic, marked)
            if small:
                from .shapes.env import SmallVaryingSize

                raise SmallVaryingSize(source, value.shape, small, list(self.guards))
            shape = self.shape_env.array_shape(source, value.shape, dynamic, marked, self.shape_policy.reason) \
                if dynamic else value.shape
        else:
            shape = value.shape
        if source in self.shape_env.arrays:  # sizes checked by the size guards, ndim here
            self.guard(AttrSource(source, "ndim"), GuardKind.EQUALS, value.ndim)
            meta = TensorMeta(shape, value.dtype)
        else:
            self.guard(AttrSource(source, "shape"), GuardKind.EQUALS, value.shape)
        name = _placeholder_name(source)
        with self.root_graph.inserting_before(self._first_non_placeholder()):
            node = self.root_graph.placeholder(name)
        node.meta["val"] = meta
        node.meta["source"] = source.name()
        if device_type is not None:  # what ops on it make, and what Python sees of it (numpy_api, arrays)
            node.meta.update(device=device_type.device(value), array_type=type(value),
                             array_library=device_type.library)
        variable = ArrayVariable(node, meta, source=source)
        self.inputs[source] = GraphInput(source, value, variable)
        self._adopt_views(source, value, variable)
        return variable

    def _view_of_input(self, source: Source, value: Any) -> ArrayVariable | None:
        """An array that is a slice of an input array of static shape (`u = U[1:-1, 1:-1]` kept
        in a global) is made by the graph from that input, not taken as an input of its own: a write
        into either is then a write into the one array the graph knows, as in NumPy. None otherwise."""
        from .input_views import ViewOf, basic_index_of
        from .sources import AttrSource

        if type(value) is not np.ndarray:
            return None
        for other_source, graph_input in self.inputs.items():
            base, variable = graph_input.value, graph_input.variable
            if type(base) is not np.ndarray or other_source in self.shape_env.arrays:
                continue
            if not isinstance(variable, ArrayVariable) or not np.may_share_memory(base, value):
                continue
            index = basic_index_of(base, value)
            if index is None:
                continue
            self.guard(AttrSource(source, "dtype"), GuardKind.EQUALS, value.dtype)
            self.guard(source, GuardKind.VIEW_OF, ViewOf.of(other_source, base, value, index))
            meta = TensorMeta.from_value(value)
            with self.root_graph.inserting_before(self._first_non_placeholder()):
                node = self.root_graph.create_node("call_function", operator.getitem, (variable.node, index), {})
            node.meta["val"] = meta
            view = ArrayVariable(node, meta, bases=variable.bases, source=source)
            self.input_views[source] = view
            return view
        return None

    def _adopt_views(self, source: Source, value: Any, variable: ArrayVariable) -> None:
        """Inputs taken before `value` that are slices of it (`u` read before `U`) become views the
        graph makes from it: their placeholders are replaced where the trace used them."""
        from .input_views import ViewOf, basic_index_of

        if type(value) is not np.ndarray or source in self.shape_env.arrays:
            return
        for other_source, graph_input in list(self.inputs.items()):
            other, other_variable = graph_input.value, graph_input.variable
            if other_source == source or type(other) is not np.ndarray or other_source in self.shape_env.arrays:
                continue
            if not isinstance(other_variable, ArrayVariable) or other_variable.node.op != "placeholder":
                continue
            index = basic_index_of(value, other) if np.may_share_memory(value, other) else None
            if index is None:
                continue
            self.guard(other_source, GuardKind.VIEW_OF, ViewOf.of(source, value, other, index))
            placeholder = other_variable.node
            with self.root_graph.inserting_before(self._first_non_placeholder()):
                node = self.root_graph.create_node("call_function", operator.getitem, (variable.node, index), {})
            node.meta["val"] = placeholder.meta["val"]
            placeholder.replace_all_uses_with(node)
            self.root_graph.erase_node(placeholder)
            other_variable.node, other_variable.bases = node, variable.bases
            del self.inputs[other_source]
            self.input_views[other_source] = other_variable
            self.numpy.memory.replaced(other_source, source)

    def add_int_input(self, source: Source, symbol: Any) -> Any:
        """The placeholder of a dynamic int argument, made when the graph first uses its value."""
        from .variables.symbolic import SymbolicIntVariable

        if source in self.inputs:
            return self.inputs[source].variable.node
        with self.root_graph.inserting_before(self._first_non_placeholder()):
            node = self.root_graph.placeholder(_placeholder_name(source))
        node.meta["val"] = symbol
        node.meta["source"] = source.name()
        value = self.shape_env.symbols[symbol].hint
        self.inputs[source] = GraphInput(source, value, SymbolicIntVariable(self, symbol, node))
        return node

    def dynamic_float(self, source: Source, value: Any) -> VariableTracker | None:
        """A float argument as a run-time input when its value changes between calls (None: a constant)."""
        from .variables.symbolic import UnspecializedFloatVariable

        if not self.shape_policy.float_is_dynamic(source.name(), value):
            return None
        if type(value) in (float, np.float64):
            # either type until the trace depends on which (UnspecializedFloatVariable.pin_type):
            # a velocity that starts as 0.0 and is an np.float64 after one step is one input
            self.guard(source, GuardKind.CALL, IsDouble())
            return UnspecializedFloatVariable(self, value, source=source, either=True)
        self.guard(source, GuardKind.TYPE_IS, type(value))
        return UnspecializedFloatVariable(self, value, source=source)

    def add_float_input(self, source: Source, variable: UnspecializedFloatVariable, value: float) -> Any:
        """The placeholder of a run-time float argument, made when the graph first uses it."""
        if source in self.inputs:
            return self.inputs[source].variable.node
        with self.root_graph.inserting_before(self._first_non_placeholder()):
            node = self.root_graph.placeholder(_placeholder_name(source))
        node.meta["val"] = variable.meta  # an example: the graph takes any float here
        node.meta["runtime_float"] = value
        node.meta["source"] = source.name()
        self.inputs[source] = GraphInput(source, value, variable)
        return node

    def dynamic_int(self, source: Source, value: int) -> VariableTracker | None:
        """An int argument as a symbol when the shape policy makes it dynamic (None: a constant)."""
        from .variables.symbolic import SymbolicIntVariable

        if not self.shape_policy.int_is_dynamic(source.name(), value):
            return None
        why = "dynamic=True" if self.shape_policy.dynamic else "automatic: its value changed between compiles"
        symbol = self.shape_env.int_symbol(source, value, why)
        return None if symbol is None else SymbolicIntVariable(self, symbol)

    def _first_non_placeholder(self) -> Any:
        for node in self.root_graph.nodes:
            if node.op != "placeholder":
                return node
        return None

    def create_node(self, op: str, target: Any, args: tuple, kwargs: dict, meta: Any) -> Any:
        node = self.graph.create_node(op, target, args, kwargs)
        node.meta["val"] = meta
        if self.current_location is not None:
            node.meta["source_location"] = self.current_location
        return node

    def size_value(self, value: Any) -> VariableTracker:
        """A shape, size or dtype read off an array's meta, as the program sees it: a dynamic size
        is a symbolic int (specialized only where the program needs its value)."""
        from .variables.builder import wrap_constant_result
        from .variables.sequences import ListVariable, TupleVariable
        from .variables.symbolic import SymbolicIntVariable

        if not self.shape_env.has_symbols(value):
            return wrap_constant_result(value)
        if isinstance(value, (tuple, list)):
            items = [self.size_value(v) for v in value]
            return TupleVariable(items) if isinstance(value, tuple) else ListVariable(items)
        return SymbolicIntVariable.create(self, value)

    def static_size(self, value: Any, why: str) -> int:
        """A size the trace needs as a number (a loop's trip count): fixed with a guard."""
        return int(self.shape_env.specialize(value, why))

    def count_ops(self) -> int:
        return sum(1 for n in self.graph.nodes if n.op not in ("placeholder", "output"))

    # ---- finishing -------------------------------------------------------------------------------------
    def compile_graph(self, outputs: list[ArrayVariable]) -> CompiledGraph | None:
        """Add the output node, run the backend; None when there is nothing to run. Then the
        size guards: every fact about dynamic sizes relied on, the backend's included."""
        try:
            return self._compile_graph(outputs)
        finally:
            self.install_size_guards()

    def keep_unused_work(self, graph: Graph | None = None) -> None:
        """Plain Python computes a value even when nothing uses it, and computing it may raise
        (an index out of bounds, an impossible cast) or warn (a division by zero): NumPy work
        nothing uses stays in the graph (the frame's, or a loop body's). Reading a field of a
        multi-output result cannot fail. Work read only by what dead code elimination erases counts
        as unread (`v = inf // a; w = v.T` with neither used: fuzz seed 1049786 lost the warning)."""
        live: set[Any] = set()
        for node in reversed((graph or self.graph).nodes):
            if node.is_impure() or any(user in live for user in node.users):
                live.add(node)
                continue
            if node.op not in ("call_function", "call_method") or node.target is getattr:
                continue
            if not isinstance(node.meta.get("val"), TensorMeta):
                continue  # a size computed from shapes
            source = node.args[0] if node.target is operator.getitem and node.args else None
            if isinstance(getattr(source, "meta", {}).get("val"), (tuple, list)):
                continue  # one item of a multi-output result (q, r = np.linalg.qr(a))
            node.meta["impure"] = True
            node.meta["unread_work"] = True   # kept for its errors and warnings: it writes nothing
            live.add(node)

    def install_size_guards(self) -> None:
        if not self.shape_env.arrays:
            return
        from .shapes.guards import SizeGuards

        size_guards = SizeGuards(self.shape_env)
        first = size_guards.sources[0]
        for entry in size_guards.entries():
            self.guards.add(first, GuardKind.SIZES, entry)

    def _compile_graph(self, outputs: list[ArrayVariable]) -> CompiledGraph | None:
        if self.count_ops() == 0 and not outputs:
            return None
        unique: list[ArrayVariable] = []
        seen: set[Any] = set()
        for variable in outputs:
            if variable.node not in seen:
                seen.add(variable.node)
                unique.append(variable)
        self.graph.output(tuple(v.node for v in unique))
        self.keep_unused_work()
        self.graph.eliminate_dead_code()
        if self.shape_env.relations:  # sizes guarded equal get one symbol: backends fuse across inputs
            from .shapes.equal_dims import equal_dims, unify_dims

            replacements = equal_dims(self.shape_env.relations, self.shape_env.symbols)
            if replacements:
                unify_dims(self.graph, self.submodules, replacements)
        used = {n for n in self.graph.nodes if n.op == "placeholder"}
        inputs = [i for i in self.inputs.values() if i.variable.node in used]
        gm = GraphModule(self.submodules, self.graph)
        if graph_log.isEnabledFor(10):
            graph_log.debug("graph for %s:\n%s", self.code.co_qualname, gm.code)
        start = time.perf_counter()
        try:
            compiled_fn = self.backend(gm, [i.value for i in inputs])
        except Exception as error:  # a backend failure is reported with the user's location
            raise BackendCompilerFailed(self.backend_name, error, self.current_location) from error
        seconds = time.perf_counter() - start
        notes = backend_notes(compiled_fn)
        if notes:
            graph_log.info("backend %s on the graph for %s:\n  %s", self.backend_name, self.code.co_qualname,
                           "\n  ".join(map(str, notes)))
        share_warning_registry(compiled_fn, self.root_globals)
        # the graph is NumPy code only: run it with the hook off, so that nothing in it is traced
        compiled_fn = _C.CompiledFunction(compiled_fn, None)
        ops = [n.target for n in self.graph.nodes if n.op not in ("placeholder", "output")]
        return CompiledGraph(gm, compiled_fn, inputs, unique, seconds, ops, notes)


def share_warning_registry(compiled_fn: Any, user_globals: dict) -> None:
    """Generated code warns at the user's lines (fx_ir.user_lines); with the user's module name and
    warnings registry in its globals too, a warning shows once per line of the program as in plain
    Python, not once more per compiled graph (each has globals of its own)."""
    for inner in getattr(compiled_fn, "shares_warnings_with", ()):  # what a backend's callable calls (tiered)
        share_warning_registry(inner, user_globals)
    function = getattr(compiled_fn, "__func__", compiled_fn)
    namespace = getattr(function, "__globals__", None)
    if not isinstance(namespace, dict) or namespace is user_globals or not isinstance(user_globals, dict):
        return
    namespace["__warningregistry__"] = user_globals.setdefault("__warningregistry__", {})
    if "__name__" in user_globals:
        namespace["__name__"] = user_globals["__name__"]


def backend_notes(compiled_fn: Any) -> list[str]:
    """What a backend wants explain() to say about a graph (parts that run unoptimized, and why): the
    `notes` attribute of what it returned, one string each, if it has one. Read before wrapping."""
    notes = getattr(compiled_fn, "notes", None)
    if notes is None or isinstance(notes, str) or callable(notes):
        return [notes] if isinstance(notes, str) else []
    try:
        # kept as given: a note may say what happened at run time (backend c's loops), read when printed
        return list(notes)
    except TypeError:
        return []


def _placeholder_name(source: Source) -> str:
    text = source.name()
    name = "".join(ch if ch.isalnum() else "_" for ch in text).strip("_")
    while "__" in name:
        name = name.replace("__", "_")
    return name if name and not name[0].isdigit() else f"arg_{name}"
