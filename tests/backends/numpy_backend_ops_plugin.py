"""A pytest plugin for the registry corpus test: every `check(target, *args)` call of the op-registry
tests (tests/fx_ir/ops) also runs that call as a graph through the numpy backend (tiny blocks, two
threads), with an elementwise op in front of each array input so that kernels have chains to fuse."""
from __future__ import annotations

import builtins
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fx_ir" / "ops"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops_harness  # noqa: E402
from numpy_backend_helpers import TINY, check_graph  # noqa: E402

from dynamo.fx_ir import Graph, GraphModule, map_aggregate  # noqa: E402
from dynamo.fx_ir.ops import Attribute, Method  # noqa: E402

_original_check = ops_harness.check
STATS = {"checked": 0, "compiled": 0, "kernels": 0}


def _graph_of(target: Any, args: tuple[Any, ...], kwargs: dict[str, Any], mutated: set[int]) -> tuple[GraphModule, list[Any]]:
    g = Graph()
    inputs: list[Any] = []

    def lift(value: Any) -> Any:
        if isinstance(value, ops_harness.Const):
            return value.value
        if not isinstance(value, np.ndarray):
            return value
        placeholder = g.placeholder(f"x{len(inputs)}")
        inputs.append(value)
        if id(value) in mutated or value.dtype.kind not in "iuf" or value.ndim == 0:
            return placeholder  # written in place, or no cheap exact identity op: use it as it is
        return g.call_function(np.positive, (placeholder,))

    call_args = map_aggregate(args, lift)
    call_kwargs = {k: map_aggregate(v, lift) for k, v in kwargs.items()}
    if isinstance(target, Method):
        node = g.call_method(target.name, call_args, call_kwargs)
    elif isinstance(target, Attribute):
        node = g.call_function(builtins.getattr, (call_args[0], target.name))
    else:
        node = g.call_function(target, call_args, call_kwargs)
    g.output((node, *[p for p in g.nodes if p.op == "placeholder"]))
    return GraphModule({}, g), inputs


def check(target: Any, *args: Any, _expect: type[BaseException] | None = None, **kwargs: Any) -> Any:
    result = _original_check(target, *args, _expect=_expect, **kwargs)
    STATS["checked"] += 1
    if _expect is not None or isinstance(result, BaseException):
        return result
    info = ops_harness._lookup(target)
    metas = ops_harness.to_meta(args)
    effects = info.effects(*metas, **{k: ops_harness.to_meta(v) for k, v in kwargs.items()})
    if effects.nondeterministic:
        return result  # np.empty_like and friends: nothing to compare
    real_args = ops_harness._copy(args)
    real_kwargs = {k: ops_harness._copy(v) for k, v in kwargs.items()}
    mutated = {id(ops_harness._resolve(ref, real_args, real_kwargs)) for ref in effects.mutates}
    gm, inputs = _graph_of(target, real_args, real_kwargs, mutated)
    if not inputs:
        return result
    compiled = check_graph(gm, inputs, TINY)
    STATS["compiled"] += 1
    STATS["kernels"] += len(compiled.plan.kernels)
    return result


ops_harness.check = check


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"numpy backend: {STATS}")
