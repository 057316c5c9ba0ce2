"""Shared tools for the tests of dynamo._C: recording callbacks, replacement code, refcount checks.

Imported by the test modules of tests/csrc/ (pytest puts this folder on sys.path).
"""
from __future__ import annotations

import gc
import sys
import threading
from typing import Any, Callable

from dynamo import _C
from dynamo.bytecode_compat import flatten_signature


def always() -> Any:
    """A guard program that always passes."""
    return _C.GuardProgram([], 1)


class Recorder:
    """A compile callback recording every frame it is asked about.

    `answer(view)` decides what to return (None: run the original this time); the thread that
    asked is recorded too. Views are kept, so call `clear()` before measuring refcounts.
    """

    def __init__(self, answer: Callable[[Any], Any] | None = None):
        self.answer = answer
        self.views: list[Any] = []
        self.threads: list[int] = []

    def __call__(self, view: Any) -> Any:
        self.views.append(view)
        self.threads.append(threading.get_ident())
        return None if self.answer is None else self.answer(view)

    @property
    def names(self) -> list[str]:
        return [view.f_code.co_name for view in self.views]

    @property
    def codes(self) -> list[Any]:
        return [view.f_code for view in self.views]

    def clear(self) -> None:
        self.views.clear()
        self.threads.clear()


class Counter:
    """A compile callback that counts its calls and answers like `answer` (no views kept)."""

    def __init__(self, answer: Callable[[Any], Any] | None = None):
        self.answer = answer
        self.calls = 0

    def __call__(self, view: Any) -> Any:
        self.calls += 1
        return None if self.answer is None else self.answer(view)


def identity(view: Any) -> Any:
    """The answer of dynamo's identity transformation, without guards: the flattened original."""
    return always(), flatten_signature(view.f_code)


def replacing(mapping: dict, guard: Callable[[], Any] = always) -> Callable[[Any], Any]:
    """An answer replacing the code of each key function by the flattened code of its value;
    frames of other code run as they are (None)."""
    codes = {original.__code__: replacement.__code__ for original, replacement in mapping.items()}

    def answer(view: Any) -> Any:
        replacement = codes.get(view.f_code)
        return None if replacement is None else (guard(), flatten_signature(replacement))

    return answer


def refcounts(*objects: Any) -> list[int]:
    """sys.getrefcount of each object after a collection. Call it outside `assert`: pytest's
    rewritten asserts keep their operands in hidden locals, one reference more."""
    gc.collect()
    return [sys.getrefcount(o) for o in objects]


def assert_hook_off() -> None:
    """Nothing of dynamo left behind on this thread: no callback, no hook."""
    assert _C.get_eval_frame() is None
    assert _C.hook_installed() is False
