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
from result_diff import first_difference  # noqa: E402

from dynamo.backends import lookup_backend  # noqa: E402
from dynamo.fx_ir import ShapeProp  # noqa: E402

STATS: dict[str, Any] = {"checked": 0, "compiled": 0, "kernels": 0, "fallbacks": 0}


def significant_bytes(a: np.ndarray) -> bytes:
    """The array's bytes without the padding of x87 long doubles (10 bytes of value in 16: the other six
    are whatever the memory held, in NumPy's own results too)."""
    flat = np.ascontiguousarray(a).reshape(-1)
    part = np.dtype(np.float64) if flat.dtype.kind not in "fc" else np.empty(0, flat.dtype).real.dtype
    if part == np.longdouble and np.finfo(np.longdouble).nmant == 63 and part.itemsize > 10:
        return flat.view(np.uint8).reshape(-1, part.itemsize)[:, :10].tobytes()
    return flat.tobytes()


def same_bits(g: np.ndarray, e: np.ndarray) -> bool:
    if e.dtype.kind in "OV" or e.dtype.hasobject:
        return bool(np.array_equal(g, e))
    return significant_bytes(g) == significant_bytes(e)


def bitwise(got: Any, expected: Any) -> str | None:
    """None when `got` is `expected` bit for bit (type, dtype, shape, bytes); else what differs."""
    return first_difference(got, expected, same_bits)


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
