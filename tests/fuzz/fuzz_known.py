"""Failure classes of issue #17 that another change owns: the fuzzer counts and names them
separately instead of failing, until their fix lands (then the entry is deleted)."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable

from fuzz_harness import Failure


@dataclass(frozen=True)
class KnownClass:
    name: str
    reason: str
    matches: Callable[[Failure], bool]


def _only_runtime_warnings_missing(failure: Failure) -> bool:
    """The compiled call's warnings are the plain call's in order, less some RuntimeWarnings."""
    compiled_text, _, plain_text = failure.detail.removesuffix(" (compiled != plain)").partition(" != ")
    try:
        compiled, plain = ast.literal_eval(compiled_text), ast.literal_eval(plain_text)
    except (SyntaxError, ValueError):
        return False
    rest = iter(plain)
    for warning in compiled:   # a subsequence of plain's; everything skipped over a RuntimeWarning
        for candidate in rest:
            if candidate == warning:
                break
            if candidate[0] != "RuntimeWarning":
                return False
        else:
            return False
    return all(candidate[0] == "RuntimeWarning" for candidate in rest)


KNOWN: list[KnownClass] = [
    KnownClass("no floating-point warnings from triton kernels (a limitation of the triton backend, reported)",
               "Triton kernels (and CuPy) keep no floating-point status flags, so a fused division by zero "
               "gives NumPy's values without NumPy's RuntimeWarning",
               lambda f: f.backend == "triton" and f.what == "warnings" and _only_runtime_warnings_missing(f)),
    KnownClass("warning location of a statement without a location (issue #17 class 10, partly fixed)",
               "generated code runs at the user's lines where its source names them (fx_ir.user_lines); a "
               "statement the backend writes without a location comment takes a neighbour's line",
               lambda f: f.what == "warning location"),
    KnownClass("layout of results (issue #17 class 11, owned by the semantics change)",
               "a result's strides, contiguity flags or .base (view or owner) differ from NumPy's",
               lambda f: f.what in ("return", "globals") and bool(re.search(
                   r": (strides|C-contiguous|F-contiguous|aliasing) ", f.detail))),
]


def known_class(failure: Failure) -> KnownClass | None:
    return next((k for k in KNOWN if k.matches(failure)), None)
