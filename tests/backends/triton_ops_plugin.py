"""A pytest plugin for the triton registry corpus: every `check(target, *args)` call of the op-registry
tests (tests/fx_ir/ops) also runs that call as a graph through the triton backend (TRITON_INTERPRET=1),
behind an elementwise op on each array input so that the op is lowered inside a kernel, not handed over."""
from __future__ import annotations

import copy
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from triton_helpers import INTERPRET  # noqa: E402

os.environ["TRITON_INTERPRET"] = INTERPRET  # before triton is imported

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fx_ir" / "ops"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops_harness  # noqa: E402
from triton_helpers import close  # noqa: E402

from dynamo.backends.triton_gpu import TritonBackend  # noqa: E402
from dynamo.fx_ir import ShapeProp  # noqa: E402

# the interpreter makes every example slow: hypothesis must not call that too slow (the examples stay)
settings.register_profile("triton_corpus", suppress_health_check=list(HealthCheck))
settings.load_profile("triton_corpus")
_backend = TritonBackend()
STATS: dict[str, Any] = {"checked": 0, "compiled": 0, "kernels": 0, "fallbacks": 0}


def compile_and_compare(target: Any, gm: Any, inputs: list[Any]) -> None:
    ShapeProp(gm).propagate(*copy.deepcopy(inputs))
    compiled = _backend(gm, inputs)
    plain, mine = copy.deepcopy(inputs), copy.deepcopy(inputs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = gm.forward(*plain)
        got = compiled(*mine)
    problem = close(got, expected)
    assert problem is None, f"{target}: {problem}\n{compiled.program.describe()}\n{compiled.source}"
    STATS["kernels"] += compiled.kernel_count
    STATS["fallbacks"] += len(compiled.fallback_nodes)


ops_harness.also_check_through(compile_and_compare, STATS)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"triton backend: {STATS}")
