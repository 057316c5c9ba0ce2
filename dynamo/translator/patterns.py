"""Structural pattern matching (the match statement): MATCH_SEQUENCE, MATCH_MAPPING, GET_LEN,
MATCH_KEYS and MATCH_CLASS, decided on values known while tracing exactly as CPython decides."""
from __future__ import annotations

from bytecode import Instr

from ..exc import Category, unsupported
from ..variables.base import VariableTracker
from ..variables.class_identity import pin_for_isinstance, subclass_test
from ..variables.constant import ConstantVariable
from ..variables.sequences import TupleVariable
from .core import InstructionTranslatorBase

# CPython's type flags that make a class match sequence and mapping patterns
_TPFLAGS_SEQUENCE = 1 << 5
_TPFLAGS_MAPPING = 1 << 6
# builtin classes whose single positional sub-pattern matches the subject itself (`case int(n)`)
_MATCH_SELF = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


class PatternMatchingMixin(InstructionTranslatorBase):
    def MATCH_SEQUENCE(self, inst: Instr) -> None:
        self.push(ConstantVariable(bool(self.peek().python_type().__flags__ & _TPFLAGS_SEQUENCE)))

    def MATCH_MAPPING(self, inst: Instr) -> None:
        self.push(ConstantVariable(bool(self.peek().python_type().__flags__ & _TPFLAGS_MAPPING)))

    def GET_LEN(self, inst: Instr) -> None:
        from ..variables.builtins import BuiltinVariable

        self.push(BuiltinVariable(len).call_function(self, [self.peek()], {}))

    def MATCH_KEYS(self, inst: Instr) -> None:
        keys = self.peek().unpack(self)
        subject = self.peek(2)
        if not subject.is_mapping():  # CPython calls the subject's own get(): user mappings
            unsupported(Category.UNSUPPORTED_VALUE, f"a mapping pattern on {subject.describe()}")
        if not all(subject.contains(self, key) for key in keys):
            self.push(ConstantVariable(None))
            return
        self.push(TupleVariable([subject.getitem(self, key) for key in keys]))

    def MATCH_CLASS(self, inst: Instr) -> None:
        names = self.pop().as_python_constant()
        cls_variable = self.pop()
        subject = self.pop()
        decided = subclass_test(self, subject, cls_variable)
        cls = cls_variable.as_python_constant()
        if not isinstance(cls, type):
            unsupported(Category.EXCEPTION, "called match pattern must be a class (TypeError)")
        if decided is None:
            pin_for_isinstance(subject, cls)
        if not (issubclass(subject.python_type(), cls) if decided is None else decided):
            self.push(ConstantVariable(None))
            return
        self.push(self.match_attributes(subject, cls, inst.arg, names))

    def match_attributes(self, subject: VariableTracker, cls: type, count: int, names: tuple) -> VariableTracker:
        """The sub-values a class pattern matches against, or None when an attribute is missing."""
        if count == 1 and cls in _MATCH_SELF and "__match_args__" not in cls.__dict__:
            values = [subject]
            count = 0
        else:
            values = []
        match_args = getattr(cls, "__match_args__", ())
        if count and not isinstance(match_args, tuple):
            unsupported(Category.EXCEPTION, f"{cls.__name__}.__match_args__ must be a tuple (TypeError)")
        if count > len(match_args):
            unsupported(Category.EXCEPTION, f"{cls.__name__}() accepts {len(match_args)} positional sub-patterns (TypeError)")
        wanted = [*match_args[:count], *names]
        if len(set(wanted)) != len(wanted):
            unsupported(Category.EXCEPTION, f"{cls.__name__}() got multiple sub-patterns for one attribute (TypeError)")
        for name in wanted:
            if not subject.has_attribute(self, name):
                return ConstantVariable(None)
            values.append(subject.var_getattr(self, name))
        return TupleVariable(values)
