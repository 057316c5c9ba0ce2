"""explain(): run a function compiled and report what dynamo made of it: graphs, graph breaks
with their reasons and source lines, the parts that ran in Python, guards, recompilations and
compile time. `python -m dynamo explain script.py` prints the same report for a whole program."""
from __future__ import annotations

import functools
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from .exc import Category, SourceLocation, Unsupported

GRAPH_BREAK = "graph break"
RUNS_IN_PYTHON = "runs in Python"
UNCOMPILED = "frame ran uncompiled"


# What a user can do, for reasons raised without a hint of their own.
_DEFAULT_HINTS = {
    Category.UNSUPPORTED_CALL: "the call runs in Python between two graphs: move it out of code that runs "
                               "often, or accept the graph break",
    Category.UNSUPPORTED_ATTRIBUTE: "the attribute is read in Python between two graphs: read it once outside "
                                    "the compiled function and pass the value in",
    Category.UNSUPPORTED_VALUE: "pass a NumPy array or a plain Python value (number, string, list, tuple, dict) "
                                "instead, or accept the graph break",
    Category.SIDE_EFFECT: "the side effect happens in Python between two graphs: move it out of code that runs "
                          "often, or accept the graph break",
    Category.EXCEPTION: "the original code runs here and raises as Python would",
    Category.UNSUPPORTED_OPCODE: "this part of the function runs in Python",
}


@dataclass
class BreakReason:
    """One place where tracing stopped: a graph break, a stretch of a frame that runs in Python
    (a loop that breaks on every iteration, a try or with block), or a frame that ran uncompiled."""

    category: str          # one of dynamo.exc.Category
    explanation: str       # what could not be captured, naming the value and the operation
    hint: str              # what the user can change
    location: SourceLocation | None  # the user's line where it happened (innermost)
    function: str          # the compiled frame (its qualname) that broke or ran in Python
    user_stack: list[SourceLocation] = field(default_factory=list)  # the compiled frame first
    whole_frame: bool = False  # the frame ran (part of) its own code in Python instead of breaking
    python_until: int | None = None  # with whole_frame: the line where compiled code takes over
    split: bool = False  # a graph break before the line (the resume function starts with it)

    @classmethod
    def from_unsupported(cls, error: Unsupported, function: str, whole_frame: bool,
                         python_until: int | None = None) -> "BreakReason":
        hint = error.hint or _DEFAULT_HINTS.get(error.category, "")
        return cls(error.category, error.explanation, hint, error.location, function,
                   list(getattr(error, "user_stack", [])), whole_frame, python_until,
                   bool(getattr(error, "split_before", False)))

    @property
    def kind(self) -> str:
        if not self.whole_frame:
            return GRAPH_BREAK
        return RUNS_IN_PYTHON if self.python_until is not None else UNCOMPILED

    @property
    def reason(self) -> str:
        return f"{self.category}: {self.explanation}"

    @property
    def filename(self) -> str | None:
        return self.location.filename if self.location else None

    @property
    def lineno(self) -> int | None:
        return self.location.lineno if self.location else None

    @property
    def source_line(self) -> str:
        return self.location.text if self.location else ""

    def _key(self) -> tuple:
        return (self.kind, self.category, self.explanation, self.location, tuple(self.user_stack), self.python_until)

    def __str__(self) -> str:
        lines = [self.reason]
        if self.location is not None:
            lines.append(f"  at {self.location.filename}:{self.location.lineno} in {self.location.function}")
            if self.location.text:
                lines.append(f"      {self.location.text}")
        for frame in self.user_stack[:-1]:  # the calls that were being inlined, outermost first
            lines.append(f"  inlined from {frame.filename}:{frame.lineno} in {frame.function}")
            if frame.text:
                lines.append(f"      {frame.text}")
        lines.append(f"  {self._consequence()}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)

    def _consequence(self) -> str:
        if self.kind == GRAPH_BREAK and self.split:
            return (f"graph break in {self.function}: the graph so far is compiled, and a resume function "
                    "continues from this line")
        if self.kind == GRAPH_BREAK:
            where = f" at line {self.user_stack[0].lineno}" if len(self.user_stack) > 1 else ""
            text = f"graph break in {self.function}{where}: the graph so far is compiled, this runs in Python"
            if len(self.user_stack) > 1:
                text += f", {self.user_stack[1].function} is called (and compiled on its own)"
            return text + ", and a resume function continues after it"
        if self.kind == RUNS_IN_PYTHON:
            start = self.location.lineno if self.location else "?"
            return f"{self.function} runs in Python from line {start}; compiled code takes over again at line {self.python_until}"
        return f"{self.function} ran uncompiled (its original code)"


@dataclass
class FrameSummary:
    """What compiling one frame (a function, or a resume function after a break) produced."""

    name: str
    location: str
    graphs: int
    breaks: int
    kind: str  # "compiled", RUNS_IN_PYTHON or UNCOMPILED

    def __str__(self) -> str:
        if self.kind != "compiled":
            return f"{self.name} ({self.location}): {self.kind}"
        parts = [f"{self.graphs} graph{'s' if self.graphs != 1 else ''}"]
        if self.breaks:
            parts.append(f"{self.breaks} graph break{'s' if self.breaks != 1 else ''}")
        return f"{self.name} ({self.location}): {', '.join(parts)}"


@dataclass
class ExplainOutput:
    graphs: list[Any]
    break_reasons: list[BreakReason]
    ops_per_graph: list[list[str]]
    guards: list[str]
    recompiles: list[str]
    compile_time: float
    frames: list[str]
    frame_summaries: list[FrameSummary] = field(default_factory=list)
    guards_by_frame: list[tuple[str, list[str]]] = field(default_factory=list)
    # per graph, what its backend said of it (nodes it did not optimize, and why); see backend_notes
    notes_per_graph: list[list[str]] = field(default_factory=list)
    # per frame with dynamic sizes: its symbols and their origins, specializations, size guards
    dynamic_by_frame: list[tuple[str, list[str]]] = field(default_factory=list)
    # what the HTML page draws (frames with line spans and counts, graph nodes): explain_page.PageData
    page: Any = None
    # codes the bytecode package assembled after dynamo.assembler failed unexpectedly (a bug of ours)
    assembler_failures: int = 0
    assembler_error: str = ""
    # frames that stopped recompiling for new values and run their original code for other inputs
    given_up: list[str] = field(default_factory=list)
    # per frame with loops: each loop captured as a loop node, and each not captured with its reason
    loops_by_frame: list[tuple[str, list[str]]] = field(default_factory=list)
    loop_count: int = 0  # loop nodes in the graphs, nested ones included
    # compiled versions that timed turns found slower than the original code (dynamo._C entries)
    dropped: list[str] = field(default_factory=list)
    # per graph of backend "tiered": its tier when the report was made (numpy, compiling, c, stayed numpy)
    tiers_per_graph: list[str | None] = field(default_factory=list)

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return sum(1 for reason in self.break_reasons if reason.kind == GRAPH_BREAK)

    @property
    def op_count(self) -> int:
        return sum(len(ops) for ops in self.ops_per_graph)

    def reasons_by_frequency(self) -> list[tuple[BreakReason, int]]:
        """Distinct reasons (the same thing at the same user line, wherever it broke) with how
        often each occurred, most frequent first, then the most frequent category, then the
        order they happened in."""
        return [(group[0], len(group)) for group in self._groups()]

    def _groups(self) -> list[list[BreakReason]]:
        groups: dict[tuple, list[BreakReason]] = {}
        for reason in self.break_reasons:
            groups.setdefault((reason.kind, reason.category, reason.explanation, reason.location), []).append(reason)
        categories = Counter(reason.category for reason in self.break_reasons)
        order = list(groups)
        ranked = sorted(order, key=lambda k: (-len(groups[k]), -categories[k[1]], order.index(k)))
        return [groups[key] for key in ranked]

    def __str__(self) -> str:
        return self.format()

    def to_html(self, title: str = "dynamo explain") -> str:
        """The report as one self-contained HTML page (source view, graph pictures, guards)."""
        from .explain_html import render

        return render(self, title)

    def format(self, guards: int | None = 8) -> str:
        """The report; `guards`: how many guards to list per frame (None: all, 0: only a count)."""
        in_python = sum(1 for r in self.break_reasons if r.kind == RUNS_IN_PYTHON)
        uncompiled = sum(1 for r in self.break_reasons if r.kind == UNCOMPILED)
        lines = [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Parts that ran in Python: {in_python}",
            f"Frames that ran uncompiled: {uncompiled}",
            f"Op count: {self.op_count}",
            f"Compile time: {self.compile_time * 1e3:.1f} ms",
        ]
        if self.assembler_failures:
            lines.append(f"Internal error: please report: dynamo.assembler failed on {self.assembler_failures} "
                         f"code object(s) ({self.assembler_error}); the bytecode package assembled them")
        if self.frame_summaries:
            lines.append("Compiled frames:")
            lines.extend(f"  {summary}" for summary in self.frame_summaries)
        else:
            lines.append(f"Compiled frames: {', '.join(self.frames) or 'none'}")
        if self.break_reasons:
            lines.append("Break reasons (most frequent first):")
            for index, group in enumerate(self._groups(), 1):
                lines.append(f"  {index}. [{group[0].kind}] " + _describe_group(group).replace("\n", "\n     "))
        for index, ops in enumerate(self.ops_per_graph, 1):
            if len(ops) <= 24:
                lines.append(f"Graph {index}: {len(ops)} ops: {', '.join(ops)}")
            else:  # an unrolled loop: which ops, how often
                common = ", ".join(f"{op} x{n}" for op, n in Counter(ops).most_common(8))
                lines.append(f"Graph {index}: {len(ops)} ops, most used: {common}")
            notes = self.notes_per_graph[index - 1] if index <= len(self.notes_per_graph) else []
            lines.extend(f"  backend: {note}" for note in notes)
            tier = self.tiers_per_graph[index - 1] if index <= len(self.tiers_per_graph) else None
            if tier is not None:
                lines.append(f"  tier: {tier}")
        if self.loops_by_frame:
            lines.append(f"Loops ({self.loop_count} captured as loop nodes):")
            for name, frame_lines in self.loops_by_frame:
                lines.append(f"  {name}:")
                lines.extend(f"    {line}" for line in frame_lines)
        if self.dynamic_by_frame:
            lines.append("Dynamic dimensions:")
            for name, frame_lines in self.dynamic_by_frame:
                lines.append(f"  {name}:")
                lines.extend(f"    {line}" for line in frame_lines)
        if self.recompiles:
            lines.append("Recompilations (the guard that failed):")
            lines.extend(f"  - {r}" for r in self.recompiles)
            if any("stack[" in r for r in self.recompiles):
                lines.append("  (stack[i]: a value the code before a graph break left for the rest of the function)")
        if self.given_up:
            lines.append("Stopped recompiling (these frames now run their original code):")
            lines.extend(f"  - {r}" for r in self.given_up)
        if self.dropped:
            lines.append("Dropped for the original code (slower than it per call, timed in turns):")
            lines.extend(f"  - {r}" for r in self.dropped)
        if guards == 0 and self.guards:
            frames = len(self.guards_by_frame)
            lines.append(f"Guards: {len(self.guards)} in {frames} frame{'s' if frames != 1 else ''} "
                         "(dynamo.explain(fn) lists them)")
        elif self.guards_by_frame:
            lines.append("Guards (checked on every call before the compiled code runs):")
            for name, frame_guards in self.guards_by_frame:
                lines.append(f"  {name}:")
                shown = frame_guards if guards is None else frame_guards[:guards]
                lines.extend(f"    {g}" for g in shown)
                if len(shown) < len(frame_guards):
                    lines.append(f"    ... and {len(frame_guards) - len(shown)} more")
        elif self.guards:
            lines.append("Guards:")
            lines.extend(f"  {g}" for g in self.guards)
        return "\n".join(lines)


def _describe_group(group: list[BreakReason]) -> str:
    """One reason, or one reason that happened several times: where it broke each time."""
    if len(group) == 1:
        return str(group[0])
    first = group[0]
    lines = str(first).splitlines()
    # the per-occurrence consequence line is replaced by the list of places it broke
    detail = [line for line in lines if not line.startswith(("  graph break in", f"  {first.function} "))]
    places = []
    for reason in group:
        place = reason.function
        if len(reason.user_stack) > 1:
            place += f" at line {reason.user_stack[0].lineno} (calling {reason.user_stack[1].function})"
        places.append(place)
    hint = [line for line in detail if line.startswith("  hint:")]
    detail = [line for line in detail if not line.startswith("  hint:")]
    noun = "graph breaks" if first.kind == GRAPH_BREAK else "times"
    return "\n".join(detail + [f"  {len(group)} {noun}: in " + "; in ".join(places)] + hint)


def report_from(callback: Any) -> ExplainOutput:
    """Summarize everything `callback` (a ConvertFrame) compiled since it was last reset."""
    graphs, ops, guards, reasons, frames, summaries, by_frame, notes, dynamic = [], [], [], [], [], [], [], [], []
    loops: list[tuple[str, list[str]]] = []
    tiers: list[str | None] = []
    loop_count = 0
    seconds = 0.0
    versions = Counter(code for code, _ in callback.compiled_frames)
    made: Counter = Counter()
    for code, compiled in callback.compiled_frames:
        frames.append(code.co_qualname)
        made[code] += 1
        # a frame compiled more than once (new inputs) is listed once per version, each named apart
        name = code.co_qualname if versions[code] == 1 else f"{code.co_qualname} (version {made[code]} of {versions[code]})"
        for graph in compiled.graphs:
            graphs.append(graph.graph_module)
            notes.append([str(note) for note in graph_notes(graph)])
            tiers.append(tier_of(graph))
            ops.append([_op_name(n) for n in graph.graph_module.graph.nodes if n.op not in ("placeholder", "output")])
            seconds += graph.compile_seconds
        frame_guards = [str(g) for g in compiled.guards]
        guards.extend(frame_guards)
        if frame_guards:
            by_frame.append((name, frame_guards))
        if compiled.dynamic:
            dynamic.append((name, compiled.dynamic))
        if getattr(compiled, "loops", None):
            loops.append((name, compiled.loops))
        loop_count += getattr(compiled, "loop_count", 0)
        seconds += compiled.trace_seconds
        for error in compiled.breaks:
            reasons.append(BreakReason.from_unsupported(error, code.co_qualname, whole_frame=False))
        kind = "compiled"
        if compiled.fallback_reason is not None:
            python_until = getattr(compiled, "python_until", None)
            reason = BreakReason.from_unsupported(compiled.fallback_reason, code.co_qualname, True, python_until)
            reasons.append(reason)
            kind = reason.kind
        summaries.append(FrameSummary(name, f"{code.co_filename}:{code.co_firstlineno}",
                                      len(compiled.graphs), len(compiled.breaks), kind))
    recompiles = [f"{code.co_qualname}: {'; '.join(why)}" for code, why in callback.recompiles]
    assembler = sys.modules.get(f"{__package__}.assembler")  # loaded with the tracer, if it ever ran
    failures, error = (assembler.failures, assembler.last_failure) if assembler is not None else (0, "")
    from .explain_page import collect

    given_up = [f"{code.co_qualname}: {why}" for code, why in callback.given_up]
    return ExplainOutput(graphs, reasons, ops, guards, recompiles, seconds, frames, summaries, by_frame, notes,
                         dynamic, collect(callback), failures, error, given_up=given_up,
                         loops_by_frame=loops, loop_count=loop_count, dropped=dropped_versions(callback),
                         tiers_per_graph=tiers)


def graph_notes(graph: Any) -> list[Any]:
    """What the graph's backend said of it; under "tiered", once the graph moved up, what "c" said too."""
    notes = list(getattr(graph, "notes", ()))
    made = getattr(graph.compiled_fn, "_dynamo_fn", graph.compiled_fn)
    tier = getattr(made, "tier", None)
    c_fn = getattr(tier, "c_fn", None)
    if c_fn is not None:
        from .output_graph import backend_notes

        notes += [f"c: {note}" for note in backend_notes(c_fn)]
    return notes


def tier_of(graph: Any) -> str | None:
    """Where a graph of backend "tiered" runs now and why (None for other backends)."""
    made = getattr(graph.compiled_fn, "_dynamo_fn", graph.compiled_fn)
    tier = getattr(made, "tier", None)
    return tier.describe() if tier is not None else None


def dropped_versions(callback: Any) -> list[str]:
    """The compiled versions of `callback` that ran slower than the original code in timed turns."""
    from . import _C

    lines = []
    for code in dict.fromkeys(code for code, _ in callback.compiled_frames):
        for entry in _C.cache_entries(code):
            if entry.owner is callback and entry.dropped and entry.best_original == 0.0:
                lines.append(f"{code.co_qualname}: a version that never ran after the call that compiled it "
                             "(dropped with a slower one)")
            elif entry.owner is callback and entry.dropped:
                lines.append(f"{code.co_qualname}: {entry.best_compiled * 1e6:.1f} us per call compiled, "
                             f"{entry.best_original * 1e6:.1f} us as written")
    return lines


def _op_name(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return f".{target}()"
    name = getattr(target, "__name__", repr(target))
    module = getattr(target, "__module__", "") or ""
    return f"np.{name}" if module.startswith("numpy") or type(target).__name__ == "ufunc" else name


def explain(fn: Callable[..., Any], **compile_options: Any) -> Callable[..., ExplainOutput]:
    """`dynamo.explain(fn)(*args, **kwargs)`: run fn compiled once (from a clean cache) and return
    the report. Options are those of dynamo.compile, with the same default backend, so that the report
    (tiers, steps that run as NumPy code between kernels) is what compile would do."""
    from . import api, config

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        api.reset()
        options = {"backend": config.default_backend, "fullgraph": False, "dynamic": None, **compile_options}
        api.compile(fn, **options)(*args, **kwargs)
        return report_from(api.callback_for(options["backend"], options["fullgraph"], options["dynamic"]))

    return run
