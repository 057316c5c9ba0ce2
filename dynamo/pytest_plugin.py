"""A pytest plugin that runs every test body compiled (`pytest -p dynamo.pytest_plugin`), with
`--dynamo-backend=NAME`, and ends the run with a summary of what dynamo made of the suite.

Only the test call itself runs under `dynamo.enable()` (fixtures and collection run plain), so a
test fails compiled where it passes plain exactly when the compiled code behaves differently.
An internal error of the compiler fails the test that met it (dynamo.config.strict); with
`--dynamo-strict=off` such a frame runs uncompiled instead and the summary counts it.
The summary counts what dynamo records for every frame it saw: frames compiled, graphs, graph
breaks, frames that ran uncompiled, internal errors, and the most frequent reasons.

The rest of a test body after a graph break (a resume function) runs as Python at its first call and
is compiled from its second (dynamo.config.defer_resume_compiles; `--dynamo-resumes=first-call`
compiles it at once): a test body runs once, and compiling what follows each of its breaks was most of
a suite's compile time (NumPy's test_numeric: 2.8x its plain CPU time, 2.0x deferred; CPython's
test_enum: 6.2x, 3.0x). The summary counts those first calls.

Before any test module is imported, the compiler and its backend are loaded and every object alive
is moved to the collector's permanent generation (gc.freeze): they live as long as the run, and each
gc.collect() of a test (CPython's test_dict calls it 87 times) would walk them all again. No object
of a test exists yet, so none is kept from being collected; the run's end unfreezes them.

A graph of backend "tiered" moves to c in the call that finds it due, not in a thread beside the
tests: a run's outcome must not depend on when a compile thread gets the processor, and on CPython
3.11/3.12 a conversion through ast objects (the compile's, fx_ir/user_lines.py) may not interleave
with pytest's own (its assertion rewriting parses each module it imports): they share one depth count
per interpreter (python/cpython#106905). The compiler's warning filters are per thread already
(fx_ir/thread_warnings.py); before they were, a compile beside NumPy's test_nanfunctions dropped the
test's catch_warnings filter.
"""
from __future__ import annotations

import gc
from collections import Counter
from typing import Any

import pytest

from . import api, config as dynamo_config
from .exc import Category, InvalidBackend
from .explain import GRAPH_BREAK, UNCOMPILED, BreakReason

_REASONS_SHOWN = 5


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("dynamo", "run every test body compiled by dynamo")
    group.addoption("--dynamo-backend", default=None, metavar="NAME",
                    help="the backend test bodies are compiled for: numpy, tiered, eager, or any registered name "
                         "(default: dynamo.config.default_backend, DYNAMO_BACKEND)")
    group.addoption("--dynamo-strict", default="on", choices=("on", "off"),
                    help="on (default): an internal error of dynamo raises InternalCompilerError in the test; "
                         "off: the frame runs uncompiled and the summary counts it")
    group.addoption("--dynamo-resumes", default="second-call", choices=("second-call", "first-call"),
                    help="second-call (default): the rest of a frame after a graph break runs as Python at its "
                         "first call and is compiled from its second (dynamo.config.defer_resume_compiles); "
                         "first-call: compiled at once, as dynamo.compile does")


def pytest_configure(config: Any) -> None:
    backend = config.getoption("--dynamo-backend") or dynamo_config.default_backend
    try:
        callback = api.callback_for(backend, False, None)
    except InvalidBackend as error:
        raise pytest.UsageError(f"--dynamo-backend: {error}") from None
    plugin = _CompiledTests(backend, callback)
    plugin.saved_strict = dynamo_config.strict
    dynamo_config.strict = config.getoption("--dynamo-strict") == "on"
    plugin.saved_background = dynamo_config.tier_up_in_background
    dynamo_config.tier_up_in_background = False
    plugin.saved_defer = dynamo_config.defer_resume_compiles
    dynamo_config.defer_resume_compiles = config.getoption("--dynamo-resumes") == "second-call"
    config.pluginmanager.register(plugin, "dynamo-compiled-tests")
    _settle_compiler(backend)


def _settle_compiler(backend: str) -> None:
    """Load what compiling will load and freeze every object alive now (see the docstring)."""
    from .backends.registry import lookup_backend
    from .convert_frame import load_compiler

    load_compiler()
    lookup_backend(backend)  # a lazily registered backend is imported by its lookup
    gc.collect()  # garbage of the start-up is freed, not frozen
    gc.freeze()


def pytest_unconfigure(config: Any) -> None:
    plugin = config.pluginmanager.get_plugin("dynamo-compiled-tests")
    if plugin is not None:
        dynamo_config.strict = plugin.saved_strict
        dynamo_config.tier_up_in_background = plugin.saved_background
        dynamo_config.defer_resume_compiles = plugin.saved_defer
        gc.unfreeze()


class _CompiledTests:
    """Runs each test call under the callback and tallies what it compiled, test by test (a
    suite may call dynamo.reset(), which forgets the frames recorded so far)."""

    def __init__(self, backend: str, callback: Any) -> None:
        self.backend = backend
        self.callback = callback
        self.context = api._CallbackContext(callback)
        self.seen = 0  # frames of callback.compiled_frames already tallied
        self.counts: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.saved_strict = False  # dynamo.config.strict before the run, restored after it
        self.saved_background = True  # dynamo.config.tier_up_in_background, likewise
        self.saved_defer = False  # dynamo.config.defer_resume_compiles, likewise
        self.deferred_seen = 0  # callback.deferred_resumes already tallied

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: Any) -> Any:
        with self.context:
            yield
        self._tally()

    def _tally(self) -> None:
        frames = self.callback.compiled_frames
        if len(frames) < self.seen:  # dynamo.reset() during the test: all of them are new
            self.seen = 0
        deferred = self.callback.deferred_resumes
        if deferred < self.deferred_seen:  # likewise
            self.deferred_seen = 0
        self.counts["resume functions run once as Python"] += deferred - self.deferred_seen
        self.deferred_seen = deferred
        for code, compiled in frames[self.seen:]:
            self.counts["graphs"] += len(compiled.graphs)
            self.counts["graph breaks"] += len(compiled.breaks)
            for error in compiled.breaks:
                self.reasons[_reason_text(BreakReason.from_unsupported(error, code.co_qualname, False))] += 1
            if compiled.fallback_reason is None:
                self.counts["frames compiled"] += 1
                continue
            reason = BreakReason.from_unsupported(compiled.fallback_reason, code.co_qualname, True,
                                                  getattr(compiled, "python_until", None))
            self.counts["frames uncompiled" if reason.kind == UNCOMPILED else "parts run in Python"] += 1
            if reason.category == Category.INTERNAL_ERROR:
                self.counts["internal errors"] += 1
            self.reasons[_reason_text(reason)] += 1
        self.seen = len(frames)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        self._tally()
        write = terminalreporter.write_line
        terminalreporter.write_sep("=", f"dynamo ({self.backend} backend)")
        order = ("frames compiled", "graphs", "graph breaks", "parts run in Python", "frames uncompiled",
                 "internal errors", "resume functions run once as Python")
        write(", ".join(f"{name}: {self.counts[name]}" for name in order))
        if self.reasons:
            write(f"most frequent reasons (of {sum(self.reasons.values())}):")
            for text, count in self.reasons.most_common(_REASONS_SHOWN):
                write(f"  {count:6d}  {text}")


def _reason_text(reason: BreakReason) -> str:
    where = f" ({reason.filename}:{reason.lineno})" if reason.location is not None else ""
    kind = "" if reason.kind == GRAPH_BREAK else f"[{reason.kind}] "
    explanation = reason.explanation if len(reason.explanation) <= 120 else reason.explanation[:117] + "..."
    return f"{kind}{reason.category}: {explanation}{where}"
