"""A pytest plugin for the corpus test: every backend name compiles through the numpy backend with
tiny blocks and two threads, so that each frontend test also checks blocked, threaded kernels.

Tests marked `registered_backend` check what the registered backends themselves do, not results: a
small graph of the default backend runs inline (a blocked kernel never does, by design), eager's
graphs are logged by the frontend (the numpy backend logs its own source). Replacing the backends
makes those expectations wrong, not the blocked results, so they are skipped here."""
import pytest

from dynamo.backends import registry
from dynamo.backends.numpy_cpu import Machine, NumpyBackend

TINY = Machine(cache_bytes=2048, cores=2, min_kernel_bytes=0, min_block_elements=1, thread_work=0)
_backend = NumpyBackend(TINY, strict=True)
for _name in ("numpy", "eager"):
    registry._BACKENDS[_name] = _backend


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="checks the registered backends as registered; this corpus replaces them")
    for item in items:
        if "registered_backend" in item.keywords:
            item.add_marker(skip)
