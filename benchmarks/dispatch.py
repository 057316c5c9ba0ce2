"""Per-call overhead of a compiled trivial function against the plain function.

Run: python3 benchmarks/dispatch.py   (sets up .venv/ on first use)
Prints nanoseconds per call and the added cost, measured side by side in one run. The `C call`
column is the plain function called through functools.partial: what any callable written in C
that calls the function costs (CPython enters its interpreter once more instead of running the
callee inline), the floor for a compiled function's call.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".ci"))
from bootstrap import ensure_venv  # noqa: E402


def trivial(x):
    return x


def add(x, y):
    return x + y


def scale(x, n):
    return x * n


def measure(calls: int = 200_000) -> list[dict]:
    import numpy as np

    import dynamo
    from harness import interleaved_medians

    x, y = np.ones((8, 4)), np.ones((8, 4))
    rows = []
    for label, fn, args, kwargs, dynamic in [
        ("f(x) -> x, positional", trivial, (1,), {}, None),
        ("f(x, y) -> x + y, positional", add, (1, 2), {}, None),
        ("f(x, y) -> x + y, keyword", add, (1,), {"y": 2}, None),
        # (8, 4) arrays. Static: struct_is compares the shape. Dynamic: struct_is checks each
        # symbol >= 2 (ssize_pattern); relations between symbols (Eq(s0, s2)) are `sizes`
        # instructions, also in C
        ("array x, static shape", trivial, (x,), {}, False),
        ("array x, dynamic (s0, s1)", trivial, (x,), {}, True),
        ("arrays x + y, static shapes", add, (x, y), {}, False),
        ("arrays x + y, dynamic + Eq guards", add, (x, y), {}, True),
        # an int argument: its value guarded (static), or a symbol >= 2 checked in C (dynamic)
        ("x * n, static int n", scale, (x, 3), {}, False),
        ("x * n, dynamic int n", scale, (x, 3), {}, True),
        # the default backend: its small graph runs inline in the transformed code (graph_inline)
        ("arrays x + y, numpy backend", add, (x, y), {}, False),
    ]:
        backend = "numpy" if "numpy backend" in label else "eager"
        compiled = dynamo.compile(fn, backend=backend, dynamic=dynamic)
        compiled(*args, **kwargs)  # compile before timing
        through_c = functools.partial(fn)
        times = interleaved_medians(
            {"plain": lambda: fn(*args, **kwargs), "C call": lambda: through_c(*args, **kwargs),
             "compiled": lambda: compiled(*args, **kwargs)}, calls
        )
        rows.append({"case": label, "plain_ns": times["plain"] * 1e9, "c_call_ns": times["C call"] * 1e9,
                     "compiled_ns": times["compiled"] * 1e9})
    return rows


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    rows = measure()
    print(f"{'case':34} {'plain ns':>9} {'C call ns':>10} {'compiled ns':>12} {'added ns':>9} {'ratio':>6}")
    for r in rows:
        added = r["compiled_ns"] - r["plain_ns"]
        print(f"{r['case']:34} {r['plain_ns']:9.0f} {r['c_call_ns']:10.0f} {r['compiled_ns']:12.0f} {added:9.0f} "
              f"{r['compiled_ns'] / r['plain_ns']:6.2f}")


if __name__ == "__main__":
    ensure_venv(("test",))
    main()
