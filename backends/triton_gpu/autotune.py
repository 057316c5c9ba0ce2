"""Tile sizes and warps chosen per kernel on the GPU it runs on: a few candidates timed once, the winner kept.

A kernel big enough for its tiles to matter is written under each candidate TileConfig, compiled, and
timed on scratch copies of the buffers it writes (the user's arrays are written once, by the real
launch); the choice is remembered by kernel source, sizes and device, in memory and in a JSON file beside
the generated modules, so a second process times nothing.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
from collections.abc import Callable
from dataclasses import astuple, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..kernel_ir import Buffer, Kernel
from .codegen import KernelSource, KernelWriter, TileConfig

# a child of output_code (DYNAMO_LOGS=output_code shows it), which benchmarks can enable alone
log = logging.getLogger("dynamo.output_code.autotune")

# From benchmarks/gpu_tune.py sweeps on an H200: the defaults first (a tie keeps them), then the
# neighbours that won for some workload: smaller tiles with fewer warps for transcendental-heavy
# elementwise code, several rows per program for short rows, more warps for long ones.
CANDIDATES: dict[str, tuple[TileConfig, ...]] = {
    "elementwise": (TileConfig(max_tile=1024, num_warps=8), TileConfig(max_tile=512, num_warps=4),
                    TileConfig(max_tile=2048, num_warps=8), TileConfig(max_tile=4096, num_warps=16)),
    "reduction": (TileConfig(max_tile=4096, num_warps=8), TileConfig(max_tile=4096, num_warps=4),
                  TileConfig(max_tile=8192, num_warps=16), TileConfig(max_tile=16384, num_warps=16)),
}

# Seconds of one kernel launch under a candidate: timer(launch) calls launch() as often as it likes.
Timer = Callable[[Callable[[], None]], float]


def kind_of(kernel: Kernel) -> str:
    return "reduction" if kernel.reductions() else "elementwise"


def cuda_event_timer(launch: Callable[[], None]) -> float:
    """Median of five CUDA-event timings of a batch of launches (one warm-up launch first)."""
    import cupy
    launch()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    launch()
    end.record()
    end.synchronize()
    once = cupy.cuda.get_elapsed_time(start, end) / 1e3
    batch = max(1, min(50, int(2e-3 / max(once, 1e-7))))  # about 2 ms per sample
    samples = []
    for _ in range(5):
        start.record()
        for _ in range(batch):
            launch()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) / 1e3 / batch)
    return sorted(samples)[len(samples) // 2]


class Choices:
    """kernel key -> the TileConfig that won, backed by one JSON file (rewritten atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.loaded: dict[str, list[int]] | None = None

    def _table(self) -> dict[str, list[int]]:
        if self.loaded is None:
            try:
                self.loaded = json.loads(self.path.read_text())
                if not isinstance(self.loaded, dict):
                    self.loaded = {}
            except (OSError, ValueError):
                self.loaded = {}  # none yet, or a file another writer left half-written: time again
        return self.loaded

    def get(self, key: str) -> TileConfig | None:
        found = self._table().get(key)
        if isinstance(found, list) and len(found) == len(astuple(TileConfig())):
            return TileConfig(*found)
        return None

    def put(self, key: str, config: TileConfig) -> None:
        table = self._table()
        table[key] = list(astuple(config))
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(table, indent=0, sort_keys=True))
            os.replace(tmp, self.path)
        except OSError as exc:  # a read-only cache: the choice holds for this process only
            log.debug("[autotune] choices not saved: %s", exc)


class Autotuner:
    """`tune(kernel, ...)` -> (KernelSource, function) for one kernel of a program, timed at most once."""

    def __init__(self, choices: Choices, device_name: str, load: Callable[[list[KernelSource]], ModuleType],
                 timer: Timer = cuda_event_timer, min_elements: int = 1 << 20) -> None:
        self.choices = choices
        self.device_name = device_name  # the GPU's model and the compiler's version: choices differ by both
        self.load = load  # kernel sources -> their imported module
        self.timer = timer
        self.min_elements = min_elements  # smaller launches keep the defaults (their time is launch cost)
        self.timed = 0  # kernels timed (a remembered choice times nothing)

    def key(self, source: KernelSource, sizes: dict[str, int]) -> str:
        text = f"{self.device_name}\n{sorted(sizes.items())}\n{source.src}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def tune(self, kernel: Kernel, buffers: dict[str, Buffer], source: KernelSource, sizes: dict[str, int],
             run: Callable[[KernelSource, Any], None], scratch: Callable[[], Any]) -> tuple[KernelSource, Any]:
        """The best candidate for `kernel` (the default `source` where it wins or nothing is remembered).

        run(source, function) launches one candidate on the scratch buffers; scratch() makes them (called
        once, only when timing is needed)."""
        key = self.key(source, sizes)
        kind = kind_of(kernel)
        remembered = self.choices.get(key)
        candidates = self.sources(kernel, buffers, CANDIDATES[kind] if remembered is None else (remembered,))
        renamed = self.renamed(kernel.name, candidates)
        module = self.load(renamed)
        functions = [getattr(module, s.name) for s in renamed]
        if remembered is not None:
            return renamed[0], functions[0]
        self.timed += 1
        with scratch():
            times = [self.timer(functools.partial(run, s, f)) for s, f in zip(renamed, functions)]
        best = min(range(len(candidates)), key=lambda i: (times[i], i))
        log.debug("[autotune] %s (%s): %s -> %s", kernel.name, kind,
                  ", ".join(f"{c.max_tile}/{c.num_warps}w {t * 1e6:.1f}us" for (c, _), t in zip(candidates, times)),
                  f"{candidates[best][0].max_tile}/{candidates[best][0].num_warps}w")
        self.choices.put(key, candidates[best][0])
        return renamed[best], functions[best]

    @staticmethod
    def sources(kernel: Kernel, buffers: dict[str, Buffer],
                configs: tuple[TileConfig, ...]) -> list[tuple[TileConfig, KernelSource]]:
        """One source per candidate, dropping candidates that give another's tiles and warps."""
        seen: set[tuple[str, int]] = set()
        out = []
        for config in configs:
            try:
                source = KernelWriter(kernel, buffers, config).write()
            except NotImplementedError:
                continue
            if (source.src, source.num_warps) not in seen:
                seen.add((source.src, source.num_warps))
                out.append((config, source))
        return out

    @staticmethod
    def renamed(name: str, candidates: list[tuple[TileConfig, KernelSource]]) -> list[KernelSource]:
        """The candidates as functions of one module: kernel0_c0, kernel0_c1, ..."""
        return [replace(s, name=f"{name}_c{i}", src=s.src.replace(f"def {name}(", f"def {name}_c{i}(", 1))
                for i, (_, s) in enumerate(candidates)]


def elements(source: KernelSource, evaluate: Callable[[Any], int]) -> int:
    """Elements one launch covers: its programs times the elements of one program's tile."""
    return evaluate(source.grid) * math.prod(b for b in source.blocks if b)
