"""The HTML page of explain: what it collects (frames, counts, nodes by line) and how it escapes and
scales, checked on real compiled programs (the browser test is tests/test_explain_browser.py)."""
import html
import re

import numpy as np

import dynamo
from dynamo import explain_html
from dynamo.explain_page import PageData


def rows_of(page_html):
    """(line number, css class, data-nodes) of every source row."""
    pattern = r"<tr(?: class='ln-(\w+)')? id='L\d+-(\d+)' data-line='\d+'(?: data-nodes='([^']*)')?>"
    return {int(line): (state, nodes) for state, line, nodes in re.findall(pattern, page_html)}


def kernel_with_break(x):
    y = np.exp(x) - 1.0  # graph line
    print("total", float(y.sum()))  # graph break
    return y * 2.0


def test_lines_coloured_by_what_became_of_them(capsys):
    report = dynamo.explain(kernel_with_break)(np.arange(4.0))
    page = report.to_html()
    first = kernel_with_break.__code__.co_firstlineno
    rows = rows_of(page)
    assert rows[first + 1][0] == "graph" and rows[first + 1][1]  # nodes listed for the click
    assert rows[first + 2][0] == "break"
    assert rows[first + 3][0] == "graph"
    assert "unsupported side effect: print()" in html.unescape(page)
    assert page.count("<svg class='graph'") == report.graph_count == 2


def test_counts_of_calls_compiles_and_recompiles():
    def scale(x):
        return x * 3.0

    compiled = dynamo.compile(scale, backend="eager")
    dynamo.reset()
    for n in (4, 4, 4, 9, 9):  # the second size recompiles (dynamic from then on)
        compiled(np.ones(n))
    from dynamo.api import callback_for
    from dynamo.explain import report_from

    report = report_from(callback_for("eager", False, None))
    frame = next(f for f in report.page.frames if f.qualname.endswith("scale"))
    assert (frame.calls, frame.compiles, frame.recompiles) == (5, 2, 1)
    assert frame.versions[1].why and "shape" in frame.versions[1].why
    page = report.to_html()
    assert "5 calls, 2 compiles, 1 recompile" in page
    assert "recompiled because" in page


def test_source_and_reasons_are_escaped():
    namespace = {"np": np}
    source = 'def f(x):\n    s = "<b>&amp; é"\n    y = x + 1\n    print(s < "z")\n    return y\n'
    import linecache

    filename = "<escape-test>.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    page = dynamo.explain(namespace["f"])(np.arange(3.0)).to_html()
    assert '&quot;&lt;b&gt;&amp;amp; é&quot;' in page  # the line's text, escaped, non-ASCII kept
    assert "<b>&amp; é" not in page
    assert "print(s &lt; &quot;z&quot;)" in page


def test_program_with_no_graph():
    def no_arrays(a, b):
        return a + b

    report = dynamo.explain(no_arrays)(1, 2)
    page = report.to_html()
    assert "No graph was compiled." in page and "<svg" not in page
    assert explain_html.render(type(report)([], [], [], [], [], 0.0, [], page=PageData())).count("<section") == 4


def test_a_2000_node_graph_is_drawn_in_pages():
    def long_chain(x):
        for _ in range(2000):
            x = x + 1.0
        return x

    import dynamo.config as config

    # unrolled, not one loop node: a graph of 2000 nodes (backend numpy: tiered keeps a loop past
    # its op limit a loop node)
    with config.patch(unroll_limit=4000, loop_unroll_threshold=4000):
        report = dynamo.explain(long_chain, backend="numpy")(np.zeros(3))
    page = report.to_html()
    nodes = sum(len(g.nodes) for g in report.page.graphs)
    assert nodes >= 2000
    pictures = page.count("<svg class='graph'")
    assert pictures == -(-nodes // explain_html.NODES_PER_PICTURE)
    assert page.count("<g class='node'") == nodes
    assert "input(s) drawn on another page" in page  # edges across pages are named, not drawn
