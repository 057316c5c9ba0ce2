"""A pytest plugin for the corpus test: every backend name compiles through the numpy backend with
tiny blocks and two threads, so that each frontend test also checks blocked, threaded kernels."""
from dynamo.backends import registry
from dynamo.backends.numpy_cpu import Machine, NumpyBackend

TINY = Machine(cache_bytes=2048, cores=2, min_kernel_bytes=0, min_block_elements=1, thread_work=0)
_backend = NumpyBackend(TINY, strict=True)
for _name in ("numpy", "eager"):
    registry._BACKENDS[_name] = _backend
