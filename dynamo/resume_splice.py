"""Resume functions' code without assembling their bodies again: a frame's code after its prologue
is assembled once, and each resume function is its own prologue followed by those bytes.

A frame with n graph breaks has n resume functions, each holding the rest of the frame: assembling
each from its instructions made the breaks' bytecode generation grow as n * n / 2 instructions.
Here the body (the original's instructions after its prologue) is assembled once per original;
a resume function copies its bytes from where it starts, renumbers the locals (its arguments come
first), and cuts and shifts the exception table and the line table. Only the common case is
spliced (no cells of the original, not entered after a yield); resume.resume_code assembles the
others, and config.check_assembler compares every spliced code with the assembled one."""
from __future__ import annotations

import bisect
import dis
import inspect
import types
from dataclasses import dataclass
from typing import Callable

from bytecode import Bytecode, Instr

from . import assembler, config
from .bytecode_analysis import exception_entries

_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
_JUMP_FORWARD = dis.opmap["JUMP_FORWARD"]
_NO_LOCATION, _NO_COLUMN, _LONG = 15, 13, 14


@dataclass
class _LineEntry:
    """One entry of a code's location table (CPython's co_linetable format, 3.11 to 3.13)."""
    start: int  # first code unit it covers
    end: int  # one past its last code unit
    kind: int  # _NO_LOCATION, _NO_COLUMN, or any other (written back in the long form)
    line: int | None
    end_line: int | None
    column1: int  # column + 1 (0: none), as the long form stores it
    end_column1: int
    table_start: int  # where it starts in co_linetable


@dataclass
class Body:
    """The assembled body of one original code: its instructions from the end of the prologue on."""
    code: types.CodeType
    first: int  # index of the original's instruction the body starts with
    starts: list[int]  # code unit where each body instruction starts (its EXTENDED_ARGs included)
    proper: list[int]  # code unit of each body instruction's own opcode (after its EXTENDED_ARGs)
    local_positions: list[int]  # byte offsets of the arguments that index the frame's locals
    local_args: list[tuple[int, ...]]  # their localsplus indices (two for 3.13's pair instructions)
    exceptions: list[tuple[int, int, int, int]]  # (start, end, target, depth << 1 | lasti), in code units
    lines: list[_LineEntry]
    line_starts: list[int]  # each line entry's first code unit
    tables: tuple  # its constants and names as the assembler looks them up (assembler.seed_tables)


# the latest _BODIES_KEPT originals' bodies (a frame's resume functions are made while its breaks are
# compiled, close together; every line entry kept alive is walked by each gc.collect() of the program)
_bodies: dict[types.CodeType, Body | None] = {}
_BODIES_KEPT = 64


def clear_cache() -> None:
    _bodies.clear()


def body_of(original: types.CodeType, items: list, first: int, instructions: int, stacksize: int) -> Body | None:
    """The Body of `original` (its items `items` from instruction `first` on, `instructions` of
    them), assembled on first use; None where its bytes cannot be shared (a local's index past
    what one byte holds, an unexpected layout)."""
    if original not in _bodies:
        _bodies[original] = _make_body(original, items, first, instructions, stacksize)
        if len(_bodies) > _BODIES_KEPT:
            del _bodies[next(iter(_bodies))]
    return _bodies[original]


def _make_body(original: types.CodeType, items: list, first: int, instructions: int, stacksize: int) -> Body | None:
    if assembler._MISSING is not None:
        return None
    try:
        return _assembled_body(original, items, first, instructions, stacksize)
    except Exception as error:  # a bug here: the resume functions are assembled whole
        assembler._failed(error)
        return None


def _assembled_body(original: types.CodeType, items: list, first: int, instructions: int,
                    stacksize: int) -> Body | None:
    source = assembler.trusted_bytecode(items)
    source.argnames = []
    source.name, source.qualname = original.co_name, original.co_qualname
    source.filename, source.first_lineno = original.co_filename, original.co_firstlineno
    source.freevars, source.cellvars = list(original.co_freevars), []
    # no arguments: nor *args or **kwargs, whose slots the body may never name (a resume function
    # takes neither either)
    source.flags = original.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    code = assembler.to_code(source, stacksize=stacksize, compute_exception_stack_depths=False)
    raw = code.co_code
    starts: list[int] = []
    proper: list[int] = []
    positions: list[int] = []
    args: list[tuple[int, ...]] = []
    kinds = assembler._KIND
    local_kinds = (assembler._LOCAL, assembler._FREE)
    pairs = assembler.DUAL_ARG_OPCODES or ()
    offset = 0
    while offset < len(raw):
        begin = offset
        extended = 0
        while raw[offset] == _EXTENDED_ARG:
            extended = (extended | raw[offset + 1]) << 8
            offset += 2
        opcode = raw[offset]
        starts.append(begin // 2)
        proper.append(offset // 2)
        if kinds[opcode] in local_kinds:
            if offset != begin:
                return None  # a local past index 255
            arg = raw[offset + 1]
            positions.append(offset + 1)
            args.append((arg >> 4, arg & 15) if opcode in pairs else (arg,))
        offset += 2 + 2 * assembler._CACHES[opcode]
    if len(starts) != instructions:
        return None
    lines = _line_entries(code)
    return Body(code, first, starts, proper, positions, args, exception_entries(code),
                lines, [entry.start for entry in lines], assembler.seed_tables(code))


def splice(body: Body, cut: int, target: int, prologue: list[Instr], lineno: int, template: Bytecode,
           stacksize: int) -> types.CodeType | None:
    """The resume function whose code is `prologue` (straight-line, every instruction at `lineno`),
    a jump to the original's instruction `target`, and the body from the original's instruction
    `cut` on; `template` gives its other attributes (arguments, flags, names). None where it
    cannot be spliced (then it is assembled)."""
    try:
        return _splice(body, cut, target, prologue, lineno, template, stacksize)
    except Exception as error:  # a bug here: assembling is the reference
        assembler._failed(error)
        return None


def _splice(body: Body, cut: int, target: int, prologue: list[Instr], lineno: int, template: Bytecode,
            stacksize: int) -> types.CodeType | None:
    code = body.code
    argnames = list(template.argnames)
    cut_unit = body.starts[cut - body.first]
    distance = body.starts[target - body.first] - cut_unit
    # the locals: the arguments first, then the body's in its order (cells: none; free variables after)
    taken = set(argnames)
    varnames = tuple(argnames) + tuple(name for name in code.co_varnames if name not in taken)
    head = assembler.trusted_bytecode(prologue)
    head._copy_attr_from(template)
    head.argnames = argnames
    start = assembler.to_code_seeded(head, stacksize, body.tables, varnames)
    if start is None or start.co_varnames != varnames or start.co_consts != code.co_consts:
        return None
    index_of = {name: index for index, name in enumerate(varnames)}
    renumbered = [index_of[name] for name in code.co_varnames]
    count = len(code.co_varnames)
    after_locals = len(varnames) - count  # free variables follow the locals
    tail = bytearray(code.co_code[2 * cut_unit:])
    base = 2 * cut_unit
    first_arg = bisect.bisect_left(body.local_positions, base)
    for position, old in zip(body.local_positions[first_arg:], body.local_args[first_arg:]):
        new = [renumbered[index] if index < count else index + after_locals for index in old]
        if len(new) == 2:
            if new[0] > 15 or new[1] > 15:
                return None
            tail[position - base] = (new[0] << 4) | new[1]
        elif new[0] > 255:
            return None
        else:
            tail[position - base] = new[0]
    jump_bytes = bytearray()
    for shift in range(8 * (assembler._units(distance) - 1), 0, -8):
        jump_bytes += bytes((_EXTENDED_ARG, (distance >> shift) & 0xFF))
    jump_bytes += bytes((_JUMP_FORWARD, distance & 0xFF)) + bytes(2 * assembler._CACHES[_JUMP_FORWARD])
    head_units = (len(start.co_code) + len(jump_bytes)) // 2
    shift_units = head_units - cut_unit
    table = bytearray()
    for begin, end, handler, depth_lasti in body.exceptions:
        if end <= cut_unit:
            continue
        if handler < cut_unit:
            return None  # (first_needed keeps every handler the code can reach)
        begin = max(begin, body.proper[cut - body.first]) + shift_units
        end += shift_units
        table += assembler._varint(begin, True) + assembler._varint(end - begin)
        table += assembler._varint(handler + shift_units) + assembler._varint(depth_lasti)
    return types.CodeType(
        len(argnames), 0, 0, len(varnames), stacksize, int(template.flags),
        start.co_code + bytes(jump_bytes) + bytes(tail), start.co_consts, start.co_names, varnames,
        template.filename, template.name, template.qualname, template.first_lineno,
        _lines_from(body, cut_unit, head_units, lineno, template.first_lineno), bytes(table),
        tuple(template.freevars), ())


# ---- tables -------------------------------------------------------------------------------------

def _line_entries(code: types.CodeType) -> list[_LineEntry]:
    table = code.co_linetable
    entries = []
    position = 0
    unit = 0
    line = code.co_firstlineno

    def varint() -> int:
        nonlocal position
        value = shift = 0
        while True:
            byte = table[position]
            position += 1
            value |= (byte & 63) << shift
            shift += 6
            if not byte & 64:
                return value

    def svarint() -> int:
        value = varint()
        return -(value >> 1) if value & 1 else value >> 1

    while position < len(table):
        begin = position
        header = table[position]
        position += 1
        kind, units = (header >> 3) & 15, (header & 7) + 1
        end_line: int | None
        if kind == _NO_LOCATION:
            entries.append(_LineEntry(unit, unit + units, kind, None, None, 0, 0, begin))
        else:
            if kind == _NO_COLUMN:
                line += svarint()
                end_line, column1, end_column1 = None, 0, 0
            elif kind == _LONG:
                line += svarint()
                end_line = line + varint()
                column1, end_column1 = varint(), varint()
            elif kind >= 10:  # one line form: the next line or the one after, two columns
                line += kind - 10
                end_line, column1, end_column1 = line, table[position] + 1, table[position + 1] + 1
                position += 2
            else:  # short form: this line, a column and a width in one byte
                second = table[position]
                position += 1
                column = kind * 8 + ((second >> 4) & 7)
                end_line, column1, end_column1 = line, column + 1, column + (second & 15) + 1
            entries.append(_LineEntry(unit, unit + units, kind, line, end_line, column1, end_column1, begin))
        unit += units
    return entries


def _lines_from(body: Body, cut_unit: int, head_units: int, lineno: int, first_lineno: int) -> bytes:
    """The location table of a prologue of `head_units` code units at `lineno`, then the body's
    from code unit `cut_unit` on: entries are copied as they are once the line that the next one
    counts from is the body's own there."""
    table = bytearray()
    line = assembler._push(table, head_units, first_lineno, (lineno, None, None, None))
    entries = body.lines
    index = bisect.bisect_right(body.line_starts, cut_unit) - 1
    if index < 0:
        return bytes(table)
    while index < len(entries):
        entry = entries[index]
        units = entry.end - max(entry.start, cut_unit)
        header = 0x80 | (units - 1)
        if entry.line is None:
            table.append(header | (_NO_LOCATION << 3))
        elif entry.kind == _NO_COLUMN:
            table.append(header | (_NO_COLUMN << 3))
            table += bytes(assembler._location_svarint(entry.line - line))
        else:
            assert entry.end_line is not None
            table.append(header | (_LONG << 3))
            table += bytes(assembler._location_svarint(entry.line - line))
            table += bytes(assembler._location_varint(entry.end_line - entry.line))
            table += bytes(assembler._location_varint(entry.column1))
            table += bytes(assembler._location_varint(entry.end_column1))
        index += 1
        if entry.line is not None:  # the line the rest counts from is the body's own now
            if index < len(entries):
                table += body.code.co_linetable[entries[index].table_start:]
            break
    return bytes(table)


def same_behaviour(spliced: types.CodeType, assembled: types.CodeType) -> None:
    """Raise AssertionError where the spliced code would run otherwise than the assembled one:
    its instructions (by the names and values they use), positions, exception table and signature
    (the order of locals after the arguments may differ)."""
    def described(code: types.CodeType) -> list:
        return [(i.offset, i.opname, i.argval, i.positions) for i in dis.get_instructions(code)]

    checks = {
        "instructions": (described(spliced), described(assembled)),
        "exception table": (exception_entries(spliced), exception_entries(assembled)),
        "stack size": (spliced.co_stacksize, assembled.co_stacksize),
        "arguments": (spliced.co_varnames[:spliced.co_argcount], assembled.co_varnames[:assembled.co_argcount]),
        "free variables": (spliced.co_freevars, assembled.co_freevars),
        "flags": (spliced.co_flags, assembled.co_flags),
    }
    for what, (mine, theirs) in checks.items():
        if mine != theirs:
            raise AssertionError(f"dynamo.resume_splice: {what} of {spliced.co_qualname} differ: {mine!r} != {theirs!r}")


def checked(spliced: types.CodeType, assemble: Callable[[], types.CodeType]) -> types.CodeType:
    """Under config.check_assembler: `spliced`, compared with what `assemble()` makes."""
    if config.check_assembler:
        same_behaviour(spliced, assemble())
    return spliced
