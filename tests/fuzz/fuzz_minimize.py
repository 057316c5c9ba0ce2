"""Shrinks a failing program: deletes statements, unwraps blocks and simplifies expressions while
the program still fails the same way (same compared field), until nothing more can go."""
from __future__ import annotations

import ast
import copy
import time
from typing import Any, Callable, Iterator

from fuzz_harness import Failure, Timeout, check_source

Path = list[tuple[str, int | None]]
COMPOUND = (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.FunctionDef)


def _walk(node: ast.AST, path: Path) -> Iterator[tuple[ast.AST, Path]]:
    yield node, path
    for name, value in ast.iter_fields(node):
        if isinstance(value, list):
            for k, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield from _walk(item, path + [(name, k)])
        elif isinstance(value, ast.AST):
            yield from _walk(value, path + [(name, None)])


def _get(tree: ast.AST, path: Path) -> Any:
    node: Any = tree
    for name, k in path:
        node = getattr(node, name) if k is None else getattr(node, name)[k]
    return node


def _simpler(expr: ast.expr) -> list[ast.expr]:
    """Smaller expressions that could stand where `expr` stands."""
    if isinstance(expr, ast.BinOp):
        return [expr.left, expr.right]
    if isinstance(expr, (ast.BoolOp,)):
        return list(expr.values)
    if isinstance(expr, ast.Compare):
        return [expr.left, *expr.comparators]
    if isinstance(expr, ast.UnaryOp):
        return [expr.operand]
    if isinstance(expr, ast.Call):
        out = [a for a in expr.args if not isinstance(a, ast.Starred)]
        if expr.keywords:
            out.append(ast.Call(expr.func, expr.args, []))
            out.extend(ast.Call(expr.func, expr.args, [k for k in expr.keywords if k is not kw]) for kw in expr.keywords)
        return out
    if isinstance(expr, ast.Subscript):
        return [expr.value]
    if isinstance(expr, (ast.Tuple, ast.List)) and len(expr.elts) > 1:
        return [*expr.elts, *(type(expr)([e for e in expr.elts if e is not drop], expr.ctx) for drop in expr.elts)]
    if isinstance(expr, ast.IfExp):
        return [expr.body, expr.orelse]
    if isinstance(expr, ast.Dict) and len(expr.keys) > 1:
        return [ast.Dict([k], [v]) for k, v in zip(expr.keys, expr.values)]
    return []


def candidates(source: str) -> Iterator[str]:
    """Every one-step simplification of `source`, biggest cuts first."""
    tree = ast.parse(source)
    edits: list[tuple[str, Path, Any]] = []
    for node, path in _walk(tree, []):
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                for k, stmt in enumerate(value):
                    edits.append(("delete", path + [(name, k)], None))
                    if isinstance(stmt, COMPOUND) and not isinstance(stmt, ast.FunctionDef):
                        edits.append(("splice", path + [(name, k)], "body"))
                        if getattr(stmt, "orelse", None):
                            edits.append(("splice", path + [(name, k)], "orelse"))
                        if isinstance(stmt, ast.Try) and stmt.finalbody:
                            edits.append(("drop_finally", path + [(name, k)], None))
    for node, path in _walk(tree, []):
        if isinstance(node, ast.expr) and path and not isinstance(node.ctx if hasattr(node, "ctx") else None, ast.Store):
            for k in range(len(_simpler(node))):
                edits.append(("replace", path, k))
    seen = {source}
    for kind, path, extra in edits:
        new = copy.deepcopy(tree)
        parent_path, (name, k) = path[:-1], path[-1]
        parent = _get(new, parent_path)
        if kind in ("delete", "splice", "drop_finally"):
            body = getattr(parent, name)
            stmt = body[k]
            if kind == "delete":
                replacement = []
            elif kind == "splice":
                replacement = list(getattr(stmt, extra))
            else:
                stmt.finalbody = []
                if not stmt.handlers:
                    replacement = list(stmt.body)
                else:
                    replacement = [stmt]
            body[k:k + 1] = replacement
            if not body:
                body.append(ast.Pass())
        else:
            node = _get(new, path)
            options = _simpler(node)
            if extra >= len(options):
                continue
            if k is None:
                setattr(parent, name, options[extra])
            else:
                getattr(parent, name)[k] = options[extra]
        try:
            text = ast.unparse(ast.fix_missing_locations(new)) + "\n"
            compile(text, "<candidate>", "exec")
        except (SyntaxError, ValueError, TypeError, AttributeError):
            continue
        if text not in seen:
            seen.add(text)
            yield text


def minimize(failure: Failure, arguments: Callable[[int], list[Any]], budget_s: float = 120.0) -> str:
    """The smallest program found within the budget that still fails like `failure`."""
    deadline = time.monotonic() + budget_s
    best = ast.unparse(ast.parse(failure.source)) + "\n"

    def still_fails(text: str) -> bool:
        try:
            found = check_source(text, arguments, failure.backend, failure.seed)
        except (Timeout, RecursionError):
            return False
        except Exception:  # noqa: BLE001 - a candidate that breaks the harness (e.g. no f) is no repro
            return False
        return found is not None and found.signature == failure.signature

    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for text in candidates(best):
            if time.monotonic() > deadline:
                break
            if len(text) < len(best) and still_fails(text):
                best, improved = text, True
                break
    return best
