"""explain as one self-contained HTML page: the user's source coloured by what became of each line,
graph pictures (layered SVG, no graphviz), guards and recompiles, and a summary with the top breaks.

No network: CSS, SVG and a few lines of JavaScript are inline. `ExplainOutput.to_html()` calls render.
"""
from __future__ import annotations

import html
import linecache
import zlib
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from .explain_page import GraphView, NodeView, PageData

if TYPE_CHECKING:
    from .explain import BreakReason, ExplainOutput

# Line states, strongest first: a line gets the first that applies to it.
LINE_STATES = (
    ("break", "graph break: this line ran in Python between graphs"),
    ("uncompiled", "in a frame that ran uncompiled (its original code)"),
    ("python", "ran in Python (a region the compiler left to the interpreter)"),
    ("loop", "inside a captured loop (one loop node of a graph)"),
    ("graph", "became graph operations"),
    ("traced", "in a compiled function: Python work done once while tracing"),
)
NODES_PER_PICTURE = 250  # a larger graph is drawn in pages of this many nodes
KERNEL_COLOURS = ("#cfe8ff", "#ffe2c2", "#d8f5d0", "#f2d6f7", "#fff3b0", "#d6f0f0", "#f7d6d6", "#e0e0ff")
OP_COLOURS = {"placeholder": "#eeeeee", "output": "#eeeeee", "get_attr": "#f4f4f4", "call_module": "#bfe6df"}

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#24292f;color:#fff;padding:12px 20px}header h1{margin:0;font-size:18px}
main{padding:8px 20px 40px}section{margin:18px 0}h2{font-size:16px;border-bottom:1px solid #ddd}
.summary td{padding:2px 12px 2px 0}.legend span{display:inline-block;margin:0 10px 4px 0;padding:1px 6px}
table.src{border-collapse:collapse;font:12px/1.45 ui-monospace,monospace;width:100%;background:#fff}
table.src td{padding:0 6px;vertical-align:top;white-space:pre}table.src td.no{color:#888;text-align:right;width:3.5em;user-select:none}
table.src td.note{white-space:normal;overflow-wrap:anywhere;font:12px system-ui,sans-serif;color:#555;width:42%}
table.src{table-layout:fixed}table.src td.code{overflow:hidden;text-overflow:ellipsis}
tr.ln-break{background:#ffd7d2}tr.ln-uncompiled{background:#e9e2e2}tr.ln-python{background:#fff1bf}
tr.ln-loop{background:#c8eee8}tr.ln-graph{background:#d9f2d0}tr.ln-traced{background:#f6f8fa}
.legend .ln-break{background:#ffd7d2}.legend .ln-uncompiled{background:#e9e2e2}.legend .ln-python{background:#fff1bf}
.legend .ln-loop{background:#c8eee8}.legend .ln-graph{background:#d9f2d0}.legend .ln-traced{background:#f6f8fa}
tr[data-nodes]{cursor:pointer}tr.fn td{background:#eef1f5;font:12px system-ui,sans-serif;padding:3px 6px}
svg.graph{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}svg .node rect{stroke:#777}
svg .node.hl rect{stroke:#d0342c;stroke-width:3}svg text{font:11px ui-monospace,monospace}
svg path{fill:none;stroke:#9aa;stroke-width:1}#panel{position:fixed;right:12px;bottom:12px;max-width:34em;
max-height:40vh;overflow:auto;background:#fff;border:1px solid #aaa;padding:8px;display:none;font-size:12px}
pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:12px}.hint{color:#2a6f2a}.why{color:#8a3b12}
"""

_SCRIPT = """
document.querySelectorAll('tr[data-nodes]').forEach(function(row){row.addEventListener('click',function(){
 document.querySelectorAll('.node.hl').forEach(function(n){n.classList.remove('hl')});
 var keys=row.getAttribute('data-nodes').split(' '),items=[];
 keys.forEach(function(k){var n=document.getElementById(k);if(n){n.classList.add('hl');
  var d=n.querySelector('title');items.push('<li><a href="#'+k+'">'+(d?d.textContent:k).replace(/</g,'&lt;')+'</a></li>')}});
 var p=document.getElementById('panel');p.innerHTML='<b>'+keys.length+' graph node(s) from line '+
  row.getAttribute('data-line')+'</b><ul>'+items.join('')+'</ul>';p.style.display='block'})});
"""


def render(report: ExplainOutput, title: str = "dynamo explain") -> str:
    """The whole page for one explain report."""
    page = report.page if report.page is not None else PageData()
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{_e(title)}</h1></header><main>",
        _summary(report, page),
        _sources(report, page),
        _graphs(page),
        _guards(page),
        "<div id='panel'></div>",
        f"</main><script>{_SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _anchor(filename: str, lineno: int | None) -> str:
    return f"L{zlib.crc32(filename.encode())}-{lineno}"


def _summary(report: ExplainOutput, page: PageData) -> str:
    from .explain import RUNS_IN_PYTHON, UNCOMPILED

    rows = [
        ("Frames compiled", sum(1 for f in page.frames if f.kind == "compiled")),
        ("Graphs", report.graph_count),
        ("Graph breaks", report.graph_break_count),
        ("Parts that ran in Python", sum(1 for r in report.break_reasons if r.kind == RUNS_IN_PYTHON)),
        ("Frames that ran uncompiled", sum(1 for r in report.break_reasons if r.kind == UNCOMPILED)),
        ("Captured loops", sum(len(g.loops) for g in page.graphs)),
        ("Recompiles", sum(f.recompiles for f in page.frames)),
        ("Compile time", f"{report.compile_time * 1e3:.1f} ms"),
    ]
    out = ["<section id='summary'><h2>Summary</h2><table class='summary'>"]
    out += [f"<tr><td>{_e(k)}</td><td><b>{_e(v)}</b></td></tr>" for k, v in rows]
    out.append("</table>")
    groups = report.reasons_by_frequency()
    if groups:
        out.append("<h3>Most frequent break reasons</h3><ol class='reasons'>")
        for reason, count in groups[:10]:
            where = ""
            if reason.location is not None:
                where = (f" at <a href='#{_anchor(reason.location.filename, reason.location.lineno)}'>"
                         f"{_e(reason.location.filename)}:{reason.location.lineno}</a>")
            out.append(f"<li>{count}x [{_e(reason.kind)}] {_e(reason.reason)}{where}"
                       + (f"<br><span class='hint'>hint: {_e(reason.hint)}</span>" if reason.hint else "") + "</li>")
        out.append("</ol>")
    out.append("</section>")
    return "\n".join(out)


def _line_states(report: ExplainOutput, page: PageData) -> tuple[dict[str, dict[int, set[str]]],
                                                                    dict[str, dict[int, list[BreakReason]]],
                                                                    dict[str, dict[int, list[str]]]]:
    """Per file and line: the states that apply, the break reasons there, the graph nodes made there."""
    from .explain import UNCOMPILED

    states: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    reasons: dict[str, dict[int, list[BreakReason]]] = defaultdict(lambda: defaultdict(list))
    nodes: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for frame in page.frames:
        uncompiled = frame.kind == UNCOMPILED
        if frame.resumes is None or uncompiled:  # a compiled resume function lies inside its function's span
            for line in range(frame.first_line, frame.last_line + 1):
                states[frame.filename][line].add("uncompiled" if uncompiled else "traced")
    for graph in page.graphs:
        for node in graph.nodes:
            if node.filename is None or node.lineno is None or node.op in ("placeholder", "output"):
                continue
            states[node.filename][node.lineno].add("loop" if node.in_loop or node.op == "call_module" else "graph")
            nodes[node.filename][node.lineno].append(node.key)
    for reason in report.break_reasons:
        if reason.location is None:
            continue
        filename, line = reason.location.filename, reason.location.lineno
        reasons[filename][line].append(reason)
        if reason.kind == "graph break":
            states[filename][line].add("break")
        elif reason.python_until is not None:
            for inner in range(line, max(line + 1, reason.python_until)):
                states[filename][inner].add("python")
    return states, reasons, nodes


def _sources(report: ExplainOutput, page: PageData) -> str:
    states, reasons, nodes = _line_states(report, page)
    legend = "".join(f"<span class='ln-{name}'>{_e(text)}</span>" for name, text in LINE_STATES)
    out = [f"<section id='source'><h2>Source</h2><div class='legend'>{legend}</div>"]
    frames_by_file: dict[str, dict[int, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for frame in page.frames:
        frames_by_file[frame.filename][frame.first_line].append(frame)
    for filename in dict.fromkeys(f.filename for f in page.frames):
        lines = linecache.getlines(filename)
        out.append(f"<h3>{_e(filename)}</h3>")
        if not lines:
            out.append("<p>(no source available: code generated at run time)</p>")
            continue
        spans = [(f.first_line, f.last_line) for f in page.frames if f.filename == filename]
        shown = sorted({n for a, b in spans for n in range(max(1, a - 2), min(len(lines), b + 2) + 1)})
        out.append("<table class='src'>")
        previous = 0
        for lineno in shown:
            if previous and lineno > previous + 1:
                out.append("<tr><td class='no'>…</td><td></td><td></td></tr>")
            previous = lineno
            for frame in frames_by_file[filename].get(lineno, ()):
                out.append(f"<tr class='fn'><td></td><td colspan='2'><b>{_e(frame.qualname)}</b>: {frame.calls} "
                           f"call{'s' if frame.calls != 1 else ''}, {frame.compiles} compile"
                           f"{'s' if frame.compiles != 1 else ''}, {frame.recompiles} recompile"
                           f"{'s' if frame.recompiles != 1 else ''}, {len(frame.graphs)} graph"
                           f"{'s' if len(frame.graphs) != 1 else ''} — {_e(frame.kind)}</td></tr>")
            here = states[filename].get(lineno, set())
            state = next((name for name, _ in LINE_STATES if name in here), "")
            keys = nodes[filename].get(lineno, [])
            attributes = f" class='ln-{state}'" if state else ""
            attributes += f" id='{_anchor(filename, lineno)}' data-line='{lineno}'"
            if keys:
                attributes += f" data-nodes='{_e(' '.join(keys))}'"
            note = "".join(_reason_note(reason, count) for reason, count in
                           Counter((r.kind, r.reason, r.hint) for r in reasons[filename].get(lineno, ())).items())
            if keys and not note:
                note = f"{len(keys)} graph node{'s' if len(keys) != 1 else ''}"
            text = lines[lineno - 1].rstrip("\n")
            out.append(f"<tr{attributes}><td class='no'>{lineno}</td><td class='code'>{_e(text)}</td><td class='note'>{note}</td></tr>")
        out.append("</table>")
    out.append("</section>")
    return "\n".join(out)


def _reason_note(reason: tuple[str, str, str], count: int) -> str:
    kind, text, hint = reason
    times = f" ({count} times)" if count > 1 else ""
    return (f"<div class='why'>[{_e(kind)}] {_e(text)}{times}</div>"
            + (f"<div class='hint'>hint: {_e(hint)}</div>" if hint else ""))


def _graphs(page: PageData) -> str:
    out = ["<section id='graphs'><h2>Graphs</h2>"]
    if not page.graphs:
        out.append("<p>No graph was compiled.</p>")
    for graph in page.graphs:
        ops = sum(1 for n in graph.nodes if n.op not in ("placeholder", "output"))
        out.append(f"<h3 id='g{graph.number}'>Graph {graph.number} — {_e(graph.frame)}: {ops} ops</h3>")
        if graph.loops:
            out.append("<p>Captured loops: " + ", ".join(_e(d) for d in graph.loops) + "</p>")
        if graph.kernels:
            swatches = " ".join(f"<span style='background:{KERNEL_COLOURS[i % len(KERNEL_COLOURS)]};padding:1px 6px'>"
                                f"{_e(name)}</span>" for i, name in enumerate(graph.kernels))
            out.append(f"<p class='legend'>Kernels (node fill = the kernel it is fused into): {swatches}</p>")
        pages = [graph.nodes[i:i + NODES_PER_PICTURE] for i in range(0, len(graph.nodes), NODES_PER_PICTURE)] or [[]]
        for index, chunk in enumerate(pages):
            picture = _svg(chunk, graph)
            if len(pages) == 1:
                out.append(picture)
            else:
                first = index * NODES_PER_PICTURE + 1
                out.append(f"<details{' open' if index == 0 else ''}><summary>nodes {first}–"
                           f"{first + len(chunk) - 1} of {len(graph.nodes)}</summary>{picture}</details>")
        out += [f"<div class='why'>backend: {_e(note)}</div>" for note in graph.notes]
        if graph.code:
            out.append(f"<details><summary>generated code</summary><pre>{_e(graph.code)}</pre></details>")
    out.append("</section>")
    return "\n".join(out)


def _svg(nodes: list[NodeView], graph: GraphView) -> str:
    """A layered drawing: each node one column right of its latest input, edges as curves."""
    width, height, gap_x, gap_y = 150, 24, 44, 10
    index = {n.key: i for i, n in enumerate(nodes)}
    layer: dict[str, int] = {}
    for node in nodes:
        layer[node.key] = 1 + max((layer[k] for k in node.inputs if k in layer), default=-1)
    rows: dict[int, int] = defaultdict(int)
    position: dict[str, tuple[int, int]] = {}
    for node in nodes:
        column = layer[node.key]
        position[node.key] = (10 + column * (width + gap_x), 10 + rows[column] * (height + gap_y))
        rows[column] += 1
    total_w = 20 + (max(layer.values(), default=0) + 1) * (width + gap_x)
    total_h = 20 + max(rows.values(), default=1) * (height + gap_y)
    out = [f"<svg class='graph' xmlns='http://www.w3.org/2000/svg' width='{total_w}' height='{total_h}' "
           f"viewBox='0 0 {total_w} {total_h}' data-graph='{graph.number}'>"]
    for node in nodes:
        x, y = position[node.key]
        for source in node.inputs:
            if source in index:
                sx, sy = position[source]
                x0, y0, y1 = sx + width, sy + height // 2, y + height // 2
                out.append(f"<path d='M{x0},{y0} C{x0 + gap_x // 2},{y0} {x - gap_x // 2},{y1} {x},{y1}'/>")
    for node in nodes:
        x, y = position[node.key]
        fill = OP_COLOURS.get(node.op, "#ffffff")
        if node.kernel is not None:
            fill = KERNEL_COLOURS[node.kernel % len(KERNEL_COLOURS)]
        elif node.in_loop:
            fill = "#e3f6f3"
        label = node.label if len(node.label) <= 20 else node.label[:19] + "…"
        hidden = sum(1 for k in node.inputs if k not in index)
        detail = node.detail + (f" | {hidden} input(s) drawn on another page" if hidden else "")
        out.append(f"<g class='node' id='{_e(node.key)}'><title>{_e(detail)}</title>"
                   f"<rect x='{x}' y='{y}' width='{width}' height='{height}' rx='4' fill='{fill}'/>"
                   f"<text x='{x + 6}' y='{y + 16}'>{_e(label)}</text></g>")
    out.append("</svg>")
    return "".join(out)


def _guards(page: PageData) -> str:
    out = ["<section id='guards'><h2>Guards and recompiles</h2>"]
    for frame in page.frames:
        if frame.kind != "compiled":
            continue
        out.append(f"<h3>{_e(frame.qualname)} <small>({_e(frame.filename)}:{frame.first_line})</small></h3>")
        for number, version in enumerate(frame.versions, 1):
            why = f" — recompiled because <span class='why'>{_e(version.why)}</span>" if version.why else ""
            graphs = ", ".join(f"<a href='#g{n}'>graph {n}</a>" for n in version.graphs) or "no graph"
            out.append(f"<details{' open' if number == 1 else ''}><summary>version {number}: "
                       f"{len(version.guards)} guards, {graphs}{why}</summary><ul>")
            out += [f"<li><code>{_e(g)}</code></li>" for g in version.guards]
            out.append("</ul></details>")
    out.append("</section>")
    return "\n".join(out)
