"""LOAD_* / STORE_* / DELETE_* / IMPORT_* handlers and stack shuffling (POP_TOP, COPY, SWAP, NOP).

Locals live in symbolic_locals; globals are read from the frame's globals through the builder
(guarded by GlobalSource) and written back as side effects.
"""
from __future__ import annotations

import sys
from typing import Any

from bytecode import Instr

from .. import bytecode_compat as compat
from ..exc import Category, Unsupported, unsupported
from ..variables.base import NULL
from ..variables.builder import wrap_constant_result
from ..variables.constant import ConstantVariable
from ..side_effects import DELETED
from ..sources import GlobalSource
from ..variables.functions import CellVariable
from ..variables.objects import module_variable
from .core import InstructionTranslatorBase, ReturnSignal


def _finalized_class(value: Any, depth: int = 2) -> type | None:
    """The class with a __del__ (looked up in the classes' own dicts: no metaclass code runs)
    of `value` or of an item of a list, tuple or dict it is (`depth` levels down), else None."""
    from ..variables.dicts import ConstDictVariable
    from ..variables.objects import UserObjectVariable
    from ..variables.sequences import BaseSequenceVariable
    from .core import LazyVariable

    if isinstance(value, (LazyVariable, UserObjectVariable)):
        return _finalized_object_class(value.value, depth)
    if depth and isinstance(value, BaseSequenceVariable):
        items = value.items
    elif depth and isinstance(value, ConstDictVariable):
        items = list(value.items.values())
    else:
        return None
    return next((klass for item in items[:_ITEMS_LOOKED_AT]
                 if (klass := _finalized_class(item, depth - 1)) is not None), None)


_ITEMS_LOOKED_AT = 64  # of a container dropped: a program's bigger containers are rarely finalized


def _finalized_object_class(obj: Any, depth: int) -> type | None:
    klass = type(obj)
    if any("__del__" in vars(base) for base in klass.__mro__):
        return klass
    if not depth or klass not in (list, tuple, dict):
        return None
    items = list(obj.values() if klass is dict else obj)[:_ITEMS_LOOKED_AT]
    return next((found for item in items if (found := _finalized_object_class(item, depth - 1)) is not None), None)


def _name(arg: Any) -> str:
    """CellVar/FreeVar objects of the bytecode package, or plain names."""
    return getattr(arg, "name", arg)


class LoadStoreMixin(InstructionTranslatorBase):
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

    def drop_local(self, name: str) -> None:
        """Before the frame lets go of local `name` (a store over it, a del): when its object's
        class has a finalizer (__del__), plain Python may run it right here (the last reference
        goes), between this instruction and the next, which the trace cannot replay at its place:
        the break goes before the instruction, which runs in Python."""
        old = self.symbolic_locals.get(name)
        klass = _finalized_class(old) if old is not None else None
        if klass is None:
            return
        if any(value is old for value in self.stack) or \
                any(value is old for other, value in self.symbolic_locals.items() if other != name):
            return  # held on (a resume function's prologue moves its stack arguments to the stack)
        error = Unsupported(Category.SIDE_EFFECT, f"letting go of a {klass.__qualname__} object may run its "
                            "class's __del__ here", "del or rebind objects with a __del__ method outside the "
                            "compiled function")
        error.split_before = True
        raise error

    def STORE_FAST(self, inst: Instr) -> None:
        self.drop_local(inst.arg)
        value = self.pop()
        if value is NULL:  # restoring a comprehension variable that was unset before
            self.symbolic_locals.pop(inst.arg, None)
        else:
            self.symbolic_locals[inst.arg] = value

    def STORE_FAST_LOAD_FAST(self, inst: Instr) -> None:
        store, load = inst.arg
        self.drop_local(store)
        self.symbolic_locals[store] = self.pop()
        self.push(self.get_local(load))

    def STORE_FAST_STORE_FAST(self, inst: Instr) -> None:
        first, second = inst.arg
        self.drop_local(first)
        self.drop_local(second)
        self.symbolic_locals[first] = self.pop()
        self.symbolic_locals[second] = self.pop()

    def DELETE_FAST(self, inst: Instr) -> None:
        self.drop_local(inst.arg)
        if self.symbolic_locals.pop(inst.arg, None) is None:
            unsupported(Category.EXCEPTION, f"del of the unbound local {inst.arg!r} raises UnboundLocalError")

    # ---- constants ---------------------------------------------------------------------------------
    def LOAD_CONST(self, inst: Instr) -> None:
        value = wrap_constant_result(inst.arg)
        if isinstance(value, ConstantVariable):
            value.literal = True  # rebuilt by LOAD_CONST, the object this one is
        self.push(value)

    def RETURN_CONST(self, inst: Instr) -> None:
        self.LOAD_CONST(inst)
        raise ReturnSignal(self.pop())

    # ---- globals ---------------------------------------------------------------------------------------
    def LOAD_GLOBAL(self, inst: Instr) -> None:
        push_null, name = compat.global_arg(inst)
        value = self.load_global(name)
        self.push_many(compat.push_with_null(value, NULL) if push_null else [value])

    def load_global(self, name: str):
        pending = self.output.side_effects.pending_global(name)
        if pending is not None and pending is not DELETED:
            return pending
        if name in self.f_globals and pending is not DELETED:
            value = self.f_globals[name]
        else:
            builtins = self.f_globals.get("__builtins__", __builtins__)
            builtins = builtins if isinstance(builtins, dict) else vars(builtins)
            if name not in builtins:
                error = Unsupported(Category.EXCEPTION, f"name {name!r} is not defined")
                # NameError's "Did you mean" hint reads the raising frame's locals: the frame's own
                # code raises it (a transformed frame holds its values elsewhere)
                error.no_break = True
                raise error
            value = builtins[name]
        return self.output.builder(value, self.global_source(name))

    def LOAD_BUILD_CLASS(self, inst: Instr) -> None:
        """A class statement loads __build_class__ from the builtins; its call (the class body)
        runs in Python: one graph break there, with this value on the stack, not one break here
        and another in the resume function."""
        if "__build_class__" in self.f_globals or self.output.side_effects.pending_global("__build_class__") is not None:
            # the statement reads only the builtins, where a global of that name would be read
            unsupported(Category.UNSUPPORTED_VALUE, "a class statement in a module with a global named __build_class__")
        self.push(self.load_global("__build_class__"))

    def STORE_GLOBAL(self, inst: Instr) -> None:
        if self.globals_source is not None:
            unsupported(Category.SIDE_EFFECT, f"assigning global {inst.arg!r} of another module in an inlined function")
        self.output.side_effects.store_global(inst.arg, self.pop())

    def DELETE_GLOBAL(self, inst: Instr) -> None:
        if self.globals_source is not None:
            unsupported(Category.SIDE_EFFECT, f"deleting global {inst.arg!r} of another module in an inlined function")
        pending = self.output.side_effects.pending_global(inst.arg)
        if pending is DELETED or (pending is None and inst.arg not in self.f_globals):
            unsupported(Category.EXCEPTION, f"del of the undefined global {inst.arg!r} raises NameError")
        if pending is None:  # the replay deletes it on later calls too: it must exist then
            self.output.builder(self.f_globals[inst.arg], GlobalSource(inst.arg))
        self.output.side_effects.delete_global(inst.arg)

    # ---- imports: modules already imported, whose import statement changes nothing -------------------
    def IMPORT_NAME(self, inst: Instr) -> None:
        fromlist = self.pop().as_python_constant()
        level = self.pop().as_python_constant()
        if level != 0:
            unsupported(Category.UNSUPPORTED_CALL, f"the relative import of {inst.arg!r} inside a compiled function",
                        "import at module level")
        if inst.arg not in sys.modules:
            unsupported(Category.UNSUPPORTED_CALL, f"importing {inst.arg!r}, which runs its module code",
                        "import it at module level")
        # `import a.b` binds the top package; `from a.b import c` takes names from a.b itself
        module = sys.modules[inst.arg if fromlist else inst.arg.partition(".")[0]]
        self.push(module_variable(module))

    def IMPORT_FROM(self, inst: Instr) -> None:
        # a name the module lacks (a submodule not imported yet, say) gives up in var_getattr
        self.push(self.peek().var_getattr(self, inst.arg))

    # ---- closures: a cell lives in its local slot, as in CPython's frame ------------------------------
    def MAKE_CELL(self, inst: Instr) -> None:
        name = _name(inst.arg)
        current = self.symbolic_locals.get(name)
        # an argument captured by an inner function starts as the cell's contents
        self.symbolic_locals[name] = CellVariable(self.realize(current) if current is not None else None)

    def COPY_FREE_VARS(self, inst: Instr) -> None:
        for name, cell in zip(self.code.co_freevars, self.closure):
            self.symbolic_locals[name] = cell

    def cell(self, inst: Instr) -> CellVariable:
        cell = self.symbolic_locals.get(_name(inst.arg))
        if not isinstance(cell, CellVariable):  # what MAKE_CELL/COPY_FREE_VARS put in the slot
            unsupported(Category.UNSUPPORTED_OPCODE, f"{inst.name} of {_name(inst.arg)!r} before its cell exists")
        return cell

    def LOAD_DEREF(self, inst: Instr) -> None:
        cell = self.cell(inst)
        if cell.contents is None:
            unsupported(Category.EXCEPTION, f"free variable {_name(inst.arg)!r} is read before it is assigned (NameError)")
        cell.contents = self.realize(cell.contents)
        self.push(cell.contents)

    def STORE_DEREF(self, inst: Instr) -> None:
        self.cell(inst).store(self, self.pop())

    def DELETE_DEREF(self, inst: Instr) -> None:
        cell = self.cell(inst)
        if cell.contents is None:
            unsupported(Category.EXCEPTION, f"del of the unassigned variable {_name(inst.arg)!r} raises NameError")
        cell.store(self, None)

    def LOAD_CLOSURE(self, inst: Instr) -> None:
        self.push(self.cell(inst))

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

    def DELETE_ATTR(self, inst: Instr) -> None:
        self.pop().delete_attr(self, inst.arg)

    def LOAD_SUPER_ATTR(self, inst: Instr) -> None:  # 3.12+: super().name and super(C, self).name
        method_form, two_arguments, name = compat.super_attr_arg(inst)
        self_value = self.pop()
        cls = self.pop()
        global_super = self.pop()
        # CPython's own rule: the builtin super gets (class, self); a rebound name `super` is
        # called as the source code wrote it
        builtin = global_super.is_python_constant() and global_super.as_python_constant() is super
        proxy = global_super.call_function(self, [cls, self_value] if builtin or two_arguments else [], {})
        value = proxy.var_getattr(self, name)
        self.push_many(compat.push_with_null(value, NULL) if method_form else [value])

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
