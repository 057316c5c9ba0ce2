"""backend="tiered" and the life of processes: an exiting program kills the C compile it no longer needs
(no wait for it, no build folder left in the cache, no compiler left running), and a child forked while
a background compile holds backend c's locks moves its own graphs up."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="no C compiler")
ROOT = Path(__file__).resolve().parents[2]


def slow_compiler(folder: Path) -> Path:
    """A compiler that, for a kernel module, writes its pid to `pids` and waits while the file `hold`
    exists (at most a minute) before it runs the real compiler; probes of the compiler run at once."""
    real = shutil.which("gcc") or shutil.which("cc")
    script = folder / "slowcc"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$*" in *module.c*)
            echo $$ >> "{folder}/pids"
            n=0
            while [ -e "{folder}/hold" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done ;;
        esac
        exec {real} "$@"
    """))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state


def run(args: list[str], folder: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CC": str(slow_compiler(folder)), "DYNAMO_CACHE_DIR": str(folder / "cache"),
           "DYNAMO_TIER_UP_SECONDS": "0", "DYNAMO_TIER_UP_IN_BACKGROUND": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=folder, env=env)


def test_an_exiting_program_kills_the_compile_it_no_longer_needs(tmp_path):
    (tmp_path / "hold").touch()  # the compile waits until the test is over: it would never finish
    (tmp_path / "script.py").write_text(textwrap.dedent(f"""
        import os, time
        import numpy as np

        def f(x):
            return np.sqrt(x * 3.0 + 2.0) - x

        x = np.ones(100)
        for _ in range(3):
            f(x)  # due at its first call: compiled for c in the background
        deadline = time.monotonic() + 120
        while not os.path.exists({str(tmp_path / "pids")!r}) and time.monotonic() < deadline:
            time.sleep(0.02)
        print("in flight", time.time())
    """))
    try:
        done = run(["-m", "dynamo", "run", "--backend", "tiered", "script.py"], tmp_path)
        exited = time.time()
        assert done.returncode == 0 and done.stdout.startswith("in flight"), done.stdout + done.stderr
        assert exited - float(done.stdout.split()[-1]) < 20  # not the minute the compiler would hold
        assert done.stderr == ""
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        assert not [p for p in pids if alive(p)]
        assert not list((tmp_path / "cache").rglob(".build-*"))
    finally:
        (tmp_path / "hold").unlink()


FORKS = """
import multiprocessing, os, sys, time
import numpy as np
import dynamo
from dynamo.backends import tiered

@dynamo.compile(backend="tiered")
def f(x):
    return np.sqrt(x * 3.0 + 2.0) - x

def states():
    callback = dynamo.api.callback_for("tiered", False, None)
    return [g.compiled_fn._dynamo_fn.tier.state for code, frame in callback.compiled_frames for g in frame.graphs]

def child(expected):
    same = all(f(x).tobytes() == expected for _ in range(3))
    moved = tiered.wait_for_tier_ups(60)
    same = same and f(x).tobytes() == expected
    sys.exit(0 if same and moved and states() == ["c"] else 3)

x = np.linspace(0.0, 1.0, 50)
expected = (np.sqrt(x * 3.0 + 2.0) - x).tobytes()
f(x)  # due: compiled in the background, where the compiler waits on the file `hold`
deadline = time.monotonic() + 120
while not os.path.exists("pids") and time.monotonic() < deadline:
    time.sleep(0.02)
process = multiprocessing.get_context("fork").Process(target=child, args=(expected,))
process.start()  # while backend c's compile lock is held by the parent's compile thread
os.unlink("hold")
process.join(120)
assert tiered.wait_for_tier_ups(120) and f(x).tobytes() == expected and states() == ["c"]
print(process.exitcode)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_child_forked_during_a_compile_moves_its_own_graphs_up(tmp_path):
    (tmp_path / "hold").touch()
    done = run(["-c", FORKS], tmp_path)
    assert done.returncode == 0 and done.stdout == "0\n", done.stdout + done.stderr
    assert len((tmp_path / "pids").read_text().split()) == 2  # the child compiled its own (no lock held)
