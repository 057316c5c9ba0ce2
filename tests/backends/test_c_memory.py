"""backend="c"'s call path under CPython's debug allocator, which overwrites freed memory at once: a
kernel reading memory freed before or during its call fails on every run instead of once in a long one.

Why: the rerun that names the op behind a floating-point flag once passed ctypes addresses of
temporaries already freed; in full-suite runs it returned all True for `i < u`, all INT64_MIN for a
cast, or crashed, and passed alone. Under PYTHONMALLOC=debug that code crashes on the first rerun.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")

PROGRAM = textwrap.dedent("""
    import gc, warnings
    import numpy as np
    import dynamo

    def mixed(i, u, f):
        return i < u, i >= u, i == u, f.astype(np.int64), f.astype(np.int32), i.astype(np.float32), f > 0.5

    def divide(a, b):
        return a // b, a % b, a + b, -a, (a > b) | (b == 0)

    def split(S, K, T):  # C kernels between NumPy steps: the first calls alternate with the numpy backend
        d1 = np.sort(np.log(S / K) + 0.065 * T) / (0.3 * np.sqrt(T))
        return S * (0.5 * (1.0 + np.tanh(d1))) - np.sort(K * np.exp(-0.02 * T))

    def scaled(x, y):
        return np.sqrt(x) * y + 1.0 / x, (x / y).astype(np.int32)

    i = np.array([-1, 0, 5, -(2 ** 62)], np.int64)
    u = np.array([2 ** 63 + 5, 0, 4, 1], np.uint64)
    f = np.array([np.nan, 1e300, -2.7, 3.9])
    rng = np.random.default_rng(7)
    S, K, T = rng.uniform(50, 150, 700), rng.uniform(50, 150, 700), rng.uniform(0.1, 2.0, 700)
    T[5] = -1.0
    x = rng.standard_normal(300)
    x[::7] = 0.0
    cases = [(mixed, (i, u, f)), (split, (S, K, T)), (scaled, (x, x[::-1].copy()))]
    for dtype in (np.int8, np.uint16, np.int32, np.int64):
        a = np.arange(-6, 6).astype(dtype)
        cases.append((divide, (a, np.roll(a, 3))))

    def run(fn, args):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(*[a.copy() for a in args])
        return result, [str(w.message) for w in caught]

    def same(got, expected):
        if isinstance(expected, tuple):
            return len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
        return got.dtype == expected.dtype and got.shape == expected.shape and got.tobytes() == expected.tobytes()

    checked = 0
    for fn, args in cases:
        compiled = dynamo.compile(fn, backend="c")
        for turn in range(5):  # the chooser's turns, then the kept side
            junk = [np.empty(n) for n in (4, 9, 300, 700)] + [object() for _ in range(200)]
            del junk
            gc.collect()
            # after the first call (which compiles), the young generation is collected at every
            # allocation: an object kept only by a reference cycle is freed at once
            gc.set_threshold(1 if turn else 700, 1000, 1000)
            try:
                got, got_warnings = run(compiled, args)
            finally:
                gc.set_threshold(700, 10, 10)
            expected, expected_warnings = run(fn, args)
            assert same(got, expected), (fn.__name__, turn, got, expected)
            assert got_warnings == expected_warnings, (fn.__name__, turn, got_warnings, expected_warnings)
            checked += 1
    print("CHECKED", checked)
""")


def test_flag_reruns_under_the_debug_allocator():
    env = dict(os.environ, PYTHONMALLOC="debug", PYTHONFAULTHANDLER="1")
    done = subprocess.run([sys.executable, "-X", "dev", "-c", PROGRAM], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "CHECKED 35" in done.stdout, done.stdout
