"""Everything that depends on the Python version in reading and writing bytecode: instruction
shapes (calls, NULLs, attribute loads), argument decoding, and code-object surgery.

This is the only module of the frontend that tests sys.version_info.
"""
from __future__ import annotations

import dis
import inspect
import sys
import types
from collections.abc import Iterable
from typing import Any

import bytecode.concrete
from bytecode import Compare, Instr
from bytecode.instr import UNSET, InstrLocation

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)

_VAR_FLAGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS

# The types marshal writes as themselves; it writes a subclass (np.float64, an IntEnum) as its
# base type and anything with a buffer (every NumPy scalar) as its raw bytes.
_MARSHAL_EXACT = frozenset({type(None), type(Ellipsis), bool, int, float, complex, str, bytes, types.CodeType})
_library_const_key = bytecode.concrete.const_key


def _const_key(value: Any) -> Any:
    """The bytecode package shares one co_consts slot between constants of equal marshal bytes,
    so np.int64(1), np.uint64(1) and np.timedelta64(1, 'D') (or np.float64(1.5) and 1.5) would
    become one object: a constant that marshal would not write as itself keeps a slot of its own."""
    if _marshals_as_itself(value):
        return _library_const_key(value)
    return (type(value), id(value))


def _marshals_as_itself(value: Any) -> bool:
    if type(value) in (tuple, frozenset):
        return all(_marshals_as_itself(item) for item in value)
    return type(value) in _MARSHAL_EXACT


bytecode.concrete.const_key = _const_key  # the name ConcreteBytecode.add_const looks up


def argument_slots(code: types.CodeType) -> int:
    """Positional, keyword-only, *args and **kwargs slots, in that order in co_varnames."""
    return (
        code.co_argcount
        + code.co_kwonlyargcount
        + bool(code.co_flags & inspect.CO_VARARGS)
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    )


def flatten_signature(code: types.CodeType) -> types.CodeType:
    """The same code taking every argument slot positionally: `def f(a, *args, k, **kw)` becomes
    a four-argument function whose `args` is a tuple and `kw` a dict, exactly as in the original."""
    return code.replace(
        co_argcount=argument_slots(code),
        co_posonlyargcount=0,
        co_kwonlyargcount=0,
        co_flags=code.co_flags & ~_VAR_FLAGS,
    )


# ---- which opcodes exist ----------------------------------------------------------------------------

# Opcodes in dis.opmap that a function body never contains: interpreter internals, the bodies
# of modules and classes, the interactive prompt.
_NOT_IN_FUNCTIONS = frozenset({
    "CACHE", "RESERVED", "INTERPRETER_EXIT", "ENTER_EXECUTOR", "EXIT_INIT_CHECK",
    "LOAD_NAME", "STORE_NAME", "DELETE_NAME", "IMPORT_STAR", "SETUP_ANNOTATIONS", "LOAD_LOCALS",
    "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_FROM_DICT_OR_DEREF", "LOAD_CLASSDEREF", "PRINT_EXPR",
})
_MIN_PSEUDO_OPCODE = 256  # 3.12+: compiler-only pseudo-instructions, never in a code object


def function_opcodes() -> frozenset[str]:
    """The opcodes this CPython can put in the code object of an ordinary function (not the
    specialized or instrumented forms, which the bytecode package never shows)."""
    return frozenset(
        name for name, opcode in dis.opmap.items()
        if opcode < _MIN_PSEUDO_OPCODE and not name.startswith("INSTRUMENTED_") and name not in _NOT_IN_FUNCTIONS
    )


# ---- reading: instruction arguments as the bytecode package decodes them per version ----------

def global_arg(inst: Instr) -> tuple[bool, str]:
    """LOAD_GLOBAL: (push a NULL?, name)."""
    return inst.arg if isinstance(inst.arg, tuple) else (False, inst.arg)


def attr_arg(inst: Instr) -> tuple[bool, str]:
    """LOAD_ATTR: (method form?, name); 3.11 has a separate LOAD_METHOD for the method form."""
    return inst.arg if isinstance(inst.arg, tuple) else (False, inst.arg)


def compare_arg(inst: Instr) -> tuple[Compare, bool]:
    """COMPARE_OP: (comparison, convert the result to bool?). 3.13 folds a following TO_BOOL into
    the argument (Compare.LT_CAST is LT with bit 16 set); earlier versions never set the bit."""
    value = int(inst.arg)
    return Compare(value & 0x0F), bool(value & 0x10)


def super_attr_arg(inst: Instr) -> tuple[bool, bool, str]:
    """LOAD_SUPER_ATTR (3.12+): (method form?, super called with two arguments?, name)."""
    return inst.arg


def split_call_prefix(lower: Any, upper: Any, null: Any) -> tuple[Any, Any]:
    """The two stack items below a call's arguments -> (callable, self or None).

    3.11/3.12 push [NULL, callable] or [method, self]; 3.13 pushes [callable, NULL or self].
    """
    if PY313:
        return lower, (None if upper is null else upper)
    if lower is null:
        return upper, None
    return lower, upper


def push_with_null(value: Any, null: Any) -> list[Any]:
    """The stack items LOAD_GLOBAL/LOAD_ATTR push for a call of `value` with a NULL beside it."""
    return [value, null] if PY313 else [null, value]


def push_method(method: Any, self_value: Any) -> list[Any]:
    """The stack items for a method call (3.12+ LOAD_ATTR method form, 3.11 LOAD_METHOD)."""
    return [method, self_value]


def has_line(instr: Instr) -> bool:
    """Whether an instruction carries a line number (a new Instr has no location; a location's
    line may be None)."""
    location = instr.location
    return location is not None and type(location.lineno) is int and location.lineno > 0


def set_lines(items: Iterable[Any], lineno: Any, only_missing: bool = True) -> None:
    """Give the Instrs among `items` the line `lineno` (with only_missing, those that have none),
    as `instr.lineno = lineno` does, with one location shared by all (it is frozen): the
    setter builds and checks one per instruction, which a graph break paid for every instruction
    of its code."""
    location = None if lineno is UNSET else InstrLocation(lineno, None, None, None)
    for item in items:
        if isinstance(item, Instr) and not (only_missing and has_line(item)):
            item.location = location


# ---- writing -----------------------------------------------------------------------------------------

def call_instrs(nargs: int) -> list[Instr]:
    return [Instr("CALL", nargs)] if PY312 else [Instr("PRECALL", nargs), Instr("CALL", nargs)]


def callable_with_null(load_callable: list[Instr]) -> list[Instr]:
    """Instructions that push a callable and the NULL a plain CALL expects beside it."""
    return load_callable + [Instr("PUSH_NULL")] if PY313 else [Instr("PUSH_NULL")] + load_callable


def load_global_instr(name: str) -> Instr:
    return Instr("LOAD_GLOBAL", (False, name))


def load_attr_instr(name: str) -> Instr:
    return Instr("LOAD_ATTR", (False, name) if PY312 else name)


def binary_subscr_instr() -> Instr:
    return Instr("BINARY_SUBSCR")


# FOR_ITER on an exhausted iterator jumps to its target and skips the loop-end cleanup there:
# nothing on 3.11, END_FOR on 3.12, END_FOR and POP_TOP on 3.13.
# 3.13's instructions on two locals (4 bits of the argument each) and the two single-local
# instructions each one does in turn
LOCAL_PAIRS = {"LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"), "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
               "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST")}


def split_local_pairs(items: list[Any]) -> list[Any]:
    """`items` with each instruction on two locals replaced by its two single-local instructions
    (the same effect, the same source location)."""
    out: list[Any] = []
    for item in items:
        if type(item) is Instr and item.name in LOCAL_PAIRS:
            out += [Instr(op, name, location=item.location) for op, name in zip(LOCAL_PAIRS[item.name], item.arg)]
        else:
            out.append(item)
    return out


FOR_ITER_EXHAUSTED_SKIP = 2 if PY313 else 1 if PY312 else 0
END_FOR_POPS = 1 if PY313 else 2


def load_closure_instr(var: Any) -> Instr:
    """Push the cell of `var` (a bytecode CellVar or FreeVar, or the name of a free variable)
    to build a closure tuple."""
    from bytecode import FreeVar

    if isinstance(var, str):
        var = FreeVar(var)
    return Instr("LOAD_FAST" if PY313 else "LOAD_CLOSURE", var)


def make_function_instrs(code: types.CodeType, with_closure: bool) -> list[Instr]:
    """Stack: [closure tuple if with_closure] -> function object for `code` with the frame's globals."""
    if PY313:
        instrs = [Instr("LOAD_CONST", code), Instr("MAKE_FUNCTION")]
        return instrs + ([Instr("SET_FUNCTION_ATTRIBUTE", 0x08)] if with_closure else [])
    return [Instr("LOAD_CONST", code), Instr("MAKE_FUNCTION", 0x08 if with_closure else 0)]


def make_function_with(code: types.CodeType, defaults: bool, kwdefaults: bool, closure: bool,
                       annotations: bool = False) -> list[Instr]:
    """Stack: [defaults tuple] [kwdefaults dict] [annotations tuple] [closure tuple] -> a function for
    `code` with the frame's globals (what `def` and `lambda` compile to)."""
    if PY313:
        instrs = [Instr("LOAD_CONST", code), Instr("MAKE_FUNCTION")]
        for flag, present in ((0x08, closure), (0x04, annotations), (0x02, kwdefaults), (0x01, defaults)):
            if present:  # each takes the function on top and the value below it
                instrs.append(Instr("SET_FUNCTION_ATTRIBUTE", flag))
        return instrs
    flags = int(defaults) | 2 * int(kwdefaults) | 4 * int(annotations) | 8 * int(closure)
    return [Instr("LOAD_CONST", code), Instr("MAKE_FUNCTION", flags)]


def pair_null_positions() -> frozenset[int]:
    """Where the NULL sits among the two items LOAD_GLOBAL/LOAD_ATTR push for a call."""
    return frozenset({1}) if PY313 else frozenset({0})


def method_load_instrs(name: str) -> list[Instr]:
    """Stack: obj -> the two items a method call of obj.name starts with (CPython's own form)."""
    return [Instr("LOAD_ATTR", (True, name))] if PY312 else [Instr("LOAD_METHOD", name)]


def null_beside_callable() -> list[Instr]:
    """Stack: callable -> the callable and the NULL a plain CALL expects, in call order."""
    return [Instr("PUSH_NULL")] if PY313 else [Instr("PUSH_NULL"), Instr("SWAP", 2)]


def pop_jump_needs_bool() -> bool:
    """3.13's POP_JUMP_IF_TRUE/FALSE require an exact bool (the compiler puts TO_BOOL first)."""
    return PY313


def forward_jump_name(name: str) -> str:
    """3.11 spells a forward conditional jump POP_JUMP_FORWARD_IF_*; 3.12+ POP_JUMP_IF_*."""
    return name if PY312 else name.replace("POP_JUMP_IF_", "POP_JUMP_FORWARD_IF_")
