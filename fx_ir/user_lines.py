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
    the line where their target was computed, else the line before them in their block. Unchanged
    without comments."""
    lines = src.splitlines()
    marks: dict[int, tuple[str, int]] = {}
    for number, text in enumerate(lines, start=1):
        match = _LOCATION.match(text)
        if match:
            marks[number] = (match["file"], int(match["line"]))
    code = compile(src, generated_filename, "exec")
    if not marks:
        return code
    filename = Counter(file for file, _ in marks.values()).most_common(1)[0][0]
    default = next(line for file, line in marks.values() if file == filename)
    mapper = _LineMapper(lines, marks, filename, default)
    line_map = mapper.map()
    if not _one_line_each(code, mapper.headers):  # the map is per line: a statement over several lines
        return _compile_relocated_tree(src, generated_filename, marks, filename, default)
    return _relocated(code, line_map, filename, default)


# ---- the user's line of each source line ---------------------------------------------------------
# Generated code puts one statement (or several, joined by `;`) on each line; blocks are indented.
# The line map is computed from the text and applied to the code's line table, so no Python ast
# object is made: CPython 3.11 and 3.12 count the depth of conversions between ast objects and the
# compiler's own tree in one place per interpreter (python/cpython#106905), and a conversion of ours
# in backend tiered's thread interleaving with one of the program's (pytest's assertion rewriting, a
# garbage collection running Python code) fails in either with "SystemError: AST constructor
# recursion depth mismatch". compile() of source text makes none.
_CLAUSE = re.compile(r"(else|elif\b.*|except\b.*|finally)\s*:")  # a compound statement's later clauses
_TARGETS = re.compile(r"(?:for\s+)?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?:=(?!=)|[-+*/%@&|^]=|//=|\*\*=|>>=|<<=|\s+in\b)")


class _LineMapper:
    def __init__(self, lines: list[str], marks: dict[int, tuple[str, int]], filename: str, default: int) -> None:
        self.default = default
        # the user's line each comment gives (another file's comment: the default line)
        self.mark_lines = {number: line if file == filename else default for number, (file, line) in marks.items()}
        # (source line, indentation, text) of each line that holds code
        self.statements = []
        for number, text in enumerate(lines, start=1):
            stripped = text.lstrip()
            if stripped and not stripped.startswith("#"):
                self.statements.append((number, len(text) - len(stripped), stripped))
        self.by_name: dict[str, int] = {}  # a name -> the user's line of the comment it was computed under
        self.result: dict[int, int] = {}
        self.headers: set[int] = set()  # lines that open a block (def, for, if, else, ...)

    def map(self) -> dict[int, int]:
        self._block(0, len(self.statements), 0)
        return self.result

    def _block(self, first: int, stop: int, after: int) -> None:
        """Statements first..stop-1 of self.statements, one block: each takes the last comment between
        the statement before it in the block (its nested blocks included; for the first, the header
        at line `after`) and itself, else the one a statement before it in the block took, else the
        line its target was computed at, else the line of the statement before it."""
        current: int | None = None
        previous = self.default
        k = first
        while k < stop:
            number, indent, text = self.statements[k]
            end = k + 1  # past the statement's clauses and nested blocks
            while end < stop and (self.statements[end][1] > indent
                                  or (self.statements[end][1] == indent and _CLAUSE.match(self.statements[end][2]))):
                end += 1
            marked = self._marked_line(after, number)
            if marked is not None:
                current = marked
                for j in range(k, end):
                    for name in _targets(self.statements[j][2]):
                        self.by_name.setdefault(name, marked)
            line = current if current is not None else next(
                (self.by_name[t] for t in _targets(text) if t in self.by_name), previous)
            previous = line
            self.result[number] = line
            if end > k + 1:
                self.headers.update(self.statements[j][0] for j in range(k, end) if self.statements[j][1] == indent)
            j = k + 1
            while j < end:  # the clauses at this indentation, each with its nested block
                clause_end = j + 1 if self.statements[j][1] == indent else j
                while clause_end < end and self.statements[clause_end][1] > indent:
                    clause_end += 1
                if self.statements[j][1] == indent:  # else:, except E:: the statement's line
                    self.result[self.statements[j][0]] = line
                    self._block(j + 1, clause_end, self.statements[j][0])
                else:
                    self._block(j, clause_end, number)
                j = clause_end
            after = self.statements[end - 1][0]
            k = end

    def _marked_line(self, after: int, before: int) -> int | None:
        """The user's line of the last comment on the lines strictly between `after` and `before`."""
        for number in range(before - 1, after, -1):
            if number in self.mark_lines:
                return self.mark_lines[number]
        return None


def _targets(text: str) -> list[str]:
    match = _TARGETS.match(text)
    return [name.strip() for name in match[1].split(",")] if match else []


# ---- the line table -------------------------------------------------------------------------------
def _one_line_each(code: types.CodeType, headers: set[int]) -> bool:
    """Whether every instruction of the code (and of the code nested in it) lies on one line, but those
    of a compound statement's header (a def, a for loop), which span its body."""
    for start, end, _, _ in code.co_positions():
        if start and end is not None and end != start and start not in headers:
            return False
    return all(_one_line_each(c, headers) for c in code.co_consts if isinstance(c, types.CodeType))


def _relocated(code: types.CodeType, line_map: dict[int, int], filename: str, default: int) -> types.CodeType:
    """The code (and the code nested in it) in `filename`, each instruction at line_map's line for its
    source line, without columns: a new line table in CPython's format (Objects/locations.md)."""
    consts = tuple(_relocated(c, line_map, filename, default) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    first = line_map.get(code.co_firstlineno, default)
    table = bytearray()
    previous = first
    # line 0: a module's RESUME, before any line
    units = [start if not start else line_map.get(start, default) for start, _, _, _ in code.co_positions()]
    k = 0
    while k < len(units):
        line = units[k]
        length = 1
        while length < 8 and k + length < len(units) and units[k + length] == line:
            length += 1
        if line is None:
            table.append(0x80 | (15 << 3) | (length - 1))  # no location
        else:
            table.append(0x80 | (13 << 3) | (length - 1))  # a line and no column
            _write_signed(table, line - previous)
            previous = line
        k += length
    return code.replace(co_filename=filename, co_firstlineno=first, co_linetable=bytes(table), co_consts=consts)


def _write_signed(table: bytearray, value: int) -> None:
    value = (-value << 1) | 1 if value < 0 else value << 1
    while value >= 64:
        table.append(0x40 | (value & 63))  # six bits at a time, least significant first
        value >>= 6
    table.append(value)


# ---- through ast objects: statements over several lines (none of ours so far) ------------------------
def _compile_relocated_tree(src: str, generated_filename: str, marks: dict[int, tuple[str, int]],
                            filename: str, default: int) -> types.CodeType:
    with _AST_IN_USE:
        tree = ast.parse(src, generated_filename)
        _Relocator(marks, filename, default).relocate(tree.body)
        return compile(tree, filename, "exec")


# Our own conversions through ast objects take turns (see the line table's comment above).
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
