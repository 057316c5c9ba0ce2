"""Test helpers: recording backends with exact graph/op counts, and a checker that runs a
function compiled and plain on copies of the same inputs and compares everything observable."""
from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

import dynamo


class CompileCounter:
    """A backend that records every graph it is given and runs it as traced."""

    def __init__(self) -> None:
        self.graphs: list[Any] = []

    def __call__(self, graph_module: Any, example_inputs: list) -> Callable[..., Any]:
        self.graphs.append(graph_module)
        return graph_module.forward

    @property
    def frame_count(self) -> int:
        return len(self.graphs)

    def op_counts(self) -> list[int]:
        return [sum(1 for n in g.graph.nodes if n.op not in ("placeholder", "output")) for g in self.graphs]

    @property
    def op_count(self) -> int:
        return sum(self.op_counts())


def compile_with_counter(fn: Callable[..., Any], **options: Any) -> tuple[Any, CompileCounter]:
    counter = CompileCounter()
    return dynamo.compile(fn, backend=counter, **options), counter


def fallbacks(compiled: Any) -> list[str]:
    """Reasons the frames of a compiled function ran uncompiled, as text (empty: none did)."""
    return [str(frame.fallback_reason) for _, frame in compiled._dynamo_callback.compiled_frames
            if frame.fallback_reason is not None]


def graph_breaks(compiled: Any) -> list[str]:
    """Reasons of the graph breaks taken while compiling (each frame's breaks, in order)."""
    return [str(reason) for _, frame in compiled._dynamo_callback.compiled_frames for reason in frame.breaks]


def same_value(a: Any, b: Any) -> bool:
    """Equal values of the same types, recursively; arrays equal in dtype, shape and contents."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fcmM")
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and (a == b or (a != a and b != b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def assert_matches_python(fn: Callable[..., Any], *args: Any, backend: Any = "eager",
                          expect_graph: bool | None = None, **kwargs: Any) -> Any:
    """Run fn compiled and plain on deep copies of the inputs; results, raised exceptions and
    the mutated inputs must agree. With expect_graph=True no frame may fall back."""
    compiled = dynamo.compile(fn, backend=backend)
    plain_args, plain_kwargs = copy.deepcopy((args, kwargs))
    compiled_args, compiled_kwargs = copy.deepcopy((args, kwargs))
    try:
        expected, expected_error = fn(*plain_args, **plain_kwargs), None
    except Exception as error:  # the compiled version must raise the same
        expected, expected_error = None, error
    try:
        result, error = compiled(*compiled_args, **compiled_kwargs), None
    except Exception as raised:
        result, error = None, raised
    if expected_error is not None:
        assert type(error) is type(expected_error), f"expected {expected_error!r}, got {error!r}"
    else:
        assert error is None, f"compiled version raised {error!r}"
        assert same_value(result, expected), f"compiled returned {result!r}, plain returned {expected!r}"
    assert same_value(compiled_args, plain_args), "arguments were mutated differently"
    assert same_value(compiled_kwargs, plain_kwargs), "keyword arguments were mutated differently"
    if expect_graph:
        assert fallbacks(compiled) == [], f"fell back: {fallbacks(compiled)}"
    return result
