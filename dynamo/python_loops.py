"""Loops that do no array work run in Python: a `for` loop of the frame that has unrolled more than
config.python_loop_limit items without adding a node to the graph breaks the graph before it.

Unrolling a loop over a list of ints or strings records nothing for a backend: it constant-folds
what plain Python computes in microseconds, at ~20 us an instruction of tracing, and guards every
item's value, so new contents recompile. Such a loop is found while it unrolls (PythonLoop, which
retraces the frame), and on the retrace GET_ITER breaks the graph there: the loop runs in Python
and the code after it is compiled again, taking what the loop computed as run-time values.
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import config
from .exc import Category, unsupported

if TYPE_CHECKING:
    from .translator.core import InstructionTranslatorBase as Tx
    from .variables.base import VariableTracker

_SETUP_BETWEEN = 8  # instructions GET_ITER may come before its FOR_ITER
LoopSite = tuple[types.CodeType, int]  # (code, index of the loop's FOR_ITER)


class PythonLoop(Exception):
    """The loop at `site` unrolled past the threshold without array work: retrace, breaking before it."""

    def __init__(self, site: LoopSite) -> None:
        super().__init__(f"the loop at instruction {site[1]} of {site[0].co_qualname} does no array work")
        self.site = site


@dataclass
class _Unrolling:
    """A loop of the frame's own code that is being unrolled now."""

    iterator: VariableTracker
    site: LoopSite
    graph_size: int  # nodes in the graph when its first item was taken
    items: int = 0  # items taken by it and by the loops nested in it


def refuse_known(tx: Tx) -> None:
    """At GET_ITER: break the graph before a loop an earlier trace of this frame found to do no array
    work. Its FOR_ITER follows within a few instructions (3.12+ comprehensions set up their list and
    save the loop variable in between)."""
    if tx.parent is not None or not tx.output.loops.python_loops:
        return
    for index in range(tx.ip, min(tx.ip + _SETUP_BETWEEN, len(tx.instructions))):
        if tx.instructions[index].name == "FOR_ITER":
            break
    else:
        return
    if (tx.code, index) in tx.output.loops.python_loops:
        unsupported(Category.PYTHON_LOOP,
                    f"this loop does no array work in its first {config.python_loop_limit} iterations: "
                    "it runs in Python, and the code after it is compiled again",
                    "nothing to do: plain Python runs such a loop faster than tracing it would")


def watch(tx: Tx, iterator: VariableTracker) -> None:
    """After FOR_ITER took an item from `iterator`: raise PythonLoop when it is the outermost loop
    running now, has unrolled past the limit (its nested loops' items counted too) and the graph has
    not grown since it started. Judged when that loop takes an item, after whole iterations: an inner
    loop's items come before the work of the outer body that uses them. Only loops of the frame's own
    code outside captured loop bodies: a break inside an inlined call or an enclosing loop would push
    that whole call or loop into Python."""
    if tx.parent is not None or tx.output.loops.depth:
        return
    active = [u for u in tx.unrolling if any(v is u.iterator for v in tx.stack)]  # loops left by break/return drop out
    if not any(u.iterator is iterator for u in active):
        active.append(_Unrolling(iterator, (tx.code, tx.ip - 1), len(tx.output.graph)))
    tx.unrolling = active
    outermost = active[0]
    outermost.items += 1
    if (outermost.iterator is iterator and outermost.items > config.python_loop_limit
            and len(tx.output.graph) == outermost.graph_size):
        raise PythonLoop(outermost.site)
