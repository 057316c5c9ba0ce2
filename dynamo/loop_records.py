"""What one frame's traces learned about its loops: which became loop nodes (for explain) and which
could not, so that the retrace after a failed capture runs those loops as before (unrolled or in Python).

A loop is keyed by (code, index of its FOR_ITER, how many times the trace reached it before):
tracing is deterministic, so every retrace of the frame meets the same loops in the same order.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Callable

from .exc import SourceLocation

LoopKey = tuple[types.CodeType, int, int]


@dataclass
class CapturedLoop:
    location: SourceLocation | None
    variable: str  # the induction variable's name
    trip_count: str  # the trip count, as an expression of the frame's sizes
    body_ops: int
    carried: list[str]
    depth: int  # 0 for a loop of the frame's graph, 1 for one nested in a captured loop, ...

    def describe(self) -> str:
        where = f"{self.location.filename}:{self.location.lineno}" if self.location else "?"
        carried = ", ".join(self.carried) or "none"
        if self.variable == "while":  # a while loop: its body graph ends with the next test
            return (f"{'  ' * self.depth}while loop at {where}: as long as its condition holds, "
                    f"{self.body_ops} ops per iteration (the test included), carried: {carried}")
        return (f"{'  ' * self.depth}loop over {self.variable} at {where}: {self.trip_count} iterations, "
                f"{self.body_ops} ops per iteration, carried: {carried}")


@dataclass
class RejectedLoop:
    location: SourceLocation | None
    variable: str
    reason: str
    unrolled: bool = False  # captured, then unrolled by choice (a short loop faster unrolled)

    def describe(self) -> str:
        where = f"{self.location.filename}:{self.location.lineno}" if self.location else "?"
        what = "while loop" if self.variable == "while" else f"loop over {self.variable}"
        return f"{what} at {where} {'is short and' if self.unrolled else 'not captured:'} {self.reason}"


class RetraceWithoutLoop(Exception):
    """A loop body could not be captured whole: trace the frame again with this loop run as before."""

    def __init__(self, key: LoopKey, rejected: RejectedLoop, peel: bool = False) -> None:
        super().__init__(rejected.describe())
        self.key = key
        self.rejected = rejected
        self.peel = peel  # not rejected: retrace with its first iteration unrolled


@dataclass
class LoopRecords:
    """Per trace: the captured loops; shared by the frame's retraces: the rejected ones."""

    captured: list[CapturedLoop] = field(default_factory=list)
    rejected: dict[LoopKey, RejectedLoop] = field(default_factory=dict)
    peeled: set[LoopKey] = field(default_factory=set)  # loops captured after their first iteration
    # short loops captured all the same: unrolling them ran past the trace instruction budget
    forced: set[LoopKey] = field(default_factory=set)
    # per trace: the loops whose bodies are being traced now, outermost first: induction symbol ->
    # (key, location, loop variable)
    capturing: dict[Any, tuple[LoopKey, SourceLocation | None, str]] = field(default_factory=dict)
    # per trace: the short loops unrolled so far, with their iterators (open while not exhausted)
    unrolled: list[tuple[LoopKey, Any]] = field(default_factory=list)
    encounters: dict[tuple[types.CodeType, int], int] = field(default_factory=dict)
    depth: int = 0  # loop bodies being traced right now
    # per trace: the bodies being traced now, innermost last, as (translator, first index, end index,
    # index that ends an iteration, the loop variable's symbol name or None): a branch on a run-time
    # value in [first, end) becomes a cond node of the body (branch_capture.py)
    bodies: list[tuple[Any, int, int, int, str | None]] = field(default_factory=list)
    # per trace: the loops being captured whose variable has no symbol yet, each as the function that
    # makes it (a body trace nested in theirs makes them first, as its state is saved when it starts)
    unmade_indices: list[Callable[[], Any]] = field(default_factory=list)
    # np.errstate blocks (code, index of BEFORE_WITH) that broke the graph inside: run in Python on retraces
    plain_withs: set[tuple[types.CodeType, int]] = field(default_factory=set)
    # loops (code, index of FOR_ITER) that unrolled without array work: run in Python on retraces
    python_loops: set[tuple[types.CodeType, int]] = field(default_factory=set)
    # `a[mask] op= v` (code, index of BINARY_SUBSCR) whose operand broke the graph or wrote memory:
    # the selection is read where Python reads it on retraces (masked_updates.py)
    eager_selections: set[tuple[types.CodeType, int]] = field(default_factory=set)
    # per trace: the masked selections made and not yet stored back, with what was written when made
    pending_selections: dict[tuple[types.CodeType, int], Any] = field(default_factory=dict)

    def key(self, code: types.CodeType, index: int) -> LoopKey:
        count = self.encounters.get((code, index), 0)
        self.encounters[(code, index)] = count + 1
        return (code, index, count)

    def next_trace(self) -> LoopRecords:
        """The records a retrace of the same frame starts with: the rejections carry over."""
        return LoopRecords(rejected=self.rejected, peeled=self.peeled, forced=self.forced,
                           plain_withs=self.plain_withs, python_loops=self.python_loops,
                           eager_selections=self.eager_selections)

    def report(self) -> list[str]:
        return [c.describe() for c in self.captured] + [r.describe() for r in self.rejected.values()]
