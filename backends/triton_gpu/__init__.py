"""The "triton" backend: a graph becomes fused Triton kernels, with NumPy code for what does not lower.

Stages: kernels (kernel IR program) -> triton_src (one module) -> launcher; each logged to
`dynamo.output_code` at DEBUG. Runs on a CUDA GPU, or on the CPU under TRITON_INTERPRET=1.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...fx_ir import GraphModule, TensorMeta, fingerprint
from ...fx_ir.user_lines import graph_lines
from ..kernel_ir import Kernel, Program, lower_graph, specialize
from ..kernel_ir.result_layout import ResultLayouts
from ..kernel_ir.values import is_symbolic
from .. import settings
from ..registry import register_backend
from .autotune import Autotuner, Choices
from .codegen import KernelSource, KernelWriter, TileConfig
from .device import Device, TritonUnavailable, select_device
from .emitters import PRELUDE, SUPPORTED_OPS
from .launcher import DeviceMismatch, Launcher, cache_dir, load_module, module_source
from .library_calls import runs_as_numpy
from .split_reductions import split_long_reductions

log = logging.getLogger("dynamo.output_code")

__all__ = ["CompiledGraph", "DeviceMismatch", "TritonBackend", "TritonUnavailable", "triton_backend"]


class CompiledGraph:
    """What the backend returns: call it like the graph. `fallback_nodes` lists (node, reason) for
    every node that runs as NumPy code; `program`, `source` and `kernel_count` show what was made."""

    def __init__(self, graph_module: GraphModule, program: Program, source: str, launcher: Launcher, seconds: float,
                 respecialize: Callable[[list[Any]], CompiledGraph] | None = None) -> None:
        self.program = program
        self.source = source
        self.launcher = launcher
        self.compile_seconds = seconds
        self.respecialize = respecialize
        self.signature = [(b.shape, b.dtype) if (b := program.buffers.get(name)) is not None else None
                          for name in program.placeholders]
        self.symbolic = any(is_symbolic(n) for sig in self.signature if sig for n in sig[0])
        self._others: dict[Any, CompiledGraph] = {}
        self.layouts = ResultLayouts(graph_module)  # results in NumPy's layout (temporaries are C-ordered)

    def __call__(self, *args: Any) -> Any:
        if self.fits(args):
            return self.layouts(args, self.launcher(*args))
        # kernels are specialized to the shapes they were made for: other shapes get their own
        key = tuple((a.shape, a.dtype.str) if hasattr(a, "shape") else type(a) for a in args)
        other = self._others.get(key)
        if other is None:
            if self.respecialize is None:
                raise ValueError(f"compiled for inputs {self.signature}, called with {key}")
            other = self._others[key] = self.respecialize(list(args))
        return other(*args)

    def fits(self, args: tuple[Any, ...]) -> bool:
        for arg, sig in zip(args, self.signature):
            if sig is None:
                continue
            shape = getattr(arg, "shape", None)
            if not self.symbolic:
                if shape != sig[0] or getattr(arg, "dtype", None) != sig[1]:
                    return False
                continue
            if shape is None or len(shape) != len(sig[0]) or getattr(arg, "dtype", None) != sig[1]:
                return False
            # a symbolic size takes any value but 0 and 1 (those broadcast differently: specialized)
            if not all(n >= 2 if is_symbolic(s) else n == s for n, s in zip(shape, sig[0])):
                return False
        return True

    @property
    def fallback_nodes(self) -> list[tuple[str, str]]:
        return list(self.program.fallbacks)

    @property
    def notes(self) -> list[str]:
        """What explain() shows for this graph (the backend-notes protocol of backends/registry.py)."""
        return [f"{node} runs as NumPy code: {reason}" for node, reason in self.program.fallbacks]

    @property
    def kernel_count(self) -> int:
        return len(self.program.kernels)


# Defaults on a GPU, from benchmarks/gpu_tune.py on an H200 (float64 workloads, GB/s of compulsory
# traffic, copy 4236): elementwise kernels 4066-4104 at 1024-element tiles against 2470 at 4096 with 4
# warps (Black-Scholes 1007 against 249); row reductions (softmax, layer norm, k-means) within 5% of
# their best at 4096 with 8 warps, and up to 2x slower at 1024 with 16.
GPU_TILES = {"elementwise": TileConfig(max_tile=1024, num_warps=8),
             "reduction": TileConfig(max_tile=4096, num_warps=8)}


class TritonBackend:
    """`backend(graph_module, example_inputs) -> CompiledGraph`, cached by graph fingerprint.

    >>> compiled = TritonBackend()(gm, [x])     # compiled.source: the Triton module; .fallback_nodes
    """

    def __init__(self, config: TileConfig | None = None, tuner: Autotuner | None = None) -> None:
        self.config = config
        self.given_tuner = tuner  # tests: a tuner with its own timer, used on any device
        self._tuners: dict[str, Autotuner] = {}
        self._cache: dict[str, tuple[Program, dict[str, KernelSource], str] | None] = {}
        self.modules_made = 0  # Triton modules generated (a cache hit, or a size that fits, makes none)

    def __call__(self, graph_module: GraphModule, example_inputs: list[Any]) -> CompiledGraph:
        start = time.perf_counter()
        device = select_device()
        if has_symbolic_sizes(graph_module):
            compiled = self.compile_for_every_size(graph_module, example_inputs, device, start)
            if compiled is not None:
                return compiled
            graph_module = specialize(graph_module, example_inputs)  # kernels for these sizes only
        key = self.cache_key(graph_module, example_inputs, device)
        cached = self._cache.get(key)
        if cached is None:
            program = self.kernels(graph_module, example_inputs)
            kernels, src = self.triton_src(program, device)
            self._cache[key] = (program, kernels, src)
        else:
            program, kernels, src = cached
            log.debug("[kernels] cache hit %s", key[:16])
        launcher = self.launcher(program, kernels, src, device, graph_module)
        return CompiledGraph(graph_module, program, src, launcher, time.perf_counter() - start,
                             lambda args: self(specialize(graph_module, args), args))

    def compile_for_every_size(self, gm: GraphModule, example_inputs: list[Any], device: Device,
                               start: float) -> CompiledGraph | None:
        """Kernels that take the graph's symbolic sizes as arguments: one compile serves every size
        that passes the guards. None when some node needs its sizes known (it falls back, or the
        kernel cannot be written for a run-time size): then kernels are made per shape."""
        key = f"{fingerprint(gm)}:{symbolic_layout(gm)}:{device.name}:{self.tile_config(device)}"
        if key not in self._cache:
            try:
                program = split_long_reductions(lower_graph(gm, example_inputs, SUPPORTED_OPS,
                                                            runs_as_numpy=runs_as_numpy))
                if program.fallbacks:
                    raise NotImplementedError(", ".join(f"{n}: {why}" for n, why in program.fallbacks))
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("[kernels] for every size\n%s", program.describe())
                self._cache[key] = (program, *self.triton_src(program, device))
            except (NotImplementedError, TypeError, ValueError) as why:
                log.info("triton backend: kernels made per shape, not for every size: %s", why)
                self._cache[key] = None
        cached = self._cache[key]
        if cached is None:
            return None
        program, kernels, src = cached
        launcher = self.launcher(program, kernels, src, device, gm)
        return CompiledGraph(gm, program, src, launcher, time.perf_counter() - start,
                             lambda args: self(specialize(gm, args), args))

    def cache_key(self, gm: GraphModule, example_inputs: list[Any], device: Device) -> str:
        # NumPy and CuPy arrays alike: shape and dtype (kernels are specialized to them)
        layout = [(tuple(a.shape), np.dtype(a.dtype).str) if hasattr(a, "shape") and hasattr(a, "dtype")
                  else type(a).__name__ for a in example_inputs]
        return f"{fingerprint(gm)}:{layout}:{device.name}:{self.tile_config(device)}"

    def tile_config(self, device: Device, kernel: Kernel | None = None) -> TileConfig:
        """The given config, else the default for this device (and kernel: see GPU_TILES)."""
        if self.config is not None:
            return self.config
        # the interpreter runs each program as NumPy calls: few, big programs are fastest there
        if device.interpreted:
            return TileConfig(max_tile=1 << 16)
        if kernel is None:
            return TileConfig()
        return GPU_TILES["reduction" if kernel.reductions() else "elementwise"]

    # -- the three stages ---------------------------------------------------------------------------

    def kernels(self, gm: GraphModule, example_inputs: list[Any]) -> Program:
        program = split_long_reductions(lower_graph(gm, example_inputs, SUPPORTED_OPS, runs_as_numpy=runs_as_numpy))
        if log.isEnabledFor(logging.DEBUG):
            log.debug("[kernels]\n%s", program.describe())
        for node, reason in program.fallbacks:
            log.info("triton backend: %s runs as NumPy code: %s", node, reason)
        return program

    def triton_src(self, program: Program, device: Device) -> tuple[dict[str, KernelSource], str]:
        kernels = {k.name: KernelWriter(k, program.buffers, self.tile_config(device, k)).write()
                   for k in program.kernels}
        src = module_source(list(kernels.values()), device.interpreted, PRELUDE)
        self.modules_made += 1
        if log.isEnabledFor(logging.DEBUG):
            log.debug("[triton_src]\n%s", src)
        return kernels, src

    def launcher(self, program: Program, kernels: dict[str, KernelSource], src: str, device: Device,
                 graph_module: GraphModule | None = None) -> Launcher:
        module = load_module(src)
        lines = graph_lines(graph_module)[0] if graph_module is not None else None
        return Launcher(program, kernels, module, device, self.tuner(device), lines)

    def tuner(self, device: Device) -> Autotuner | None:
        """Who picks each large kernel's tiles on this device: none under the interpreter (its timings
        say nothing of a GPU), for a TileConfig the user gave, or with config.triton_autotune off."""
        if self.given_tuner is not None:
            return self.given_tuner
        if device.interpreted or self.config is not None or not settings.get("triton_autotune"):
            return None
        model = device.model()
        if model not in self._tuners:
            self._tuners[model] = Autotuner(
                Choices(cache_dir() / "autotune.json"), model,
                lambda sources: load_module(module_source(sources, device.interpreted, PRELUDE)),
                min_elements=settings.get("triton_autotune_min_elements"))
        return self._tuners[model]


def has_symbolic_sizes(gm: GraphModule) -> bool:
    return any(isinstance(m := n.meta.get("val"), TensorMeta) and not m.is_static
               for n in gm.graph.nodes if n.op == "placeholder")


def symbolic_layout(gm: GraphModule) -> list[Any]:
    return [(tuple(map(str, m.shape)), m.dtype.str) if isinstance(m := n.meta.get("val"), TensorMeta) else None
            for n in gm.graph.nodes if n.op == "placeholder"]


triton_backend: Callable[..., Any] = register_backend(TritonBackend(), name="triton")
