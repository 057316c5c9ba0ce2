"""A pytest plugin for the tiered corpus test: every backend name compiles through backend "tiered" with
tier-up forced at each graph's first call (compiled for "c" in that call, then run on it), so that each
frontend test also checks the swap and the C code of its graphs against plain Python.

Tests marked `registered_backend` check what the registered backends themselves do (which graphs run
inline, what eager logs), not results: they are skipped here, as in numpy_backend_tiny_plugin."""
import pytest

import dynamo
from dynamo.backends import c_cpu, numpy_cpu, registry  # noqa: F401  (registered before "numpy" is replaced)
from dynamo.backends.tiered import tiered_backend

for _name in ("numpy", "eager"):
    registry._BACKENDS[_name] = tiered_backend
dynamo.config.tier_up_seconds = 0.0
dynamo.config.tier_up_max_ops = 1 << 30  # every graph, however big
dynamo.config.tier_up_in_background = False


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="checks the registered backends as registered; this corpus replaces them")
    for item in items:
        if "registered_backend" in item.keywords:
            item.add_marker(skip)
