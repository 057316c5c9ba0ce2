"""PyCodegen: emits the bytecode of transformed code with the `bytecode` package: load graph
inputs, run the compiled graph (inline or called), rebuild the values returned, replay side effects."""
from __future__ import annotations

import copy
import types
from typing import TYPE_CHECKING, Any

from bytecode import CellVar, FreeVar, Instr

from . import assembler
from . import bytecode_compat as compat
from .bytecode_analysis import bytecode_of
from .logs import get_artifact_logger

if TYPE_CHECKING:
    from .output_graph import CompiledGraph
    from .variables.arrays import ArrayVariable
    from .variables.base import VariableTracker

output_code_log = get_artifact_logger("output_code")

_BUILD = {tuple: "BUILD_TUPLE", list: "BUILD_LIST", slice: "BUILD_SLICE", set: "BUILD_SET"}


class PyCodegen:
    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        self.instructions: list[Instr] = []
        self.graph_outputs: list["ArrayVariable"] = []
        self._output_index: dict[Any, int] = {}
        self._built: dict[int, tuple["VariableTracker", str]] = {}  # fresh objects built so far
        # set by the code that knows the frame (graph_break): rebuilds values made while tracing
        # that cannot rebuild themselves (functions and closures, bound methods, generators),
        # wherever they sit (inside a list, a dict); returns False when it cannot either
        self.rebuild: Any = None
        self._early_sources: dict[Any, str] = {}  # source -> the local it was loaded into (load_first)
        self._recording: list | None = None

    # ---- primitive emitters ---------------------------------------------------------------------
    def append(self, *instrs: Instr) -> None:
        self.instructions.extend(instrs)

    def load_const(self, value: Any) -> None:
        self.append(Instr("LOAD_CONST", value))

    def push_null(self) -> None:
        self.append(Instr("PUSH_NULL"))

    def load_local(self, name: str) -> None:
        if name in self.code.co_cellvars:  # an argument captured by an inner function is a cell by now
            self.append(Instr("LOAD_DEREF", CellVar(name)))
        else:
            self.append(Instr("LOAD_FAST", name))

    def load_free(self, name: str) -> None:
        self.append(Instr("LOAD_DEREF", FreeVar(name)))

    def store_free(self, name: str) -> None:
        self.append(Instr("STORE_DEREF", FreeVar(name)))

    def load_global(self, name: str) -> None:
        self.append(compat.load_global_instr(name))

    def load_attr(self, name: str) -> None:
        self.append(compat.load_attr_instr(name))

    def binary_subscr(self) -> None:
        self.append(compat.binary_subscr_instr())

    def build(self, kind: type, count: int) -> None:
        self.append(Instr(_BUILD[kind], count))

    def get_iter(self) -> None:
        self.append(Instr("GET_ITER"))

    def store_attr(self, name: str) -> None:
        self.append(Instr("STORE_ATTR", name))

    def store_global(self, name: str) -> None:
        self.append(Instr("STORE_GLOBAL", name))

    def delete_attr(self, name: str) -> None:
        self.append(Instr("DELETE_ATTR", name))

    def delete_global(self, name: str) -> None:
        self.append(Instr("DELETE_GLOBAL", name))

    def set_update(self) -> None:
        """Stack: set, iterable -> set (updated)."""
        self.append(Instr("SET_UPDATE", 1))

    def build_map(self, count: int) -> None:
        self.append(Instr("BUILD_MAP", count))

    def pop_top(self) -> None:
        self.append(Instr("POP_TOP"))

    def begin_call(self, fn: Any) -> None:
        """Push `fn` ready for a plain call; emit its arguments, then end_call(count)."""
        self.append(*compat.callable_with_null([Instr("LOAD_CONST", fn)]))

    def end_call(self, count: int) -> None:
        self.append(*compat.call_instrs(count))

    def store_slice_all(self) -> None:
        """Stack: new_items, container -> container[:] = new_items."""
        self.load_const(slice(None))
        self.append(Instr("STORE_SUBSCR"))

    # ---- objects made by the trace: built once, so that identity survives -----------------------------
    def load_built(self, value: "VariableTracker") -> bool:
        """Push `value` again if this code already built it (`l` returned and stored in `obj.a`
        is one list, not two); False if it has not been built yet."""
        built = self._built.get(id(value))
        if built is None or built[0] is not value:
            building = self.__dict__.setdefault("_building", set())
            if id(value) in building:  # its parts lead back to it (`l.append(l)`): no order builds it
                from .exc import Category, unsupported

                unsupported(Category.UNSUPPORTED_VALUE, f"{value.describe()}, made while tracing, contains itself "
                            "and cannot be rebuilt after the graph runs")
            building.add(id(value))  # until remember_built
            return False
        self.append(Instr("LOAD_FAST", built[1]))
        return True

    def built_so_far(self) -> dict:
        """What load_built may reuse here; restore_built(...) with it at the start of another
        branch, which must not load what this branch built (its locals are unbound there)."""
        return dict(self._built)

    def restore_built(self, saved: dict) -> None:
        self._built = dict(saved)

    def remember_built(self, value: "VariableTracker") -> None:
        """Stack: the object just built for `value` (left there), kept for load_built."""
        name = f"___built_{len(self._built)}"
        self.__dict__.get("_building", set()).discard(id(value))
        self._built[id(value)] = (value, name)
        self.append(Instr("COPY", 1), Instr("STORE_FAST", name))

    # ---- values -------------------------------------------------------------------------------------
    def load_source(self, source: Any) -> None:
        try:
            early = self._early_sources.get(source)
        except TypeError:  # a source with an unhashable key is never loaded early
            early = None
        if early is not None:
            self.append(Instr("LOAD_FAST", early))
            return
        if self._recording is not None:
            self._recording.append(source)
        source.reconstruct(self)

    def sources_read_by(self, emit: Any) -> list:
        """The sources `emit(self)` would load, in order, learnt by a dry run: nothing it emits or
        builds stays."""
        saved = {name: copy.copy(value) if isinstance(value, (list, dict, set)) else value
                 for name, value in self.__dict__.items()}
        self._recording = []
        try:
            emit(self)
            return list(dict.fromkeys(self._recording))
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)

    def load_first(self, emit: Any) -> None:
        """Emit `emit(self)` (the replay of side effects) with every source it reads loaded before
        it starts: a source names a value as the frame found it, and a replayed step may change what
        a later one reads (`o.a = lst.pop()` stores lst[-1] of the list before lst[:] = ...)."""
        sources = [s for s in self.sources_read_by(emit) if _hashable(s)]
        previous = self._early_sources
        self._early_sources = dict(previous)
        for source in sources:
            if source not in self._early_sources:
                name = f"___source_{len(self._early_sources)}"
                source.reconstruct(self)
                self.append(Instr("STORE_FAST", name))
                self._early_sources[source] = name
        try:
            emit(self)
        finally:
            self._early_sources = previous

    def reconstruct(self, value: "VariableTracker") -> None:
        value.reconstruct(self)

    def load_graph_output(self, array: "ArrayVariable") -> None:
        """Push an array the graph computes; the graph gets one output per distinct node."""
        index = self._output_index.get(array.node)
        if index is None:
            index = self._output_index[array.node] = len(self.graph_outputs)
            self.graph_outputs.append(array)
        self.append(Instr("LOAD_FAST", output_local(index)))


def _hashable(source: Any) -> bool:
    try:
        hash(source)
    except TypeError:
        return False
    return True


def output_local(index: int) -> str:
    return f"___graph_out_{index}"


def assemble(code: types.CodeType, compiled: "CompiledGraph | None", body: PyCodegen,
             rerun_on_error: bool = False) -> types.CodeType:
    """The transformed code: the original prologue, the graph call, then `body`, then RETURN_VALUE.

    It keeps the original's names, closure layout, file and first line, and takes every argument
    slot positionally (see bytecode_compat.flatten_signature). With `rerun_on_error`, an exception
    raised by the graph runs the frame's own code instead (see rerun_handler)."""
    original = bytecode_of(code)
    prologue: list[Any] = []
    for instr in list.__iter__(original):
        prologue.append(instr)
        if isinstance(instr, Instr) and instr.name == "RESUME":
            break
    from .resume import entry_line

    # the graph runs the frame's first lines: a traceback shows them; a code object with no line
    # numbers at all (co_linetable replaced) shows None in plain Python, and so does its transformed code
    lineno = entry_line(code) if any(line is not None for _, _, line in code.co_lines()) else None
    call = PyCodegen(code)
    if compiled is not None:
        call.append(*graph_call(code, compiled, lineno))
    compat.set_lines(call.instructions + body.instructions, lineno)
    graph_part: list[Any] = call.instructions
    handler: list[Any] = []
    if rerun_on_error and compiled is not None:
        graph_part, handler = rerun_handler(code, graph_part, lineno)
    transformed = assembler.trusted_bytecode(prologue + graph_part + body.instructions
                                             + [Instr("RETURN_VALUE", lineno=lineno)] + handler)
    for attribute in ("argnames", "name", "qualname", "filename", "first_lineno", "docstring", "cellvars", "freevars",
                      "flags", "argcount", "posonlyargcount", "kwonlyargcount"):
        if hasattr(original, attribute):
            setattr(transformed, attribute, getattr(original, attribute))
    return compat.flatten_signature(assembler.to_code(transformed))


def rerun_handler(code: types.CodeType, graph_part: list[Any], lineno: int | None) -> tuple[list[Any], list[Any]]:
    """`graph_part` under a handler that, when the graph raises, runs the frame's own code from its
    start in its place. The side effects a trace recorded are replayed only after the graph: one
    recorded before an op that raises at run time (`LOG.append(x.sum())` before `np.take(x, i)`
    out of bounds) would be lost. A graph that writes none of the frame's arrays has changed nothing
    the program can see when it raises, so running the frame as written gives the program's own
    effects and exception, in its order. Free while nothing raises (zero-cost exception tables);
    the handler leaves the graph's exception behind before the rerun, so it is no __context__."""
    from bytecode import FreeVar, Label, TryBegin, TryEnd

    handler = Label()
    region = TryBegin(handler, push_lasti=False)
    names = code.co_varnames[:compat.argument_slots(code)]
    rerun = PyCodegen(code)
    rerun.append(*compat.callable_with_null([Instr("LOAD_CONST", _run_as_written)]))
    rerun.load_const(compat.flatten_signature(code))
    for name in code.co_freevars:
        rerun.append(compat.load_closure_instr(FreeVar(name)))
    rerun.build(tuple, len(code.co_freevars))
    for name in names:
        rerun.load_local(name)
    rerun.end_call(2 + len(names))
    tail = [handler, Instr("PUSH_EXC_INFO"), Instr("POP_TOP"), Instr("POP_EXCEPT"), *rerun.instructions,
            Instr("RETURN_VALUE")]
    compat.set_lines(tail, lineno, only_missing=False)
    return [region, *graph_part, TryEnd(region)], tail


def _run_as_written(code: types.CodeType, closure: tuple, *arguments: Any) -> Any:
    """Run `code` (the frame's own, taking its argument slots positionally) with the calling
    frame's globals; the hook leaves it alone, functions it calls are compiled as usual."""
    import sys

    from . import _C

    _C.mark_skip(code)  # marked at each run: dynamo.reset() forgets marks
    function = types.FunctionType(code, sys._getframe(1).f_globals, code.co_name, None, closure)
    try:
        with _warned_already():
            return function(*arguments)
    except BaseException as error:  # the traceback shows the user's frames, not this helper's
        if error.__traceback__ is not None and error.__traceback__.tb_frame is sys._getframe():
            error.__traceback__ = error.__traceback__.tb_next
        raise


def _warned_already() -> Any:
    """While the frame runs again up to the op that raised, the warnings of the ops before it were
    already shown by the graph (in the program's order): NumPy's 'warn' modes are 'ignore' for the
    rerun, and so are the warnings NumPy's functions issue themselves (np.std of an empty slice:
    'Degrees of freedom <= 0', fuzz seed 1040164). Not where such a warning raises (np.errstate, a
    warnings filter 'error'): the rerun must raise it as the graph did."""
    import contextlib
    import warnings

    import numpy as np

    from .effect_order import errors_raise
    from .fx_ir.thread_warnings import compiler_filter, warnings_ignored

    if errors_raise():
        return contextlib.nullcontext()
    modes: dict[str, Any] = {kind: "ignore" if mode == "warn" else mode for kind, mode in np.geterr().items()}
    quiet = contextlib.ExitStack()
    quiet.enter_context(np.errstate(**modes))
    if not any(entry[0] == "error" and not compiler_filter(entry) for entry in warnings.filters):
        quiet.enter_context(warnings_ignored())
    return quiet


def graph_call(code: types.CodeType, compiled: "CompiledGraph", lineno: int | None) -> list[Instr]:
    """Run the graph and store its outputs: its code inline when the backend allows it (no call:
    what a cached call of a small graph costs is that of its NumPy calls), else a call."""
    from .graph_inline import function_of, graph_instructions

    outputs = [output_local(index) for index in range(len(compiled.outputs))]
    own_lines = {line for _, _, line in code.co_lines() if line is not None}

    def load_input(graph_input: Any) -> list[Instr]:
        loads = PyCodegen(code)
        loads.load_source(graph_input.source)
        return loads.instructions

    def line_of(node: Any) -> int | None:
        location = node.meta.get("source_location") if node is not None else None
        if location is not None and location.filename == code.co_filename and location.lineno in own_lines:
            return int(location.lineno)  # an op of this function: the line plain Python shows
        return lineno

    inline = graph_instructions(compiled, load_input, outputs, line_of, code.co_filename)
    if inline is not None:
        compiled.inlined = True
        output_code_log.debug("the graph of %s runs inline: its forward's instructions, spliced into the "
                              "transformed code (DYNAMO_LOGS=bytecode shows them)", code.co_qualname)
        return inline
    call = PyCodegen(code)
    graph_fn = function_of(compiled) if compiled.called_unhooked else compiled.compiled_fn
    call.append(*compat.callable_with_null([Instr("LOAD_CONST", graph_fn)]))
    for graph_input in compiled.inputs:
        call.append(*load_input(graph_input))
    call.append(*compat.call_instrs(len(compiled.inputs)))
    call.append(Instr("UNPACK_SEQUENCE", len(outputs)))
    call.append(*(Instr("STORE_FAST", name) for name in outputs))
    return call.instructions


# Instructions that run no Python code of the program and start no frame: a transformed code
# made of these, its graph and its inputs' plain loads needs no hook while it runs
_INERT = frozenset({"RESUME", "NOP", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "STORE_FAST",
                    "DELETE_FAST", "LOAD_CONST", "LOAD_DEREF", "PUSH_NULL", "BUILD_TUPLE", "BUILD_LIST",
                    "BUILD_SLICE", "COPY", "SWAP", "POP_TOP", "RETURN_VALUE", "RETURN_CONST"})


def starts_no_frames(code: types.CodeType, compiled: "CompiledGraph | None", body: PyCodegen) -> bool:
    """Whether the transformed code can run with the hook off: nothing in it but the graph (NumPy
    code, which runs unhooked anyway) calls anything, so no frame it starts is one to compile.
    Only objects it drops (a __del__) could still run Python code: uncompiled, as plain Python."""
    loads = PyCodegen(code)
    for graph_input in compiled.inputs if compiled is not None else []:
        loads.load_source(graph_input.source)
    return all(isinstance(instr, Instr) and instr.name in _INERT
               for instr in loads.instructions + body.instructions)
