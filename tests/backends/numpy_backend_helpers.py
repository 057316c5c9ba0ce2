"""Helpers for the numpy backend tests: hand-built graphs, machines that force blocks and threads,
and a checker that runs a graph as traced and as compiled on copies of the same inputs."""
from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np

from dynamo.backends.numpy_cpu import Machine, NumpyBackend
from dynamo.fx_ir import Graph, GraphModule

# Tiny caches and no size threshold: every fusable chain becomes a kernel of many small blocks.
TINY = Machine(cache_bytes=2048, cores=2, min_kernel_bytes=0, min_block_elements=1, thread_work=0)
SERIAL = Machine(cache_bytes=2048, cores=1, min_kernel_bytes=0, min_block_elements=1, thread_work=0)
# One block holding everything: what blocked execution must equal.
WHOLE = Machine(cache_bytes=1 << 40, cores=1, min_kernel_bytes=0, min_block_elements=1, thread_work=1e30)


def compile_module(gm: GraphModule, inputs: list[Any], machine: Machine = TINY) -> Any:
    return NumpyBackend(machine, strict=True)(gm, inputs)


def same(a: Any, b: Any) -> bool:
    """Equal type, dtype, shape and bits (NaNs equal); containers element by element."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True)) and bool(
                np.array_equal(np.signbit(a.real), np.signbit(b.real)))
        return bool(np.array_equal(a, b))
    if isinstance(a, np.generic):
        return same(np.asarray(a), np.asarray(b))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def check_graph(gm: GraphModule, inputs: list[Any], machine: Machine = TINY) -> Any:
    """Run gm as traced and through the backend on deep copies; results and inputs must agree exactly."""
    compiled = compile_module(gm, inputs, machine)
    plain_inputs, compiled_inputs = copy.deepcopy(inputs), copy.deepcopy(inputs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = gm.forward(*plain_inputs)
        result = compiled(*compiled_inputs)
    assert same(result, expected), f"results differ:\n{result}\n!=\n{expected}\n{compiled.source}"
    assert same(compiled_inputs, plain_inputs), f"inputs were changed differently\n{compiled.source}"
    if isinstance(expected, tuple):
        for r, e in zip(result, expected):
            if isinstance(e, np.ndarray):
                assert r.strides == e.strides, f"layout differs: {r.strides} != {e.strides}\n{compiled.source}"
    return compiled


def build(n_inputs: int, body: Any, names: str = "abcdefgh") -> GraphModule:
    """A graph of `n_inputs` placeholders; body(graph, *placeholders) returns the output node(s)."""
    g = Graph()
    placeholders = [g.placeholder(names[i]) for i in range(n_inputs)]
    out = body(g, *placeholders)
    g.output(out if isinstance(out, tuple) else (out,))
    return GraphModule({}, g)


def sample(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(1, 7, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-2, 2, size=shape) + 1j * rng.uniform(-2, 2, size=shape)).astype(dtype)
    values = rng.uniform(-2, 2, size=shape)
    values[rng.random(shape) < 0.05] = 0.0
    return values.astype(dtype)
