"""Generated code compiled at the user's lines: each statement takes the file and line of the
program line it computes (the `# File "...", line N` comment before it), so that a warning or an
error it raises points where plain Python's would, and warns once per line as Python does."""
from __future__ import annotations

import ast
import re
import types
from collections import Counter

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
    tree = ast.parse(src, generated_filename)
    _Relocator(marks, filename, default).relocate(tree.body)
    return compile(tree, filename, "exec")


class _Relocator:
    def __init__(self, marks: dict[int, tuple[str, int]], filename: str, default: int) -> None:
        self.marks = sorted(marks.items())
        self.filename = filename
        self.default = default
        self.by_name: dict[str, int] = {}  # a name -> the user's line of the comment it was computed under

    def _marked_line(self, first: int, last: int) -> int | None:
        """The user's line of the last comment on lines first..last (the gap before a statement)."""
        found = None
        for number, (file, line) in self.marks:
            if number > last:
                break
            if number >= first:
                found = line if file == self.filename else self.default
        return found

    def relocate(self, body: list[ast.stmt], start: int = 1) -> None:
        """A statement takes the comment just before it, else the one a statement before it in the
        same block took, else the line its target was computed at (the same name under a comment), else the line of
        the statement before it."""
        current: int | None = None
        previous = self.default
        for statement in body:
            original, end = statement.lineno, statement.end_lineno or statement.lineno
            marked = self._marked_line(start, original)
            targets = [t.id for t in ast.walk(statement) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)]
            if marked is not None:
                current = marked
                for target in targets:
                    self.by_name.setdefault(target, marked)
            line = current if current is not None else next(
                (self.by_name[t] for t in targets if t in self.by_name), previous)
            previous = line
            inner = [getattr(statement, field) for field in ("body", "orelse", "finalbody", "handlers")
                     if isinstance(getattr(statement, field, None), list)]
            for node in ast.walk(statement):
                if hasattr(node, "lineno") and not isinstance(node, ast.stmt) or node is statement:
                    _move(node, line)
            for block in inner:  # nested blocks: their own comments, from where the block starts
                self.relocate([s for s in block if isinstance(s, ast.stmt)], original + 1)
            start = end + 1


def _move(node: ast.AST, line: int) -> None:
    node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
    node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
