"""Side effects on objects that existed before the frame (lists, attributes, globals), recorded
while tracing and replayed, in order, after the graph runs."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .exc import Category, unsupported

if TYPE_CHECKING:
    from .codegen import PyCodegen
    from .variables.base import VariableTracker


class SideEffects:
    def __init__(self) -> None:
        # key -> replay step; a dict keeps the first-mutation order and coalesces repeats
        self._steps: dict[Any, tuple] = {}

    def __bool__(self) -> bool:
        return bool(self._steps)

    def mutate(self, container: "VariableTracker") -> None:
        """A list (or dict) was changed in place; its final contents are written back."""
        if container.source is not None:
            self._steps.setdefault(("contents", id(container)), ("contents", container))

    def store_attr(self, obj: "VariableTracker", name: str, value: "VariableTracker") -> None:
        if obj.source is None:
            unsupported(Category.SIDE_EFFECT, f"setting attribute {name!r} on {obj.describe()}")
        self._steps.pop(("attr", obj.source, name), None)
        self._steps[("attr", obj.source, name)] = ("attr", obj, name, value)

    def pending_global(self, name: str) -> "VariableTracker | None":
        """The value a global was given earlier in the trace (reads must see it)."""
        step = self._steps.get(("global", name))
        return step[2] if step else None

    def pending_attr(self, source: Any, name: str) -> "VariableTracker | None":
        step = self._steps.get(("attr", source, name))
        return step[3] if step else None

    def store_global(self, name: str, value: "VariableTracker") -> None:
        self._steps.pop(("global", name), None)
        self._steps[("global", name)] = ("global", name, value)

    def codegen(self, codegen: "PyCodegen") -> None:
        for step in self._steps.values():
            kind = step[0]
            if kind == "contents":
                step[1].write_back(codegen)
            elif kind == "attr":
                _, obj, name, value = step
                value.reconstruct(codegen)
                codegen.load_source(obj.source)
                codegen.store_attr(name)
            else:
                _, name, value = step
                value.reconstruct(codegen)
                codegen.store_global(name)
