"""explain(): run a function compiled and report what dynamo made of it: graphs, graph breaks
with their reasons and source lines, guards, recompilations and compile time."""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from .exc import SourceLocation, Unsupported


@dataclass
class BreakReason:
    """One place where tracing stopped: a graph break, or a frame that ran uncompiled."""

    category: str
    explanation: str
    hint: str
    location: SourceLocation | None
    function: str
    user_stack: list[SourceLocation] = field(default_factory=list)  # outermost call first
    whole_frame: bool = False  # the frame ran its original code instead of breaking

    @classmethod
    def from_unsupported(cls, error: Unsupported, function: str, whole_frame: bool) -> "BreakReason":
        return cls(error.category, error.explanation, error.hint, error.location, function,
                   list(getattr(error, "user_stack", [])), whole_frame)

    def __str__(self) -> str:
        kind = "frame ran uncompiled" if self.whole_frame else "graph break"
        lines = [f"{self.category} ({kind}) in {self.function}: {self.explanation}"]
        for frame in self.user_stack[:-1]:
            lines.append(f"    called from {frame.filename}:{frame.lineno} in {frame.function}")
        if self.location is not None:
            lines.append(f"    at {self.location.filename}:{self.location.lineno}")
            if self.location.text:
                lines.append(f"        {self.location.text}")
        if self.hint:
            lines.append(f"    hint: {self.hint}")
        return "\n".join(lines)


@dataclass
class ExplainOutput:
    graphs: list[Any]
    break_reasons: list[BreakReason]
    ops_per_graph: list[list[str]]
    guards: list[str]
    recompiles: list[str]
    compile_time: float
    frames: list[str]

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return sum(1 for reason in self.break_reasons if not reason.whole_frame)

    @property
    def op_count(self) -> int:
        return sum(len(ops) for ops in self.ops_per_graph)

    def __str__(self) -> str:
        lines = [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Frames that ran uncompiled: {sum(1 for r in self.break_reasons if r.whole_frame)}",
            f"Op count: {self.op_count}",
            f"Compile time: {self.compile_time * 1e3:.1f} ms",
            f"Compiled frames: {', '.join(self.frames) or 'none'}",
        ]
        if self.break_reasons:
            lines.append("Break reasons (most frequent category first):")
            order = Counter(r.category for r in self.break_reasons)
            for index, reason in enumerate(sorted(self.break_reasons, key=lambda r: -order[r.category]), 1):
                lines.append(f"  {index}. " + str(reason).replace("\n", "\n     "))
        for index, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"Graph {index}: {len(ops)} ops: {', '.join(ops)}")
        if self.recompiles:
            lines.append("Recompilations:")
            lines.extend(f"  - {r}" for r in self.recompiles)
        if self.guards:
            lines.append("Guards:")
            lines.extend(f"  {g}" for g in self.guards)
        return "\n".join(lines)


def report_from(callback: Any) -> ExplainOutput:
    """Summarize everything `callback` (a ConvertFrame) compiled since it was last reset."""
    graphs, ops, guards, reasons, frames = [], [], [], [], []
    seconds = 0.0
    for code, compiled in callback.compiled_frames:
        frames.append(code.co_qualname)
        for graph in compiled.graphs:
            graphs.append(graph.graph_module)
            ops.append([_op_name(n) for n in graph.graph_module.graph.nodes if n.op not in ("placeholder", "output")])
            seconds += graph.compile_seconds
        guards.extend(str(g) for g in compiled.guards)
        seconds += compiled.trace_seconds
        for error in compiled.breaks:
            reasons.append(BreakReason.from_unsupported(error, code.co_qualname, whole_frame=False))
        if compiled.fallback_reason is not None:
            reasons.append(BreakReason.from_unsupported(compiled.fallback_reason, code.co_qualname, whole_frame=True))
    recompiles = [f"{code.co_qualname}: {'; '.join(why)}" for code, why in callback.recompiles]
    return ExplainOutput(graphs, reasons, ops, guards, recompiles, seconds, frames)


def _op_name(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return f".{target}()"
    name = getattr(target, "__name__", repr(target))
    module = getattr(target, "__module__", "") or ""
    return f"np.{name}" if module.startswith("numpy") or type(target).__name__ == "ufunc" else name


def explain(fn: Callable[..., Any], **compile_options: Any) -> Callable[..., ExplainOutput]:
    """`dynamo.explain(fn)(*args, **kwargs)`: run fn compiled once (from a clean cache) and return
    the report. Options are those of dynamo.compile (backend defaults to "eager")."""
    from . import api

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        api.reset()
        options = {"backend": "eager", "fullgraph": False, "dynamic": None, **compile_options}
        api.compile(fn, **options)(*args, **kwargs)
        return report_from(api.callback_for(options["backend"], options["fullgraph"], options["dynamic"]))

    return run
