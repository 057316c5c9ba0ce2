"""Internal errors of the compiler (bugs of dynamo, injected here) are never hidden: under config.strict
they raise InternalCompilerError with the user's line; otherwise the frame runs uncompiled, explain()
says "internal error: please report" and the `dynamo` logger warns once. Deliberate fallbacks
(graph breaks, frames that cannot be captured, the cache limit) never count as internal errors."""
import logging
import sys

import numpy as np
import pytest

import dynamo
from dynamo import config
from dynamo.exc import Category, InternalCompilerError, Unsupported
from dynamo.explain import UNCOMPILED
from dynamo.output_graph import OutputGraph
from support import fallbacks, graph_breaks


@pytest.fixture
def broken_node_recording(monkeypatch):
    """Recording a graph node raises, as a bug of dynamo would: at the user's first NumPy call."""
    def broken(self, *args, **kwargs):
        raise KeyError("injected bug")

    monkeypatch.setattr(OutputGraph, "create_node", broken)


def scale(x):
    y = x + 1.0
    return np.sin(y) * 2.0  # the line where tracing meets the injected bug


def test_strict_raises_with_the_users_line_chained_from_the_bug(broken_node_recording):
    assert config.strict  # the suite runs strict (tests/conftest.py)
    with pytest.raises(InternalCompilerError) as info:
        dynamo.compile(scale)(np.arange(3.0))
    error = info.value
    assert isinstance(error.__cause__, KeyError) and error.error is error.__cause__
    assert error.location.filename == __file__
    assert error.location.lineno == scale.__code__.co_firstlineno + 1  # `y = x + 1.0` records the first node
    assert error.function == "scale"
    assert f'File "{__file__}", line {error.location.lineno}' in str(error)
    assert "KeyError: 'injected bug'" in str(error) and "please report" in str(error)


def test_fullgraph_raises_the_internal_error_even_when_not_strict(broken_node_recording):
    with config.patch(strict=False), pytest.raises(InternalCompilerError):
        dynamo.compile(scale, fullgraph=True)(np.arange(3.0))


def test_not_strict_runs_uncompiled_and_says_please_report(broken_node_recording, caplog):
    x = np.arange(3.0)
    with config.patch(strict=False), caplog.at_level(logging.WARNING, logger="dynamo"):
        compiled = dynamo.compile(scale)
        np.testing.assert_array_equal(compiled(x), scale(x))
        report = dynamo.explain(scale)(x)
        dynamo.reset()
        compiled = dynamo.compile(scale)
        compiled(x)  # the same bug at the same line again: no second warning
    assert report.graph_count == 0
    (reason,) = report.break_reasons
    assert reason.kind == UNCOMPILED and reason.category == Category.INTERNAL_ERROR
    assert reason.explanation == "please report: KeyError: 'injected bug'"
    assert (reason.filename, reason.lineno) == (__file__, scale.__code__.co_firstlineno + 1)
    assert "internal error: please report: KeyError: 'injected bug'" in str(report)
    assert f"at {__file__}:{reason.lineno} in scale" in str(report)
    warnings = [r for r in caplog.records if r.name == "dynamo" and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "internal error: please report: KeyError: 'injected bug'" in message
    assert f"{__file__}" in message and f"line {reason.lineno}" in message
    assert warnings[0].exc_info is not None and warnings[0].exc_info[0] is KeyError
    assert fallbacks(compiled) and "internal error" in fallbacks(compiled)[0]


def branches(x):
    if x.sum() > 0:  # a graph break
        return x * 2
    return x


def counts_references(x):
    return x * sys.getrefcount(x)  # runs uncompiled on purpose


def scaled_by(x, k):
    return x * k if k > 0.5 else x  # a float guarded by value: one version per k


def test_deliberate_fallbacks_are_not_internal_errors_under_strict(caplog):
    x = np.arange(3.0)
    with caplog.at_level(logging.WARNING, logger="dynamo"):
        np.testing.assert_array_equal(dynamo.compile(branches)(x), branches(x))
        compiled = dynamo.compile(counts_references)
        assert compiled(x).shape == (3,)
        assert "getrefcount" in fallbacks(compiled)[0]
        with config.patch(cache_size_limit=1):
            compiled = dynamo.compile(scaled_by)
            for k in (1.0, 2.0, 3.0):  # past the cache limit the original code runs
                np.testing.assert_array_equal(compiled(x, k), scaled_by(x, k))
    assert "cache_size_limit" in caplog.text and "internal error" not in caplog.text


def test_unsupported_raised_inside_the_tracer_stays_a_fallback(monkeypatch):
    def gives_up(self, *args, **kwargs):
        raise Unsupported(Category.UNSUPPORTED_CALL, "not captured", "")

    monkeypatch.setattr(OutputGraph, "create_node", gives_up)
    x = np.arange(3.0)
    compiled = dynamo.compile(scale)
    np.testing.assert_array_equal(compiled(x), scale(x))
    reasons = graph_breaks(compiled) + fallbacks(compiled)
    assert reasons and all("not captured" in r for r in reasons)


def test_a_bug_outside_the_tracer_is_an_internal_error_too(monkeypatch):
    import dynamo.convert_frame

    def broken(code):
        raise IndexError("injected bug before tracing")

    monkeypatch.setattr(dynamo.convert_frame, "check_observers", broken)
    with pytest.raises(InternalCompilerError, match="injected bug before tracing") as info:
        dynamo.compile(scale)(np.arange(3.0))
    assert info.value.location.lineno == scale.__code__.co_firstlineno
    with config.patch(strict=False):
        x = np.arange(3.0)
        compiled = dynamo.compile(scale)
        np.testing.assert_array_equal(compiled(x), scale(x))
        assert "internal error" in fallbacks(compiled)[0]
