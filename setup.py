"""Builds the C extension dynamo._C from csrc/ and maps fx_ir/ and backends/ under dynamo.

Installed, the project has one top-level import name: fx_ir/ becomes dynamo.fx_ir and
backends/ becomes dynamo.backends (see ARCHITECTURE.md).
"""
import os

from setuptools import Extension, setup

PACKAGE_ROOTS = {"dynamo": "dynamo", "dynamo.fx_ir": "fx_ir", "dynamo.backends": "backends"}


def find_packages_under(roots):
    """Every folder under the roots that holds a Python module, with or without an __init__.py:
    a folder left out would install a package that fails on import (tests/test_packaging.py
    checks that each such folder is a regular package)."""
    packages = []
    for name, folder in roots.items():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            if any(f.endswith(".py") for f in filenames):
                rel = os.path.relpath(dirpath, folder)
                packages.append(name if rel == "." else name + "." + rel.replace(os.sep, "."))
    return packages


setup(
    packages=find_packages_under(PACKAGE_ROOTS),
    package_dir=PACKAGE_ROOTS,
    ext_modules=[
        Extension(
            "dynamo._C",
            sources=sorted(
                os.path.join("csrc", f) for f in os.listdir("csrc") if f.endswith(".c")
            ),
            depends=[os.path.join("csrc", f) for f in os.listdir("csrc") if f.endswith(".h")],
            extra_compile_args=["-O2", "-Wall", "-Wno-unused-function"],
        )
    ],
)
