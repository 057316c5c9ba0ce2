"""A faster Bytecode.to_code: the code objects the `bytecode` package would assemble, byte for byte.

Assembling was the dearest step of a graph break (a resume function is a whole frame's
instructions, assembled anew for each break: a quarter of the compile time of a test suite).
The package makes a ConcreteInstr object per instruction and cache entry, resolves every
attribute through properties and keeps a location object per instruction; this module runs
the same algorithm (_ConvertBytecodeToConcrete.concrete_instructions, compute_jumps,
ConcreteBytecode._assemble_code/_assemble_locations/_assemble_exception_table) over plain
lists and ints. Whatever it does not handle exactly as the package does (SetLineno, explicit
CACHE instructions, 3.13 two-local instructions past the 16th local, unusual arguments) goes
to the package itself, and so does anything that fails unexpectedly here (a bug, or a bytecode
release whose internals moved): counted in `failures`, shown by explain(), warned about once, and
raised under config.strict. DYNAMO_CHECK_ASSEMBLER=1 (config.check_assembler) assembles every code
both ways and raises where they differ (how this module was checked over whole test suites)."""
from __future__ import annotations

import dis
import logging
import types
from collections.abc import Iterable
from typing import Any

from bytecode import Bytecode, ControlFlowGraph, Instr, Label, TryBegin, TryEnd

from . import bytecode_compat as compat
from . import config

try:  # the package's internals this module builds on (pyproject.toml pins the releases tested)
    import bytecode.concrete as _concrete
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
except ImportError as error:  # another release: the package assembles every code (counted as failures)
    _MISSING: ImportError | None = error
else:
    _MISSING = None

from .stack_depth import forward_stack_depths

_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
_CACHE_NAME = "CACHE"
# how each opcode's argument is encoded, in the order the package tests them (a Label first)
_PLAIN, _CONST, _LOCAL, _NAME, _FREE, _COMPARE, _INTRINSIC = range(7)
_KIND = {}
if _MISSING is None:
    _JUMPS = HAS_FORWARD_RELATIVE_JUMP | HAS_BACKWARD_RELATIVE_JUMP
    if PY313:
        _caches_of_name = dis._inline_cache_entries  # type: ignore[attr-defined]
        _CACHES = {op: _caches_of_name.get(name, 0) for name, op in dis.opmap.items()}
    else:
        _CACHES = {op: dis._inline_cache_entries[op] for op in range(256)}  # type: ignore[attr-defined]
    for _op in range(256):
        _KIND[_op] = (_CONST if _op in HAS_CONST else _LOCAL if _op in HAS_LOCAL else _NAME if _op in HAS_NAME
                      else _FREE if _op in HAS_FREE else _COMPARE if _op in HAS_COMPARE
                      else _INTRINSIC if _op in INTRINSIC else _PLAIN)
_iterate = list.__iter__  # a Bytecode's own __iter__ type-checks every item; each is checked below


def trusted_bytecode(items: Iterable[Any], like: Bytecode | None = None) -> Bytecode:
    """Bytecode(items) (with `like`'s attributes, as like.copy() has them) without the package's
    type check of every item: the items come from a Bytecode or from dynamo's code generators, and
    _assemble checks each item's type itself."""
    made = Bytecode()
    list.extend(made, items)
    if like is not None:
        made._copy_attr_from(like)
    return made


class _Unhandled(Exception):
    """Something this module does not assemble as the package does: let the package do it."""


# codes the package assembled because this module failed unexpectedly, since dynamo.reset()
failures = 0
last_failure = ""  # "ExceptionType: message" of the latest such failure
_warned = False


def reset_failures() -> None:
    global failures, last_failure
    failures, last_failure = 0, ""


def _failed(error: Exception) -> None:
    """An unexpected error while assembling: raised under config.strict, else counted (and warned about
    once per process) while the package assembles the code."""
    global failures, last_failure, _warned
    if config.strict:
        raise error
    failures += 1
    last_failure = f"{type(error).__name__}: {error}"
    if not _warned:
        _warned = True
        logging.getLogger("dynamo").warning(
            "dynamo: internal error of dynamo.assembler, please report: %s; the bytecode package assembles "
            "the code instead (slower compiles; explain() counts them)", last_failure, exc_info=True)


def to_code(bytecode: Bytecode, stacksize: int | None = None, *,
            compute_exception_stack_depths: bool = True) -> types.CodeType:
    """What bytecode.to_code(stacksize=stacksize, compute_exception_stack_depths=...) returns."""
    given = bytecode
    if stacksize is None or compute_exception_stack_depths:
        depth = forward_stack_depths(bytecode, bytecode.flags) if compute_exception_stack_depths else None
        if depth is not None:
            stacksize = depth
        else:
            # the package's own control flow graph computes the depths (and may merge try blocks):
            # only the assembly after it is done here
            bytecode = _package_depths(bytecode, compute_exception_stack_depths)
            stacksize = bytecode.stacksize
    try:
        if _MISSING is not None:
            raise RuntimeError(f"this bytecode release lacks what dynamo.assembler uses: {_MISSING}")
        code, split_pairs = _assemble(bytecode, stacksize)
    except _Unhandled:
        return _package_to_code(bytecode, stacksize)
    except Exception as error:  # anything else: the package's own assembler is the reference
        _failed(error)
        return _package_to_code(bytecode, stacksize)
    if config.check_assembler and not split_pairs:  # (the package packs such a pair wrongly)
        _compare(code, bytecode.to_code(stacksize=stacksize, compute_exception_stack_depths=False))
        if bytecode is given and (compute_exception_stack_depths or stacksize is None):
            package = _package_depths(given, compute_exception_stack_depths)
            _compare(code, package.to_code(stacksize=package.stacksize, compute_exception_stack_depths=False))
    return code


def seed_tables(code: types.CodeType) -> tuple[_Table, _Table]:
    """The constants and names tables `code` was assembled with, for to_code_seeded."""
    consts, names = _Table(_concrete.const_key), _Table()
    for value in code.co_consts:
        consts.add(value)
    for name in code.co_names:
        names.add(name)
    return consts, names


def to_code_seeded(bytecode: Bytecode, stacksize: int, tables: tuple[_Table, _Table],
                   varnames: tuple) -> types.CodeType | None:
    """Straight-line `bytecode` (no jumps, no try blocks) assembled with its tables starting
    as `tables` (seed_tables) and (after its arguments) `varnames`: the start of a code whose
    other bytes were assembled with those tables. None where this module cannot."""
    if _MISSING is not None:
        return None
    try:
        code, split_pairs = _assemble(bytecode, stacksize, (tables[0], tables[1], varnames))
    except _Unhandled:
        return None
    return None if split_pairs else code


def _package_to_code(bytecode: Bytecode, stacksize: int) -> types.CodeType:
    """The package's assembly, with 3.13's instructions on two locals split in two first: it packs
    their two indices in 4 bits each without checking that they fit (local 16 reads as local 0)."""
    if compat.PY313:
        bytecode = trusted_bytecode(compat.split_local_pairs(list(_iterate(bytecode))), like=bytecode)
    return bytecode.to_code(stacksize=stacksize, compute_exception_stack_depths=False)


def _package_depths(bytecode: Bytecode, compute_exception_stack_depths: bool) -> Bytecode:
    """The bytecode as the package's control flow graph gives it back, its depths computed (the
    largest in a `stacksize` attribute)."""
    cfg = ControlFlowGraph.from_bytecode(bytecode)
    stacksize = cfg.compute_stacksize(check_pre_and_post=True, compute_exception_stack_depths=compute_exception_stack_depths)
    result = cfg.to_bytecode()
    result.stacksize = stacksize
    return result


_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_flags",
           "co_code", "co_consts", "co_names", "co_varnames", "co_filename", "co_name", "co_qualname",
           "co_firstlineno", "co_linetable", "co_exceptiontable", "co_freevars", "co_cellvars")


class _Table:
    """Values in first-use order with the index of each, keyed by `key(value)` (co_consts, co_names,
    co_varnames): what the package's ConcreteBytecode builds while it assembles."""

    __slots__ = ("items", "index", "key")

    def __init__(self, key: Any = None) -> None:
        self.items: list = []
        self.index: dict = {}
        self.key = key

    def copy(self) -> "_Table":
        made = _Table(self.key)
        made.items, made.index = list(self.items), dict(self.index)
        return made

    def add(self, value: Any) -> int:
        key = value if self.key is None else self.key(value)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.items)
            self.items.append(value)
        return found


def _compare(mine: types.CodeType, theirs: types.CodeType) -> None:
    for name in _FIELDS:
        a, b = getattr(mine, name), getattr(theirs, name)
        if name == "co_consts":  # compared as the package dedupes them: by marshal (0.0 vs -0.0)
            key = _concrete.const_key
            a, b = tuple(map(key, a)), tuple(map(key, b))
        if a != b:
            raise AssertionError(f"dynamo.assembler: {name} of {mine.co_qualname} differs: {a!r} != {b!r}")


def _assemble(bytecode: Bytecode, stacksize: int, seed: tuple[_Table, _Table, tuple] | None = None
              ) -> tuple[types.CodeType, bool]:
    """The code object, and whether an instruction on two locals was split in two (its locals'
    indices did not fit in 4 bits each). `seed`: (consts, names, varnames) that the tables start
    with (the varnames after the arguments), as code that other bytes will follow expects them."""
    const_key = _concrete.const_key  # as the package looks it up: bytecode_compat replaces it
    if seed is None:
        consts, names = _Table(const_key), _Table()
    else:
        consts, names = seed[0].copy(), seed[1].copy()
    varnames = _Table()
    add_const, add_name, add_varname = consts.add, names.add, varnames.add

    if bytecode.docstring is not UNSET:
        add_const(bytecode.docstring)
    for name in bytecode.argnames:
        add_varname(name)
    if seed is not None:
        for name in seed[2]:
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
    split_pairs = False  # an instruction on two locals whose indices need more than 4 bits each
    location = _first_location(bytecode.first_lineno)
    if PY313:
        for item in _iterate(bytecode):
            if type(item) is Instr and item._opcode in DUAL_ARG_OPCODES:
                for name in item._arg:
                    add_varname(name)

    for item in _iterate(bytecode):
        kind = type(item)
        if kind is not Instr:
            if kind is Label:
                labels[item] = len(ops)
            elif kind is TryBegin:
                blocks[item] = [len(ops), 0, item.stack_depth, item.push_lasti]
            elif kind is TryEnd:
                blocks[item.entry][1] = len(ops)  # the block ends with the code unit before this entry
            else:
                raise _Unhandled  # SetLineno, a subclass: the package's own way
            continue
        if item._location is not None and item._location is not UNSET:
            location = item._location
        opcode = item._opcode
        arg = item._arg
        if opcode == CACHE_OPCODE or opcode > 255:  # explicit caches, pseudo instructions
            raise _Unhandled
        category = _KIND[opcode]
        if type(arg) is Label or isinstance(arg, Label):
            jumps.append((len(ops), arg))
            c_arg = 0
        elif category is _PLAIN:
            if arg is UNSET:
                c_arg = UNSET
            elif isinstance(arg, int):
                c_arg = int(arg)
            else:
                raise _Unhandled
        elif category is _CONST:
            c_arg = add_const(arg)
        elif category is _LOCAL:
            if opcode in DUAL_ARG_OPCODES:
                first, second = add_varname(arg[0]), add_varname(arg[1])
                if first > 15 or second > 15:  # past 4 bits: the two single-local instructions it does
                    one, two = compat.LOCAL_PAIRS[item.name]
                    ops.append(dis.opmap[one])
                    args.append(first)
                    locs.append(location)
                    opcode, c_arg = dis.opmap[two], second
                    split_pairs = True
                else:
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
        elif category is _NAME:
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
        elif category is _FREE:
            if isinstance(arg, CellVar):
                cell_entries.append(len(ops))
                c_arg = cellvars.index(arg.name)
            elif isinstance(arg, FreeVar):
                free_entries.append(len(ops))
                c_arg = freevars.index(arg.name)
            else:
                raise _Unhandled
        elif category is _COMPARE:
            if not isinstance(arg, Compare):
                raise _Unhandled
            if PY313:
                c_arg = arg._get_mask() + ((arg.value & 0b1111) << 5) + (arg.value & 16)
            elif PY312:
                c_arg = arg._get_mask() + (arg.value << 4)
            else:
                c_arg = arg.value
        else:
            if not isinstance(arg, (Intrinsic1Op, Intrinsic2Op)):
                raise _Unhandled
            c_arg = arg.value
        ops.append(opcode)
        args.append(c_arg)
        locs.append(location)

    # cells shared with locals take the local's slot (3.11+), free variables follow the cells
    if cell_entries or free_entries:
        shared: dict[int, int] = {}
        n_shared = n_unshared = 0
        for index, name in enumerate(cellvars):
            if name in varnames.index:
                shared[index] = varnames.index[name]
                n_shared += 1
            else:
                shared[index] = len(varnames.items) + n_unshared
                n_unshared += 1
        for entry in cell_entries:
            args[entry] = shared[args[entry]]
        free_offset = len(varnames.items) + len(cellvars) - n_shared
        for entry in free_entries:
            args[entry] += free_offset

    count = len(ops)
    caches = [_CACHES[opcode] for opcode in ops]
    sizes = [_units(arg) for arg in args]
    offsets = _offsets(sizes, caches)
    for _ in range(10):  # the package's compute_jumps passes: arguments grow, offsets move
        modified = False
        for entry, label in jumps:
            opcode = ops[entry]
            target = offsets[labels[label]]
            size = sizes[entry]
            after = offsets[entry] + caches[entry] + size
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
        offsets = _offsets(sizes, caches)
    else:
        raise _Unhandled  # the package raises its own error

    code = bytearray()
    for opcode, arg, size, cache in zip(ops, args, sizes, caches):
        if arg is UNSET:
            code += bytes((opcode, 0))
        else:
            for shift in range(8 * (size - 1), 0, -8):
                code += bytes((_EXTENDED_ARG, (arg >> shift) & 0xFF))
            code += bytes((opcode, arg & 0xFF))
        if cache:
            code += bytes(2 * cache)  # CACHE 0

    table = bytearray()
    for block, (start, stop, depth, lasti) in blocks.items():
        if start >= count or stop == 0:
            raise _Unhandled  # an empty code's block: the package's error
        # from the instruction proper (after its EXTENDED_ARGs) to the last code unit before `stop`
        start_offset = offsets[start] + sizes[start] - 1
        table += _varint(start_offset, True)
        table += _varint(offsets[stop] - start_offset)  # (last unit - start) + 1
        table += _varint(offsets[labels[block.target]])
        table += _varint((depth << 1) + lasti)

    return types.CodeType(
        bytecode.argcount, bytecode.posonlyargcount, bytecode.kwonlyargcount, len(varnames.items), stacksize,
        int(bytecode.flags), bytes(code), tuple(consts.items), tuple(names.items), tuple(varnames.items), bytecode.filename,
        bytecode.name, bytecode.qualname, bytecode.first_lineno,
        _locations(bytecode.first_lineno, locs, sizes, caches), bytes(table), tuple(freevars), tuple(cellvars)), split_pairs


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


def _offsets(sizes: list[int], caches: list[int]) -> list[int]:
    """Offset (in code units) of each entry (its EXTENDED_ARGs, instruction and caches), and one
    past the end."""
    offsets = [0]
    offset = 0
    for size, cache in zip(sizes, caches):
        offset += size + cache
        offsets.append(offset)
    return offsets


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


def _locations(first_lineno: int, locs: list, sizes: list[int], caches: list[int]) -> bytes:
    """ConcreteBytecode._assemble_locations: runs of code units at one location, 8 units at most
    per table entry. An instruction's caches are at its location; a location without a line is
    never merged with the next code unit (each cache entry of it gets a table entry)."""
    if not locs:
        return b""
    buf = bytearray()
    lineno = first_lineno
    old = locs[0]
    old_key = (old.lineno, old.end_lineno, old.col_offset, old.end_col_offset)
    run = 0
    for location, size, cache in zip(locs, sizes, caches):
        if location is old:
            key = old_key
        else:
            key = (location.lineno, location.end_lineno, location.col_offset, location.end_col_offset)
        if run and not (old_key[0] is not None and key == old_key):
            lineno = _push(buf, run, lineno, old_key)
            run = 0
        old, old_key = location, key
        if key[0] is not None:
            run += size + cache
        else:  # nothing merges with a unit without a line
            if run:
                lineno = _push(buf, run, lineno, old_key)
            run = size
            for _ in range(cache):
                lineno = _push(buf, run, lineno, old_key)
                run = 1
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
