"""dynamo.explain(fn)(*args, **kwargs): the report's fields and its text — graphs, breaks with
category, explanation, hint, user file:line and source text, the inlining stack, parts that ran
in Python, recompilations, guards per frame, reasons grouped most frequent first."""
import numpy as np
import pytest

import dynamo
from dynamo.exc import Category
from dynamo.explain import GRAPH_BREAK, RUNS_IN_PYTHON, UNCOMPILED, ExplainOutput
from dynamo.fx_ir.graph_module import GraphModule

CATEGORIES = {value for name, value in vars(Category).items() if not name.startswith("_")}


def inner(v):
    if v.max() > 2:                       # data-dependent branch, inside an inlined call
        return v * 2
    return v


def outer(x, scale=1.0):
    y = np.exp(x) * scale
    z = inner(y)
    print("z", z.shape)                   # print: a side effect in Python
    return z.sum()


def test_fields_of_the_report():
    report = dynamo.explain(outer)(np.arange(3.0), scale=2.0)
    assert isinstance(report, ExplainOutput)
    assert report.graph_count == len(report.graphs) == len(report.ops_per_graph)
    assert all(isinstance(g, GraphModule) for g in report.graphs)
    assert report.graph_break_count == sum(1 for r in report.break_reasons if r.kind == GRAPH_BREAK) >= 2
    assert report.op_count == sum(len(ops) for ops in report.ops_per_graph)
    assert report.compile_time > 0
    assert report.guards and all(isinstance(g, str) for g in report.guards)
    assert [name for name, _ in report.guards_by_frame][0] == "outer"
    assert any("np.exp" in ops for ops in report.ops_per_graph)


def test_each_reason_names_category_explanation_hint_and_user_line():
    report = dynamo.explain(outer)(np.arange(3.0))
    first = outer.__code__.co_firstlineno
    branch = next(r for r in report.break_reasons if r.category == Category.DATA_DEPENDENT_BRANCH)
    assert branch.filename == __file__ and branch.lineno == inner.__code__.co_firstlineno + 1
    assert branch.source_line.startswith("if v.max() > 2:")
    assert [(loc.function, loc.lineno) for loc in branch.user_stack] == [("outer", first + 2), ("inner", branch.lineno)]
    assert branch.function == "outer" and branch.hint
    printed = next(r for r in report.break_reasons if r.category == Category.SIDE_EFFECT)
    assert printed.lineno == first + 3 and "print" in printed.explanation
    for reason in report.break_reasons:
        assert reason.category in CATEGORIES
        assert reason.reason == f"{reason.category}: {reason.explanation}"


def test_text_of_the_report_is_actionable():
    text = str(dynamo.explain(outer)(np.arange(3.0)))
    assert "Graph count:" in text and "Graph break count:" in text
    assert f"{__file__}:{inner.__code__.co_firstlineno + 1} in inner" in text
    assert "if v.max() > 2:" in text
    assert f"inlined from {__file__}:{outer.__code__.co_firstlineno + 2} in outer" in text
    assert "hint:" in text and "Guards (checked on every call" in text
    for internal in ("Variable", "Tracker", "BreakHere", "Instr", "<object at"):
        assert internal not in text


def test_parts_that_run_in_python_say_where_compiled_code_takes_over():
    def f(x):
        for i in range(3):
            print(i)
        return np.sin(x) * 2

    report = dynamo.explain(f)(np.ones(2))
    (part,) = [r for r in report.break_reasons if r.kind == RUNS_IN_PYTHON]
    assert part.python_until == f.__code__.co_firstlineno + 3
    assert f"compiled code takes over again at line {part.python_until}" in str(report)
    assert "Parts that ran in Python: 1" in str(report)


def test_frame_that_ran_uncompiled_is_reported_with_why():
    def f(x):
        if x.shape[0] > 5:
            z = 1
        return x + z                       # UnboundLocalError in Python too

    with pytest.raises(UnboundLocalError):
        dynamo.explain(f)(np.ones(2))
    counter_report = dynamo.explain(lambda v: v + 1)(np.ones(2))
    assert counter_report.break_reasons == []

    def g(x):
        def rows():
            k = 2.0
            scale = lambda v: v * k
            for row in x:
                yield scale(row)

        for v in rows():
            print(v.sum())
        return x

    report = dynamo.explain(g)(np.ones((2, 2)))
    (whole,) = [r for r in report.break_reasons if r.kind == UNCOMPILED]
    assert "captured by inner functions" in whole.explanation and "ran uncompiled" in str(report)


def test_recompilations_name_the_guard_that_failed():
    def f(x):
        return x * 2

    compiled = dynamo.compile(f, backend="eager")
    dynamo.reset()
    compiled(np.ones(2))
    compiled(np.ones((2, 2), dtype=np.float32))
    from dynamo import api
    from dynamo.explain import report_from

    report = report_from(api.callback_for("eager", False, None))
    assert report.recompiles and "f:" in report.recompiles[0]
    assert "Recompilations (the guard that failed):" in str(report)


def test_reasons_are_grouped_most_frequent_first():
    def step(x):
        if x.sum() > 0:
            return x - 1
        return x

    def f(a, b, c):
        print("start")
        return step(a), step(b), step(c)

    report = dynamo.explain(f)(np.ones(2), np.ones(3), np.ones(4))
    groups = report.reasons_by_frequency()
    counts = [count for _, count in groups]
    assert counts == sorted(counts, reverse=True) and counts[0] >= 2
    assert groups[0][0].category == Category.DATA_DEPENDENT_BRANCH
    assert f"{counts[0]} graph breaks: in " in str(report)


def test_guards_are_listed_per_frame_and_shortened():
    def f(items, x):
        print(len(items))
        return x * sum(items)

    report = dynamo.explain(f)(list(range(30)), np.ones(2))
    text = report.format(guards=3)
    assert "... and " in text and " more" in text
    assert "Guards:" in report.format(guards=0) and "dynamo.explain(fn) lists them" in report.format(guards=0)
    assert len(report.format(guards=None)) > len(text)


def test_explain_starts_from_a_clean_cache_and_takes_compile_options():
    def f(x):
        return np.cos(x) + 1

    first = dynamo.explain(f)(np.ones(3))
    second = dynamo.explain(f)(np.ones(3))
    assert first.graph_count == second.graph_count == 1 and not second.recompiles
    calls = []

    def backend(gm, inputs):
        calls.append(gm)
        return gm.forward

    report = dynamo.explain(f, backend=backend)(np.ones(3))
    assert report.graph_count == 1 and len(calls) == 1


@pytest.mark.registered_backend  # eager generates no code: the frontend logs its graphs
def test_logs_show_breaks_and_bytecode_side_by_side(caplog):
    import logging

    def f(x):
        y = x + 1
        print("log me")
        return y * 2

    with caplog.at_level(logging.DEBUG, logger="dynamo"):
        dynamo.compile(f, backend="eager")(np.ones(2))
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "graph break in" in text and "print() writes" in text
    assert "original: " in text and "| transformed" in text and "RESUME" in text
    assert "code of a graph of" in text and "def forward" in text


def test_every_reason_has_a_hint():
    class Tagged(Exception):
        def __init__(self, tag):
            super().__init__(tag)
            self.tag = tag

    def f(x):
        try:
            raise Tagged("t")
        except Tagged as error:
            tag = error.tag
        if x.sum() > 0:
            raise ValueError(f"positive {tag}")
        return x

    with pytest.raises(ValueError):
        dynamo.explain(f)(np.ones(2))
    report = dynamo.explain(f)(-np.ones(2))
    assert report.break_reasons and all(reason.hint for reason in report.break_reasons)


def scaled(x, k):
    return x * k


def test_versions_of_one_frame_are_named_apart():
    """A frame compiled for new inputs is listed once per version, numbered (issue 16: the same
    name twice read as a duplicate), its guards under the same name; a frame compiled once keeps
    its plain name."""
    from dynamo.explain import report_from

    compiled = dynamo.compile(scaled)
    for x in (np.ones(3), np.ones((2, 2)), np.ones(5, dtype=np.int32)):
        compiled(x, 2)
    report = report_from(compiled._dynamo_callback)
    names = [summary.name for summary in report.frame_summaries if summary.name.startswith("scaled")]
    assert names == [f"scaled (version {k} of 3)" for k in (1, 2, 3)]
    assert [name for name, _ in report.guards_by_frame if name.startswith("scaled")] == names
    text = report.format()
    assert "scaled (version 3 of 3)" in text and "\n  scaled:" not in text
