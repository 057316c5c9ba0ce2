"""What explain's HTML page shows, gathered from a compile callback: frames with their line spans,
call and compile counts, and each graph's nodes (op, shape, source line, kernel, loop body).

The page itself is drawn by explain_html.render; this module only collects (it imports no HTML).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import _C, resume, resume_origins


@dataclass
class NodeView:
    """One graph node as the page draws it."""

    key: str               # unique in the page: "g<graph>-<node name>"
    op: str                # placeholder, call_function, call_method, call_module, get_attr, output
    label: str             # what the box says: np.add, .sum(), the placeholder's name
    detail: str            # the hover text: name, target, shape and dtype
    filename: str | None   # the user's line that produced it
    lineno: int | None
    inputs: list[str]      # keys of the nodes it reads
    kernel: int | None = None  # index into GraphView.kernels when a backend fused it into a kernel
    in_loop: bool = False  # a node of a captured loop's body


@dataclass
class GraphView:
    number: int            # 1-based, as the text report counts graphs
    frame: str             # qualname of the frame that produced it
    nodes: list[NodeView]
    notes: list[str]
    code: str | None       # the backend's generated source, when it made one
    kernels: list[str] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)  # captured loops: description of each


@dataclass
class VersionView:
    """One compiled version of a frame: its guards, and the failed guard that made it (a recompile)."""

    guards: list[str]
    graphs: list[int]      # numbers of its graphs
    why: str | None        # None for the first version


@dataclass
class FrameView:
    qualname: str
    filename: str
    first_line: int
    last_line: int
    kind: str              # "compiled", or explain's RUNS_IN_PYTHON / UNCOMPILED
    resumes: str | None    # for a resume function: the qualname of the function it continues
    calls: int             # calls served from the cache plus the calls that compiled
    versions: list[VersionView]

    @property
    def compiles(self) -> int:
        return len(self.versions)

    @property
    def recompiles(self) -> int:
        return len(self.versions) - 1

    @property
    def graphs(self) -> list[int]:
        return [n for version in self.versions for n in version.graphs]


@dataclass
class PageData:
    frames: list[FrameView] = field(default_factory=list)
    graphs: list[GraphView] = field(default_factory=list)


def collect(callback: Any) -> PageData:
    """Everything `callback` (a ConvertFrame) compiled since it was last reset, for the page."""
    from .explain import BreakReason

    page = PageData()
    recompiles: dict[Any, list[str]] = {}
    for code, why in callback.recompiles:
        recompiles.setdefault(code, []).append("; ".join(why))
    frames: dict[Any, FrameView] = {}
    for code, compiled in callback.compiled_frames:
        numbers = []
        for graph in compiled.graphs:
            numbers.append(len(page.graphs) + 1)
            page.graphs.append(_graph_view(numbers[-1], code.co_qualname, graph))
        frame = frames.get(code)
        if frame is None:
            kind = "compiled"
            if compiled.fallback_reason is not None:
                kind = BreakReason.from_unsupported(compiled.fallback_reason, code.co_qualname, True,
                                                    getattr(compiled, "python_until", None)).kind
            lines = [line for _, _, line in code.co_lines() if line is not None] + [code.co_firstlineno]
            source = resume_origins.source_of(code)
            # a resume function's span starts where it takes over, not at the def line it inherits
            first = min(lines) if source is code else resume.entry_line(code)
            hits = sum(entry.hits for entry in _C.cache_entries(code))
            frame = frames[code] = FrameView(code.co_qualname, code.co_filename, first, max(lines), kind,
                                             None if source is code else source.co_qualname, hits, [])
            page.frames.append(frame)
        reasons = recompiles.get(code, [])
        why = reasons[len(frame.versions) - 1] if frame.versions and len(frame.versions) - 1 < len(reasons) else None
        frame.versions.append(VersionView([str(g) for g in compiled.guards], numbers, why))
        frame.calls += 1  # the call that compiled this version
    return page


def _graph_view(number: int, frame: str, graph: Any) -> GraphView:
    compiled = getattr(graph.compiled_fn, "_dynamo_fn", graph.compiled_fn)
    code = getattr(compiled, "source", None)
    kernels, kernel_of = _kernels(compiled)
    view = GraphView(number, frame, [], [str(note) for note in getattr(graph, "notes", ())], code if isinstance(code, str) else None,
                     kernels)
    _add_nodes(view, graph.graph_module, f"g{number}-", kernel_of, in_loop=False)
    return view


def _add_nodes(view: GraphView, module: Any, prefix: str, kernel_of: dict[str, int], in_loop: bool) -> None:
    for node in module.graph.nodes:
        location = node.meta.get("source_location")
        key = prefix + node.name
        inputs = [prefix + n.name for n in node.all_input_nodes]
        view.nodes.append(NodeView(key, node.op, _label(node), _detail(node), getattr(location, "filename", None),
                                   getattr(location, "lineno", None), inputs, kernel_of.get(node.name), in_loop))
        loop = getattr(module, node.target, None) if node.op == "call_module" and isinstance(node.target, str) else None
        body = getattr(loop, "body", None)
        if body is not None and hasattr(body, "graph"):
            view.loops.append(getattr(loop, "description", "") or node.name)
            # the body's nodes follow the loop node, keyed under it, drawn as part of the same picture
            _add_nodes(view, body, f"{key}.", {}, in_loop=True)


def _kernels(compiled: Any) -> tuple[list[str], dict[str, int]]:
    """Kernel names of a backend that fuses through the kernel IR, and which node each stores."""
    program = getattr(compiled, "program", None)
    names: list[str] = []
    kernel_of: dict[str, int] = {}
    for index, kernel in enumerate(getattr(program, "kernels", None) or ()):
        names.append(str(getattr(kernel, "name", f"kernel{index}")))
        for origin in getattr(kernel, "origins", ()):
            kernel_of.setdefault(str(origin), index)
    return names, kernel_of


def _label(node: Any) -> str:
    if node.op in ("placeholder", "output", "get_attr"):
        return f"{node.op}: {node.target}" if node.op == "get_attr" else node.name if node.op == "placeholder" else "output"
    if node.op == "call_method":
        return f".{node.target}()"
    if node.op == "call_module":
        return f"loop {node.target}"
    target = node.target
    name = getattr(target, "__name__", None) or repr(target)
    module = getattr(target, "__module__", "") or ""
    return f"np.{name}" if module.startswith("numpy") or type(target).__name__ == "ufunc" else name


def _detail(node: Any) -> str:
    meta = node.meta.get("val")
    shape, dtype = getattr(meta, "shape", None), getattr(meta, "dtype", None)
    parts = [f"{node.name} = {node.op} {_label(node)}"]
    if shape is not None and dtype is not None:
        parts.append(f"{dtype}[{', '.join(str(s) for s in shape)}]")
    elif meta is not None:
        parts.append(f"{type(meta).__name__}: {str(meta)[:80]}")
    location = node.meta.get("source_location")
    if location is not None:
        parts.append(f"line {getattr(location, 'lineno', '?')}")
    return " | ".join(parts)
