"""Readable, unique Python identifiers for nodes and generated-code globals.

A Namespace hands out names like add, add_1, sum_1 that never shadow keywords, builtins or np.
"""
from __future__ import annotations

import builtins
import keyword
import re
from typing import Any

import numpy as np

# Names generated code relies on: `np` is the numpy global, `self` the module argument.
RESERVED_NAMES: frozenset[str] = frozenset(
    {"np", "self", "numpy"} | set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
)

_SUFFIX = re.compile(r"^(.*)_(\d+)$")
_NOT_IDENT = re.compile(r"[^0-9a-zA-Z_]+")


def sanitize(candidate: str) -> str:
    """Turn any string into an identifier (`np.linalg.norm` -> `np_linalg_norm`, `<lambda>` -> `lambda`)."""
    name = _NOT_IDENT.sub("_", candidate).strip("_")
    kept_tail = candidate.lstrip("_")
    if name in RESERVED_NAMES and kept_tail.isidentifier() and kept_tail not in RESERVED_NAMES:
        name = kept_tail  # operator.and_ -> and_, not and_1
    if not name:
        return "_unnamed"
    if name[0].isdigit():
        name = "_" + name
    return name


def target_base_name(target: Any) -> str:
    """The name a node calling `target` is named after: its __name__, a method name, a dotted path's tail parts."""
    if isinstance(target, str):
        return sanitize(target)
    owner = getattr(target, "__self__", None)
    name = getattr(target, "__name__", None)
    if isinstance(owner, np.ufunc) and name:
        return sanitize(f"{owner.__name__}_{name}")  # np.add.reduce -> add_reduce
    if name is None:
        name = type(target).__name__
    return sanitize(name)


class Namespace:
    """Unique identifiers in one scope. Cheap: a per-base counter avoids rescanning taken suffixes."""

    def __init__(self, reserved: frozenset[str] | set[str] = RESERVED_NAMES) -> None:
        self._reserved = frozenset(reserved)
        self._used: set[str] = set()
        self._next_suffix: dict[str, int] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._used or name in self._reserved

    def create_name(self, candidate: str) -> str:
        """Return `candidate` (sanitized) if free, else the first free `base_N`."""
        name = sanitize(candidate)
        if name not in self:
            self._used.add(name)
            return name
        match = _SUFFIX.match(name)
        base, start = (match.group(1), int(match.group(2)) + 1) if match else (name, 1)
        suffix = max(start, self._next_suffix.get(base, 1))
        while f"{base}_{suffix}" in self:
            suffix += 1
        self._next_suffix[base] = suffix + 1
        name = f"{base}_{suffix}"
        self._used.add(name)
        return name

    def claim(self, name: str) -> None:
        """Mark an exact name as taken (it must be free)."""
        if name in self:
            raise ValueError(f"name {name!r} is already taken in this namespace")
        self._used.add(name)

    def release(self, name: str) -> None:
        self._used.discard(name)
