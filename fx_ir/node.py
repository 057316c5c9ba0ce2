"""Node: one operation of a Graph, and the six opcodes it may carry.

Setting a node's args or kwargs keeps every input node's `users` in sync; map_arg walks nested arguments.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from . import effects

if TYPE_CHECKING:
    from .graph import Graph


class Opcode(enum.StrEnum):
    """The six things a node can do. A StrEnum, so `node.op == "call_function"` also works."""

    PLACEHOLDER = "placeholder"
    GET_ATTR = "get_attr"
    CALL_FUNCTION = "call_function"
    CALL_METHOD = "call_method"
    CALL_MODULE = "call_module"
    OUTPUT = "output"


# Opcodes whose target is a string naming something rather than a callable.
_STRING_TARGET_OPS = frozenset({Opcode.PLACEHOLDER, Opcode.GET_ATTR, Opcode.CALL_METHOD, Opcode.CALL_MODULE})


def to_opcode(op: str) -> Opcode:
    """Validate an opcode string, with an error that lists the valid ones."""
    try:
        return Opcode(op)
    except ValueError:
        valid = ", ".join(o.value for o in Opcode)
        raise ValueError(f"unknown node opcode {op!r}; valid opcodes are: {valid}") from None


def map_aggregate(value: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply `fn` to every leaf of a nested tuple/list/dict/slice structure, rebuilding the containers."""
    if isinstance(value, tuple):
        mapped = [map_aggregate(v, fn) for v in value]
        if hasattr(value, "_fields"):  # a namedtuple keeps its type
            return type(value)(*mapped)
        return tuple(mapped)
    if isinstance(value, list):
        return [map_aggregate(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_aggregate(v, fn) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(map_aggregate(value.start, fn), map_aggregate(value.stop, fn), map_aggregate(value.step, fn))
    return fn(value)


def map_arg(value: Any, fn: Callable[[Node], Any]) -> Any:
    """Apply `fn` to every Node inside a nested argument structure; constants are kept."""
    return map_aggregate(value, lambda v: fn(v) if isinstance(v, Node) else v)


def iter_nodes(value: Any) -> Iterator[Node]:
    """Every Node inside a nested argument structure, in argument order (duplicates included)."""
    found: list[Node] = []
    map_arg(value, found.append)
    return iter(found)


class _LinkedListEnd:
    """The sentinel closing a graph's circular node list; `prev`/`next` report it as None.

    Its links to itself (an empty list) are stored as None: a sentinel pointing at itself is a
    reference cycle, so every empty graph dropped (a frame that captured no operation) left
    garbage for the cycle collector, which numpy.testing.assert_no_gc_cycles reports."""

    __slots__ = ("_prev_link", "_next_link")

    def __init__(self) -> None:
        self._prev_link: Node | None = None
        self._next_link: Node | None = None

    @property
    def _prev(self) -> Node | _LinkedListEnd:
        return self if self._prev_link is None else self._prev_link

    @_prev.setter
    def _prev(self, node: Node | _LinkedListEnd) -> None:
        self._prev_link = None if node is self else node  # type: ignore[assignment]

    @property
    def _next(self) -> Node | _LinkedListEnd:
        return self if self._next_link is None else self._next_link

    @_next.setter
    def _next(self, node: Node | _LinkedListEnd) -> None:
        self._next_link = None if node is self else node  # type: ignore[assignment]


class Node:
    """One operation in a Graph: `op` (an Opcode), `target`, `args`, `kwargs`, a unique `name`, and `meta`.

    Create nodes through a Graph (``graph.call_function(np.add, (x, y))``), not directly.
    """

    def __init__(
        self,
        graph: Graph,
        name: str,
        op: str,
        target: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self.graph = graph
        self.name = name
        self.op: Opcode = to_opcode(op)
        _check_target(self.op, target)
        self.target = target
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple[Any, ...] = ()
        self._kwargs: dict[str, Any] = {}
        self._prev: Node | _LinkedListEnd = self
        self._next: Node | _LinkedListEnd = self
        self._erased = False
        self._set_args_kwargs(args, kwargs)

    # -- arguments and users ------------------------------------------------------------------

    @property
    def args(self) -> tuple[Any, ...]:
        return self._args

    @args.setter
    def args(self, value: tuple[Any, ...] | list[Any]) -> None:
        self._set_args_kwargs(value, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Any]:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict[str, Any]) -> None:
        self._set_args_kwargs(self._args, value)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The distinct nodes this node reads, in order of first appearance in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, index: int, value: Any) -> None:
        args = list(self._args)
        args[index] = value
        self.args = tuple(args)

    def update_kwarg(self, key: str, value: Any) -> None:
        self.kwargs = {**self._kwargs, key: value}

    def _set_args_kwargs(self, args: tuple[Any, ...] | list[Any], kwargs: dict[str, Any]) -> None:
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"node args must be a tuple, not {type(args).__name__}")
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise TypeError("node kwargs must be a dict with string keys")
        new_args, new_kwargs = tuple(args), dict(kwargs)
        new_inputs: dict[Node, None] = {}
        for n in (*iter_nodes(new_args), *iter_nodes(new_kwargs)):
            new_inputs.setdefault(n, None)
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args, self._kwargs, self._input_nodes = new_args, new_kwargs, new_inputs
        for n in new_inputs:
            n.users.setdefault(self, None)

    def replace_input_with(self, old: Node, new: Any) -> None:
        """Make this node read `new` (a Node or a constant) wherever it read `old`."""
        swap = lambda n: new if n is old else n  # noqa: E731
        self._set_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, new: Any, delete_user_cb: Callable[[Node], bool] | None = None) -> list[Node]:
        """Make every user read `new` instead of this node; return the users that changed.

        `new` may be a Node or a constant; `delete_user_cb(user)` returning False keeps that user unchanged.
        """
        if new is self:
            return []
        changed = [u for u in self.users if delete_user_cb is None or delete_user_cb(u)]
        for user in changed:
            user.replace_input_with(self, new)
        return changed

    # -- position in the graph ----------------------------------------------------------------

    @property
    def next(self) -> Node | None:
        return self._next if isinstance(self._next, Node) else None

    @property
    def prev(self) -> Node | None:
        return self._prev if isinstance(self._prev, Node) else None

    def prepend(self, node: Node) -> None:
        """Move `node` to just before this node."""
        self._move(node, after=self._prev)

    def append(self, node: Node) -> None:
        """Move `node` to just after this node."""
        self._move(node, after=self)

    def _move(self, node: Node, after: Node | _LinkedListEnd) -> None:
        if node.graph is not self.graph:
            raise ValueError(f"cannot move {node.name} next to {self.name}: they belong to different graphs")
        if node is self or node is after:
            return
        node._unlink()
        node._link_after(after)

    def _unlink(self) -> None:
        self._prev._next = self._next
        self._next._prev = self._prev

    def _link_after(self, anchor: Node | _LinkedListEnd) -> None:
        self._prev, self._next = anchor, anchor._next
        anchor._next._prev = self
        anchor._next = self

    # -- properties ---------------------------------------------------------------------------

    def is_impure(self) -> bool:
        """True if removing or merging this node could change what the program does (see effects)."""
        return effects.is_impure_node(self)

    def format_node(self) -> str:
        """One readable line, e.g. ``%add : call_function[target=np.add](args = (%x, %y))``."""
        from .printing import format_node

        return format_node(self)

    def __repr__(self) -> str:
        return self.name


def _check_target(op: Opcode, target: Any) -> None:
    if op in _STRING_TARGET_OPS:
        if not isinstance(target, str) or not target:
            raise TypeError(f"a {op} node needs a non-empty string target, got {target!r}")
    elif op == Opcode.CALL_FUNCTION:
        if not callable(target):
            raise TypeError(f"a call_function node needs a callable target, got {target!r}")
