"""Choosing, per graph, between its C kernels and the numpy backend's blocked NumPy code: the first
calls alternate between the two (each call runs one, so results and warnings are the same) and time them.

Why: where NumPy steps (exp, tanh, float sums) split a graph, every C kernel between them reads and
writes full-size arrays, while the numpy backend runs the same NumPy kernels on cache-sized blocks;
which is faster depends on the graph (softmax: numpy; layer norm: C), so it is measured, not guessed.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

TRIALS = 2  # timed calls of each before choosing; the faster of each side's best wins


class FasterOf:
    """Calls `first` and `second` in turn for 2 * TRIALS calls, then only the one whose fastest call
    was faster. `chosen` is None while timing, then "c" or "numpy". `clock`: what a call's time is read
    from (the process's CPU time where a call runs long enough for its tick, and the load of other
    processes must not decide)."""

    def __init__(self, first: Callable[..., Any], second: Callable[..., Any], names: tuple[str, str],
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.candidates = (first, second)
        self.clock = clock
        self.names = names
        self.best = [float("inf"), float("inf")]
        self.calls = 0
        self.chosen: str | None = None
        self.notes: list[str] = []  # what explain shows under the graph
        self.run: Callable[..., Any] = self.timing

    def __call__(self, *args: Any) -> Any:
        return self.run(*args)

    def timing(self, *args: Any) -> Any:
        side = self.calls % 2
        self.calls += 1
        start = self.clock()
        result = self.candidates[side](*args)
        self.best[side] = min(self.best[side], self.clock() - start)
        if self.calls >= 2 * TRIALS:
            winner = 0 if self.best[0] <= self.best[1] else 1
            self.chosen = self.names[winner]
            self.run = self.candidates[winner]
        return result
