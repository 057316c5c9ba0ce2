"""Sources: where a value the trace used comes from in a frame (argument, global, closure cell,
attribute, item). A source names the value readably and tells guards how to fetch it again."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

# Loads a source into a guard register and returns the register number.
# (resume.stack_arg names a resume function's stack arguments with this prefix)
STACK_PREFIX = "___stack"
LoadFn = Callable[["Source"], int]


class Source:
    """Base of the frozen, chained source records."""

    def name(self) -> str:
        raise NotImplementedError

    def guard_load(self, load: LoadFn) -> tuple:
        """The GuardProgram load instruction, without its destination: (op, operands...)."""
        raise NotImplementedError

    def reconstruct(self, codegen: Any) -> None:
        """Emit bytecode that pushes the value, in the transformed code of the same frame."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name()


@dataclass(frozen=True)
class StateSource(Source):
    """State of the process that a trace relied on (NumPy's error state), no value of the frame:
    its guards (GuardKind.STATE) call a predicate of no arguments."""

    what: str

    def name(self) -> str:
        return self.what

    def guard_load(self, load: LoadFn) -> tuple:
        raise TypeError(f"{self.what} is no value a guard loads")

    def reconstruct(self, codegen: Any) -> None:
        raise TypeError(f"{self.what} is no value of the frame")


@dataclass(frozen=True)
class LocalSource(Source):
    """Argument slot `index` of the frame (positional, keyword-only, *args, **kwargs in order)."""

    index: int
    local_name: str

    def name(self) -> str:
        if self.local_name.startswith(STACK_PREFIX):  # a resume function's argument: what the code
            return f"stack[{self.local_name[len(STACK_PREFIX):]}]"  # before the break left on the stack
        return f"L[{self.local_name!r}]"

    def guard_load(self, load: LoadFn) -> tuple:
        return ("load_arg", self.index)

    def reconstruct(self, codegen: Any) -> None:
        codegen.load_local(self.local_name)


@dataclass(frozen=True)
class GlobalSource(Source):
    """A name looked up in the frame's globals, then builtins."""

    global_name: str

    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def guard_load(self, load: LoadFn) -> tuple:
        return ("load_global", self.global_name)

    def reconstruct(self, codegen: Any) -> None:
        codegen.load_global(self.global_name)


@dataclass(frozen=True)
class ClosureSource(Source):
    """The contents of closure cell `index` of the function being called."""

    index: int
    var_name: str

    def name(self) -> str:
        return f"C[{self.var_name!r}]"

    def guard_load(self, load: LoadFn) -> tuple:
        return ("load_cell", self.index)

    def reconstruct(self, codegen: Any) -> None:
        codegen.load_free(self.var_name)


@dataclass(frozen=True)
class AttrSource(Source):
    base: Source
    attr: str

    def name(self) -> str:
        return f"{self.base.name()}.{self.attr}"

    def guard_load(self, load: LoadFn) -> tuple:
        return ("load_attr", load(self.base), self.attr)

    def reconstruct(self, codegen: Any) -> None:
        self.base.reconstruct(codegen)
        codegen.load_attr(self.attr)


@dataclass(frozen=True)
class ItemSource(Source):
    base: Source
    key: Any

    def name(self) -> str:
        return f"{self.base.name()}[{self.key!r}]"

    def guard_load(self, load: LoadFn) -> tuple:
        return ("load_item", load(self.base), self.key)

    def reconstruct(self, codegen: Any) -> None:
        self.base.reconstruct(codegen)
        codegen.load_const(self.key)
        codegen.binary_subscr()
