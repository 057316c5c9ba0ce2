"""Timing helpers shared by the benchmarks: interleaved repetitions and medians, so that plain
NumPy and compiled versions are measured side by side in one run on a noisy machine."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def per_call_seconds(fn: Callable[[], Any], calls: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per call of `fn()`, timed over `calls` back-to-back calls (`clock`: wall time by
    default; time.process_time counts this process's CPU time only, whatever else the machine runs)."""
    start = clock()
    for _ in range(calls):
        fn()
    return (clock() - start) / calls


def interleaved_samples(
    candidates: dict[str, Callable[[], Any]], calls: int, rounds: int = 15, warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Seconds per call of each candidate in every round after the warm-up, rounds interleaved (A B C A B C ...)."""
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for round_index in range(warmup + rounds):
        for name, fn in candidates.items():
            seconds = per_call_seconds(fn, calls, clock)
            if round_index >= warmup:
                samples[name].append(seconds)
    return samples


def interleaved_medians(
    candidates: dict[str, Callable[[], Any]], calls: int, rounds: int = 15, warmup: int = 2
) -> dict[str, float]:
    """Median seconds per call of each candidate, rounds interleaved (A B C A B C ...)."""
    samples = interleaved_samples(candidates, calls, rounds, warmup)
    return {name: statistics.median(values) for name, values in samples.items()}


def median_ratios(samples: dict[str, list[float]], baseline: str) -> dict[str, float]:
    """Median over rounds of baseline time / candidate time, each ratio taken within one round.

    Neighbouring samples share the machine's load at that moment, so per-round ratios are steadier
    than a ratio of medians on a shared, noisy machine.
    """
    base = samples[baseline]
    return {name: statistics.median(b / t for b, t in zip(base, values))
            for name, values in samples.items() if name != baseline}
