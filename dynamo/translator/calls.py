"""Calls and functions: CALL (with PRECALL/KW_NAMES on 3.11-3.12, CALL_KW on 3.13),
CALL_FUNCTION_EX, MAKE_FUNCTION and SET_FUNCTION_ATTRIBUTE, RETURN_VALUE."""
from __future__ import annotations

from bytecode import Instr

from .. import bytecode_compat as compat
from ..variables.base import NULL, VariableTracker
from ..variables.functions import NestedFunctionVariable
from .core import InstructionTranslatorBase, ReturnSignal


class CallsMixin(InstructionTranslatorBase):
    def PRECALL(self, inst: Instr) -> None:
        pass

    def KW_NAMES(self, inst: Instr) -> None:
        self.kw_names = tuple(inst.arg)

    def CALL(self, inst: Instr) -> None:
        names, self.kw_names = self.kw_names, ()
        self.call_with_stack(inst.arg, names)

    def CALL_KW(self, inst: Instr) -> None:
        names = self.pop().as_python_constant()
        self.call_with_stack(inst.arg, tuple(names))

    def call_with_stack(self, argc: int, kw_names: tuple[str, ...]) -> None:
        arguments = self.popn(argc)
        upper = self.pop()
        lower = self.pop()
        fn, self_value = compat.split_call_prefix(lower, upper, NULL)
        if self_value is not None:
            arguments = [self_value, *arguments]
        count = len(kw_names)
        positional = arguments[: len(arguments) - count] if count else arguments
        kwargs = dict(zip(kw_names, arguments[len(arguments) - count:])) if count else {}
        self.push(self.call_function(fn, positional, kwargs))

    def call_function(self, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return fn.call_function(self, args, kwargs)

    def CALL_FUNCTION_EX(self, inst: Instr) -> None:
        kwargs_value = self.pop() if inst.arg & 1 else None
        args_value = self.pop()
        upper = self.pop()
        lower = self.pop()
        fn, self_value = compat.split_call_prefix(lower, upper, NULL)
        args = args_value.unpack(self)
        if self_value is not None:
            args = [self_value, *args]
        kwargs = kwargs_value.as_keyword_arguments(self) if kwargs_value is not None else {}
        self.push(self.call_function(fn, args, kwargs))

    def RETURN_VALUE(self, inst: Instr) -> None:
        raise ReturnSignal(self.pop())

    # ---- making functions -----------------------------------------------------------------------------------
    def MAKE_FUNCTION(self, inst: Instr) -> None:
        code = self.pop().as_python_constant()
        flags = inst.arg if isinstance(inst.arg, int) else 0  # 3.13: no argument
        closure = self.pop().unpack(self) if flags & 0x08 else []
        annotations = self.pop() if flags & 0x04 else None  # the function's __annotations__, rebuilt with it
        kwdefaults = self.pop().as_keyword_arguments(self) if flags & 0x02 else {}
        defaults = tuple(self.pop().unpack(self)) if flags & 0x01 else ()
        self.push(NestedFunctionVariable(code, self.f_globals, code.co_qualname, defaults, kwdefaults, closure,
                                         globals_source=self.globals_source, annotations=annotations))

    def SET_FUNCTION_ATTRIBUTE(self, inst: Instr) -> None:  # 3.13
        fn = self.pop()
        assert isinstance(fn, NestedFunctionVariable)  # what MAKE_FUNCTION pushed
        value = self.pop()
        if inst.arg & 0x08:
            fn.closure = value.unpack(self)
        elif inst.arg & 0x04:
            fn.annotations = value
        elif inst.arg & 0x02:
            fn.kwdefaults = value.as_keyword_arguments(self)
        elif inst.arg & 0x01:
            fn.defaults = tuple(value.unpack(self))
        self.push(fn)
