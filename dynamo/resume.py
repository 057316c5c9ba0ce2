"""Resume functions: after a graph break, the rest of a frame continues in a new function made
from the original bytecode, entered at the instruction after the break with the same stack."""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass

from bytecode import Bytecode, Instr, Label

from .bytecode_analysis import analyze

_PROLOGUE = frozenset({"RESUME", "COPY_FREE_VARS", "MAKE_CELL"})


@dataclass(frozen=True)
class ResumeOrigin:
    """Where a resume function came from: its original code and how far it shifts indexes."""

    original: types.CodeType
    index_shift: int  # resume-code index = original index + index_shift
    inside_loop: bool  # it starts in the middle of a loop body


# resume code -> origin, so that a resume of a resume is made from the original code
_origins: dict[types.CodeType, ResumeOrigin] = {}
_cache: dict[tuple, types.CodeType] = {}


def stack_arg(position: int) -> str:
    return f"___stack{position}"


def origin_of(code: types.CodeType) -> tuple[types.CodeType, int]:
    origin = _origins.get(code)
    return (origin.original, origin.index_shift) if origin else (code, 0)


def resume_code(code: types.CodeType, target: int, stack_size: int, null_positions: frozenset[int],
                live_locals: tuple[str, ...]) -> types.CodeType:
    """Code that rebuilds a stack of `stack_size` items (NULLs at `null_positions`, the others
    passed as leading arguments), takes `live_locals` as the following arguments, and jumps to
    instruction `target` of `code` (an index into bytecode_analysis.analyze(code).instructions)."""
    original, shift = origin_of(code)
    target -= shift
    key = (original, target, stack_size, null_positions, live_locals)
    if key in _cache:
        return _cache[key]
    facts = analyze(original)
    source = Bytecode.from_code(original)
    target_label = Label()
    body: list = []
    index = 0
    for item in source:
        if isinstance(item, Instr):
            if index == target:
                body.append(target_label)
            index += 1
            if item.name in _PROLOGUE and index <= _prologue_length(facts):
                continue  # the new prologue below replaces the original one
        body.append(item)
    lineno = facts.instructions[target].lineno or original.co_firstlineno
    prologue: list = []
    if original.co_freevars:
        prologue.append(Instr("COPY_FREE_VARS", len(original.co_freevars), lineno=lineno))
    prologue.append(Instr("RESUME", 0, lineno=lineno))
    passed = 0
    for position in range(stack_size):
        if position in null_positions:
            prologue.append(Instr("PUSH_NULL", lineno=lineno))
        else:
            prologue.append(Instr("LOAD_FAST", stack_arg(passed), lineno=lineno))
            passed += 1
    prologue.append(Instr("JUMP_FORWARD", target_label, lineno=lineno))

    offset = facts.offsets[target]
    resumed = Bytecode(prologue + body)
    resumed.argnames = [stack_arg(i) for i in range(passed)] + list(live_locals)
    resumed.argcount = len(resumed.argnames)
    resumed.posonlyargcount = 0
    resumed.kwonlyargcount = 0
    resumed.name = f"__resume_at_{offset}_{len(_cache) + 1}"
    resumed.qualname = f"{original.co_qualname}.<resume at line {lineno}>"
    resumed.filename = original.co_filename
    resumed.first_lineno = original.co_firstlineno
    resumed.freevars = list(original.co_freevars)
    resumed.cellvars = []
    resumed.flags = (original.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
    result = resumed.to_code()
    _cache[key] = result
    # the new prologue replaces the original's and adds the stack loads and the jump
    _origins[result] = ResumeOrigin(original, len(prologue) - _prologue_length(facts), _inside_loop(facts, target))
    return result


def _inside_loop(facts, index: int) -> bool:
    """Whether a backward jump at or after `index` goes back to or before it."""
    for position in range(index, len(facts.instructions)):
        arg = facts.instructions[position].arg
        if isinstance(arg, Label) and facts.label_index.get(arg, len(facts.instructions)) <= index:
            return True
    return False


def runs_in_python(code: types.CodeType) -> bool:
    """Resume functions that start inside a loop run as plain Python: compiling them would break
    again at the same place every iteration, and each break calls a new resume function, so a
    long loop would become a deep recursion. The loop stays a loop."""
    origin = _origins.get(code)
    return origin is not None and origin.inside_loop


def _prologue_length(facts) -> int:
    count = 0
    for inst in facts.instructions:
        if inst.name not in _PROLOGUE:
            break
        count += 1
    return count


def clear_cache() -> None:
    _cache.clear()
    _origins.clear()


def entry_index(code: types.CodeType) -> int:
    """Index of the first instruction of the user's code: after the prologue, or for a resume
    function, the instruction its prologue jumps to."""
    facts = analyze(code)
    if code in _origins:
        jump = next(i for i in facts.instructions if i.name == "JUMP_FORWARD")
        return facts.label_index[jump.arg]
    return _prologue_length(facts)


def entry_line(code: types.CodeType) -> int:
    """The user's source line where a resume function starts."""
    return analyze(code).instructions[entry_index(code)].lineno or code.co_firstlineno
