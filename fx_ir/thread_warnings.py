"""Warnings ignored, or raised as errors, in the calling thread only: what the compiler needs while it
probes NumPy, without warnings.catch_warnings, which swaps the one filter list of the process.

A compile runs beside the program (backend "tiered" moves graphs to c in a thread of its own; a
program may call compiled functions from several threads). catch_warnings in one thread replaces the
filter list that every thread reads and puts back the list it saw on entry, dropping the filters
another thread set in the meantime: a test's `catch_warnings(); simplefilter("ignore")` around a
NumPy call lost its filter when a background compile's catch_warnings ended, and its warning became
pytest's error. Here each mode is one entry of the filter list whose message pattern is per thread:
a `threading.local` whose `match` matches every message in a thread inside the mode and none in
the others. The entry is put first while some thread is inside the mode and taken out when the last
leaves (a list that another thread's catch_warnings saved meanwhile keeps it: inert, it matches
nothing while no thread is inside the mode). The filter machinery reads the pattern's `match` and
calls it in C, so no Python code runs while another thread walks the list.
"""
from __future__ import annotations

import contextlib
import re
import threading
import warnings
from typing import Any, Callable, Iterator, cast

_EVERY_MESSAGE = re.compile("").match
_NO_MESSAGE = re.compile("(?!)").match


class _ThreadPattern(threading.local):
    """A filter's message pattern that matches in the threads that set `match` to _EVERY_MESSAGE."""

    match: Callable[[str], Any] = _NO_MESSAGE
    depth = 0

    def __repr__(self) -> str:
        return "<dynamo: messages of the compiling thread>"


class _Mode:
    def __init__(self, action: str) -> None:
        self.pattern = _ThreadPattern()
        self.entry: tuple[Any, ...] = (action, self.pattern, Warning, None, 0)
        self.threads_inside = 0
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        pattern = self.pattern
        with self.lock:
            if pattern.depth == 0:
                self.threads_inside += 1
            self._put_first()
        pattern.depth += 1
        previous, pattern.match = pattern.match, _EVERY_MESSAGE
        try:
            yield
        finally:
            pattern.match = previous
            pattern.depth -= 1
            with self.lock:
                if pattern.depth == 0:
                    self.threads_inside -= 1
                if self.threads_inside == 0:
                    self._remove()
                elif pattern.depth > 0:
                    self._put_first()  # an inner mode of this thread ended: this one applies again

    def _put_first(self) -> None:
        # no warnings._filters_mutated(): other threads' results are unchanged, and the bump would
        # clear every module's registry (a once-per-line warning would show again)
        filters = _filters()
        if not filters or filters[0] is not self.entry:
            self._remove()
            filters.insert(0, self.entry)

    def _remove(self) -> None:
        filters = _filters()
        while self.entry in filters:
            filters.remove(self.entry)


def _filters() -> list[Any]:
    return cast("list[Any]", warnings.filters)


def compiler_filter(entry: tuple[Any, ...]) -> bool:
    """Whether an entry of warnings.filters is one of these modes' (not the program's)."""
    return isinstance(entry[1], _ThreadPattern)


_IGNORED = _Mode("ignore")
_RAISED = _Mode("error")


def warnings_ignored() -> contextlib.AbstractContextManager[None]:
    """`with warnings_ignored():` warnings of this thread are not shown (catch_warnings() and
    simplefilter("ignore"), for this thread only)."""
    return _IGNORED.inside()


def warnings_raised() -> contextlib.AbstractContextManager[None]:
    """`with warnings_raised():` a warning of this thread raises it as an exception (catch_warnings()
    and simplefilter("error"), for this thread only)."""
    return _RAISED.inside()
