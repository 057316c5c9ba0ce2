"""A faster Bytecode.to_code: the code objects the `bytecode` package would assemble, byte for byte.

Assembling was the dearest step of a graph break (a resume function is a whole frame's
instructions, assembled anew for each break: a quarter of the compile time of a test suite).
The package makes a ConcreteInstr object per instruction and cache entry, resolves every
attribute through properties and keeps a location object per instruction; this module runs
the same algorithm (_ConvertBytecodeToConcrete.concrete_instructions, compute_jumps,
ConcreteBytecode._assemble_code/_assemble_locations/_assemble_exception_table) over plain
lists and ints. Whatever it does not handle exactly as the package does (SetLineno, explicit
CACHE instructions, 3.13 two-local instructions past the 16th local, unusual arguments) goes
to the package itself. DYNAMO_CHECK_ASSEMBLER=1 assembles every code both ways and raises
where they differ (how this module was checked over whole test suites)."""
from __future__ import annotations

import dis
import os
import types
from typing import Any

import bytecode.concrete as _concrete
from bytecode import Bytecode, ControlFlowGraph, Instr, Label, TryBegin, TryEnd
from bytecode.concrete import HAS_COMPARE, HAS_CONST, HAS_FREE, HAS_LOCAL, HAS_NAME
from bytecode.instr import (
    BITFLAG2_OPCODES,
    BITFLAG_OPCODES,
    CACHE_OPCODE,
    DUAL_ARG_OPCODES,
    HAS_BACKWARD_RELATIVE_JUMP,
    HAS_FORWARD_RELATIVE_JUMP,
    INTRINSIC,
    UNSET,
    CellVar,
    Compare,
    FreeVar,
    Intrinsic1Op,
    Intrinsic2Op,
)
from bytecode.utils import PY312, PY313

_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
_CACHE_NAME = "CACHE"
_CHECK = os.environ.get("DYNAMO_CHECK_ASSEMBLER") == "1"
_JUMPS = HAS_FORWARD_RELATIVE_JUMP | HAS_BACKWARD_RELATIVE_JUMP
if PY313:
    _caches_of_name = dis._inline_cache_entries  # type: ignore[attr-defined]
    _CACHES = {op: _caches_of_name.get(name, 0) for name, op in dis.opmap.items()}
else:
    _CACHES = {op: dis._inline_cache_entries[op] for op in range(256)}  # type: ignore[attr-defined]


class _Unhandled(Exception):
    """Something this module does not assemble as the package does: let the package do it."""


def to_code(bytecode: Bytecode, stacksize: int | None = None, *,
            compute_exception_stack_depths: bool = True) -> types.CodeType:
    """What bytecode.to_code(stacksize=stacksize, compute_exception_stack_depths=...) returns."""
    if stacksize is None or compute_exception_stack_depths:
        # the package's own control flow graph computes the depths (and may merge try blocks):
        # only the assembly after it is done here
        cfg = ControlFlowGraph.from_bytecode(bytecode)
        stacksize = cfg.compute_stacksize(check_pre_and_post=True,
                                          compute_exception_stack_depths=compute_exception_stack_depths)
        bytecode = cfg.to_bytecode()
    try:
        code = _assemble(bytecode, stacksize)
    except _Unhandled:
        return bytecode.to_code(stacksize=stacksize, compute_exception_stack_depths=False)
    if _CHECK:
        _compare(code, bytecode.to_code(stacksize=stacksize, compute_exception_stack_depths=False))
    return code


_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_flags",
           "co_code", "co_consts", "co_names", "co_varnames", "co_filename", "co_name", "co_qualname",
           "co_firstlineno", "co_linetable", "co_exceptiontable", "co_freevars", "co_cellvars")


def _compare(mine: types.CodeType, theirs: types.CodeType) -> None:
    for name in _FIELDS:
        a, b = getattr(mine, name), getattr(theirs, name)
        if name == "co_consts":  # compared as the package dedupes them: by marshal (0.0 vs -0.0)
            key = _concrete.const_key
            a, b = tuple(map(key, a)), tuple(map(key, b))
        if a != b:
            raise AssertionError(f"dynamo.assembler: {name} of {mine.co_qualname} differs: {a!r} != {b!r}")


def _assemble(bytecode: Bytecode, stacksize: int) -> types.CodeType:
    consts: list = []
    const_index: dict = {}
    names: list[str] = []
    name_index: dict[str, int] = {}
    varnames: list[str] = []
    var_index: dict[str, int] = {}

    const_key = _concrete.const_key  # as the package looks it up: bytecode_compat replaces it

    def add_const(value: Any) -> int:
        key = const_key(value)
        index = const_index.get(key)
        if index is None:
            index = const_index[key] = len(consts)
            consts.append(value)
        return index

    def add_name(name: str) -> int:
        index = name_index.get(name)
        if index is None:
            index = name_index[name] = len(names)
            names.append(name)
        return index

    def add_varname(name: str) -> int:
        index = var_index.get(name)
        if index is None:
            index = var_index[name] = len(varnames)
            varnames.append(name)
        return index

    if bytecode.docstring is not UNSET:
        add_const(bytecode.docstring)
    for name in bytecode.argnames:
        add_varname(name)
    cellvars = list(bytecode.cellvars)
    freevars = list(bytecode.freevars)

    # the concrete code, one entry per code unit group: opcode, arg, location, caches after it
    ops: list[int] = []
    args: list[int] = []
    locs: list = []  # InstrLocation of each entry (never None: inherited as the package does)
    labels: dict[Label, int] = {}
    jumps: list[tuple[int, Label]] = []
    blocks: dict[TryBegin, list] = {}  # TryBegin -> [start index, stop index, depth, lasti]
    cell_entries: list[int] = []
    free_entries: list[int] = []
    location = _first_location(bytecode.first_lineno)
    if PY313:
        for item in bytecode:
            if type(item) is Instr and item._opcode in DUAL_ARG_OPCODES:
                for name in item._arg:
                    add_varname(name)

    for item in bytecode:
        kind = type(item)
        if kind is not Instr:
            if kind is Label:
                labels[item] = len(ops)
            elif kind is TryBegin:
                blocks[item] = [len(ops), 0, item.stack_depth, item.push_lasti]
            elif kind is TryEnd:
                blocks[item.entry][1] = len(ops) - 1
            else:
                raise _Unhandled  # SetLineno, a subclass: the package's own way
            continue
        if item._location is not None and item._location is not UNSET:
            location = item._location
        opcode = item._opcode
        arg = item._arg
        if opcode == CACHE_OPCODE or opcode > 255:  # explicit caches, pseudo instructions
            raise _Unhandled
        if type(arg) is Label or isinstance(arg, Label):
            jumps.append((len(ops), arg))
            c_arg = 0
        elif opcode in HAS_CONST:
            c_arg = add_const(arg)
        elif opcode in HAS_LOCAL:
            if opcode in DUAL_ARG_OPCODES:
                first, second = add_varname(arg[0]), add_varname(arg[1])
                if first > 15 or second > 15:
                    raise _Unhandled
                c_arg = (first << 4) + second
            elif PY313 and isinstance(arg, CellVar):
                cell_entries.append(len(ops))
                c_arg = cellvars.index(arg.name)
            elif PY313 and isinstance(arg, FreeVar):
                free_entries.append(len(ops))
                c_arg = freevars.index(arg.name)
            elif type(arg) is str:
                c_arg = add_varname(arg)
            else:
                raise _Unhandled
        elif opcode in HAS_NAME:
            if opcode in BITFLAG_OPCODES:
                if not (type(arg) is tuple and len(arg) == 2 and type(arg[1]) is str):
                    raise _Unhandled
                c_arg = int(arg[0]) + (add_name(arg[1]) << 1)
            elif opcode in BITFLAG2_OPCODES:
                c_arg = int(arg[0]) + 2 * int(arg[1]) + (add_name(arg[2]) << 2)
            elif type(arg) is str:
                c_arg = add_name(arg)
            else:
                raise _Unhandled
        elif opcode in HAS_FREE:
            if isinstance(arg, CellVar):
                cell_entries.append(len(ops))
                c_arg = cellvars.index(arg.name)
            elif isinstance(arg, FreeVar):
                free_entries.append(len(ops))
                c_arg = freevars.index(arg.name)
            else:
                raise _Unhandled
        elif opcode in HAS_COMPARE:
            if not isinstance(arg, Compare):
                raise _Unhandled
            if PY313:
                c_arg = arg._get_mask() + ((arg.value & 0b1111) << 5) + (arg.value & 16)
            elif PY312:
                c_arg = arg._get_mask() + (arg.value << 4)
            else:
                c_arg = arg.value
        elif opcode in INTRINSIC:
            if not isinstance(arg, (Intrinsic1Op, Intrinsic2Op)):
                raise _Unhandled
            c_arg = arg.value
        elif arg is UNSET:
            c_arg = UNSET
        elif isinstance(arg, int):
            c_arg = int(arg)
        else:
            raise _Unhandled
        ops.append(opcode)
        args.append(c_arg)
        locs.append(location)
        caches = _CACHES[opcode]
        if caches:  # the package's CACHE entries carry the location of their instruction
            ops.extend([CACHE_OPCODE] * caches)
            args.extend([0] * caches)
            locs.extend([location] * caches)

    # cells shared with locals take the local's slot (3.11+), free variables follow the cells
    if cell_entries or free_entries:
        shared: dict[int, int] = {}
        n_shared = n_unshared = 0
        for index, name in enumerate(cellvars):
            if name in varnames:
                shared[index] = varnames.index(name)
                n_shared += 1
            else:
                shared[index] = len(varnames) + n_unshared
                n_unshared += 1
        for entry in cell_entries:
            args[entry] = shared[args[entry]]
        free_offset = len(varnames) + len(cellvars) - n_shared
        for entry in free_entries:
            args[entry] += free_offset

    count = len(ops)
    sizes = [_units(arg) for arg in args]
    label_offsets, instruction_offsets = _offsets(sizes)
    for _ in range(10):  # the package's compute_jumps passes: arguments grow, offsets move
        modified = False
        for entry, label in jumps:
            opcode = ops[entry]
            target = label_offsets[labels[label]]
            size = sizes[entry]
            after = label_offsets[entry] + _CACHES[opcode] + size
            if opcode in HAS_FORWARD_RELATIVE_JUMP:
                target -= after
            elif opcode in HAS_BACKWARD_RELATIVE_JUMP:
                target = after - target
            if target < 0:
                raise _Unhandled  # the package's error
            args[entry] = target
            new_size = _units(target)
            if new_size != size:
                sizes[entry] = new_size
                modified = True
        if not modified:
            break
        label_offsets, instruction_offsets = _offsets(sizes)
    else:
        raise _Unhandled  # the package raises its own error

    code = bytearray()
    for opcode, arg, size in zip(ops, args, sizes):
        if arg is UNSET:
            code += bytes((opcode, 0))
            continue
        for shift in range(8 * (size - 1), 0, -8):
            code += bytes((_EXTENDED_ARG, (arg >> shift) & 0xFF))
        code += bytes((opcode, arg & 0xFF))

    table = bytearray()
    for block, (start, stop, depth, lasti) in blocks.items():
        start_offset = instruction_offsets[start]
        table += _varint(start_offset, True)
        table += _varint(instruction_offsets[stop] - start_offset + 1)
        table += _varint(label_offsets[labels[block.target]])
        table += _varint((depth << 1) + lasti)

    return types.CodeType(
        bytecode.argcount, bytecode.posonlyargcount, bytecode.kwonlyargcount, len(varnames), stacksize,
        int(bytecode.flags), bytes(code), tuple(consts), tuple(names), tuple(varnames), bytecode.filename,
        bytecode.name, bytecode.qualname, bytecode.first_lineno,
        _locations(bytecode.first_lineno, locs, sizes, count), bytes(table), tuple(freevars), tuple(cellvars))


def _first_location(lineno: int) -> Any:
    from bytecode.instr import InstrLocation

    return InstrLocation._from_tuple(lineno, None, None, None)


def _units(arg: Any) -> int:
    """Code units of an instruction with this argument: EXTENDED_ARGs for the high bytes."""
    if arg is UNSET or arg <= 0xFF:
        return 1
    size = 1
    while arg > 0xFF:
        size += 1
        arg >>= 8
    return size


def _offsets(sizes: list[int]) -> tuple[list[int], list[int]]:
    """Offset (in code units) of each entry's first unit, with one past the end; and of its
    instruction proper (after its EXTENDED_ARGs), as exception table entries count them."""
    labels = []
    instructions = []
    offset = 0
    for size in sizes:
        labels.append(offset)
        offset += size
        instructions.append(offset - 1)
    labels.append(offset)
    return labels, instructions


def _varint(value: int, begin: bool = False) -> bytes:
    digits: list[int] = []
    while value:
        digits.append(value & 63 | (64 if digits else 0))
        value >>= 6
    digits = digits or [0]
    if begin:
        digits[-1] |= 128
    return bytes(reversed(digits))


def _location_varint(value: int) -> list[int]:
    encoded = []
    while True:
        encoded.append(value & 0x3F)
        value >>= 6
        if value:
            encoded[-1] |= 0x40
        else:
            return encoded


def _location_svarint(value: int) -> list[int]:
    return _location_varint(((-value) << 1) | 1) if value < 0 else _location_varint(value << 1)


def _locations(first_lineno: int, locs: list, sizes: list[int], count: int) -> bytes:
    """ConcreteBytecode._assemble_locations: runs of entries at one location, 8 units at most
    per table entry. A location without a line is never merged with the next one."""
    if not count:
        return b""
    buf = bytearray()
    lineno = first_lineno
    old = locs[0]
    old_key = (old.lineno, old.end_lineno, old.col_offset, old.end_col_offset)
    run = sizes[0]
    for index in range(1, count):
        location = locs[index]
        if location is old:
            key = old_key
        else:
            key = (location.lineno, location.end_lineno, location.col_offset, location.end_col_offset)
        if old_key[0] is not None and key == old_key:
            run += sizes[index]
            continue
        lineno = _push(buf, run, lineno, old_key)
        run = sizes[index]
        old, old_key = location, key
    _push(buf, run, lineno, old_key)
    return bytes(buf)


def _push(buf: bytearray, size: int, lineno: int, key: tuple) -> int:
    while True:
        _pack(buf, size, lineno, key)
        lineno = key[0] if key[0] is not None else lineno
        size -= 8
        if size < 1:
            return lineno


def _pack(buf: bytearray, size: int, lineno: int, key: tuple) -> None:
    line, end_line, column, end_column = key
    header = 0x80 + (size - 1 if size <= 8 else 7)
    if line is None:
        buf.append(header + (15 << 3))
    elif column is None:
        if end_line is not None and end_line != line:
            raise ValueError(f"An instruction cannot have no column offset and span multiple lines (lineno: {line}, "
                             f"end lineno: {end_line}")
        buf.append(header + (13 << 3))
        buf.extend(_location_svarint(line - lineno))
    elif end_line == line and line == lineno and column < 72 and end_column - column <= 15:
        buf.append(header + ((column // 8) << 3))
        buf.append(((column % 8) << 4) + (end_column - column))
    elif end_line == line and line - lineno in (1, 2) and column < 256 and end_column < 256:
        buf.append(header + ((10 + line - lineno) << 3))
        buf.append(column)
        buf.append(end_column)
    else:
        buf.append(header + (14 << 3))
        buf.extend(_location_svarint(line - lineno))
        buf.extend(_location_varint(end_line - line))
        buf.extend(_location_varint(column + 1))
        buf.extend(_location_varint(end_column + 1))
