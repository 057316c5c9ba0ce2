"""InstructionTranslatorBase: the stack, the locals and the step loop of the symbolic interpreter.

Handlers are methods named exactly after their opcode; __init_subclass__ gathers them into a
dispatch table, and an opcode without a handler is a structured `unsupported` (a graph break).
"""
from __future__ import annotations

import dis
import types
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from bytecode import Instr, Label

from .. import config
from ..bytecode_analysis import analyze
from ..exc import Category, SourceLocation, Unsupported, unsupported
from ..variables.base import NULL, VariableTracker

if TYPE_CHECKING:
    from ..output_graph import OutputGraph
    from ..sources import Source
    from ..variables.functions import BaseFunctionVariable


Handler = Callable[["InstructionTranslatorBase", Instr], None]


class LazyVariable(VariableTracker):
    """A frame value not yet looked at: wrapped (and guarded) only when the code first reads it."""

    source: Source  # where the frame holds it: always known

    def __init__(self, value: Any, source: Source) -> None:
        super().__init__(source=source)
        self.value = value


class ReturnSignal(Exception):
    """Raised by RETURN_VALUE to end the step loop; carries the returned value."""

    def __init__(self, value: VariableTracker) -> None:
        self.value = value


class YieldSignal(Exception):
    """Raised by YIELD_VALUE to suspend a generator's translator; carries the yielded value."""

    def __init__(self, value: VariableTracker) -> None:
        self.value = value


class BreakHere(Exception):
    """The translator reached the step a graph break was planned at (a retrace)."""


class InstructionTranslatorBase:
    """The state and helpers every opcode family (the mixins in this folder, which derive from
    it) uses; symbolic_convert.TranslatorBase assembles the families into the translators."""

    dispatch_table: ClassVar[dict[str, Handler]] = {}
    # provided by symbolic_convert.TranslatorBase
    closure: list[VariableTracker]  # the free variables' CellVariables, copied into the locals by COPY_FREE_VARS
    globals_source: Source | None  # None: the frame's own globals (GlobalSource)

    def global_source(self, name: str) -> Source:
        raise NotImplementedError

    def zero_argument_super(self) -> tuple[VariableTracker, VariableTracker]:
        raise NotImplementedError

    def inline_call(self, fn: BaseFunctionVariable, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.dispatch_table = {
            name: getattr(cls, name) for name in dir(cls) if name in dis.opmap and callable(getattr(cls, name))
        }

    def __init__(self, code: types.CodeType, f_globals: dict, output: "OutputGraph",
                 symbolic_locals: dict[str, VariableTracker], parent: "InstructionTranslatorBase | None" = None) -> None:
        self.code = code
        self.f_globals = f_globals
        self.output = output
        self.parent = parent
        self.symbolic_locals = symbolic_locals
        self.stack: list[VariableTracker] = []
        self.facts = analyze(code)
        self.instructions, self.label_targets = self.facts.instructions, self.facts.label_index
        self.ip = 0
        self.steps = 0  # instructions this translator has started, the key of a graph break
        self.break_at: int | None = None  # root translator: stop before this step (graph break)
        self.current: Instr | None = None
        self.kw_names: tuple[str, ...] = ()
        self.depth: int = 0 if parent is None else parent.depth + 1
        # captured with blocks (np.errstate) open now, innermost last: ((code, index of BEFORE_WITH),
        # the block's exception handler); the instructions that handler covers are traced
        self.open_withs: list[tuple[tuple[types.CodeType, int], int]] = []
        self.unrolling: list[Any] = []  # loops of this code being unrolled now, outermost first (python_loops)

    # ---- the loop ------------------------------------------------------------------------------------------
    def run(self) -> VariableTracker:
        """Interpret until RETURN_VALUE; returns the value the frame returns."""
        try:
            while True:
                self.step()
        except ReturnSignal as signal:
            return signal.value

    def resume(self) -> VariableTracker | None:
        """Run a generator's code to its next yield: the yielded value, or None once it returns."""
        try:
            while True:
                self.step()
        except YieldSignal as signal:
            return signal.value
        except ReturnSignal:  # the generator's `return`: iteration stops
            return None

    def step(self) -> None:
        if self.ip >= len(self.instructions):
            unsupported(Category.UNSUPPORTED_OPCODE, "execution ran off the end of the bytecode")
        if self.break_at is not None and self.steps == self.break_at:
            raise BreakHere()
        self.steps += 1
        inst = self.current = self.instructions[self.ip]
        if self.ip in self.facts.in_user_region and not self._in_open_with(self.ip):
            error = Unsupported(Category.UNSUPPORTED_OPCODE,
                                "code inside try/except and with blocks runs in Python, so that "
                                "exceptions reach their handlers",
                                "keep NumPy work that should be compiled outside try and with blocks "
                                "(code after the block is compiled again)")
            error.split_before = True
            self._annotate(error)
            raise error
        self.ip += 1
        self.output.count_instruction()
        if inst.lineno is not None:
            self.output.current_location = SourceLocation(self.code.co_filename, inst.lineno, self.code.co_name)
        self.output.current_globals = self.f_globals
        handler = self.dispatch_table.get(inst.name)
        try:
            if handler is None:
                feature = _FEATURES.get(inst.name, f"the bytecode instruction {inst.name}")
                unsupported(Category.UNSUPPORTED_OPCODE, f"{feature} is not captured yet ({inst.name})")
            handler(self, inst)
        except Unsupported as error:
            self._annotate(error)
            raise

    def _in_open_with(self, index: int) -> bool:
        handler = self.facts.handler.get(index)
        return any(handler == open_handler for _, open_handler in self.open_withs)

    def _annotate(self, error: Unsupported) -> None:
        """Attach where this translator was: the user's location (innermost first), the inlining
        stack, and for the frame's own translator the step a graph break would stop at."""
        if error.location is None:
            error.location = self.location()
            error.args = (error._message(),)
        if not hasattr(error, "user_stack"):
            error.user_stack = []
        error.user_stack.insert(0, self.location())
        if self.parent is None and not hasattr(error, "break_step"):
            error.break_step = self.steps - 1

    def location(self) -> SourceLocation:
        lineno = self.current.lineno if self.current is not None and self.current.lineno else self.code.co_firstlineno
        return SourceLocation(self.code.co_filename, lineno, self.code.co_name)

    # ---- stack -----------------------------------------------------------------------------------------
    def push(self, value: VariableTracker) -> None:
        self.stack.append(value)

    def push_many(self, values: list[VariableTracker]) -> None:
        self.stack.extend(values)

    def pop(self) -> VariableTracker:
        return self.stack.pop()

    def popn(self, count: int) -> list[VariableTracker]:
        if count == 0:
            return []
        values = self.stack[-count:]
        del self.stack[-count:]
        return values

    def peek(self, depth: int = 1) -> VariableTracker:
        return self.stack[-depth]

    def jump(self, target: Label) -> None:
        self.ip = self.label_targets[target]

    # ---- locals ----------------------------------------------------------------------------------------
    def get_local(self, name: str) -> VariableTracker:
        value = self.symbolic_locals.get(name)
        if value is None:
            unsupported(Category.EXCEPTION, f"local variable {name!r} is read before it is assigned")
        if isinstance(value, LazyVariable):
            value = self.symbolic_locals[name] = self.output.builder(value.value, value.source)
        return value

    def realize(self, value: VariableTracker) -> VariableTracker:
        if isinstance(value, LazyVariable):
            return self.output.builder(value.value, value.source)
        return value

    # ---- budgets ------------------------------------------------------------------------------------------
    def check_unroll_budget(self, iterations: int, what: str) -> None:
        if iterations > config.unroll_limit:
            unsupported(Category.LOOP_BUDGET, f"a loop over {what} of {iterations} iterations is longer than "
                        f"config.unroll_limit ({config.unroll_limit})",
                        "raise dynamo.config.unroll_limit, or accept that this loop runs in Python")


def supported_opcodes() -> frozenset[str]:
    """The opcodes of the running Python that the symbolic interpreter has a handler for."""
    from ..symbolic_convert import InstructionTranslator  # the class that assembles every family

    return frozenset(name for name in InstructionTranslator.dispatch_table if name in dis.opmap)


# What the opcodes without a handler belong to, as a user reads it in a give-up reason.
_FEATURES = {
    **dict.fromkeys(("PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "CHECK_EG_MATCH", "RERAISE",
                     "PREP_RERAISE_STAR", "CALL_INTRINSIC_2"), "try/except"),
    "WITH_EXCEPT_START": "a with block",
    **dict.fromkeys(("GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "END_ASYNC_FOR", "BEFORE_ASYNC_WITH",
                     "ASYNC_GEN_WRAP", "CLEANUP_THROW"), "async code"),
    **dict.fromkeys(("SEND", "END_SEND", "GET_YIELD_FROM_ITER"), "yield from"),
}


__all__ = ["BreakHere", "InstructionTranslatorBase", "LazyVariable", "NULL", "ReturnSignal", "YieldSignal"]
