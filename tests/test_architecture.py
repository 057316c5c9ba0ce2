"""The project's layering and house rules, checked on the source with ast: imports flow one way
(csrc and fx_ir know neither dynamo nor backends; backends know fx_ir, never the frontend), no file
passes 800 lines, every module opens with a docstring, and only dynamo/config.py reads the environment.

tests/fx_ir/ops/test_ops_registry.py adds the op registry's own stricter rules (docstring layout,
annotations). ARCHITECTURE.md describes the layers these tests hold in place.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# each source folder and the package name it installs as (setup.py's package_dir)
INSTALLED_AS = {"dynamo": "dynamo", "fx_ir": "dynamo.fx_ir", "backends": "dynamo.backends"}
# what each layer may import of the project, by installed name (the frontend, dynamo, may import all)
ALLOWED = {
    "dynamo.fx_ir": ("dynamo.fx_ir",),
    "dynamo.backends": ("dynamo.backends", "dynamo.fx_ir"),
}
MAX_LINES = 800
SKIPPED_FOLDERS = {".venv", "build", "dist", "__pycache__", ".git", ".hypothesis", ".pytest_cache"}
ENVIRONMENT_READER = ROOT / "dynamo" / "config.py"


def files(*suffixes: str) -> Iterator[Path]:
    """The project's own files with these suffixes (not virtualenvs, build output or caches)."""
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT).parts
        if path.suffix in suffixes and path.is_file() and not SKIPPED_FOLDERS.intersection(relative) \
                and not any(part.endswith(".egg-info") for part in relative):
            yield path


def library_modules() -> Iterator[tuple[Path, str]]:
    """(path, installed module name) of every module of dynamo/, fx_ir/ and backends/."""
    for folder, package in INSTALLED_AS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield path, ".".join([package, *parts])


def imported_modules(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """(line, absolute installed name) of every import in the file, lazy and TYPE_CHECKING ones too."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            yield node.lineno, base
            for alias in node.names:  # `from .. import shapes` imports the module dynamo.shapes
                yield node.lineno, f"{base}.{alias.name}"


def layer_of(module: str) -> str:
    for layer in ALLOWED:
        if module == layer or module.startswith(layer + "."):
            return layer
    return "dynamo"


def test_the_module_walk_sees_every_layer() -> None:
    modules = dict((name, path) for path, name in library_modules())
    assert {"dynamo.config", "dynamo.fx_ir.graph", "dynamo.backends.numpy_cpu.sizes",
            "dynamo.variables.builder"} <= modules.keys()
    imports = {name for _, name in imported_modules(modules["dynamo.backends.numpy_cpu.sizes"],
                                                       "dynamo.backends.numpy_cpu.sizes")}
    assert "dynamo.fx_ir.size_source" in imports  # `from ...fx_ir.size_source import ...` resolved


def test_imports_flow_one_way() -> None:
    wrong = []
    for path, module in library_modules():
        layer = layer_of(module)
        if layer not in ALLOWED:
            continue
        for line, name in imported_modules(path, module):
            if name.split(".")[0] in ("fx_ir", "backends"):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}: installed, that is dynamo.{name}")
            elif (name == "dynamo" or name.startswith("dynamo.")) and not name.startswith(ALLOWED[layer]):
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({layer}) imports {name}")
    assert not wrong, "imports against the layering (ARCHITECTURE.md):\n" + "\n".join(wrong)


def test_csrc_imports_no_python_module() -> None:
    # the C extension only knows frames, code objects, a callback and its cache: never numpy or dynamo
    for path in files(".c", ".h"):
        found = re.findall(r"PyImport_\w+", path.read_text())
        assert not found, f"{path.relative_to(ROOT)} imports Python modules: {found}"


def test_no_file_is_longer_than_800_lines() -> None:
    long = [f"{path.relative_to(ROOT)}: {n} lines" for path in files(".py", ".c", ".h")
            if (n := path.read_text().count("\n")) > MAX_LINES]
    assert not long, "split these files by concept:\n" + "\n".join(long)


def test_every_module_opens_with_a_docstring() -> None:
    missing, short = [], []
    library = {path for path, _ in library_modules()}
    for path in files(".py"):
        docstring = ast.get_docstring(ast.parse(path.read_text(), str(path)))
        if not docstring:
            missing.append(str(path.relative_to(ROOT)))
        elif path in library and len(docstring.strip().splitlines()) < 2:
            short.append(str(path.relative_to(ROOT)))
    assert not missing, f"modules without a docstring saying their job: {missing}"
    assert not short, f"library modules whose docstring has fewer than two lines: {short}"


_ENVIRONMENT_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_uses(tree: ast.AST) -> Iterator[int]:
    """Lines that touch the environment: os.environ / os.getenv (and friends), or those names
    imported from os."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _ENVIRONMENT_NAMES \
                and isinstance(node.value, ast.Name) and node.value.id in ("os", "posix", "nt"):
            yield node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "posix", "nt") \
                and any(alias.name in _ENVIRONMENT_NAMES for alias in node.names):
            yield node.lineno


def test_only_config_reads_the_environment() -> None:
    assert list(environment_uses(ast.parse(ENVIRONMENT_READER.read_text())))  # the check finds reads
    wrong = [f"{path.relative_to(ROOT)}:{line}" for path, _ in library_modules() if path != ENVIRONMENT_READER
             for line in environment_uses(ast.parse(path.read_text()))]
    assert not wrong, f"environment variables are read only in dynamo/config.py: {wrong}"


# the filter list is one for the whole process: the compiler (which runs beside the program, in a
# tiered compile's thread or in any thread that calls compiled code) changes it only through
# fx_ir/thread_warnings.py, except where a warning must be recorded in the program's own thread
FILTER_CHANGES_ALLOWED = {
    "fx_ir/thread_warnings.py",
    "dynamo/variables/fold_limits.py",  # records what a fold at trace time warns (the tracing thread)
    "backends/numpy_cpu/runtime.py",  # collects a blocked kernel's warnings while the program's call runs
}


def test_only_thread_warnings_changes_the_warnings_filters() -> None:
    changers = {"catch_warnings", "simplefilter", "filterwarnings", "resetwarnings"}
    wrong = [f"{path.relative_to(ROOT)}:{node.lineno}" for path, _ in library_modules()
             if str(path.relative_to(ROOT)) not in FILTER_CHANGES_ALLOWED
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr in changers]
    assert not wrong, f"change warnings filters through fx_ir.thread_warnings: {wrong}"
