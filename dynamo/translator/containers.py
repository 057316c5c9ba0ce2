"""Building and taking apart containers: BUILD_*, LIST_/SET_/MAP_/DICT_ updates, UNPACK_*,
and string formatting of constants (f-strings)."""
from __future__ import annotations

from typing import Any, Callable

from bytecode import Instr

from ..exc import Category, unsupported
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.dicts import ConstDictVariable
from ..variables.builder import wrap_constant_result
from ..variables.sequences import ListVariable, SliceVariable, TupleVariable
from ..variables.sets import build_set
from .core import InstructionTranslatorBase

# FORMAT_VALUE's flags & 3 and CONVERT_VALUE's argument: !s, !r, !a
_CONVERSIONS: dict[int, Callable[[Any], str]] = {1: str, 2: repr, 3: ascii}


class ContainersMixin(InstructionTranslatorBase):
    def BUILD_TUPLE(self, inst: Instr) -> None:
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst: Instr) -> None:
        self.push(ListVariable(self.popn(inst.arg)))

    def BUILD_SET(self, inst: Instr) -> None:
        self.push(build_set(self, self.popn(inst.arg)))

    def SET_ADD(self, inst: Instr) -> None:
        value = self.pop()
        self.peek(inst.arg).call_method(self, "add", [value], {})

    def SET_UPDATE(self, inst: Instr) -> None:
        values = self.pop()
        self.peek(inst.arg).call_method(self, "update", [values], {})

    def BUILD_MAP(self, inst: Instr) -> None:
        flat = self.popn(2 * inst.arg)
        self.push(ConstDictVariable.from_pairs(self, flat[0::2], flat[1::2]))

    def BUILD_CONST_KEY_MAP(self, inst: Instr) -> None:
        keys = self.pop().unpack(self)
        values = self.popn(inst.arg)
        self.push(ConstDictVariable.from_pairs(self, keys, values))

    def BUILD_SLICE(self, inst: Instr) -> None:
        parts = self.popn(inst.arg)
        self.push(SliceVariable(*parts, *([ConstantVariable(None)] if inst.arg == 2 else [])))

    def BUILD_STRING(self, inst: Instr) -> None:
        self.push(ConstantVariable("".join(self.constants(self.popn(inst.arg), "an f-string"))))

    # The list is usually one BUILD_LIST just made, but a resume function gets a list under
    # construction as an argument: append/extend as methods, so that a list from outside the
    # trace has the mutation replayed.
    def LIST_APPEND(self, inst: Instr) -> None:
        value = self.pop()
        self.peek(inst.arg).call_method(self, "append", [value], {})

    def LIST_EXTEND(self, inst: Instr) -> None:
        value = self.pop()
        self.peek(inst.arg).call_method(self, "extend", [value], {})

    def LIST_TO_TUPLE(self, inst: Instr) -> None:
        self.push(TupleVariable(self.pop().unpack(self)))

    def MAP_ADD(self, inst: Instr) -> None:
        value = self.pop()
        key = self.pop()
        target = self.peek(inst.arg)
        assert isinstance(target, ConstDictVariable)  # the dict BUILD_MAP made
        target.store(self, key, value)

    def DICT_UPDATE(self, inst: Instr) -> None:  # {**a, **b}
        other = self.pop()
        target = self.peek(inst.arg)
        assert isinstance(target, ConstDictVariable)  # the dict BUILD_MAP made
        if not other.is_mapping():
            unsupported(Category.EXCEPTION, f"{other.describe()} is not a mapping (TypeError)")
        for key, value in other.as_keyword_arguments(self, allow_any_key=True).items():
            target.store(self, wrap_constant_result(key), value)

    def DICT_MERGE(self, inst: Instr) -> None:  # f(**a, **b): a repeated keyword is a TypeError
        other = self.pop()
        target = self.peek(inst.arg)
        assert isinstance(target, ConstDictVariable)  # the dict BUILD_MAP made
        if not other.is_mapping():
            unsupported(Category.EXCEPTION, f"argument after ** must be a mapping, not {other.describe()} (TypeError)")
        for key, value in other.as_keyword_arguments(self).items():
            if target.contains(self, ConstantVariable(key)):
                unsupported(Category.EXCEPTION, f"got multiple values for keyword argument {key!r} (TypeError)")
            target.store(self, ConstantVariable(key), value)

    def UNPACK_SEQUENCE(self, inst: Instr) -> None:
        items = self.pop().unpack(self)
        if len(items) != inst.arg:
            unsupported(Category.EXCEPTION, f"unpacking {len(items)} values into {inst.arg} names raises ValueError")
        self.push_many(list(reversed(items)))

    def UNPACK_EX(self, inst: Instr) -> None:
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = self.pop().unpack(self)
        if len(items) < before + after:
            unsupported(Category.EXCEPTION, f"not enough values to unpack (expected at least {before + after})")
        middle = ListVariable(items[before:len(items) - after])
        self.push_many(list(reversed([*items[:before], middle, *items[len(items) - after:]])))

    # ---- formatting -------------------------------------------------------------------------------------------
    def FORMAT_VALUE(self, inst: Instr) -> None:  # 3.11, 3.12
        spec = self.pop().as_python_constant() if inst.arg & 0x04 else ""
        value = self.pop()
        conversion = _CONVERSIONS.get(inst.arg & 0x03)
        self.push(self.format_constant(value, conversion, spec))

    def CONVERT_VALUE(self, inst: Instr) -> None:  # 3.13
        value = self.pop()
        conversion = _CONVERSIONS[int(inst.arg)]
        self.push(ConstantVariable(conversion(self.constants([value], "an f-string")[0])))

    def FORMAT_SIMPLE(self, inst: Instr) -> None:  # 3.13
        self.push(self.format_constant(self.pop(), None, ""))

    def FORMAT_WITH_SPEC(self, inst: Instr) -> None:  # 3.13
        spec = self.pop().as_python_constant()
        self.push(self.format_constant(self.pop(), None, spec))

    def format_constant(self, value: VariableTracker, conversion, spec: str) -> VariableTracker:
        (raw,) = self.constants([value], "an f-string")
        if conversion is not None:
            raw = conversion(raw)
        return ConstantVariable(format(raw, spec))

    def constants(self, values: list[VariableTracker], what: str) -> list:
        if not all(v.has_constant_contents() for v in values):
            culprit = next(v for v in values if not v.has_constant_contents())
            unsupported(Category.DATA_DEPENDENT_VALUE, f"{what} needs the value of {culprit.describe()}",
                        "format values outside the compiled function, or accept a graph break here")
        return [v.as_python_constant() for v in values]
