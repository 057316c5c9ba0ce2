"""Graph breaks: when an instruction cannot be captured, the graph so far is compiled, the
instruction runs in plain Python, and a resume function continues the frame after it.

`codegen_break` writes the tail of the transformed code for the instruction the translator
stopped at:
  1. load the values passed on that a replay could change (read through attributes, items,
     globals) into temporaries;
  2. replay the side effects the trace recorded, and store the frame's cells;
  3. run the instruction in Python (STRAIGHT), or branch on its condition (JUMP), or stop
     before it (SPLIT: try/with blocks, loops over iterators known only at run time);
  4. call the resume function(s) (resume.py) with the rebuilt stack and the live locals,
     under a handler that keeps tracebacks as plain Python shows them.
Code that starts inside a loop or a try/with block runs as Python up to where it ends
(resume.python_region). `reconstruct` rebuilds what a trace made that cannot rebuild itself:
methods, closures, generators, iterators at their position, super objects.
"""
from __future__ import annotations

import enum
import types
from typing import TYPE_CHECKING, Any

from bytecode import CellVar, FreeVar, Instr, Label, TryBegin, TryEnd

from . import bytecode_compat as compat
from .bytecode_analysis import analyze
from .codegen import PyCodegen, output_local
from .exc import Category, Unsupported, unsupported
from .resume import (arrange_live, begin_resume_call, cells_not_resumable, end_resume_call, hiding_handler,
                     passing_order, python_region, resume_code, unbound_cell_read)
from .resume_origins import source_of, starts_in_python
from .shapes.policy import current_policy
from .sources import LocalSource
from .variables.base import NULL, BoundMethodVariable, VariableTracker
from .variables.functions import CellVariable, NestedFunctionVariable, UserMethodVariable
from .variables.iterators import GeneratorVariable, IteratorVariable
from .variables.numpy_api import LazyAttributeVariable
from .variables.objects import SuperVariable

if TYPE_CHECKING:
    from .symbolic_convert import InstructionTranslator


class BreakKind(enum.Enum):
    SPLIT = "split"          # stop before the instruction; the resume function starts with it
    STRAIGHT = "straight"    # run the instruction here, resume at the next one
    JUMP = "jump"            # a conditional jump on a value known only at run time
    JUMP_OR_POP = "jump_or_pop"  # 3.11's JUMP_IF_TRUE_OR_POP / JUMP_IF_FALSE_OR_POP
    TERMINAL = "terminal"    # the instruction never continues (raise)


_JUMPS = {"POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
          "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
          "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE",
          "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE"}


def _arg(inst: Instr) -> int:
    return inst.arg if isinstance(inst.arg, int) else 0


# (items the instruction takes from the stack, items it leaves), for instructions that may run
# in Python at a break. Deep-stack instructions (LIST_APPEND i, COPY n) take the whole span.
_STACK_USE = {
    "CALL": lambda i: (_arg(i) + 2, 1),
    "CALL_KW": lambda i: (_arg(i) + 3, 1),
    "CALL_FUNCTION_EX": lambda i: (3 + (_arg(i) & 1), 1),
    **dict.fromkeys(("BINARY_OP", "BINARY_SUBSCR", "COMPARE_OP", "IS_OP", "CONTAINS_OP"), lambda i: (2, 1)),
    **dict.fromkeys(("UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT", "UNARY_NOT", "TO_BOOL", "GET_ITER",
                     "CALL_INTRINSIC_1", "FORMAT_SIMPLE", "CONVERT_VALUE"), lambda i: (1, 1)),
    "FORMAT_WITH_SPEC": lambda i: (2, 1),
    "FORMAT_VALUE": lambda i: (1 + bool(_arg(i) & 0x04), 1),
    "STORE_SUBSCR": lambda i: (3, 0),
    "DELETE_SUBSCR": lambda i: (2, 0),
    "STORE_ATTR": lambda i: (2, 0),
    "DELETE_ATTR": lambda i: (1, 0),
    "STORE_GLOBAL": lambda i: (1, 0),
    "DELETE_GLOBAL": lambda i: (0, 0),
    "BINARY_SLICE": lambda i: (3, 1),
    "STORE_SLICE": lambda i: (4, 0),
    "LOAD_ATTR": lambda i: (1, 2 if compat.attr_arg(i)[0] else 1),
    "LOAD_METHOD": lambda i: (1, 2),
    "LOAD_SUPER_ATTR": lambda i: (3, 2 if compat.super_attr_arg(i)[0] else 1),
    "LOAD_GLOBAL": lambda i: (0, 2 if compat.global_arg(i)[0] else 1),
    "LOAD_DEREF": lambda i: (0, 1),
    **dict.fromkeys(("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_STRING", "BUILD_SLICE"), lambda i: (_arg(i), 1)),
    "BUILD_MAP": lambda i: (2 * _arg(i), 1),
    "BUILD_CONST_KEY_MAP": lambda i: (_arg(i) + 1, 1),
    "UNPACK_SEQUENCE": lambda i: (1, _arg(i)),
    "UNPACK_EX": lambda i: (1, (_arg(i) & 0xFF) + (_arg(i) >> 8) + 1),
    "BEFORE_WITH": lambda i: (1, 2),
    "IMPORT_NAME": lambda i: (2, 1),
    "IMPORT_FROM": lambda i: (1, 2),
    "LOAD_ASSERTION_ERROR": lambda i: (0, 1),
    "LOAD_BUILD_CLASS": lambda i: (0, 1),
    # the container sits at depth i once the item is popped: the span is the item and i more
    # (not DICT_MERGE: its error message names the callable further down the stack)
    **dict.fromkeys(("LIST_APPEND", "SET_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE"),
                    lambda i: (_arg(i) + 1, _arg(i))),
    "MAP_ADD": lambda i: (_arg(i) + 2, _arg(i)),
    # match statements: MATCH_CLASS takes subject, class and names; the others keep the subject
    "MATCH_CLASS": lambda i: (3, 1),
    **dict.fromkeys(("MATCH_MAPPING", "MATCH_SEQUENCE", "GET_LEN"), lambda i: (1, 2)),
    "MATCH_KEYS": lambda i: (2, 3),
}


def break_kind(inst: Instr, error: Unsupported) -> BreakKind | None:
    """How to break at `inst`, or None when the frame cannot break there."""
    if getattr(error, "split_before", False) or inst.name == "FOR_ITER":
        # a loop over an iterator not known while tracing: the loop runs in Python
        return BreakKind.SPLIT
    if inst.name in _JUMPS:
        return BreakKind.JUMP
    if inst.name in ("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):
        return BreakKind.JUMP_OR_POP
    if inst.name == "RAISE_VARARGS":
        return BreakKind.TERMINAL
    if inst.name in _STACK_USE:
        return BreakKind.STRAIGHT
    return None


class CannotBreak(Exception):
    """This frame cannot continue after a break here; it runs its original code instead."""


class NoHandOff(CannotBreak):
    """Code that runs in Python has no point after it where compiled code could take over."""


class StartsInPython(CannotBreak):
    """The frame reaches code that runs in Python (a try or with block, a loop over an iterator
    known only at run time) before any graph: it runs as it is up to the end of that code
    (resume.python_region)."""


def check_breakable(tx: "InstructionTranslator", kind: BreakKind | None, error: Unsupported | None = None) -> None:
    if kind is None:
        raise CannotBreak(f"the instruction {tx.instructions[tx.ip].name} cannot run on its own between two graphs")
    if error is not None and getattr(error, "no_break", False):
        raise CannotBreak(f"{error.explanation}: the frame's own code raises it")
    why = cells_not_resumable(tx.code)
    if why:
        raise CannotBreak(why)
    if kind is not BreakKind.SPLIT and analyze(tx.code).may_read_locals_by_name(tx.ip):
        # eval("x + 1"), locals(), vars(): the transformed frame holds neither the values the
        # trace computed nor only the user's names
        raise CannotBreak("the call may read the function's locals by name (eval, exec, locals, vars, dir, "
                          "a frame's f_locals), which only its own code has")
    if kind is BreakKind.SPLIT and tx.output.count_ops() == 0:
        # no graph before the block: the frame's own code runs it (nothing ran for real yet)
        raise StartsInPython("nothing before this point could be captured")


class _Temp(VariableTracker):
    """A value the instruction run in Python left behind, parked in a local of the transformed code."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.append(Instr("LOAD_FAST", self.name))


def codegen_break(tx: "InstructionTranslator", error: Unsupported) -> PyCodegen:
    """The tail of the transformed code when `tx` stopped before instruction tx.ip."""
    inst = tx.instructions[tx.ip]
    kind = break_kind(inst, error)
    check_breakable(tx, kind, error)
    assert kind is not None  # check_breakable raised CannotBreak
    cg = PyCodegen(tx.code)
    cg.rebuild = lambda nested: _rebuild_nested(cg, tx, nested)
    stack = _unbind_methods(tx, list(tx.stack))
    passed_on = _values_passed_on(tx, kind, inst, stack)
    cg.__dict__["held_locals"] = held = _dead_locals_held(cg, tx)
    passed_on += [tx.symbolic_locals[name] for name in sorted(held)]
    # values read through attributes, items, globals or cells: as they were before the side
    # effects are replayed (`v = lst.pop()` is lst[-1] of the list as it was; `old = obj.a;
    # obj.a = new` would read the new value)
    # (not iterators: loaded after the replay, below, they walk the container as it is then)
    _load_early(cg, tx, passed_on,
                lambda value: not isinstance(value, IteratorVariable) and _reads_state(cg, tx, value))
    def replay(c: PyCodegen) -> None:
        tx.output.side_effects.codegen(c)  # the program sees the state plain Python would
        write_cells(c, tx)
        # iterators: as the replayed state has them (one made before would miss a dict's growth), over the
        # objects the frame found (fuzz seeds 2070669, 1180873: a cell or dict item the replay rebinds)
        _load_early(c, tx, passed_on, lambda v: isinstance(v, IteratorVariable))
    cg.load_first(replay)
    _drop_stale_arguments(cg, tx, passed_on)
    if kind is BreakKind.SPLIT:
        _call_resume(cg, tx, _split_target(tx), stack)
    elif kind is BreakKind.STRAIGHT or kind is BreakKind.TERMINAL:
        _run_straight(cg, tx, inst, kind, stack)
    elif kind is BreakKind.JUMP:
        _run_jump(cg, tx, inst, stack)
    else:
        _run_jump_or_pop(cg, tx, inst, stack)
    _clear_temps(cg)
    _emit_handlers(cg)
    compat.set_lines(cg.instructions, inst.lineno)  # a traceback through this code shows the user's line
    return cg


def _split_target(tx: "InstructionTranslator") -> int:
    """Where the resume function of a split before tx.ip starts. On 3.11 and 3.12 the keyword
    names of a CALL live outside the stack, set by the KW_NAMES before it (and a PRECALL between
    them on 3.11): a resume function that jumped to the CALL itself would call with no keywords
    (f(x, k=1) became f(x, 1)), so it starts at that KW_NAMES, which leaves the stack as it is."""
    index = tx.ip
    if not tx.kw_names:
        return index
    while index > 0 and tx.instructions[index - 1].name == "PRECALL":
        index -= 1
    if index > 0 and tx.instructions[index - 1].name == "KW_NAMES":
        return index - 1
    raise CannotBreak("the keyword names of the call are not right before it")


_CLEAR_TEMPS = object()  # stands for the clearing of the temporaries until codegen_break ends
_CLEAR_DEAD_TEMPS = object()  # before the instruction run in Python: the temporaries no later code reads


def _clear_temps(cg: PyCodegen) -> None:
    """Before a resume function is called, the transformed frame lets go of its temporaries (the
    graph's outputs, objects built, results of the instruction run in Python): the frame stays
    alive during the call, and an object that plain Python drops at this point (a generator left
    by `break`, a file) must be finalized when it would be. The temporaries that nothing reads
    after the operands of the instruction run in Python are pushed go before it runs (gc.collect()
    there must find a cycle the program let go of): every object plain Python's frame still
    holds is read later, by the resume call, as a stack item or a local (_dead_locals_held)."""
    outputs = {output_local(index) for index in range(len(cg.graph_outputs))}
    names = {instr.arg for instr in cg.instructions
             if isinstance(instr, Instr) and instr.name == "STORE_FAST" and str(instr.arg).startswith("___")}
    names |= outputs
    clearing: list[Instr] = []
    for name in sorted(names):
        clearing += [Instr("LOAD_CONST", None), Instr("STORE_FAST", name)]
    cg.instructions[:] = [i for item in cg.instructions for i in (clearing if item is _CLEAR_TEMPS else [item])]
    if _CLEAR_DEAD_TEMPS in cg.instructions:
        at = cg.instructions.index(_CLEAR_DEAD_TEMPS)
        stored = outputs | {i.arg for i in cg.instructions[:at] if isinstance(i, Instr) and i.name == "STORE_FAST"
                            and str(i.arg).startswith("___")}
        read_later = {name for i in cg.instructions[at + 1:] if isinstance(i, Instr) and i.name.startswith("LOAD_FAST")
                      for name in (i.arg if isinstance(i.arg, tuple) else (i.arg,)) if isinstance(name, str)}
        dead = [i for name in sorted(stored - read_later) for i in (Instr("LOAD_CONST", None), Instr("STORE_FAST", name))]
        cg.instructions[at:at + 1] = dead


def _dead_locals_held(cg: PyCodegen, tx: "InstructionTranslator") -> frozenset[str]:
    """Locals bound here that no later code reads, whose objects plain Python's frame still holds
    until they are assigned again, deleted or the frame returns (a weakref to them stays alive, a
    new object cannot take their address): every resume function of the break takes them too.
    Not constants, nor numbers known at run time (no weak reference or finalizer can see when a
    float or an int dies, and passing one would give the resume function another signature, so
    another code object that compiles anew, whenever a number becomes a run-time input), nor arrays
    only the graph computes (holding one would make it an output of the graph, materialized for no
    reader), nor values that cannot be rebuilt."""
    from .variables.arrays import ArrayVariable
    from .variables.constant import ConstantVariable
    from .variables.symbolic import RuntimeValueVariable

    held = set()
    for name, value in tx.symbolic_locals.items():
        if name not in tx.code.co_varnames or name in tx.code.co_cellvars:
            continue
        if isinstance(value, (ConstantVariable, CellVariable, RuntimeValueVariable)) or value is NULL \
                or (isinstance(value, ArrayVariable) and value.source is None):
            continue
        if _rebuilds_alone(cg, tx, value):
            held.add(name)
    return frozenset(held)


class _NeedsGraphOutput(Exception):
    pass


def _rebuilds_alone(cg: PyCodegen, tx: "InstructionTranslator", value: VariableTracker) -> bool:
    """Whether `value` can be rebuilt with no new output of the graph (a dry run)."""
    outputs = len(cg.graph_outputs)

    def emit(dry: PyCodegen) -> None:
        reconstruct(dry, tx, value)
        if len(dry.graph_outputs) != outputs:
            raise _NeedsGraphOutput

    try:
        cg.sources_read_by(emit)
    except (Unsupported, _NeedsGraphOutput):
        return False
    return True


class MethodLoad(VariableTracker):
    """Two stack items: `obj.name` loaded for a method call, as CPython's own bytecode does (the
    resume function loads it again from obj; the second item is _PAIR_REST)."""

    def __init__(self, obj: VariableTracker, name: str) -> None:
        super().__init__()
        self.obj, self.name = obj, name



_PAIR_REST = VariableTracker()  # the item a MethodLoad's two-item load also makes


def _unbind_methods(tx: "InstructionTranslator", stack: list[VariableTracker]) -> list[VariableTracker]:
    """A method waiting for its CALL ([NULL, obj.method] while tracing) goes on in CPython's
    method form: a user method as [function, obj], so that the resume function inlines the call
    instead of meeting a bound-method object; a method of a builtin type (list.append) is loaded
    again from obj. CALL_FUNCTION_EX needs [NULL, callable]: kept."""
    slot = compat.push_with_null("method", NULL).index("method")  # where the callable sits in the pair
    for position in range(len(stack) - 1):
        method, null = stack[position + slot], stack[position + 1 - slot]
        if type(method) not in (UserMethodVariable, BoundMethodVariable) or null is not NULL:
            continue
        if _consumer(tx, position) not in ("CALL", "CALL_KW"):
            continue
        if type(method) is UserMethodVariable:
            stack[position: position + 2] = [method.fn, method.obj]
        elif isinstance(method, BoundMethodVariable):
            stack[position: position + 2] = [MethodLoad(method.obj, method.name), _PAIR_REST]
    return stack


def _consumer(tx: "InstructionTranslator", position: int) -> str | None:
    """The call instruction that takes the callable at stack `position` (from tx.ip on)."""
    facts = tx.facts
    for index in range(tx.ip, len(facts.instructions)):
        inst, depth = facts.instructions[index], facts.stack_depth(index)
        if depth is None or depth <= position:
            return None
        if inst.name == "CALL" and index and facts.instructions[index - 1].name == "PRECALL":
            continue  # 3.11's PRECALL n (checked just before) already took the arguments' depth
        count = inst.arg if isinstance(inst.arg, int) else 0
        below = {"CALL": count + 2, "PRECALL": count + 2, "CALL_KW": count + 3,
                 "CALL_FUNCTION_EX": 3 + (count & 1)}.get(inst.name)
        if below is not None and depth - below == position:
            return "CALL" if inst.name == "PRECALL" else inst.name  # 3.11: PRECALL n; CALL n
    return None


def _values_passed_on(tx: "InstructionTranslator", kind: BreakKind, inst: Instr,
                      stack: list[VariableTracker]) -> list[VariableTracker]:
    """The values a break rebuilds: the stack, the locals live where the frame resumes, the
    contents of the frame's cells."""
    if kind in (BreakKind.JUMP, BreakKind.JUMP_OR_POP):
        targets = [tx.ip + 1, tx.facts.label_index[inst.arg]]
    else:
        targets = {BreakKind.SPLIT: [tx.ip], BreakKind.STRAIGHT: [tx.ip + 1], BreakKind.TERMINAL: []}[kind]
    live = set().union(*(analyze(tx.code).live_locals(t) for t in targets)) if targets else set()
    values = [v for v in stack if v is not NULL and v is not _PAIR_REST]
    values = [v.obj if isinstance(v, MethodLoad) else v for v in values]
    values += [tx.symbolic_locals[name] for name in sorted(live) if name in tx.symbolic_locals]
    values += [cell.contents for name in tx.code.co_cellvars
               if isinstance(cell := tx.symbolic_locals.get(name), CellVariable) and cell.contents is not None]
    return [v for v in values if not isinstance(v, CellVariable)]


def _reads_state(cg: PyCodegen, tx: "InstructionTranslator", value: VariableTracker) -> bool:
    """Rebuilding the value reads the program's state: an attribute, item, global or cell (an argument
    captured by a closure included) it, or
    anything it is rebuilt from (super()'s object, a bound method's self), was read from, or an
    attribute read lazily (`old = opts.display`: the value before the break)."""
    if isinstance(value, LazyAttributeVariable):
        return True
    # an argument captured by a closure is a cell that write_cells may give a new value
    cells = tx.code.co_cellvars
    sources = [value.source] if value.source is not None else \
        cg.sources_read_by(lambda c: reconstruct(c, tx, value))
    return any(not isinstance(s, LocalSource) or s.local_name in cells for s in sources)


def _load_early(cg: PyCodegen, tx: "InstructionTranslator", values: list[VariableTracker], wanted: Any) -> None:
    """Load the `wanted` values into temporaries now; reconstruct() takes them from there."""
    for value in values:
        # wanted() may dry-run codegen, which restores cg's dicts as copies: look them up after it
        if id(value) in cg.__dict__.get("loaded_early", {}) or not wanted(value):
            continue
        loaded = cg.__dict__.setdefault("loaded_early", {})
        name = f"___early_{len(loaded)}"
        reconstruct(cg, tx, value)
        cg.append(Instr("STORE_FAST", name))
        loaded[id(value)] = (value, name)


def _drop_stale_arguments(cg: PyCodegen, tx: "InstructionTranslator", passed_on: list[VariableTracker]) -> None:
    """The transformed frame's argument slots still hold what the frame was called with, where
    plain Python's frame let go of what the code deleted or assigned anew (`del obj`) before
    the instruction that runs in Python here, which may observe it (a weakref, a __del__,
    ndarray.resize's reference check): those slots are cleared, once the values rebuilt from
    them are loaded into temporaries."""
    slots = tx.code.co_varnames[: compat.argument_slots(tx.code)]
    stale = {name for index, name in enumerate(slots) if name not in tx.code.co_cellvars
             and getattr(tx.symbolic_locals.get(name), "source", None) != LocalSource(index, name)}
    if not stale:
        return

    def reads_stale(value: VariableTracker) -> bool:
        sources = [value.source] if value.source is not None else \
            cg.sources_read_by(lambda c: reconstruct(c, tx, value))
        return any(isinstance(s, LocalSource) and s.local_name in stale for s in sources)

    _load_early(cg, tx, passed_on, reads_stale)
    for name in sorted(stale):
        cg.append(Instr("LOAD_CONST", None), Instr("STORE_FAST", name))


def write_cells(cg: PyCodegen, tx: "InstructionTranslator") -> None:
    """Store what the trace assigned to the frame's own cells into the real cells (the resume
    function shares them; its free variables go through side effects like any closure)."""
    for name in tx.code.co_cellvars:
        _write_cell(cg, tx, name)


def _write_cell(cg: PyCodegen, tx: "InstructionTranslator", name: str) -> None:
    """Store what the trace left in the frame's cell `name` into the real cell, once per code."""
    written = cg.__dict__.setdefault("cells_written", set())
    cell = tx.symbolic_locals.get(name)
    if name in written or not isinstance(cell, CellVariable):
        return
    written.add(name)
    if cell.contents is not None:
        reconstruct(cg, tx, cell.contents)
        cg.append(Instr("STORE_DEREF", CellVar(name)))
    elif name in tx.code.co_varnames[: compat.argument_slots(tx.code)]:  # an argument cell, deleted since
        cg.append(Instr("DELETE_DEREF", CellVar(name)))


def reconstruct(cg: PyCodegen, tx: "InstructionTranslator", value: VariableTracker) -> None:
    """Push `value` in the transformed code. Beyond what values rebuild themselves: methods
    bound while tracing, and functions made by the frame (closures over its cells, 3.11's
    comprehension functions) — what a graph break finds on the stack or in the locals."""
    if cg.rebuild is None:  # values nested in containers come back here (PyCodegen.rebuild)
        cg.rebuild = lambda nested: _rebuild_nested(cg, tx, nested)
    early = cg.__dict__.get("loaded_early", {}).get(id(value))
    if early is not None and early[0] is value:
        cg.append(Instr("LOAD_FAST", early[1]))
        return
    if type(value) is MethodLoad:  # its object through here: it may have been loaded early
        reconstruct(cg, tx, value.obj)
        cg.append(*compat.method_load_instrs(value.name))
        return
    if type(value) is SuperVariable:  # super() made while tracing: super(cls, obj) again
        cg.begin_call(super)
        reconstruct(cg, tx, value.cls)
        reconstruct(cg, tx, value.obj)
        cg.end_call(2)
        return
    if type(value) in (UserMethodVariable, BoundMethodVariable, NestedFunctionVariable) \
            or isinstance(value, IteratorVariable):
        if cg.load_built(value):  # one object, however often the stack and the locals hold it
            return
        if isinstance(value, GeneratorVariable):
            _rebuild_generator(cg, tx, value)
        elif isinstance(value, IteratorVariable):
            value.reconstruct(cg)
        elif isinstance(value, UserMethodVariable):
            cg.begin_call(types.MethodType)
            reconstruct(cg, tx, value.fn)
            reconstruct(cg, tx, value.obj)
            cg.end_call(2)
        elif isinstance(value, BoundMethodVariable):
            reconstruct(cg, tx, value.obj)
            cg.load_attr(value.name)
        elif isinstance(value, NestedFunctionVariable):
            _make_function(cg, tx, value)
        cg.remember_built(value)
        return
    value.reconstruct(cg)


def _rebuild_nested(cg: PyCodegen, tx: "InstructionTranslator", value: VariableTracker) -> bool:
    if type(value) in (UserMethodVariable, NestedFunctionVariable) or isinstance(value, IteratorVariable):
        reconstruct(cg, tx, value)  # built once: an iterator inside zip() may be a local too
        return True
    return False


def _load_closure(cg: PyCodegen, tx: "InstructionTranslator", closure: list) -> None:
    """Push the tuple of cells `closure` consists of: the frame's own cells, real cells from
    outside (through their source), and cells made while tracing (an inlined function's locals
    captured by a closure it returned), made once here with what the trace left in them."""
    frame_cells = {id(tx.symbolic_locals.get(name)): var
                   for name, var in [(n, CellVar(n)) for n in tx.code.co_cellvars] + [(n, FreeVar(n)) for n in tx.code.co_freevars]
                   if isinstance(tx.symbolic_locals.get(name), CellVariable)}
    for cell in closure:
        if id(cell) in frame_cells:
            var = frame_cells[id(cell)]
            if isinstance(var, CellVar):  # a closure leaving the frame sees what the trace stored
                _write_cell(cg, tx, var.name)
            cg.append(compat.load_closure_instr(var))
        elif not isinstance(cell, CellVariable):
            unsupported(Category.UNSUPPORTED_VALUE, f"{cell.describe()} in a closure cannot be rebuilt at a graph break")
        elif cell.external:
            if cell.source is None:
                unsupported(Category.UNSUPPORTED_VALUE, "a closure cell from outside the compiled function, with no "
                            "way to reach it, cannot be rebuilt at a graph break")
            cg.load_source(cell.source)
        elif not cg.load_built(cell):
            cg.begin_call(types.CellType)
            if cell.contents is not None:
                reconstruct(cg, tx, cell.contents)
            cg.end_call(int(cell.contents is not None))
            cg.remember_built(cell)
    cg.build(tuple, len(closure))


def _rebuild_generator(cg: PyCodegen, tx: "InstructionTranslator", generator: GeneratorVariable) -> None:
    """A generator made while tracing: not started yet (the argument of sum(), list(), a loop),
    it is made again by calling its function with the arguments it was bound to; suspended at a
    yield (a loop over it broke the graph), by a generator function that starts after that yield
    with the same stack and locals (a resume function of the generator)."""
    child = generator.translator
    names = generator.names or (child.code.co_name, child.code.co_qualname)
    cg.begin_call(_named)
    if generator.finished:
        cg.begin_call(_finished_generator)
        cg.end_call(0)
        cg.load_const(names[0])
        cg.load_const(names[1])
        cg.end_call(3)
        return
    if child.steps:
        cg.begin_call(_primed)  # next() runs it up to the yield its code starts with
        if child.code.co_cellvars:
            unsupported(Category.UNSUPPORTED_VALUE, f"{generator.describe()} has variables captured by inner "
                        "functions and cannot be rebuilt in the middle of its body at a graph break",
                        "iterate over a list instead, or move the code that breaks the graph out of the loop")
        plain = {name for name in child.symbolic_locals if name in child.code.co_varnames}
        live = arrange_live(child.code, analyze(child.code).live_locals(child.ip) & plain, plain)
        stack = list(child.stack[:-1])  # the top is what next() sent: the new generator's own yield gets it
        code = resume_code(child.code, child.ip, len(stack), frozenset(i for i, v in enumerate(stack) if v is NULL),
                           live, after_yield=True)
        arguments = [child.symbolic_locals[item] if isinstance(item, str) else item
                     for item in passing_order(child.code, stack, live) if item is not NULL]
    else:
        code = compat.flatten_signature(child.code)  # every argument slot positional, as bound
        arguments = [child.symbolic_locals[name] for name in code.co_varnames[: code.co_argcount]]
    cg.begin_call(types.FunctionType)
    cg.load_const(code)
    cg.load_const(child.f_globals)
    cg.load_const(code.co_name)
    cg.load_const(None)
    if child.closure:
        _load_closure(cg, tx, child.closure)
    else:
        cg.load_const(None)
    cg.end_call(5)
    cg.append(*compat.null_beside_callable())
    for value in arguments:
        reconstruct(cg, tx, value)
    cg.end_call(len(arguments))
    if child.steps:
        cg.end_call(1)
    cg.load_const(names[0])
    cg.load_const(names[1])
    cg.end_call(3)


def _named(generator: Any, name: str, qualname: str) -> Any:
    """The rebuilt generator with the names the traced one had (its function's, not its code's)."""
    generator.__name__, generator.__qualname__ = name, qualname
    return generator


def _primed(generator: Any) -> Any:
    next(generator)
    return generator


def _finished_generator() -> Any:
    empty: tuple[Any, ...] = ()
    generator = (item for item in empty)
    next(generator, None)
    return generator


def _make_function(cg: PyCodegen, tx: "InstructionTranslator", fn: NestedFunctionVariable) -> None:
    if fn.f_globals is not tx.f_globals:
        unsupported(Category.UNSUPPORTED_VALUE, f"the function {fn.qualname} was made in another module's "
                    "function while tracing and cannot be rebuilt at a graph break")
    fn.load_parts(cg, lambda value: reconstruct(cg, tx, value))
    if fn.closure:
        _load_closure(cg, tx, fn.closure)
    cg.append(*compat.make_function_with(fn.code, bool(fn.defaults), bool(fn.kwdefaults), bool(fn.closure),
                                         fn.annotations is not None))


def _rebuilt_not_same(value: VariableTracker) -> bool:
    """A constant with no source of a mutable kind (a structured dtype's names can be set):
    reconstructing it gives an object equal to, but not the same as, the program's."""
    from .variables.constant import ConstantVariable

    return (isinstance(value, ConstantVariable) and value.source is None
            and not isinstance(value.value, (type(None), bool, int, float, complex, str, bytes, tuple, frozenset)))


def _run_straight(cg: PyCodegen, tx: "InstructionTranslator", inst: Instr, kind: BreakKind,
                  stack: list[VariableTracker]) -> None:
    takes, leaves = (inst.arg if isinstance(inst.arg, int) else 0, 0) if kind is BreakKind.TERMINAL \
        else _STACK_USE[inst.name](inst)
    below, operands = stack[: len(stack) - takes], stack[len(stack) - takes:]
    if any(v is NULL for v in operands) and not inst.name.startswith("CALL"):
        raise CannotBreak("a NULL among the operands of an instruction run in Python")
    if operands and operands[0] is _PAIR_REST:
        raise CannotBreak("the instruction takes half of a method load")
    raising = kind is BreakKind.STRAIGHT and inst.name.startswith("CALL") and _raised_next(tx, leaves)
    if raising:
        _store_locals(cg, tx)
    if inst.name in ("STORE_ATTR", "DELETE_ATTR") and _rebuilt_not_same(operands[-1]):
        # `a.dtype.names = [...]`: the dtype the trace folded is rebuilt as a constant, another
        # object than the program's own, so the store would change nothing the program sees
        raise CannotBreak(f"the object whose attribute is set is {operands[-1].describe()}, which the trace "
                          "knows by value only: rebuilt, it is not the program's own object")
    for value in operands:
        if value is not _PAIR_REST:
            reconstruct(cg, tx, value)
    cg.append(_CLEAR_DEAD_TEMPS)  # gc.collect() must not find objects that only the temporaries hold
    result_nulls: frozenset[int] = frozenset()
    if inst.name == "LOAD_METHOD" or (inst.name == "LOAD_ATTR" and compat.attr_arg(inst)[0]):
        # the bound method alone; the NULL beside it exists only in the resume function's stack
        cg.load_attr(compat.attr_arg(inst)[1])
        result_nulls = compat.pair_null_positions()
    elif inst.name == "LOAD_SUPER_ATTR" and compat.super_attr_arg(inst)[0]:
        _, two_arguments, name = compat.super_attr_arg(inst)
        cg.append(Instr("LOAD_SUPER_ATTR", (False, two_arguments, name)))  # the bound attribute alone
        result_nulls = compat.pair_null_positions()
    elif inst.name == "LOAD_GLOBAL" and compat.global_arg(inst)[0]:
        cg.load_global(compat.global_arg(inst)[1])
        result_nulls = compat.pair_null_positions()
    elif inst.name == "CALL":
        if tx.kw_names:
            cg.append(Instr("KW_NAMES", tx.kw_names))
        cg.append(*compat.call_instrs(inst.arg))
    elif inst.name in ("LOAD_DEREF", "DELETE_DEREF") and isinstance(inst.arg, FreeVar) \
            and inst.arg.name in source_of(tx.code).co_cellvars:
        # a resume function's free variable that is a cell of the user's function: unbound, it
        # raises the UnboundLocalError the user's function does, not a NameError
        cg.append(*unbound_cell_read(inst, None, None, cg.__dict__.setdefault("unbound_handlers", [])))
    else:
        cg.append(inst.copy())
    if kind is BreakKind.TERMINAL:
        return
    if raising:
        cg.append(tx.instructions[tx.ip + 1].copy())
        return
    results: list[VariableTracker] = [NULL] * leaves
    for position in reversed(range(leaves)):  # the top of the stack is the last result
        if position in result_nulls:
            continue  # never pushed: a NULL must not be stored or popped
        temp = _Temp(f"___break_result_{position}")
        cg.append(Instr("STORE_FAST", temp.name))
        results[position] = temp
    _call_resume(cg, tx, tx.ip + 1, below + results)


def _raised_next(tx: "InstructionTranslator", leaves: int) -> bool:
    """The call's result is raised at once (RAISE_VARARGS 1), by no handler: the frame raises it, as
    Python does (a resume function's frame has the transformed frame as f_back; test_exceptions)."""
    following = tx.ip + 1
    return (leaves == 1 and following < len(tx.instructions)
            and tx.instructions[following].name == "RAISE_VARARGS" and tx.instructions[following].arg == 1
            and following not in tx.facts.handler and tx.ip not in tx.facts.handler)


def _store_locals(cg: PyCodegen, tx: "InstructionTranslator") -> None:
    """Before the frame raises: the user's locals as the trace has them, in its own slots (a traceback's
    frame shows and holds them); one that cannot be rebuilt keeps its slot as it is."""

    def rebuilds(value: VariableTracker) -> bool:  # (an array only the graph computed: an output)
        try:
            return cg.sources_read_by(lambda dry: reconstruct(dry, tx, value)) is not None
        except Unsupported:
            return False

    stored = []
    for name, value in sorted(tx.symbolic_locals.items()):
        if name not in tx.code.co_varnames or name in tx.code.co_cellvars or value is NULL or name.startswith("___"):
            continue  # (a resume function's stack items are its arguments already)
        if isinstance(value.source, LocalSource) and value.source.local_name == name:
            continue  # the slot holds it already
        if rebuilds(value):
            reconstruct(cg, tx, value)  # all loaded before any is stored: `a, b = b, a` reads both
            stored.append(name)
    cg.append(*[Instr("STORE_FAST", name) for name in reversed(stored)])


def _run_jump(cg: PyCodegen, tx: "InstructionTranslator", inst: Instr, stack: list[VariableTracker]) -> None:
    condition, below = stack[-1], stack[:-1]
    reconstruct(cg, tx, condition)
    name = inst.name.replace("_FORWARD", "").replace("_BACKWARD", "")
    if compat.pop_jump_needs_bool() and name in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE"):
        cg.append(Instr("TO_BOOL"))
    taken = Label()
    cg.append(Instr(compat.forward_jump_name(name), taken))
    built = cg.built_so_far()
    _call_resume(cg, tx, tx.ip + 1, below)
    cg.append(Instr("RETURN_VALUE"))
    cg.append(taken)
    cg.restore_built(built)
    _call_resume(cg, tx, tx.facts.label_index[inst.arg], below)


def _run_jump_or_pop(cg: PyCodegen, tx: "InstructionTranslator", inst: Instr, stack: list[VariableTracker]) -> None:
    condition, below = stack[-1], stack[:-1]
    reconstruct(cg, tx, condition)
    temp = _Temp("___break_condition")
    cg.append(Instr("STORE_FAST", temp.name), Instr("LOAD_FAST", temp.name))
    taken = Label()
    jump = "POP_JUMP_IF_TRUE" if inst.name == "JUMP_IF_TRUE_OR_POP" else "POP_JUMP_IF_FALSE"
    cg.append(Instr(compat.forward_jump_name(jump), taken))
    built = cg.built_so_far()
    _call_resume(cg, tx, tx.ip + 1, below)
    cg.append(Instr("RETURN_VALUE"))
    cg.append(taken)
    cg.restore_built(built)
    _call_resume(cg, tx, tx.facts.label_index[inst.arg], below + [temp])


def _call_resume(cg: PyCodegen, tx: "InstructionTranslator", index: int, stack: list[VariableTracker]) -> None:
    """`return <resume function>(stack items..., live locals...)`: the call; assemble adds the return."""
    plain = {name for name, value in tx.symbolic_locals.items()
             if name in tx.code.co_varnames and name not in tx.code.co_cellvars}
    held = cg.__dict__.get("held_locals", frozenset())
    live = arrange_live(tx.code, (analyze(tx.code).live_locals(index) & plain) | held, plain)
    nulls = frozenset(i for i, value in enumerate(stack) if value is NULL)
    methods = frozenset((i, value.name) for i, value in enumerate(stack) if isinstance(value, MethodLoad))
    code = resume_code(tx.code, index, len(stack), nulls, live, methods)
    current_policy().hand_on_floats_vary(code)
    if starts_in_python(code):  # call the code that runs in Python directly: the hook leaves it alone
        region = python_region(code)
        code = region.code if region is not None else code
    handler = Label()  # the call is guarded (see _guarded_call): from the callable on, as CPython does
    guarded = TryBegin(handler, push_lasti=False)
    cg.append(guarded, *begin_resume_call(tx.code, code))
    count = 0
    for item in passing_order(tx.code, stack, live):
        if isinstance(item, str):  # a live local
            reconstruct(cg, tx, tx.symbolic_locals[item])
            count += 1
        elif isinstance(item, MethodLoad):
            reconstruct(cg, tx, item.obj)
            count += 1
        elif item is not NULL and item is not _PAIR_REST:
            reconstruct(cg, tx, item)
            count += 1
    cg.append(_CLEAR_TEMPS)  # what only the arguments should keep alive (a generator's finally)
    # The call of a resume function is under a handler that takes this (transformed) frame out of
    # the traceback of an exception coming out of it: the resume function's own frame shows the
    # user's line where it happened, and the user sees each of their functions once.
    cg.append(*end_resume_call(tx.code, count, arguments_only=True), TryEnd(guarded))
    cg.__dict__.setdefault("handlers", []).append(handler)


def _emit_handlers(cg: PyCodegen) -> None:
    """After the code (which ends in a return): the handler of each call of a resume function."""
    handlers = cg.__dict__.get("handlers", [])
    if not handlers:
        return
    cg.append(Instr("RETURN_VALUE"))  # the last call's result: the handlers are never fallen into
    for handler in handlers:
        cg.append(*hiding_handler(handler))
    cg.append(*cg.__dict__.get("unbound_handlers", []))




def explain_break(tx: "InstructionTranslator", error: Unsupported) -> Unsupported:
    """The reason as the user reads it where the instruction says more than the value did: a
    loop over an iterator that exists only at run time."""
    inst = tx.instructions[tx.ip]
    if inst.name == "FOR_ITER" and not getattr(error, "split_before", False) and tx.stack:
        error.category = Category.UNSUPPORTED_VALUE
        error.explanation = (f"the loop iterates over {tx.stack[-1].describe()}, which exists only at run time, "
                             "so the loop runs in Python")
        error.hint = "iterate over a list, tuple, range or array to have the loop compiled"
        error.args = (error._message(),)
    return error


def describe_cannot_break(error: Unsupported, why: CannotBreak | Unsupported) -> Unsupported:
    """The reason a frame ran uncompiled: the original reason, and why no break was possible."""
    text = str(why) if isinstance(why, NoHandOff) else f"the frame cannot continue after a graph break here: {why}"
    wrapped = Unsupported(error.category, f"{error.explanation} ({text})", error.hint, error.location)
    wrapped.user_stack = getattr(error, "user_stack", [])
    return wrapped


__all__ = ["BreakKind", "CannotBreak", "Category", "NoHandOff", "StartsInPython", "codegen_break",
           "describe_cannot_break", "explain_break"]
