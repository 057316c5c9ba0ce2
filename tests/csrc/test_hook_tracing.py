"""sys.settrace, sys.setprofile, sys.monitoring and coverage with the hook on: with a trace
function installed (a debugger, coverage) the original code runs, every line of it; otherwise the
transformed code keeps the user's file, names and line numbers, so tools see the user's lines."""
import sys
import textwrap

import pytest

import dynamo
from dynamo import _C

from hook_helpers import assert_hook_off


def body(x):
    y = x + 1
    z = y * 2
    return z - x


BODY_LINES = [body.__code__.co_firstlineno + i for i in (1, 2, 3)]


def calls_body(x):
    return body(x=x)


class Tracer:
    """Records (event, function name, line) for frames of this file."""

    def __init__(self):
        self.events = []

    def __call__(self, frame, event, arg):
        if frame.f_code.co_filename == __file__:
            self.events.append((event, frame.f_code.co_name, frame.f_lineno))
        return self

    def lines(self, name):
        return [line for event, fn, line in self.events if event == "line" and fn == name]


def traced(fn):
    tracer = Tracer()
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn()
    finally:
        sys.settrace(old)
    return tracer, result


@pytest.mark.parametrize("call", [
    pytest.param(lambda cf: cf(3), id="fast"),
    pytest.param(lambda cf: cf(x=3), id="keyword"),
])
def test_settrace_sees_the_users_lines(call):
    cf = dynamo.compile(body, backend="eager")
    for attempt in ("miss", "hit", "hit again"):
        tracer, result = traced(lambda: call(cf))
        assert result == 5
        assert tracer.lines("body") == BODY_LINES, attempt
        body_events = [(e, line) for e, fn, line in tracer.events if fn == "body"]
        assert body_events[0] == ("call", body.__code__.co_firstlineno)
        assert body_events[-1] == ("return", BODY_LINES[-1])
    # with a trace function installed the original code runs: the cache is never consulted
    assert _C.cache_entries(body.__code__) == []
    assert_hook_off()


def test_settrace_through_frames_started_inside_a_compiled_function():
    cf = dynamo.compile(calls_body, backend="eager")
    for _ in range(3):
        tracer, result = traced(lambda: cf(3))
        assert result == 5
        assert tracer.lines("calls_body") == [calls_body.__code__.co_firstlineno + 1]
        assert tracer.lines("body") == BODY_LINES


def test_settrace_installed_inside_a_compiled_function():
    tracer = Tracer()

    @dynamo.compile(backend="eager")
    def outer(x):
        old = sys.gettrace()
        sys.settrace(tracer)
        try:
            return body(x)
        finally:
            sys.settrace(old)

    assert outer(3) == 5
    assert outer(3) == 5
    assert tracer.lines("body") == BODY_LINES * 2


def test_exception_from_a_trace_function_inside_compiled_code():
    # a trace function that raises inside a compiled frame: the error reaches the caller
    def exploding(frame, event, arg):
        if event == "line" and frame.f_code.co_name == "body":
            raise RuntimeError("from the tracer")
        return exploding

    cf = dynamo.compile(body, backend="eager")
    cf(1)
    old = sys.gettrace()
    sys.settrace(exploding)
    try:
        with pytest.raises(RuntimeError, match="from the tracer"):
            cf(1)
    finally:
        sys.settrace(old)
    assert cf(1) == 3
    assert_hook_off()


def test_setprofile_sees_calls_and_returns():
    events = []

    def profiler(frame, event, arg):
        if frame.f_code.co_filename == __file__ and event in ("call", "return"):
            events.append((event, frame.f_code.co_name, arg if event == "return" else None))

    cf = dynamo.compile(calls_body, backend="eager")
    for _ in range(2):
        events.clear()
        old = sys.getprofile()
        sys.setprofile(profiler)
        try:
            assert cf(3) == 5
        finally:
            sys.setprofile(old)
        assert events == [("call", "calls_body", None), ("call", "body", None),
                          ("return", "body", 5), ("return", "calls_body", 5)]


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring is 3.12+")
def test_sys_monitoring_sees_the_users_lines():
    mon = sys.monitoring
    tool = mon.PROFILER_ID if mon.get_tool(mon.PROFILER_ID) is None else mon.OPTIMIZER_ID
    lines = []

    def on_line(code, line):
        if code.co_filename == __file__ and code.co_name == "body":
            lines.append(line)

    cf = dynamo.compile(body, backend="eager")
    mon.use_tool_id(tool, "dynamo-test")
    try:
        mon.register_callback(tool, mon.events.LINE, on_line)
        mon.set_events(tool, mon.events.LINE)
        for _ in range(3):
            assert cf(3) == 5
            assert cf(x=3) == 5
    finally:
        mon.set_events(tool, 0)
        mon.register_callback(tool, mon.events.LINE, None)
        mon.free_tool_id(tool)
    assert lines == BODY_LINES * 6
    assert_hook_off()


def test_coverage_sees_compiled_lines(tmp_path, monkeypatch):
    coverage = pytest.importorskip("coverage")
    source = tmp_path / "covered_by_coverage_mod.py"
    source.write_text(textwrap.dedent("""\
        import dynamo


        def branchy(x):
            if x > 0:
                return x * 2
            return -x


        def never_called():
            return 1


        compiled = dynamo.compile(branchy, backend="eager")
        assert compiled(1) == 2
        assert compiled(x=2) == 4
        assert compiled(-1) == 1
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    cov = coverage.Coverage(data_file=None, include=[str(source)])
    cov.start()
    try:
        import covered_by_coverage_mod  # noqa: F401
    finally:
        cov.stop()
        sys.modules.pop("covered_by_coverage_mod", None)
    _, statements, excluded, missing, _ = cov.analysis2(str(source))
    assert missing == [11]  # only never_called's body: every compiled line was seen
    assert_hook_off()
