"""Backend "c" bounds the CPU time of a C compile: a compiler that runs past its budget is stopped and the
module is built again without the vectorizer (GCC 12 spent 11 s of CPU on one small kernel, fuzz seed 1063055)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import dynamo
from dynamo import config

COMPILER = shutil.which("gcc") or shutil.which("cc")
pytestmark = pytest.mark.skipif(COMPILER is None or shutil.which("sh") is None, reason="no C compiler")


def chain(x, y):
    return np.sin(x) * y + 1.5


def slow_unless_unvectorized(tmp_path, log):
    """A compiler that spins on a kernel module unless it is built without the vectorizer."""
    script = tmp_path / "spinning-cc"
    script.write_text(f'#!/bin/sh\necho "$*" >> {log}\n'
                      'case "$*" in *-fno-tree-vectorize*) ;; *module.c*) while :; do :; done ;; esac\n'
                      f'exec {COMPILER} "$@"\n')
    script.chmod(0o755)
    return script


def test_a_compile_past_its_cpu_budget_is_built_again_without_the_vectorizer(tmp_path):
    log = tmp_path / "calls"
    compiler = slow_unless_unvectorized(tmp_path, log)
    x, y = np.linspace(-2.0, 2.0, 37), np.linspace(0.5, 1.5, 37)
    dynamo.reset()
    with config.patch(c_compiler=str(compiler), cache_dir=str(tmp_path / "cache"), c_compile_cpu_seconds=1,
                      strict=True):
        compiled = dynamo.compile(chain, backend="c")
        got = compiled(x, y)
    expected = chain(x, y)
    assert got.tobytes() == expected.tobytes() and got.dtype == expected.dtype
    builds = [line for line in log.read_text().splitlines() if "module.c" in line]
    assert len(builds) == 2 and "-fno-tree-vectorize" in builds[1] and "-fno-tree-vectorize" not in builds[0]
    records = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("*.json") if p.parent.name != "toolchains"]
    assert [r["flags"][-1] for r in records] == ["-fno-tree-vectorize"]


def test_a_compile_within_its_budget_keeps_the_vectorizer(tmp_path):
    x, y = np.linspace(-2.0, 2.0, 37), np.linspace(0.5, 1.5, 37)
    dynamo.reset()
    with config.patch(cache_dir=str(tmp_path / "cache"), strict=True):
        got = dynamo.compile(chain, backend="c")(x, y)
    assert got.tobytes() == chain(x, y).tobytes()
    records = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("*.json") if p.parent.name != "toolchains"]
    assert records and all("-fno-tree-vectorize" not in r["flags"] for r in records)
