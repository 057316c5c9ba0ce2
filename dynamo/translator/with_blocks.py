"""with statements: BEFORE_WITH of an np.errstate(...) with constant settings is captured (its block
is traced, the ops in it recorded under those settings); any other context manager is a graph break."""
from __future__ import annotations

import inspect

from bytecode import Instr

from ..exc import Category, unsupported
from ..variables.constant import ConstantVariable
from ..variables.errstate import ErrstateExitVariable, ErrstateVariable
from .core import InstructionTranslatorBase


class WithBlocksMixin(InstructionTranslatorBase):
    def BEFORE_WITH(self, inst: Instr) -> None:
        manager = self.pop()
        index = self.ip - 1
        handler = self.facts.handler.get(self.ip)  # the block's instructions lead there on an exception
        if not isinstance(manager, ErrstateVariable) or handler is None or manager.entered:
            # (an np.errstate entered before raises TypeError in NumPy: Python raises it)
            unsupported(Category.UNSUPPORTED_OPCODE, "a with block is not captured yet (BEFORE_WITH)")
        if self.code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            # a yield inside the block would leave the settings on for the code the generator returns to
            unsupported(Category.UNSUPPORTED_OPCODE, "an np.errstate block in a generator runs in Python")
        key = (self.code, index)
        if key in self.output.loops.plain_withs:
            unsupported(Category.UNSUPPORTED_OPCODE, "this np.errstate block runs in Python: its block breaks "
                        "the graph, and a graph break inside a with block is not captured",
                        "keep what cannot be compiled (prints, calls of other libraries) out of the block")
        manager.entered = True
        self.open_withs.append((key, handler))
        self.output.errstate.append(manager.settings)
        self.push(ErrstateExitVariable(manager, handler))
        self.push(ConstantVariable(None))  # what np.errstate.__enter__ returns
