"""A loop node as one generated function: the Python `for` (or `while`) statement around the body's
NumPy code, so that an iteration costs no call (the body's forward rewritten with its return as the next carried values)."""
from __future__ import annotations

import linecache
import weakref
from collections.abc import Callable
from itertools import count
from typing import Any

from ...fx_ir.user_lines import exec_at_user_lines

_filenames = count()
_INDENT = "    "


def loop_function(body: Callable[..., Any], num_carried: int) -> Callable[..., Any] | None:
    """`loop(start, stop, step, *carried, *captured) -> tuple(carried)` running `body`'s code inline,
    or None when its source is not the straight `def forward(...)` this backend writes."""
    parsed = _forward_of(body, 1 + num_carried)
    if parsed is None:
        return None
    lines, first, end, statements, params, result = parsed
    index, carried = params[0], params[1:1 + num_carried]
    targets = "".join(f"{name}, " for name in carried)
    loop = [f"def forward_loop(___start, ___stop, ___step, {', '.join(params[1:])}):",
            f"{_INDENT}for {index} in range(___start, ___stop, ___step):",
            *(_INDENT + line if line.strip() else line for line in statements)]
    if carried:
        loop.append(f"{_INDENT * 2}{targets.rstrip()} = {result}")
    else:
        loop.append(f"{_INDENT * 2}pass")
    loop.append(f"{_INDENT}return ({targets.rstrip()})" if carried else f"{_INDENT}return ()")
    return _define(body, lines[:first] + loop + lines[end:])


def while_function(body: Callable[..., Any], num_carried: int) -> Callable[..., Any] | None:
    """`loop(test, *carried, *captured) -> tuple(carried)` for a WhileLoop: the `while` statement
    around `body`'s code, whose return is `(next test, *next carried)`; None as for loop_function."""
    parsed = _forward_of(body, num_carried)
    if parsed is None:
        return None
    lines, first, end, statements, params, result = parsed
    targets = "".join(f"{name}, " for name in ["___test", *params[:num_carried]])
    carried = "".join(f"{name}, " for name in params[:num_carried])
    loop = [f"def forward_loop(___test, {', '.join(params)}):",
            f"{_INDENT}while ___test:",
            *(_INDENT + line if line.strip() else line for line in statements),
            f"{_INDENT * 2}{targets.rstrip()} = {result}",
            f"{_INDENT}return ({carried.rstrip()})" if carried else f"{_INDENT}return ()"]
    return _define(body, lines[:first] + loop + lines[end:])


def _forward_of(body: Callable[..., Any], min_params: int) -> tuple[list[str], int, int, list[str], list[str], str] | None:
    """(source lines, first and end line of forward, its statements before the return, its
    parameters, the returned expression), or None when the source is not a straight forward."""
    src = getattr(body, "source", None)
    if not isinstance(src, str):
        return None
    lines = src.splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("def forward(")]
    if len(starts) != 1:
        return None
    first = starts[0]
    end = next((n for n in range(first + 1, len(lines)) if lines[n] and not lines[n].startswith(_INDENT)), len(lines))
    statements = lines[first + 1:end]
    while statements and not statements[-1].strip():
        statements.pop()
    if not statements or not statements[-1].startswith(_INDENT + "return "):
        return None
    if any(line.lstrip().startswith(("return", "yield")) for line in statements[:-1]):
        return None
    params = [p.strip() for p in lines[first][len("def forward("):].rstrip(":").rstrip(")").split(",") if p.strip()]
    if len(params) < min_params or any(not p.isidentifier() for p in params):
        return None
    return lines, first, end, statements[:-1], params, statements[-1][len(_INDENT + "return "):]


def _define(body: Callable[..., Any], source_lines: list[str]) -> Callable[..., Any]:
    new_src = "\n".join(source_lines) + "\n"
    filename = f"<numpy-backend-loop-{next(_filenames)}>"
    linecache.cache[filename] = (len(new_src), None, new_src.splitlines(keepends=True), filename)
    namespace = body.__globals__  # the body's kernels, loop runners and `self`
    local: dict[str, Any] = {}  # the source's other statements must not rebind the body's globals
    exec_at_user_lines(new_src, filename, namespace, local)
    function = local["forward_loop"]
    weakref.finalize(function, linecache.cache.pop, filename, None)
    function.source = new_src
    return function
