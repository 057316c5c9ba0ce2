"""Stack depths of code that only jumps forward (the transformed code of a frame), in one pass.

The bytecode package computes them over a control flow graph it builds, walks and turns back into
a list (a fifth of the compile time of a test suite run compiled). Transformed code is straight-line
code, forward branches and exception handlers placed after what they guard, so one scan in order
sees every way into a label before the label: this module gives the package's results for such
code (the largest depth; each TryBegin's depth, the least depth inside its region, as the package
computes it) and None for anything else (a backward jump, a jump inside a try region, dead code
holding a try region), which the package then handles. DYNAMO_CHECK_ASSEMBLER=1 compares the two.
"""
from __future__ import annotations

import dis
from typing import Any

from bytecode import Instr, Label, SetLineno, TryBegin, TryEnd
from bytecode.flags import CompilerFlags
from bytecode.instr import (BITFLAG2_OPCODES, BITFLAG_OPCODES, HAS_UNCONDITIONAL_JUMP, IS_INSTR_FINAL,
                            MONITORING_ONLY_JUMP_OPS, opcode_has_argument)
from bytecode.utils import PY313

_HASCONST = frozenset(dis.hasconst)
_GENERATOR_FLAGS = CompilerFlags.GENERATOR | CompilerFlags.COROUTINE | CompilerFlags.ASYNC_GENERATOR
_BITFLAGS = frozenset(BITFLAG_OPCODES) | frozenset(BITFLAG2_OPCODES)
_TAKES_ARGUMENT = frozenset(op for op in range(512) if opcode_has_argument(op))
_effects: dict[tuple[int, Any, bool], int] = {}


def _effect(instr: Instr, jump: bool) -> int:
    """Instr.stack_effect(jump), through a table keyed by opcode and encoded argument."""
    op, arg = instr.opcode, instr.arg
    if op not in _TAKES_ARGUMENT:
        value = None
    elif arg.__class__ is tuple and op in _BITFLAGS:
        value = arg[0]
    elif isinstance(arg, int) and op not in _HASCONST:
        value = arg
    else:  # a constant, name, label or variable: not an oparg
        value = 0
    key = (op, value, jump)
    found = _effects.get(key)
    if found is None:
        found = _effects[key] = dis.stack_effect(op, value, jump=jump)
    return found


class _NotForwardOnly(Exception):
    """The code is not of the shape this module handles: the package computes its depths."""


def forward_stack_depths(items: list[Any], flags: int) -> int | None:
    """The largest stack depth of `items` (a Bytecode's list), setting each reachable TryBegin's
    stack_depth as ControlFlowGraph.compute_stacksize does; None (and nothing set) when the code
    is not forward-only as described above."""
    try:
        depth, try_depths = _scan(items, 1 if not PY313 and flags & _GENERATOR_FLAGS else 0)
    except _NotForwardOnly:
        return None
    for begin, least in try_depths:
        begin.stack_depth = least
    return depth


def _scan(items: list[Any], size: int) -> tuple[int, list[tuple[TryBegin, int]]]:
    seen_labels: set[Label] = set()
    at_label: dict[Label, int] = {}  # depth of the jumps to a label not reached yet
    guarded: dict[Label, tuple[int, bool]] = {}  # handler -> least depth of its regions so far, push_lasti
    handler_start: dict[Label, int] = {}  # handler -> the depth it starts from, once reached
    regions: list[TryBegin] = []
    largest = size
    reachable = True
    region: TryBegin | None = None
    least = 0
    for item in list.__iter__(items):  # (a Bytecode's own __iter__ type-checks every item)
        if isinstance(item, Instr):
            if not reachable:
                continue
            op = item.opcode
            if item.has_jump() and op not in MONITORING_ONLY_JUMP_OPS:
                target = item.arg
                if region is not None or target in seen_labels:
                    raise _NotForwardOnly
                taken = size + _effect(item, True)
                if taken < 0 or at_label.setdefault(target, taken) != taken:
                    raise _NotForwardOnly
                largest = max(largest, taken)
                if op in HAS_UNCONDITIONAL_JUMP:
                    reachable = False
                    continue
            size += _effect(item, False)
            if size < 0:
                raise _NotForwardOnly
            largest = max(largest, size)
            least = min(least, size)
            if op in IS_INSTR_FINAL:
                reachable = False
        elif isinstance(item, Label):
            seen_labels.add(item)
            entries = set()
            if item in at_label:
                entries.add(at_label.pop(item))
            if reachable:
                entries.add(size)
            if item in guarded:
                start, push_lasti = guarded.pop(item)
                handler_start[item] = start
                entries.add(start + 1 + push_lasti)
            if len(entries) > 1:
                raise _NotForwardOnly
            reachable = bool(entries)
            if reachable:
                size = entries.pop()
                largest = max(largest, size)
        elif isinstance(item, TryBegin):
            if region is not None or not reachable or item.target in seen_labels:
                raise _NotForwardOnly
            region, least = item, size
        elif isinstance(item, TryEnd):
            if region is None or item.entry is not region:
                raise _NotForwardOnly
            handler, push_lasti = region.target, bool(region.push_lasti)
            before = guarded.get(handler, (least, push_lasti))
            if before[1] != push_lasti:
                raise _NotForwardOnly
            guarded[handler] = (min(least, before[0]), push_lasti)
            regions.append(region)
            region = None
        elif not isinstance(item, SetLineno):
            raise _NotForwardOnly
    if region is not None or at_label or guarded:
        raise _NotForwardOnly  # a jump or a handler whose label never came
    return largest, [(begin, handler_start[begin.target]) for begin in regions]
