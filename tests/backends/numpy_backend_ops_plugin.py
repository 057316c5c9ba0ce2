"""A pytest plugin for the registry corpus test: every `check(target, *args)` call of the op-registry
tests (tests/fx_ir/ops) also runs that call as a graph through the numpy backend (tiny blocks, two
threads), with an elementwise op in front of each array input so that kernels have chains to fuse."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fx_ir" / "ops"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops_harness  # noqa: E402
from numpy_backend_helpers import TINY, check_graph  # noqa: E402


_original_check = ops_harness.check
STATS = {"checked": 0, "compiled": 0, "kernels": 0}


def check(target: Any, *args: Any, _expect: type[BaseException] | None = None, **kwargs: Any) -> Any:
    result = _original_check(target, *args, _expect=_expect, **kwargs)
    STATS["checked"] += 1
    if _expect is not None or isinstance(result, BaseException):
        return result
    made = ops_harness.call_as_graph(target, args, kwargs)
    if made is None:
        return result
    gm, inputs = made
    compiled = check_graph(gm, inputs, TINY)
    STATS["compiled"] += 1
    STATS["kernels"] += len(compiled.plan.kernels)
    return result


ops_harness.check = check


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"numpy backend: {STATS}")
