"""Which code objects are never compiled: the standard library, site-packages (numpy among
them), dynamo itself, and whatever config.skip_dirs adds."""
from __future__ import annotations

import os
import sysconfig
import types
from functools import lru_cache

from . import config

@lru_cache(maxsize=None)
def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(os.path.abspath(d) + os.sep for d in dirs)


@lru_cache(maxsize=None)
def _dynamo_dirs() -> tuple[str, ...]:
    # fx_ir/ and backends/ install under dynamo/, but in a source checkout they are siblings.
    from . import fx_ir, backends  # noqa: F401  (imported lazily: they may import numpy)

    dirs = {os.path.dirname(os.path.abspath(m.__file__)) for m in (fx_ir, backends)}
    dirs.add(os.path.dirname(os.path.abspath(__file__)))
    return tuple(d + os.sep for d in dirs)


@lru_cache(maxsize=4096)
def _file_is_skipped(filename: str, extra: tuple[str, ...]) -> bool:
    if filename.startswith("<") and filename.endswith(">"):
        # exec'd strings and generated code: compile them only if they are ordinary functions
        return filename.startswith("<frozen ")
    path = os.path.abspath(filename)
    return path.startswith(_library_dirs() + _dynamo_dirs() + tuple(os.path.abspath(d) for d in extra))


def is_skipped(code: types.CodeType) -> bool:
    """Whether frames of this code object run as they are, never compiled."""
    return _file_is_skipped(code.co_filename, tuple(config.skip_dirs))
