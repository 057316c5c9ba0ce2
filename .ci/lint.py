"""Lint (ruff) and type check (mypy) of dynamo/, fx_ir/ and backends/, in the tests' virtualenv.

Usage: python3 .ci/lint.py [ruff|mypy]   (both when neither is named; extra arguments go to the tool)
Exit status 0 only when every tool run passed. Configuration: [tool.ruff] and [tool.mypy] in pyproject.toml.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".ci"))
from bootstrap import ensure_venv  # noqa: E402

CHECKED = ("dynamo", "fx_ir", "backends")
# setup.py's package_dir: an installed project imports fx_ir/ as dynamo.fx_ir and backends/ as
# dynamo.backends, and the code imports them by those names (`from ...fx_ir import Graph`)
INSTALLED_AS = {"fx_ir": "dynamo.fx_ir", "backends": "dynamo.backends"}


def run_ruff(extra: list[str]) -> int:
    return subprocess.call([sys.executable, "-m", "ruff", "check", *extra, *CHECKED])


def installed_name(module: str) -> str:
    top, _, rest = module.partition(".")
    return INSTALLED_AS[top] + ("." + rest if rest else "") if top in INSTALLED_AS else module


def run_mypy(extra: list[str]) -> int:
    """mypy names a module after its folders (fx_ir/graph.py is `fx_ir.graph`) and has no notion of
    setuptools' package_dir, so the modules found are renamed to their installed names before the
    build: imports then resolve as they do at run time, and messages keep the files' real paths."""
    from mypy import build
    from mypy.errors import CompileError
    from mypy.main import process_options
    from mypy.modulefinder import BuildSource

    sources, options = process_options(["--config-file", str(ROOT / "pyproject.toml"), *extra, *CHECKED])
    sources = [BuildSource(s.path, installed_name(s.module), s.text, s.base_dir) for s in sources]
    messages: list[str] = []

    def show(filename: str | None, new_messages: list[str], serious: bool) -> None:
        messages.extend(new_messages)
        for line in new_messages:
            print(line, file=sys.stderr if serious else sys.stdout)

    try:
        build.build(sources, options, flush_errors=show)
    except CompileError as error:  # a blocking error (syntax, duplicate module): already shown
        if not messages:
            print("\n".join(error.messages), file=sys.stderr)
        return 2
    errors = [m for m in messages if ": error:" in m]
    print(f"mypy: {len(errors)} errors in {len(sources)} modules" if errors else
          f"mypy: no issues in {len(sources)} modules", flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    ensure_venv(("test",))
    os.chdir(ROOT)  # the checked folders and mypy's cache are relative to the repository root
    args = sys.argv[1:]
    tools = {"ruff": run_ruff, "mypy": run_mypy}
    chosen = [a for a in args if a in tools] or list(tools)
    extra = [a for a in args if a not in tools]
    status = 0
    for name in chosen:
        print(f"=== {name} ===", flush=True)
        status |= tools[name](extra) != 0
    sys.exit(int(status))
