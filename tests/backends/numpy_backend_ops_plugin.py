"""A pytest plugin for the registry corpus test: every `check(target, *args)` call of the op-registry
tests (tests/fx_ir/ops) also runs that call as a graph through the numpy backend (tiny blocks, two
threads), with an elementwise op in front of each array input so that kernels have chains to fuse."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fx_ir" / "ops"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops_harness  # noqa: E402
from numpy_backend_helpers import TINY, check_graph  # noqa: E402


STATS = {"checked": 0, "compiled": 0, "kernels": 0}


def compile_and_compare(target: Any, gm: Any, inputs: list[Any]) -> None:
    STATS["kernels"] += len(check_graph(gm, inputs, TINY).plan.kernels)


ops_harness.also_check_through(compile_and_compare, STATS)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"numpy backend: {STATS}")
