"""Every knob of dynamo in one typed place, and the only reader of DYNAMO_* environment variables.

Change knobs with `dynamo.config.patch(name=value)` (a context manager and decorator) in tests.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

# Compiled versions kept per code object; past it the original code runs (one logged warning).
cache_size_limit: int = 8

# Path prefixes whose frames are never compiled, on top of the standard library,
# site-packages and dynamo itself (see dynamo/skipfiles.py).
skip_dirs: tuple[str, ...] = ()

# Path prefixes under site-packages or the standard library whose frames are compiled (and inlined)
# all the same: a NumPy-heavy library the program spends its time in.
compile_dirs: tuple[str, ...] = ()

# Compile code that Python generated at run time outside the user's modules (exec'd strings in a
# namespace of their own, namedtuple's __new__, libraries' dataclass methods). Off: a program run
# under enable() compiles what its author wrote, not what its imports generate (dynamo/skipfiles.py).
compile_generated_code: bool = False

# A resume function (the rest of a frame after a graph break, dynamo/resume.py) of code the user did not
# pass to dynamo.compile runs as Python at its first call and is compiled from its second: what follows a
# break in a frame that runs once (a test body) never repays its compile (issue #16). On under
# `pytest -p dynamo.pytest_plugin` (--dynamo-resumes) and with DYNAMO_DEFER_RESUMES=1; off, every resume
# function is compiled at its first call.
defer_resume_compiles: bool = os.environ.get("DYNAMO_DEFER_RESUMES", "") == "1"

# An internal error of the compiler (a bug of dynamo, not a graph break or any other deliberate
# fallback) raises InternalCompilerError with the user's line instead of running the frame uncompiled.
# On under dynamo's own test suite and `pytest -p dynamo.pytest_plugin` (--dynamo-strict); for
# everyone else the frame falls back and explain() and a warning say "internal error: please report".
strict: bool = os.environ.get("DYNAMO_STRICT", "") == "1"

# Assemble every code object with dynamo.assembler and with the bytecode package and raise where
# they differ (how dynamo/assembler.py is checked over whole test suites).
check_assembler: bool = os.environ.get("DYNAMO_CHECK_ASSEMBLER", "") == "1"

# A graph break keeps the state of the frame's first trace before the instruction that broke where
# that instruction changed nothing (dynamo/break_reuse.py); on, the frame is traced again to the break
# too and a difference between the two states raises (on under dynamo's test suite).
check_break_reuse: bool = os.environ.get("DYNAMO_CHECK_BREAK_REUSE", "") == "1"

# The triton backend (backends/triton_gpu), which reads these through backends/settings.py:
# where generated kernel modules are written ("": a per-user folder under the temp directory), and
# whether Triton runs its CPU interpreter (Triton's own TRITON_INTERPRET, for releases that have no
# triton.knobs to ask).
triton_cache_dir: str = os.environ.get("DYNAMO_TRITON_CACHE", "")
triton_interpret: bool = os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")
# On a GPU, each kernel of at least triton_autotune_min_elements is timed once under a few tile sizes
# and warp counts, and the fastest is remembered (in memory and beside the generated modules);
# DYNAMO_TRITON_AUTOTUNE=0 keeps the defaults. A TileConfig given to TritonBackend is never tuned.
triton_autotune: bool = os.environ.get("DYNAMO_TRITON_AUTOTUNE", "1") != "0"
triton_autotune_min_elements: int = 1 << 20

# Trace dynamic sizes in their small form first (fx_ir/small_size.py: sums of size symbols, no sympy)
# for backends that read it (numpy, tiered); a trace that leaves it is redone with sympy. Off: sympy
# from the first dynamic size (the same decisions and guards, only slower to start).
small_sizes: bool = os.environ.get("DYNAMO_SMALL_SIZES", "1") != "0"

# Comma-separated log artifacts to enable: graph, guards, bytecode, breaks, recompiles,
# output_code (see dynamo/logs.py).
logs: str = os.environ.get("DYNAMO_LOGS", "")


def _module() -> Any:
    return sys.modules[__name__]


@contextlib.contextmanager
def patch(**changes: Any) -> Iterator[None]:
    """Temporarily set config values: `with config.patch(cache_size_limit=2): ...`."""
    module = _module()
    unknown = [name for name in changes if name.startswith("_") or not hasattr(module, name)]
    if unknown:
        raise AttributeError(f"dynamo.config has no option(s) {', '.join(unknown)}")
    saved = {name: getattr(module, name) for name in changes}
    try:
        for name, value in changes.items():
            setattr(module, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)

# Iterations a single Python loop may unroll into a graph while tracing.
unroll_limit: int = 512

# Items a loop of the frame (nested loops counted together) may unroll while the graph does not grow;
# past it the loop runs in Python and the code after it is compiled again (dynamo/python_loops.py):
# unrolling a loop over a list of numbers or strings costs milliseconds of tracing and a guard per
# item to fold what Python runs in microseconds.
python_loop_limit: int = 64

# Recompiles of one code object allowed for new values alone (numbers whose value the trace
# needed, functions and classes made anew per call); at the next such miss the frame runs its
# original code from then on, as fast as uncompiled (explain says which guard kept failing).
recompiles_for_values: int = 1

# A `for` loop over a range of at most this many iterations is unrolled into the graph (a flat
# graph fuses across iterations: `for i in range(50): acc = acc * 0.5 + x * i` on 1M floats is one
# fused kernel unrolled, 2.4x plain, and 150 separate NumPy calls as a loop); a longer one, or one
# whose trip count is symbolic, is traced once into a loop node (dynamo/loop_capture.py) and
# unrolled only if its body cannot be captured.
loop_unroll_threshold: int = 64

# A backend that compiles loop nodes natively (c) unrolls a short loop that carries an array only
# while the unrolled graph stays this small (body operations times iterations): a leapfrog step of
# 19 operations over 50 steps unrolled to 950, 24,000 lines of C and 13 s of gcc, where the loop
# node compiles its body once and runs as fast.
loop_unroll_op_budget: int = 256

# Calls of a new compiled version that take turns with the original code, each timed (the compiled
# code first, its guards included); a version whose fastest call is slower than the original's
# fastest is dropped for the original (explain says so, with both times), and a code whose every
# version is dropped runs as written, no guards checked. A version over twice as fast as the
# original stops taking turns early. 16 (8 calls of each) measures well on functions of
# microseconds; 0: no turns, the compiled code runs from its first call (the test suite's default,
# DYNAMO_TIMED_TURNS=0, so that every test runs what was compiled).
timed_turns: int = int(os.environ.get("DYNAMO_TIMED_TURNS", "16"))

# Calls after which a dropped version takes its timed turns again, four times as many after each
# such re-measure (1000, 4000, 16000, ...): inputs that grow, new shapes under dynamic sizes, may
# make it pay; re-measuring costs at most a few slower calls in a thousand. 0: dropped for good.
timed_turns_recheck: int = 1000

# Items (of a tuple, list, str or bytes) or bits (of an int) that one Python value made while tracing
# may have, and items a container read from the frame may hold; past it the operation runs in
# Python (a tracer that folded `(a,) * 2**31` or `sum(range(10**12))` would never finish).
fold_size_limit: int = 100_000

# Items of a list, tuple or dict read from the frame that are traced one by one, each with its
# own guards (about a millisecond apiece to compile); past it the code from there runs in Python.
container_size_limit: int = 1024

# Bytecode instructions one frame (with everything it inlines) may interpret while tracing. Tracing
# runs at roughly 20-30k instructions a second: a loop nest that runs past the budget has cost that
# much compile time before it runs in Python (npbench's lu: 3.3 s at 100k, 0.7 s at 20k); what is
# worth unrolling (a recursive FFT of 1024 points: 13k instructions) fits well under it.
trace_instruction_budget: int = 20_000

# Depth of user-function calls inlined into one graph (recursion included).
inline_depth_limit: int = 24

# Dynamic shapes (dynamo/shapes): a dimension whose size changed between two compiles of the same
# code object is compiled as a sympy symbol from then on (compile(dynamic=None), the default).
automatic_dynamic_shapes: bool = True

# The on-disk cache (compiled C modules of backend="c"): DYNAMO_CACHE_DIR, else
# $XDG_CACHE_HOME/dynamo, else ~/.cache/dynamo. `python -m dynamo cache info|clear`.
cache_dir: str = os.environ.get("DYNAMO_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dynamo")

# backend="c": the C compiler (CC; unset: the one Python was built with, else `cc`).
c_compiler: str | None = os.environ.get("CC") or None

# backend="c": build for this machine's instruction set (-march=native). On by default: results do
# not depend on it (no fused multiply-add, no fast math) and the cache key holds the CPU's features;
# DYNAMO_C_NATIVE=0 builds portable code (a cache folder shared by different machines).
c_native: bool = os.environ.get("DYNAMO_C_NATIVE", "1") != "0"

# backend="c": OpenMP threads across a kernel's outermost axis when the compiler has -fopenmp and a
# kernel has at least c_parallel_work element-steps; c_threads=0: one per core, and one in all while
# the machine's load average is above its core count (OpenMP's barriers would wait on descheduled threads).
c_openmp: bool = os.environ.get("DYNAMO_C_OPENMP", "1") != "0"
# backend="c": CPU seconds a compile of one module may take, plus one per 10,000 characters of its source;
# past them it is built without the vectorizer (GCC 12 spent 11 s vectorizing one small kernel for AVX-512, 0.1 s without)
c_compile_cpu_seconds: float = float(os.environ.get("DYNAMO_C_COMPILE_CPU_SECONDS", "5") or 5)
c_threads: int = int(os.environ.get("DYNAMO_C_THREADS", "0") or 0)
c_parallel_work: int = 1 << 17

# backend="c": the arrays a graph's runner allocates (results, temporaries) come from NumPy's allocator
# hook with a cache: the memory of such an array that died (up to this many bytes in all) is reused by the
# next one of the same size, whose pages are then already mapped (fresh pages cost the OS a zeroing
# pass: a third of a memory-bound kernel's time). DYNAMO_C_MEMORY_CACHE_BYTES=0: NumPy's own allocator.
c_memory_cache_bytes: int = int(os.environ.get("DYNAMO_C_MEMORY_CACHE_BYTES", str(256 << 20)) or 0)

# backend="c": a graph whose C kernels NumPy steps split (exp, tanh, float sums run as NumPy code
# between them, on full arrays) times its first calls against the numpy backend's blocked code for the
# same graph and keeps the faster (both give NumPy's bits). DYNAMO_C_CHOOSE_FASTER=0: always the C kernels.
c_choose_faster: bool = os.environ.get("DYNAMO_C_CHOOSE_FASTER", "1") != "0"

# The backend of compile() and enable() when none is named (DYNAMO_BACKEND): "tiered" (every graph on
# "numpy" first, milliseconds to compile, then "c" for the graphs that run long enough, compiled in the
# background; numpy for good without a C compiler), "numpy", "c", "eager", "triton" or any registered name.
default_backend: str = os.environ.get("DYNAMO_BACKEND", "tiered")

# backend="tiered": seconds of run time a graph spends on the numpy backend before it is compiled
# for "c" in a background thread, about what a C compile with a cold cache costs (0.3-1 s of a
# core), so that a graph never costs more than twice its best (the compile paid only by graphs that
# ran as long on numpy); tier_up_cached_seconds for a graph compiled for "c" in this cache before
# (its module is on disk: a load, not a compile). 0: at its first call; negative: never.
# tier_up_in_background=False compiles in the call that finds the graph due (tests: deterministic).
tier_up_seconds: float = float(os.environ.get("DYNAMO_TIER_UP_SECONDS", "0.5"))
tier_up_cached_seconds: float = 0.01
tier_up_in_background: bool = os.environ.get("DYNAMO_TIER_UP_IN_BACKGROUND", "1") != "0"

# backend="tiered": what a graph's C compile costs, estimated from its ops (loop bodies' included):
# about tier_up_seconds_per_op of a core each (gcc -O3 here: 3 ms per op of a fused elementwise chain,
# 9 ms per op where every reduction is a kernel of its own). A graph moves only after it has run on
# numpy as long as its estimate (a big graph waits longer), and one of more than tier_up_max_ops ops
# stays on numpy (its compile would hold the background thread and its memory for tens of seconds).
tier_up_seconds_per_op: float = 0.005
tier_up_max_ops: int = int(os.environ.get("DYNAMO_TIER_UP_MAX_OPS", "1000"))

# glibc's malloc keeps freed memory for reuse once something compiles (dynamo._C.keep_freed_memory):
# blocks up to 32 MiB come from its heap, whose top is given back past 64 MiB, instead of NumPy's
# temporaries of 128 KiB to 32 MiB being unmapped or trimmed at each free and faulted in again
# (2-4x on chains of such arrays, compiled or not). It is the process's allocator: 0 leaves it alone.
keep_freed_memory: bool = os.environ.get("DYNAMO_KEEP_FREED_MEMORY", "1") != "0"
