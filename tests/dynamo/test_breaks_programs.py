"""Whole programs under `with dynamo.enable():` — an iterative solver, k-means with a
data-dependent stopping rule, a simulation that prints as it goes, a class-based model, a program
using exceptions for control flow and a generator pipeline: printed output and results identical
to the plain run, every part that ran in Python visible in the report."""
import contextlib
import io
import os
import runpy
import warnings

import pytest

import dynamo
from dynamo import api
from dynamo.explain import report_from

from breaks_helpers import same

HERE = os.path.join(os.path.dirname(__file__), "break_programs")
PROGRAMS = sorted(name for name in os.listdir(HERE) if name.startswith("prog_"))


def run_program(name, backend=None):
    out = io.StringIO()
    path = os.path.join(HERE, name)
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a recompile limit a program reaches
        if backend is None:
            namespace = runpy.run_path(path, run_name="__main__")
        else:
            with dynamo.enable(backend=backend):
                namespace = runpy.run_path(path, run_name="__main__")
    return out.getvalue(), namespace["RESULT"]


def test_there_are_enough_programs():
    assert len(PROGRAMS) >= 6


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_under_enable_matches_plain_python(name):
    expected_out, expected = run_program(name)
    out, result = run_program(name, backend="eager")
    assert out == expected_out
    assert same(result, expected)
    report = report_from(api.callback_for("eager", False, None))
    assert report.graph_count > 0
    for reason in report.break_reasons:  # every break and every part in Python says where
        assert reason.filename and reason.filename.endswith(name) or reason.filename.startswith("<")
        assert reason.lineno and reason.source_line, reason


@pytest.mark.parametrize("name", ["prog_solver.py", "prog_kmeans.py", "prog_exceptions.py"])
def test_program_with_the_default_backend(name):
    expected_out, expected = run_program(name)
    out, result = run_program(name, backend="numpy")
    assert out == expected_out and same(result, expected)


def test_solver_loops_run_their_arithmetic_in_graphs():
    run_program("prog_solver.py", backend="eager")
    report = report_from(api.callback_for("eager", False, None))
    ops = {op for graph in report.ops_per_graph for op in graph}
    assert "matmul" in ops
    kinds = {r.kind for r in report.break_reasons}
    assert "frame ran uncompiled" not in kinds


def test_exceptions_program_reports_the_retry_loop_in_python():
    run_program("prog_exceptions.py", backend="eager")
    report = report_from(api.callback_for("eager", False, None))
    text = report.format()
    assert "robust_cholesky" in text and "try/except" in text


class _Holder:
    def __init__(self, tag):
        self.tag = tag

    def get(self):
        return self.tag


def _bound_method_of_an_item_replaced_before_a_break(d):
    obj = d["k"]
    method = obj.get  # made while tracing: rebuilt from obj, which was read as d["k"]
    d["k"] = None  # replayed before the break: d["k"] no longer names obj
    print("break")
    return method()


def test_a_value_rebuilt_at_a_break_reads_what_it_was_made_from_before_the_replay():
    from breaks_helpers import compare

    run = compare(_bound_method_of_an_item_replaced_before_a_break, {"k": _Holder("first")})
    assert run.result == "first"


class _MadeSpecially:
    def __new__(cls, value):  # a custom __new__: creating one breaks the graph
        return super().__new__(cls)

    def __init__(self, value):
        self.value = value


def _loop_over_an_attribute_dict_grown_before_a_break_in_the_loop(holder, key):
    holder.table[key] = key * 10  # replayed at the break, before the loop's iterator is rebuilt
    out = []
    for node in holder.table:
        out.append(_MadeSpecially(node).value)
    return out


def test_a_dict_iterator_at_a_break_walks_the_dict_as_the_replay_left_it():
    holder_plain, holder_compiled = _Holder(None), _Holder(None)
    holder_plain.table, holder_compiled.table = {1: 10}, {1: 10}
    expected = _loop_over_an_attribute_dict_grown_before_a_break_in_the_loop(holder_plain, 2)
    with dynamo.enable():
        result = _loop_over_an_attribute_dict_grown_before_a_break_in_the_loop(holder_compiled, 2)
    assert result == expected == [1, 2] and holder_compiled.table == holder_plain.table
