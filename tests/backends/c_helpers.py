"""Helpers for the backend "c" tests: a recording backend, results compared bit for bit, and the
skip mark for machines without a C compiler."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from dynamo.backends import lookup_backend

needs_compiler = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                    reason="no C compiler")


class Recorder:
    """Backend "c", keeping every compiled graph it returns (to read what each graph ran)."""

    compiles_loops = True  # as backend "c": the frontend keeps short loops as loop nodes

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, inputs):
        self.graphs.append(lookup_backend("c")(gm, inputs))
        return self.graphs[-1]


def bits(x):
    """What must be equal between a compiled and a plain result: type, dtype, shape and every byte."""
    if isinstance(x, tuple):
        return tuple(bits(v) for v in x)
    x = np.asarray(x) if not isinstance(x, np.generic) else x
    return type(x).__name__, x.dtype, np.shape(x), x.tobytes()
