"""Side effects on objects that existed before the frame (lists, dicts, sets, attributes,
globals), recorded while tracing and replayed, in order, after the graph runs."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .exc import Category, unsupported

if TYPE_CHECKING:
    from .codegen import PyCodegen
    from .variables.base import VariableTracker


class _Deleted:
    """What a deleted attribute or global holds until the replay deletes it for real."""

    def __repr__(self) -> str:
        return "DELETED"


DELETED: Any = _Deleted()


class SideEffects:
    def __init__(self) -> None:
        # key -> replay step; a dict keeps the first-mutation order and coalesces repeats
        self._steps: dict[Any, tuple] = {}
        # real closure cells reached while tracing -> their one tracker (id -> (cell, tracker))
        self._cells: dict[int, tuple[Any, "VariableTracker"]] = {}
        # every container mutated and every store, in order: a loop body traced once must change no
        # Python state that outlives an iteration (loop_capture checks them)
        self.mutation_log: list["VariableTracker"] = []
        self.stores = 0

    def __bool__(self) -> bool:
        return bool(self._steps)

    def extent(self) -> tuple[int, ...]:
        """How much has been recorded: equal before and after an instruction that recorded nothing."""
        return len(self._steps), len(self._cells), len(self.mutation_log), self.stores

    def mutate(self, container: "VariableTracker") -> None:
        """A list, dict or set was changed in place; its final contents are written back."""
        self.mutation_log.append(container)
        if container.source is not None:
            self._steps.setdefault(("contents", id(container)), ("contents", container))

    # ---- attributes --------------------------------------------------------------------------------
    def store_attr(self, obj: "VariableTracker", name: str, value: "VariableTracker") -> None:
        self.stores += 1
        if obj.source is None:
            unsupported(Category.SIDE_EFFECT, f"setting attribute {name!r} on {obj.describe()}")
        # a later store moves the step to the end: replay order follows the last assignment
        self._steps.pop(("attr", obj.source, name), None)
        self._steps[("attr", obj.source, name)] = ("attr", obj, name, value)

    def delete_attr(self, obj: "VariableTracker", name: str, existed: bool) -> None:
        """`del obj.name`; an attribute the trace itself created is simply never stored."""
        if existed:
            self.store_attr(obj, name, DELETED)
        else:
            self._steps.pop(("attr", obj.source, name), None)

    def pending_attr(self, source: Any, name: str) -> "VariableTracker | None":
        """The value an attribute was given earlier in the trace (DELETED if deleted), or None."""
        step = self._steps.get(("attr", source, name))
        return step[3] if step else None

    # ---- closure cells -------------------------------------------------------------------------------
    def track_cell(self, cell: Any, make: Any) -> "VariableTracker":
        """The tracker of a real closure cell: made once, so every closure sharing the cell
        sees the assignments of the others."""
        known = self._cells.get(id(cell))
        if known is None or known[0] is not cell:
            known = self._cells[id(cell)] = (cell, make())
        return known[1]

    def store_cell(self, cell: "VariableTracker", value: "VariableTracker") -> None:
        self.stores += 1
        self._steps.pop(("cell", id(cell)), None)
        self._steps[("cell", id(cell))] = ("cell", cell, value)

    # ---- globals -----------------------------------------------------------------------------------
    def store_global(self, name: str, value: "VariableTracker") -> None:
        self.stores += 1
        self._steps.pop(("global", name), None)
        self._steps[("global", name)] = ("global", name, value)

    def delete_global(self, name: str) -> None:
        self.store_global(name, DELETED)

    def pending_global(self, name: str) -> "VariableTracker | None":
        """The value a global was given earlier in the trace (DELETED if deleted), or None."""
        step = self._steps.get(("global", name))
        return step[2] if step else None

    # ---- replay ------------------------------------------------------------------------------------
    def codegen(self, codegen: "PyCodegen") -> None:
        if self._steps:
            codegen.load_first(self._replay)

    def _replay(self, codegen: "PyCodegen") -> None:
        for step in self._steps.values():
            kind = step[0]
            if kind == "contents":
                step[1].write_back(codegen)
            elif kind == "cell":
                step[1].write_back(codegen, step[2])
            elif kind == "attr":
                _, obj, name, value = step
                if value is DELETED:
                    codegen.load_source(obj.source)
                    codegen.delete_attr(name)
                else:
                    value.reconstruct(codegen)
                    codegen.load_source(obj.source)
                    codegen.store_attr(name)
            else:
                _, name, value = step
                if value is DELETED:
                    codegen.delete_global(name)
                else:
                    value.reconstruct(codegen)
                    codegen.store_global(name)
