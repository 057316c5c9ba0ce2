"""A pytest plugin for the C registry corpus: every `check(target, *args)` call of the op-registry tests
(tests/fx_ir/ops) also runs that call as a graph through backend "c", compared bitwise with NumPy
(results, dtypes, arguments written in place) and with NumPy's floating-point warnings."""
from __future__ import annotations

import copy
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fx_ir" / "ops"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops_harness  # noqa: E402

from dynamo.backends import lookup_backend  # noqa: E402
from dynamo.fx_ir import ShapeProp  # noqa: E402

STATS: dict[str, Any] = {"checked": 0, "compiled": 0, "kernels": 0, "fallbacks": 0}


def bitwise(got: Any, expected: Any, path: str = "result") -> str | None:
    """None when `got` is `expected` bit for bit (type, dtype, shape, bytes); else what differs."""
    if type(got) is not type(expected):
        return f"{path}: {type(got).__name__} != {type(expected).__name__}"
    if isinstance(expected, (tuple, list)):
        if len(got) != len(expected):
            return f"{path}: length {len(got)} != {len(expected)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            problem = bitwise(g, e, f"{path}[{k}]")
            if problem:
                return problem
        return None
    if isinstance(expected, (np.ndarray, np.generic)):
        g, e = np.asarray(got), np.asarray(expected)
        if g.dtype != e.dtype or g.shape != e.shape:
            return f"{path}: {g.dtype}{list(g.shape)} != {e.dtype}{list(e.shape)}"
        if e.dtype.kind in "OV" or e.dtype.hasobject:
            return None if np.array_equal(g, e) else f"{path}: {g} != {e}"
        return None if np.ascontiguousarray(g).tobytes() == np.ascontiguousarray(e).tobytes() else f"{path}: {g!r} != {e!r}"
    if isinstance(expected, float) and expected != expected:
        return None if got != got else f"{path}: {got} != nan"
    return None if got == expected else f"{path}: {got!r} != {expected!r}"


def run(fn: Any, inputs: list[Any]) -> tuple[Any, list[tuple[type, str]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*inputs)
    return result, [(w.category, str(w.message)) for w in caught if issubclass(w.category, RuntimeWarning)]


def compile_and_compare(target: Any, gm: Any, inputs: list[Any]) -> None:
    ShapeProp(gm).propagate(*copy.deepcopy(inputs))
    compiled = lookup_backend("c")(gm, inputs)
    expected, expected_warnings = run(gm.forward, copy.deepcopy(inputs))
    got, got_warnings = run(compiled, copy.deepcopy(inputs))
    problem = bitwise(got, expected)
    source = getattr(compiled, "c_source", "")
    assert problem is None, f"{target}: {problem}\n{compiled.program.describe()}\n{source[-3000:]}"
    assert got_warnings == expected_warnings, f"{target}: warnings {got_warnings} != {expected_warnings}"
    STATS["kernels"] += compiled.kernel_count
    STATS["fallbacks"] += len(compiled.fallback_nodes)


ops_harness.also_check_through(compile_and_compare, STATS)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"c backend: {STATS}")
