"""The settings backends read, without reading the environment or importing dynamo: the frontend
installs dynamo.config as their source when it is imported; used alone, backends see DEFAULTS."""
from __future__ import annotations

from typing import Any

DEFAULTS: dict[str, Any] = {
    "strict": False,  # a backend's internal error raises instead of falling back to a plainer path
    "triton_cache_dir": "",  # where generated Triton modules are written ("" : a per-user temp folder)
    "triton_interpret": False,  # TRITON_INTERPRET, for Triton releases without triton.knobs
    "triton_autotune": True,  # on a GPU, time a few tile sizes per large kernel once and keep the fastest
    "triton_autotune_min_elements": 1 << 20,  # the smallest launch (elements) worth timing
    "cache_dir": "",  # the on-disk cache of backend "c" ("": a per-user temp folder)
    "c_compiler": None,  # CC (None: sysconfig's CC, else cc)
    "c_native": True,  # -march=native
    "c_openmp": True,  # -fopenmp where it works
    "c_compile_cpu_seconds": 5,  # CPU time a C compile may take (plus 1 s per 10,000 characters of source)
    "c_threads": 0,  # OpenMP threads (0: one per core)
    "c_parallel_work": 1 << 17,  # element-steps from which a kernel runs on threads
    "c_memory_cache_bytes": 256 << 20,  # freed large arrays of C runners kept for reuse (0: NumPy's allocator)
    "c_choose_faster": True,  # a graph split by NumPy steps times its C kernels against the numpy backend
    "tier_up_seconds": 0.5,  # backend "tiered": run time on numpy after which a graph is compiled for "c"
    "tier_up_cached_seconds": 0.01,  # the same for a graph whose C module was built in this cache before
    "tier_up_in_background": True,  # the C compile runs in a background thread (False: in the due call)
    "tier_up_seconds_per_op": 0.005,  # a graph's C compile, estimated per op: it must have run that long first
    "tier_up_max_ops": 1000,  # a graph of more ops stays on numpy (its C compile would take tens of seconds)
}
_source: Any = None


def install(source: Any) -> None:
    """Read every setting from now on as an attribute of `source` (dynamo.config)."""
    global _source
    _source = source


def get(name: str) -> Any:
    """The current value of a setting (its source is read on each call, so config.patch applies)."""
    default = DEFAULTS[name]
    return default if _source is None else getattr(_source, name, default)
