"""Generated code compiled at the user's lines: each statement takes the file and line of the
program line it computes (the `# File "...", line N` comment before it), so that a warning or an
error it raises points where plain Python's would, and warns once per line as Python does."""
from __future__ import annotations

import ast
import bisect
import re
import sys
import threading
import types
from collections import Counter
from typing import Any

_LOCATION = re.compile(r'^\s*# File "(?P<file>[^"]+)", line (?P<line>\d+)')


def compile_at_user_lines(src: str, generated_filename: str) -> types.CodeType:
    """compile(src, generated_filename, "exec"), but with the user's file and lines where the source
    names them (all in one file: a code object has one); statements with no comment of their own take
    the line where their target was computed, else the first line named. Unchanged without comments."""
    marks: dict[int, tuple[str, int]] = {}
    for number, text in enumerate(src.splitlines(), start=1):
        match = _LOCATION.match(text)
        if match:
            marks[number] = (match["file"], int(match["line"]))
    if not marks:
        return compile(src, generated_filename, "exec")
    filename = Counter(file for file, _ in marks.values()).most_common(1)[0][0]
    default = next(line for file, line in marks.values() if file == filename)
    with _AST_IN_USE:
        tree = ast.parse(src, generated_filename)
        _Relocator(marks, filename, default).relocate(tree.body)
        return compile(tree, filename, "exec")


# CPython 3.11 and 3.12 count the depth of a conversion between source, ast objects and code in one
# place per interpreter (python/cpython#106905): two conversions interleaving (a compile in backend
# tiered's thread and one in the program's, which a garbage collection running Python code can
# switch between) fail with "SystemError: AST constructor recursion depth mismatch" (seen under the
# pytest plugin on NumPy's test_linalg). Ours take turns.
_AST_IN_USE = threading.RLock()


class _Relocator:
    def __init__(self, marks: dict[int, tuple[str, int]], filename: str, default: int) -> None:
        ordered = sorted(marks.items())
        self.numbers = [number for number, _ in ordered]  # source lines of the comments, ascending
        # the user's line each comment gives (another file's comment: the default line)
        self.lines = [line if file == filename else default for _, (file, line) in ordered]
        self.default = default
        self.by_name: dict[str, int] = {}  # a name -> the user's line of the comment it was computed under

    def _marked_line(self, first: int, last: int) -> int | None:
        """The user's line of the last comment on lines first..last (the gap before a statement)."""
        index = bisect.bisect_right(self.numbers, last) - 1
        return self.lines[index] if index >= 0 and self.numbers[index] >= first else None

    def relocate(self, body: list[ast.stmt], start: int = 1) -> None:
        """A statement takes the comment just before it, else the one a statement before it in the
        same block took, else the line its target was computed at (the same name under a comment), else the line of
        the statement before it. Every node is moved once, by the innermost block that holds it: a
        block's statements are walked here, not again for each block around them (generated loop
        bodies nest, and the source of one graph can run to thousands of lines)."""
        current: int | None = None
        previous = self.default
        for statement in body:
            original, end = statement.lineno, statement.end_lineno or statement.lineno
            marked = self._marked_line(start, original)
            if marked is not None:
                current = marked
                for target in _stored_names(statement):
                    self.by_name.setdefault(target, marked)
            line = current if current is not None else next(
                (self.by_name[t] for t in _stored_names(statement) if t in self.by_name), previous)
            previous = line
            blocks = [[s for s in getattr(statement, field) if isinstance(s, ast.stmt)]
                      for field in ("body", "orelse", "finalbody", "handlers")
                      if isinstance(getattr(statement, field, None), list)]
            _move_outside(statement, line, {id(s) for block in blocks for s in block})
            for block in blocks:  # nested blocks: their own comments, from where the block starts
                self.relocate(block, original + 1)
            start = end + 1


def _stored_names(statement: ast.stmt) -> list[str]:
    """The names the statement assigns, its nested blocks included, in ast.walk's order."""
    return [t.id for t in ast.walk(statement) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)]


def _move_outside(statement: ast.stmt, line: int, relocated: set[int]) -> None:
    """Move the statement and the expressions in it to `line`, except inside the statements of
    `relocated` (its nested blocks: relocate moves those itself). Statements that no block
    relocates (those of except handlers) keep their lines; their expressions move."""
    _move(statement, line)
    pending = list(ast.iter_child_nodes(statement))
    while pending:
        node = pending.pop()
        if id(node) in relocated:
            continue
        if hasattr(node, "lineno") and not isinstance(node, ast.stmt):
            _move(node, line)
        pending.extend(ast.iter_child_nodes(node))


def _move(node: ast.AST, line: int) -> None:
    node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
    node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]


_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def graph_lines(graph_module: Any) -> tuple[dict[str, tuple[str, int]], dict[int, tuple[str, int]]]:
    """Each graph node's line in the program (file, line), by node name and by position, from the
    location the frontend recorded (node.meta["source_location"])."""
    by_name: dict[str, tuple[str, int]] = {}
    by_position: dict[int, tuple[str, int]] = {}
    for position, node in enumerate(graph_module.graph.nodes):
        location = node.meta.get("source_location")
        if location is None:
            continue
        filename, lineno = getattr(location, "filename", None), getattr(location, "lineno", None)
        if not isinstance(filename, str) or not isinstance(lineno, int):
            match = _FILE_LINE.search(str(location))
            if match is None:
                continue
            filename, lineno = match["file"], int(match["line"])
        by_name[node.name] = by_position[position] = (filename, lineno)
    return by_name, by_position


def exec_at_user_lines(src: str, generated_filename: str, namespace: dict[str, Any],
                       local: dict[str, Any] | None = None) -> None:
    """Runs generated source (compile_at_user_lines) in `namespace` (and `local`, as exec's locals),
    which takes the warning registry of the user's module: a warning a line showed once is not shown
    again when the original code and the compiled code take turns, or when two versions of the code
    run the same line."""
    code = compile_at_user_lines(src, generated_filename)
    module = _module_of_file(code.co_filename)
    if module is not None:
        namespace["__warningregistry__"] = vars(module).setdefault("__warningregistry__", {})
    exec(code, namespace, namespace if local is None else local)


_modules_by_file: dict[str, types.ModuleType] = {}
# files no module had, by the number of modules there were then: looked for again once it changes
_files_without_module: dict[str, int] = {}
_FILES_KEPT = 256


def _module_of_file(filename: str) -> types.ModuleType | None:
    module = _modules_by_file.get(filename)
    if module is not None and sys.modules.get(module.__name__) is module:
        return module
    modules = sys.modules
    if _files_without_module.get(filename) == len(modules):
        return None
    for candidate in list(modules.values()):
        if getattr(candidate, "__file__", None) == filename and isinstance(candidate, types.ModuleType):
            _modules_by_file[filename] = candidate
            _files_without_module.pop(filename, None)
            return candidate
    if len(_files_without_module) >= _FILES_KEPT:
        _files_without_module.clear()  # generated names (<numpy-backend-N>) are one per compile
    _files_without_module[filename] = len(modules)
    return None
