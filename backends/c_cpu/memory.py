"""Memory for the arrays a C-backend runner allocates: NumPy's own allocation hook (a data-memory
handler) with a cache of freed large blocks, so that a graph called again gets mapped pages back.

Why: a fresh large array is fresh pages, which the OS zeroes on first touch; for a memory-bound
kernel that zeroing cost a third of the call (a 10M float64 chain: 17 of 50 ms of CPU; softmax of
4096^2 float32: 8 of 33 ms). NumPy's default allocator returns such blocks to the OS when the
result dies, so every call pays again. The arrays stay plain NumPy arrays that own their data
(`base` None, `resize` works, NumPy frees them through the handler they were made with); only the
memory of one that died is kept, up to `config.c_memory_cache_bytes`, for the next allocation of
the same size.
"""
from __future__ import annotations

import ctypes
import logging
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import settings
from . import diskcache
from .toolchain import toolchain

log = logging.getLogger("dynamo.c_backend")

# blocks below this come from malloc's heap, whose pages stay mapped: nothing to gain
MIN_CACHED_BYTES = 1 << 20

# PyDataMem_SetHandler and PyDataMem_GetHandler in NumPy's C-API table (numpy/__multiarray_api.h,
# the same slots since NumPy 1.22: the table only grows)
_SET_HANDLER, _GET_HANDLER = 304, 305

SOURCE = r"""/* dynamo: a NumPy data-memory handler that keeps freed large blocks for reuse */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>

typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} dyn_allocator;   /* PyDataMemAllocator, version 1 */
typedef struct { char name[127]; uint8_t version; dyn_allocator allocator; } dyn_handler;

/* each block starts with a header holding its capacity (what NumPy's free passes is not trusted);
 * 64 bytes keep the data as aligned as malloc's */
#define DYN_HEADER 64
#define DYN_SLOTS 16
size_t dyn_cache_limit = 0;       /* bytes of freed blocks kept: set by the loader */
size_t dyn_cache_min = 1 << 20;   /* smaller blocks go back to malloc at once */
uint64_t dyn_cache_hits = 0, dyn_cache_misses = 0;
static pthread_mutex_t dyn_lock = PTHREAD_MUTEX_INITIALIZER;
static char *dyn_blocks[DYN_SLOTS];   /* oldest first */
static int dyn_count = 0;
static size_t dyn_cached = 0;

static size_t capacity_of(char *base) { size_t c; memcpy(&c, base, sizeof c); return c; }

static void *fresh(size_t size, int zeroed) {
    char *base = zeroed ? calloc(1, size + DYN_HEADER) : malloc(size + DYN_HEADER);
    if (base == NULL) return NULL;
    memcpy(base, &size, sizeof size);
#ifdef MADV_HUGEPAGE
    if (size >= ((size_t)4 << 20)) {   /* as NumPy's own allocator does for large arrays */
        const uintptr_t start = ((uintptr_t)base + 4095) & ~(uintptr_t)4095;
        const uintptr_t end = ((uintptr_t)base + DYN_HEADER + size) & ~(uintptr_t)4095;
        if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
#endif
    return base + DYN_HEADER;
}

static void *dyn_malloc(void *ctx, size_t size) {
    (void)ctx;
    if (size >= dyn_cache_min) {
        pthread_mutex_lock(&dyn_lock);
        for (int k = dyn_count - 1; k >= 0; k--) {   /* the newest first: its pages are the warmest */
            char *base = dyn_blocks[k];
            if (capacity_of(base) == size) {
                memmove(dyn_blocks + k, dyn_blocks + k + 1, (size_t)(dyn_count - k - 1) * sizeof(char *));
                dyn_count--;
                dyn_cached -= size;
                dyn_cache_hits++;
                pthread_mutex_unlock(&dyn_lock);
                return base + DYN_HEADER;
            }
        }
        dyn_cache_misses++;
        pthread_mutex_unlock(&dyn_lock);
    }
    return fresh(size, 0);
}

static void *dyn_calloc(void *ctx, size_t nelem, size_t elsize) {
    (void)ctx;
    if (elsize != 0 && nelem > (SIZE_MAX - DYN_HEADER) / elsize) return NULL;
    return fresh(nelem * elsize, 1);
}

static void dyn_free(void *ctx, void *ptr, size_t size) {
    (void)ctx; (void)size;
    if (ptr == NULL) return;
    char *base = (char *)ptr - DYN_HEADER;
    const size_t capacity = capacity_of(base);
    if (capacity < dyn_cache_min || capacity > dyn_cache_limit) { free(base); return; }
    char *evicted[DYN_SLOTS];
    int n_evicted = 0;
    pthread_mutex_lock(&dyn_lock);
    while (dyn_count > 0 && (dyn_count == DYN_SLOTS || dyn_cached + capacity > dyn_cache_limit)) {
        evicted[n_evicted++] = dyn_blocks[0];
        dyn_cached -= capacity_of(dyn_blocks[0]);
        memmove(dyn_blocks, dyn_blocks + 1, (size_t)(dyn_count - 1) * sizeof(char *));
        dyn_count--;
    }
    dyn_blocks[dyn_count++] = base;
    dyn_cached += capacity;
    pthread_mutex_unlock(&dyn_lock);
    for (int k = 0; k < n_evicted; k++) free(evicted[k]);
}

static void *dyn_realloc(void *ctx, void *ptr, size_t new_size) {
    if (ptr == NULL) return dyn_malloc(ctx, new_size);
    char *base = (char *)ptr - DYN_HEADER;
    const size_t capacity = capacity_of(base);
    if (new_size == capacity) return ptr;
    char *moved = fresh(new_size, 0);
    if (moved == NULL) return NULL;
    memcpy(moved, ptr, capacity < new_size ? capacity : new_size);
    dyn_free(ctx, ptr, capacity);
    return moved;
}

/* the cached blocks' bytes and count (for tests and explain) */
size_t dyn_cache_bytes(void) { return dyn_cached; }

/* drop every cached block */
void dyn_cache_clear(void) {
    pthread_mutex_lock(&dyn_lock);
    for (int k = 0; k < dyn_count; k++) free(dyn_blocks[k]);
    dyn_count = 0;
    dyn_cached = 0;
    pthread_mutex_unlock(&dyn_lock);
}

static void dyn_after_fork(void) { pthread_mutex_init(&dyn_lock, NULL); }
__attribute__((constructor)) static void dyn_install_fork_handler(void) {
    pthread_atfork(NULL, NULL, dyn_after_fork);
}

dyn_handler dyn_memory_handler = {
    "dynamo_c_cached", 1, {NULL, dyn_malloc, dyn_calloc, dyn_realloc, dyn_free}};
"""


class CachedMemory:
    """`empty(shape, dtype)`: np.empty through the caching handler (the handler set around the call
    only, in this thread's context: every other allocation keeps NumPy's own)."""

    def __init__(self, library: ctypes.CDLL, set_handler: Callable[[Any], Any], capsule: Any) -> None:
        self.library = library   # the handler lives in it: loaded for the life of the process
        self.set_handler = set_handler
        self.capsule = capsule
        self.limit = -1   # the library's dyn_cache_limit, as last set

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        if math.prod(shape) * dtype.itemsize < MIN_CACHED_BYTES:
            return np.empty(shape, dtype)
        previous = self.set_handler(self.capsule)
        try:
            return np.empty(shape, dtype)
        finally:
            self.set_handler(previous)

    def cached_bytes(self) -> int:
        return int(ctypes.CFUNCTYPE(ctypes.c_size_t)(("dyn_cache_bytes", self.library))())

    def hits(self) -> int:
        return int(ctypes.c_uint64.in_dll(self.library, "dyn_cache_hits").value)

    def clear(self) -> None:
        ctypes.CFUNCTYPE(None)(("dyn_cache_clear", self.library))()


_lock = threading.Lock()
_made: list[CachedMemory | None] = []


def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """np.empty(shape, dtype), through the caching handler where the array is large enough to gain
    (the handler is built at the first such array: programs of small arrays never compile it)."""
    if math.prod(shape) * dtype.itemsize < MIN_CACHED_BYTES:
        return np.empty(shape, dtype)
    memory = cached_memory()
    return np.empty(shape, dtype) if memory is None else memory.empty(shape, dtype)


def cached_memory() -> CachedMemory | None:
    """The process's caching handler, built (through the disk cache) on first use; None where it is
    turned off (`config.c_memory_cache_bytes` 0) or NumPy's handler API is not found."""
    limit = int(settings.get("c_memory_cache_bytes"))
    if limit <= 0:
        return None
    if not _made:
        with _lock:
            if not _made:
                _made.append(_build())
    memory = _made[0]
    if memory is not None and memory.limit != limit:
        ctypes.c_size_t.in_dll(memory.library, "dyn_cache_limit").value = memory.limit = limit
    return memory


def _build() -> CachedMemory | None:
    try:
        table = _numpy_api_table()
    except (AttributeError, ValueError, ImportError) as why:
        log.info("c backend: NumPy's memory-handler API not found (%s): results use NumPy's allocator", why)
        return None
    try:
        path, _ = diskcache.build(SOURCE, toolchain(diskcache.cache_root()), kind="c-runtime")
    except (diskcache.CompileError, OSError) as why:
        log.info("c backend: the caching allocator did not build (%s): results use NumPy's allocator", why)
        return None
    library = ctypes.CDLL(str(path))
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    handler = ctypes.addressof(ctypes.c_char.in_dll(library, "dyn_memory_handler"))
    capsule = new_capsule(handler, b"mem_handler", None)
    set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(table[_SET_HANDLER])
    get_handler = ctypes.PYFUNCTYPE(ctypes.py_object)(table[_GET_HANDLER])
    # the slots are what they should be: the current handler is NumPy's default, and ours names itself
    multiarray = _multiarray()
    if multiarray.get_handler_name() != "default_allocator" or not _is_capsule(get_handler()):
        log.info("c backend: NumPy's memory-handler slots do not look as expected: results use NumPy's allocator")
        return None
    previous = set_handler(capsule)
    try:
        probe = np.empty(1)
        named = multiarray.get_handler_name(probe)
    finally:
        set_handler(previous)
    if named != "dynamo_c_cached" or multiarray.get_handler_name() != "default_allocator":
        log.info("c backend: NumPy did not take the caching handler: results use NumPy's allocator")
        return None
    return CachedMemory(library, set_handler, capsule)


def _multiarray() -> Any:
    import importlib
    try:
        return importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:   # NumPy 1.x
        return importlib.import_module("numpy.core._multiarray_umath")


def _numpy_api_table() -> Any:
    capsule = _multiarray()._ARRAY_API
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
    address = get_pointer(capsule, None)
    if not address:
        raise ValueError("NumPy's C-API capsule holds no table")
    return (ctypes.c_void_p * (_GET_HANDLER + 1)).from_address(address)


def _is_capsule(value: Any) -> bool:
    return type(value).__name__ == "PyCapsule"
