"""Guards: the conditions under which a compiled frame may be reused, as data, compiled into
a GuardProgram that dynamo._C runs before every cached call, and printed readably."""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass
from typing import Any

from . import _C
from .sources import Source


class GuardKind(enum.Enum):
    TYPE_IS = "type_is"
    ID_IS = "id_is"
    EQUALS = "equals"
    LEN_IS = "len_is"
    CALL = "call"  # value(x) must be true: a predicate with a describe(name) method (dict key order)
    SAME_AS = "same_as"  # value: another Source that must be the very same object (aliasing relied on)
    DISTINCT_FROM = "distinct_from"  # value: another Source that must be a different object


@dataclass(frozen=True)
class Guard:
    source: Source
    kind: GuardKind
    value: Any

    def __str__(self) -> str:
        name = self.source.name()
        if self.kind is GuardKind.TYPE_IS:
            return f"type({name}) is {_describe(self.value)}"
        if self.kind is GuardKind.ID_IS:
            return f"{name} is {_describe(self.value)}"
        if self.kind is GuardKind.LEN_IS:
            return f"len({name}) == {self.value}"
        if self.kind is GuardKind.CALL:
            return self.value.describe(name)
        if self.kind in _RELATIONS:
            return f"{name} {'is' if self.kind is GuardKind.SAME_AS else 'is not'} {self.value.name()}"
        return f"{name} == {self.value!r}"


def _describe(value: Any) -> str:
    if isinstance(value, type):
        return value.__qualname__ if value.__module__ == "builtins" else f"{value.__module__}.{value.__qualname__}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return f"<{type(value).__name__} {name}>" if name else f"<{type(value).__name__} at {id(value):#x}>"


class GuardSet:
    """An ordered, duplicate-free collection of guards for one compiled entry."""

    def __init__(self) -> None:
        self._guards: dict[Guard, None] = {}

    def add(self, source: Source, kind: GuardKind, value: Any) -> None:
        self._guards[Guard(source, kind, value)] = None

    def __iter__(self):
        return iter(self._guards)

    def __len__(self) -> int:
        return len(self._guards)

    def __str__(self) -> str:
        return "\n".join(str(g) for g in self._guards)

    def compile(self) -> Any:
        """The GuardProgram that checks every guard, each source fetched once."""
        return _ProgramBuilder().build(list(self._guards))


def failure_reason(program: Any, failed_at: int) -> str:
    """Readable text for the instruction `failed_at` of a program built by GuardSet.compile."""
    what = program.info[failed_at]
    if isinstance(what, Source):
        return f"{what.name()} could not be read"
    return str(what)


_RELATIONS = {GuardKind.SAME_AS: operator.is_, GuardKind.DISTINCT_FROM: operator.is_not}


class _ProgramBuilder:
    def __init__(self) -> None:
        self.instructions: list[tuple] = []
        self.info: list[Guard | Source] = []  # per instruction: the guard checked or source loaded
        self.registers: dict[Source, int] = {}

    def build(self, guards: list[Guard]) -> Any:
        for guard in guards:
            reg = self.load(guard.source)
            if guard.kind in _RELATIONS:  # two sources: checked by a call on both registers
                self.instructions.append(("call_many", _RELATIONS[guard.kind], (reg, self.load(guard.value))))
            else:
                self.instructions.append((guard.kind.value, reg, guard.value))
            self.info.append(guard)
        return _C.GuardProgram(self.instructions, max(len(self.registers), 1), self.info)

    def load(self, source: Source) -> int:
        if source not in self.registers:
            op, *operands = source.guard_load(self.load)
            self.registers[source] = reg = len(self.registers)
            self.instructions.append((op, reg, *operands))
            self.info.append(source)
        return self.registers[source]
