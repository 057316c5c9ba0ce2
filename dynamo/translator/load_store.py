"""LOAD_* / STORE_* / DELETE_* handlers and plain stack shuffling (POP_TOP, COPY, SWAP, NOP).

Locals live in symbolic_locals; globals are read from the frame's globals through the builder
(guarded by GlobalSource) and written back as side effects.
"""
from __future__ import annotations

from bytecode import Instr

from .. import bytecode_compat as compat
from ..exc import Category, unsupported
from ..variables.base import NULL
from ..variables.builder import wrap_constant_result
from ..variables.functions import CellVariable


def _name(arg: object) -> str:
    """CellVar/FreeVar objects of the bytecode package, or plain names."""
    return getattr(arg, "name", arg)  # type: ignore[return-value]


class LoadStoreMixin:
    # ---- fast locals -----------------------------------------------------------------------------------
    def LOAD_FAST(self, inst: Instr) -> None:
        self.push(self.get_local(_name(inst.arg)))

    LOAD_FAST_CHECK = LOAD_FAST

    def LOAD_FAST_AND_CLEAR(self, inst: Instr) -> None:
        # 3.12 inlined comprehensions save the outer value of their loop variable this way
        value = self.symbolic_locals.pop(inst.arg, None)
        self.push(NULL if value is None else self.realize(value))

    def LOAD_FAST_LOAD_FAST(self, inst: Instr) -> None:
        first, second = inst.arg
        self.push(self.get_local(first))
        self.push(self.get_local(second))

    def STORE_FAST(self, inst: Instr) -> None:
        value = self.pop()
        if value is NULL:  # restoring a comprehension variable that was unset before
            self.symbolic_locals.pop(inst.arg, None)
        else:
            self.symbolic_locals[inst.arg] = value

    def STORE_FAST_LOAD_FAST(self, inst: Instr) -> None:
        store, load = inst.arg
        self.symbolic_locals[store] = self.pop()
        self.push(self.get_local(load))

    def STORE_FAST_STORE_FAST(self, inst: Instr) -> None:
        first, second = inst.arg
        self.symbolic_locals[first] = self.pop()
        self.symbolic_locals[second] = self.pop()

    def DELETE_FAST(self, inst: Instr) -> None:
        self.symbolic_locals.pop(inst.arg, None)

    # ---- constants ---------------------------------------------------------------------------------
    def LOAD_CONST(self, inst: Instr) -> None:
        self.push(wrap_constant_result(inst.arg))

    def RETURN_CONST(self, inst: Instr) -> None:
        self.LOAD_CONST(inst)
        self.RETURN_VALUE(inst)

    # ---- globals ---------------------------------------------------------------------------------------
    def LOAD_GLOBAL(self, inst: Instr) -> None:
        push_null, name = compat.global_arg(inst)
        value = self.load_global(name)
        self.push_many(compat.push_with_null(value, NULL) if push_null else [value])

    def load_global(self, name: str):
        pending = self.output.side_effects.pending_global(name)
        if pending is not None:
            return pending
        if name in self.f_globals:
            value = self.f_globals[name]
        else:
            builtins = self.f_globals.get("__builtins__", __builtins__)
            builtins = builtins if isinstance(builtins, dict) else vars(builtins)
            if name not in builtins:
                unsupported(Category.EXCEPTION, f"name {name!r} is not defined")
            value = builtins[name]
        return self.output.builder(value, self.global_source(name))

    def STORE_GLOBAL(self, inst: Instr) -> None:
        if self.globals_source is not None:
            unsupported(Category.SIDE_EFFECT, f"assigning global {inst.arg!r} of another module in an inlined function")
        self.output.side_effects.store_global(inst.arg, self.pop())

    # ---- closures -------------------------------------------------------------------------------------
    def MAKE_CELL(self, inst: Instr) -> None:
        name = _name(inst.arg)
        current = self.symbolic_locals.get(name)
        # 3.13 loads a cell slot with LOAD_FAST when building a closure: the slot holds the cell
        self.cells[name] = self.symbolic_locals[name] = CellVariable(self.realize(current) if current is not None else None)

    def COPY_FREE_VARS(self, inst: Instr) -> None:
        for name, cell in zip(self.code.co_freevars, self.closure):
            self.cells[name] = cell

    def LOAD_DEREF(self, inst: Instr) -> None:
        cell = self.cells.get(_name(inst.arg))
        if cell is None or cell.contents is None:
            unsupported(Category.EXCEPTION, f"free variable {_name(inst.arg)!r} is read before it is assigned")
        cell.contents = self.realize(cell.contents)
        self.push(cell.contents)

    def STORE_DEREF(self, inst: Instr) -> None:
        name = _name(inst.arg)
        cell = self.cells.get(name)
        if cell is None:
            cell = self.cells[name] = CellVariable(None)
        if cell.source is not None:
            unsupported(Category.SIDE_EFFECT, f"assigning the closure variable {name!r} of the compiled function")
        cell.contents = self.pop()

    def LOAD_CLOSURE(self, inst: Instr) -> None:
        self.push(self.cells[_name(inst.arg)])

    # ---- attributes --------------------------------------------------------------------------------------
    def LOAD_ATTR(self, inst: Instr) -> None:
        method_form, name = compat.attr_arg(inst)
        obj = self.pop()
        value = obj.var_getattr(self, name)
        self.push_many(compat.push_with_null(value, NULL) if method_form else [value])

    def LOAD_METHOD(self, inst: Instr) -> None:  # 3.11
        obj = self.pop()
        self.push_many(compat.push_with_null(obj.var_getattr(self, inst.arg), NULL))

    def STORE_ATTR(self, inst: Instr) -> None:
        obj = self.pop()
        value = self.pop()
        obj.store_attr(self, inst.arg, value)

    # ---- stack shuffling -----------------------------------------------------------------------------------
    def POP_TOP(self, inst: Instr) -> None:
        self.pop()

    def PUSH_NULL(self, inst: Instr) -> None:
        self.push(NULL)

    def COPY(self, inst: Instr) -> None:
        self.push(self.peek(inst.arg))

    def SWAP(self, inst: Instr) -> None:
        self.stack[-1], self.stack[-inst.arg] = self.stack[-inst.arg], self.stack[-1]

    def NOP(self, inst: Instr) -> None:
        pass

    RESUME = NOP
    CACHE = NOP
    EXTENDED_ARG = NOP
