"""The exceptions a user of dynamo can see, all under DynamoError, each naming its cause.

Source locations (file:line and the line's text) are attached where a user line is known.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import NoReturn


@dataclass(frozen=True)
class SourceLocation:
    """A line of the user's program: file, line number, function and the line's text."""

    filename: str
    lineno: int
    function: str = ""

    @property
    def text(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        where = f'File "{self.filename}", line {self.lineno}'
        if self.function:
            where += f", in {self.function}"
        text = self.text
        return f"{where}\n    {text}" if text else where


class DynamoError(Exception):
    """Root of every error dynamo raises on purpose."""


class InvalidBackend(DynamoError, ValueError):
    """compile(backend=...) named a backend that is not registered."""

    def __init__(self, name: str, known: list[str]):
        super().__init__(
            f"unknown backend {name!r}; registered backends: {', '.join(known)}. "
            "Pass one of these names, or any callable (graph_module, example_inputs) -> callable, "
            "or register your own with dynamo.register_backend."
        )
        self.name = name


class BackendCompilerFailed(DynamoError):
    """A backend raised while compiling a graph."""

    def __init__(self, backend_name: str, error: BaseException, location: SourceLocation | None = None):
        message = f"backend {backend_name!r} failed to compile a graph: {type(error).__name__}: {error}"
        if location is not None:
            message += f"\n  while compiling the graph that starts at\n  {location}"
        super().__init__(message)
        self.backend_name = backend_name
        self.location = location


class Unsupported(DynamoError):
    """Something in the user's code cannot be captured; with fullgraph=True this is raised."""

    # set by the translators as the error passes through them, absent until then (read with getattr)
    user_stack: list[SourceLocation]  # where each translator was, innermost first
    break_step: int  # the frame's translator: the step a graph break stops before
    split_before: bool  # the break goes before the instruction (code in try and with blocks runs in Python)
    no_break: bool  # the frame's own code raises it (NameError's hint reads that frame's locals)

    def __init__(self, category: str, explanation: str, hint: str = "", location: SourceLocation | None = None):
        self.category = category
        self.explanation = explanation
        self.hint = hint
        self.location = location
        super().__init__(self._message())

    def _message(self) -> str:
        lines = [f"{self.category}: {self.explanation}"]
        if self.location is not None:
            lines.append(f"  at {self.location}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


class InternalCompilerError(DynamoError):
    """A bug of dynamo while compiling a frame: not a graph break, not the user's error. Raised under
    config.strict (chained from the original exception); otherwise the frame runs uncompiled and
    explain() reports it."""

    def __init__(self, error: BaseException, function: str, location: SourceLocation | None = None):
        self.error = error
        self.function = function
        self.location = location
        message = f"internal error of dynamo while compiling {function}: {type(error).__name__}: {error}"
        if location is not None:
            message += f"\n  while tracing {location}"
        super().__init__(message + "\n  please report this (with the traceback above); "
                                   "without DYNAMO_STRICT=1 the function runs uncompiled")


class Category:
    """The fixed categories of things dynamo cannot capture; explain() groups breaks by them."""

    DATA_DEPENDENT_BRANCH = "data-dependent branch"
    DATA_DEPENDENT_VALUE = "data-dependent value"
    DATA_DEPENDENT_SHAPE = "data-dependent shape"
    UNSUPPORTED_CALL = "unsupported call"
    UNSUPPORTED_OPCODE = "unsupported Python feature"
    UNSUPPORTED_VALUE = "unsupported value"
    UNSUPPORTED_ATTRIBUTE = "unsupported attribute"
    SIDE_EFFECT = "unsupported side effect"
    LOOP_BUDGET = "loop too long to unroll"
    LOOP_BREAK = "graph break inside a loop"
    LOOP_CAPTURE = "loop not captured as a loop node"
    PYTHON_LOOP = "loop without array work"
    INLINE_DEPTH = "call too deep to inline"
    NUMPY_ERROR = "numpy would raise"
    EXCEPTION = "exception raised"
    INTERNAL_ERROR = "internal error"
    SMALL_VARYING_SIZE = "size 0 or 1 of a varying dimension"


def unsupported(category: str, explanation: str, hint: str = "") -> NoReturn:
    """Give up on capturing the current instruction; the translator adds the source location."""
    raise Unsupported(category, explanation, hint)
