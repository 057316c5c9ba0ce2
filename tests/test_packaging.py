"""What an install contains: every folder of Python modules under dynamo/, fx_ir/ and backends/ is
a regular package, so that setup.py's package list and `import` agree on every Python."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOTS = ("dynamo", "fx_ir", "backends")


def module_folders() -> list[Path]:
    folders = set()
    for root in PACKAGE_ROOTS:
        for path in (ROOT / root).rglob("*.py"):
            if "__pycache__" not in path.parts:
                folders.add(path.parent)
    return sorted(folders)


def test_every_folder_of_modules_is_a_package() -> None:
    folders = module_folders()
    assert ROOT / "dynamo" / "variables" in folders  # the walk sees nested folders
    missing = [str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()]
    assert not missing, f"folders of modules without __init__.py (a wheel would lack them): {missing}"

