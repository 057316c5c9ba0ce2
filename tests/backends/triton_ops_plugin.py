"""A pytest plugin for the triton registry corpus: every `check(target, *args)` call of the op-registry
tests (tests/fx_ir/ops) also runs that call as a graph through the triton backend (TRITON_INTERPRET=1),
behind an elementwise op on each array input so that the op is lowered inside a kernel, not handed over."""
from __future__ import annotations

import builtins
import copy
import os
import sys
import warnings
from pathlib import Path
from typing import Any

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fx_ir" / "ops"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops_harness  # noqa: E402
from triton_helpers import close  # noqa: E402

from dynamo.backends.triton_gpu import TritonBackend  # noqa: E402
from dynamo.fx_ir import Graph, GraphModule, map_aggregate  # noqa: E402
from dynamo.fx_ir.ops import Attribute, Method  # noqa: E402

# the interpreter makes every example slow: hypothesis must not call that too slow (the examples stay)
settings.register_profile("triton_corpus", suppress_health_check=list(HealthCheck))
settings.load_profile("triton_corpus")
_original_check = ops_harness.check
_backend = TritonBackend()
STATS: dict[str, Any] = {"checked": 0, "compiled": 0, "kernels": 0, "fallbacks": 0}


def graph_of_call(target: Any, args: tuple[Any, ...], kwargs: dict[str, Any], mutated: set[int]) -> tuple[GraphModule, list[Any]]:
    """One node calling `target`; array arguments become placeholders (through np.positive where that
    is exact and cheap); the graph returns the result and every input (to compare in-place writes)."""
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
            return placeholder
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
    effects = info.effects(*ops_harness.to_meta(args), **{k: ops_harness.to_meta(v) for k, v in kwargs.items()})
    if effects.nondeterministic:
        return result
    real_args = ops_harness._copy(args)
    real_kwargs = {k: ops_harness._copy(v) for k, v in kwargs.items()}
    mutated = {id(ops_harness._resolve(ref, real_args, real_kwargs)) for ref in effects.mutates}
    gm, inputs = graph_of_call(target, real_args, real_kwargs, mutated)
    if not inputs:
        return result
    from dynamo.fx_ir import ShapeProp
    ShapeProp(gm).propagate(*copy.deepcopy(inputs))
    compiled = _backend(gm, inputs)
    plain, mine = copy.deepcopy(inputs), copy.deepcopy(inputs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = gm.forward(*plain)
        got = compiled(*mine)
    problem = close(got, expected)
    assert problem is None, f"{target}: {problem}\n{compiled.program.describe()}\n{compiled.source}"
    STATS["compiled"] += 1
    STATS["kernels"] += compiled.kernel_count
    STATS["fallbacks"] += len(compiled.fallback_nodes)
    return result


ops_harness.check = check


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"triton backend: {STATS}")
