"""Failure classes of issue #17 that another change owns: the fuzzer counts and names them
separately instead of failing, until their fix lands (then the entry is deleted)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from fuzz_harness import Failure


@dataclass(frozen=True)
class KnownClass:
    name: str
    reason: str
    matches: Callable[[Failure], bool]


def _loop_over_mutated_array(failure: Failure) -> bool:
    """`for row in x:` where the loop body writes x (or what it iterates is a view written)."""
    for match in re.finditer(r"^(\s*)for (\w+) in (\w+):\n((?:\1    .*\n)+)", failure.source, re.M):
        body = match.group(4)
        if re.search(rf"\b{match.group(3)}\b\s*(\[.*\])?\s*[-+*/%&|^<>]*=(?!=)|out={match.group(3)}\b", body):
            return True
    return False


def _only_runtime_warnings_missing(failure: Failure) -> bool:
    compiled, _, plain = failure.detail.partition(" != ")
    return "RuntimeWarning" in plain and all(w in plain for w in re.findall(r"\('\w+', '[^']*'\)", compiled))


KNOWN: list[KnownClass] = [
    KnownClass("no floating-point warnings from triton kernels (a limitation of the triton backend, reported)",
               "Triton kernels (and CuPy) keep no floating-point status flags, so a fused division by zero "
               "gives NumPy's values without NumPy's RuntimeWarning",
               lambda f: f.backend == "triton" and f.what == "warnings" and _only_runtime_warnings_missing(f)),
    KnownClass("warning location (issue #17 class 10, owned by the semantics change)",
               "warnings from generated code point at the generated file's line, not the user's",
               lambda f: f.what == "warning location"),
    KnownClass("iterating an array the loop mutates (issue #17 class 2, owned by the semantics change)",
               "rows of an array written inside the loop come out with values from the wrong write",
               lambda f: f.what in ("return", "stdout", "globals", "arguments") and _loop_over_mutated_array(f)),
]


def known_class(failure: Failure) -> KnownClass | None:
    return next((k for k in KNOWN if k.matches(failure)), None)
