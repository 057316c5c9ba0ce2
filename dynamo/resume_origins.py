"""What each resume function and Python region was made from. The hook's callback asks for
every new frame, before anything is compiled, so this module loads nothing heavy (resume.py makes them)."""
from __future__ import annotations

import types
from dataclasses import dataclass


@dataclass(frozen=True)
class ResumeOrigin:
    """Where a resume function came from: its original code and how far it shifts indexes."""

    original: types.CodeType
    index_shift: int  # resume-code index = original index + index_shift
    inside_loop: bool  # it starts in the middle of a loop body
    target: int  # the original's instruction it jumps to (known here: no analysis of the new code)
    in_user_region: bool  # that instruction is inside a try/except or with block


@dataclass(frozen=True)
class PythonRegion:
    """A stretch of a frame that runs as plain Python (a loop that would break on every
    iteration, a try/except or with block) and where compiled code takes over again."""

    code: types.CodeType  # the frame's code with a hand-off to a resume function at exit_index
    entry_line: int
    exit_line: int
    source: types.CodeType  # the code it was made from
    in_loop: bool  # it starts in a loop (else in a try or with block)


# resume code -> origin, so that a resume of a resume is made from the original code
origins: dict[types.CodeType, ResumeOrigin] = {}
region_codes: dict[types.CodeType, PythonRegion] = {}  # region code -> region


def origin_of(code: types.CodeType) -> tuple[types.CodeType, int]:
    origin = origins.get(code)
    return (origin.original, origin.index_shift) if origin else (code, 0)


def source_of(code: types.CodeType) -> types.CodeType:
    """The user's code object a resume function or Python region was made from (itself otherwise)."""
    region = region_codes.get(code)
    return origin_of(region.source if region else code)[0]


def runs_in_python(code: types.CodeType) -> bool:
    """Resume functions that start inside a loop run as plain Python: compiling them would break
    again at the same place every iteration, and each break calls a new resume function, so a
    long loop would become a deep recursion. The loop stays a loop."""
    origin = origins.get(code)
    return origin is not None and origin.inside_loop


def starts_in_python(code: types.CodeType) -> bool:
    """Whether a resume function starts with code that runs in Python: inside a loop (see
    runs_in_python) or inside a try/except or with block."""
    origin = origins.get(code)
    return runs_in_python(code) or (origin is not None and origin.in_user_region)


def region_of(code: types.CodeType) -> PythonRegion | None:
    """The region a region code object runs (the hook runs those as they are, unhooked)."""
    return region_codes.get(code)
