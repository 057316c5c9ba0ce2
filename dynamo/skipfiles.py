"""Which code objects are never compiled: the standard library, site-packages (numpy among
them), dynamo itself, whatever config.skip_dirs adds, and code generated at run time by them."""
from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
import types
import weakref
from functools import lru_cache
from typing import Any, Mapping

from . import config


@lru_cache(maxsize=None)
def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(os.path.abspath(d) + os.sep for d in dirs)


@lru_cache(maxsize=None)
def _dynamo_dirs() -> tuple[str, ...]:
    # fx_ir/ and backends/ install under dynamo/, but in a source checkout they are siblings.
    # Found, not imported: fx_ir imports numpy, which a program that compiles nothing never loads.
    specs = [importlib.util.find_spec(f"{__package__}.{name}") for name in ("fx_ir", "backends")]
    dirs = {os.path.dirname(os.path.abspath(spec.origin)) for spec in specs if spec is not None and spec.origin}
    dirs.add(os.path.dirname(os.path.abspath(__file__)))
    return tuple(d + os.sep for d in dirs)


def _prefixes(dirs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(os.path.join(os.path.abspath(d), "") for d in dirs)


def is_generated(code: types.CodeType) -> bool:
    """Code with no source file: exec'd or eval'd strings ("<string>"), namedtuple and dataclass
    methods, the REPL. Frozen modules ("<frozen ...>") are the standard library."""
    name = code.co_filename
    return name.startswith("<") and name.endswith(">") and not name.startswith("<frozen ")


@lru_cache(maxsize=4096)
def _file_is_skipped(filename: str, extra: tuple[str, ...], compiled: tuple[str, ...]) -> bool:
    if filename.startswith("<") and filename.endswith(">"):
        # generated code: skipped or not by whose it is (generated_code_skipped)
        return filename.startswith("<frozen ")
    path = os.path.abspath(filename)
    if path.startswith(_dynamo_dirs()):
        return True
    if path.startswith(_prefixes(compiled)):
        return False
    return path.startswith(_library_dirs() + _prefixes(extra))


def is_skipped(code: types.CodeType) -> bool:
    """Whether frames of this code object run as they are, never compiled or inlined, by the file
    it comes from: the standard library, site-packages (except config.compile_dirs), dynamo itself,
    config.skip_dirs."""
    return _file_is_skipped(code.co_filename, tuple(config.skip_dirs), tuple(config.compile_dirs))


# Code objects passed to dynamo.compile: compiled even when generated (a function made by exec).
_requested: weakref.WeakSet[types.CodeType] = weakref.WeakSet()


def request(code: types.CodeType) -> None:
    """`code` was passed to dynamo.compile by name: the user asked for it, generated or not."""
    _requested.add(code)


# Generated code of the user's namespace and resume functions called once so far (first_call_of_generated,
# first_call_of_resume)
_called_once: weakref.WeakSet[types.CodeType] = weakref.WeakSet()


def first_call_of_generated(code: types.CodeType) -> bool:
    """Generated code that the user did not ask for (not passed to dynamo.compile, no
    config.compile_generated_code), called for the first time: it runs as it is, and is compiled
    from its second call. Every exec makes a new code object, and what runs once (a dataclass's
    __create_fn__, made anew for each class a function body defines) never repays a compile."""
    if config.compile_generated_code or code in _requested or code in _called_once:
        return False
    _called_once.add(code)
    return True


def first_call_of_resume(code: types.CodeType, original: types.CodeType) -> bool:
    """A resume function made from `original`, called for the first time, with
    config.defer_resume_compiles: it runs as it is this once (its callees are still compiled) and is
    compiled from its second call, unless the user passed `original` to dynamo.compile. A test body
    runs once: compiling the rest of it after each graph break cost most of a suite's compile time
    (NumPy's test_numeric under the pytest plugin: 1,634 of 2,082 frames compiled were resume functions)."""
    if original in _requested or code in _called_once:
        return False
    _called_once.add(code)
    return True


def generated_code_skipped(code: types.CodeType, f_globals: Mapping[str, Any]) -> bool:
    """Whether generated code (is_generated) reached as a frame of its own runs as it is. It is
    compiled when the user asked for it (dynamo.compile, config.compile_generated_code) or when it
    runs in the globals of the user's own module (`__main__`, or a module from a file that is not
    skipped: a dataclass's __init__, exec(source, globals()) in the user's code). What libraries
    generate (namedtuple's __new__, which runs in a namespace of its own, a library's dataclasses,
    exec'd module bodies) is theirs, and runs as it is."""
    if config.compile_generated_code or code in _requested:
        return False
    return not _is_users_namespace(f_globals)


def _is_users_namespace(f_globals: Mapping[str, Any]) -> bool:
    name = f_globals.get("__name__")
    if name == "__main__":
        return True
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None or getattr(module, "__dict__", None) is not f_globals:
        return False
    filename = getattr(module, "__file__", None)
    return isinstance(filename, str) and not _file_is_skipped(filename, tuple(config.skip_dirs),
                                                              tuple(config.compile_dirs))
