"""Launching a compiled Triton kernel without the JIT's dispatch: the binary it made, reused per specialization.

Triton's `kernel[grid](...)` binds and specializes every argument, hashes a cache key and checks globals
on each call (tens of microseconds on the GPU's host for a graph of a few kernels). The first launch of a
specialization goes through it; later launches whose arguments specialize alike (pointer alignment,
integers equal to 1, divisible by 16, or wider than 32 bits: a superset of what Triton keys on) call the
binary's own launcher directly, with bare addresses for pointers (as Triton's launchers accept them) and
the launch hooks the JIT would pass. Any surprise from a Triton
release (an attribute missing, a launcher of other arguments) makes that kernel go through the JIT for good.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _int_class(v: int) -> tuple[bool, bool, int]:
    return v == 1, v % 16 == 0, 0 if -(1 << 31) <= v < (1 << 31) else 1 if -(1 << 63) <= v < (1 << 63) else 2


class DirectLauncher:
    """`launcher(programs, arrays, int_args)` for one @triton.jit function and its warps: `argument(a)`
    makes the typed pointer object the JIT specializes on, `address(a)` the bare address the binary takes."""

    def __init__(self, function: Any, num_warps: int, argument: Callable[[Any], Any], address: Callable[[Any], int],
                 runtime: tuple[Any, Any] | None = None) -> None:
        self.function = function
        self.num_warps = num_warps
        self.argument = argument
        self.address = address
        self.compiled: dict[Any, Any] = {}
        self.driver, self.knobs = runtime or _runtime()  # Triton's active driver and its knobs
        self.direct = self.driver is not None  # False after a surprise: every launch through the JIT

    def __call__(self, programs: int, arrays: list[Any], ints: list[Any]) -> None:
        if self.direct:
            addresses = [self.address(a) for a in arrays]
            key = (tuple(p % 16 == 0 for p in addresses), tuple(_int_class(int(v)) for v in ints))
            binary = self.compiled.get(key)
            if binary is not None:
                device = self.driver.get_current_device()
                stream = self.driver.get_current_stream(device)
                # the hooks the JIT passes (a profiler's), and the metadata they read only when one is set
                enter, leave = self.knobs.runtime.launch_enter_hook, self.knobs.runtime.launch_exit_hook
                metadata = (binary.launch_metadata((programs, 1, 1), stream, *addresses, *ints)
                            if _active(enter) else None)
                try:
                    binary.run(programs, 1, 1, stream, binary.function, binary.packed_metadata, metadata, enter,
                               leave, *addresses, *ints)
                    return
                except TypeError:  # a release whose launcher takes other arguments (raised before launching)
                    self.direct = False
            else:
                binary = self.function[(programs,)](*map(self.argument, arrays), *ints, num_warps=self.num_warps)
                if all(hasattr(binary, a) for a in ("run", "function", "packed_metadata", "launch_metadata")):
                    self.compiled[key] = binary
                else:
                    self.direct = False
                return
        self.function[(programs,)](*map(self.argument, arrays), *ints, num_warps=self.num_warps)


def _active(hook: Any) -> bool:
    """Whether a launch hook would do anything: None, or a chain of no calls (Triton's default), does not."""
    return hook is not None and getattr(hook, "calls", True) != []


def _runtime() -> tuple[Any, Any]:
    """Triton's active driver and knobs, or (None, None) for a release without them."""
    try:
        import triton
        from triton.runtime import driver
        return driver.active, triton.knobs
    except (ImportError, AttributeError):
        return None, None
