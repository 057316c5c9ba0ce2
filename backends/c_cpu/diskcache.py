"""The on-disk cache of compiled C modules: source + shared object + a record, keyed by content.

The key hashes the source, the compiler's identity, the flags and the CPU; files are written under
temporary names and renamed, and an entry whose record or checksum does not match is rebuilt, never
loaded. A process that finds its entry runs no compiler.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from .. import settings
from .toolchain import Toolchain, cpu_features, write_atomic

FORMAT = 1  # bump when the layout of an entry changes
_lock = threading.Lock()
# the compilers running now with their build folders (a background thread's, at interpreter exit:
# killed and removed), and whether the interpreter is exiting (no compiler starts then)
_running: dict[subprocess.Popen[str], Path] = {}
_running_lock = threading.Lock()
_exiting = False


class CompileError(RuntimeError):
    """The C compiler rejected a generated module (a bug of the backend: the message has its output)."""


class BuildAbandoned(RuntimeError):
    """The interpreter is exiting: the compile was stopped (or never started) and left nothing behind."""


def cache_root() -> Path:
    root = settings.get("cache_dir") or os.path.join(tempfile.gettempdir(), f"dynamo-cache-{os.getuid()}")
    return Path(root)


def c_dir(root: Path | None = None, folder: str = "c") -> Path:
    """Graph modules live in `c`; the backend's own support code (memory.py's allocator) in `c-runtime`."""
    return (root or cache_root()) / folder


def entry_key(source: str, tc: Toolchain) -> str:
    digest = hashlib.sha256()
    for part in (f"format={FORMAT}", source, tc.identity, " ".join(tc.argv), " ".join(tc.flags), cpu_features()):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def _paths(key: str, root: Path | None = None, kind: str = "c") -> tuple[Path, Path, Path]:
    folder = c_dir(root, kind) / key[:2]
    return folder / f"{key}.c", folder / f"{key}.so", folder / f"{key}.json"


def lookup(key: str, kind: str = "c") -> Path | None:
    """The shared object of a valid entry, or None (missing, truncated, foreign or corrupt)."""
    _, so, record = _paths(key, kind=kind)
    try:
        meta = json.loads(record.read_text())
        data = so.read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("key") != key or meta.get("format") != FORMAT:
        return None
    if meta.get("size") != len(data) or meta.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    return so


# GCC 12's RTL combiner spent 11 s of CPU (0.1 s unvectorized) on one 2x4x5 kernel vectorized for AVX-512,
# its inner loops unrolled completely (fuzz seed 1063055, a 50 s first call on a loaded machine): a compile
# that runs past its CPU budget (settings' c_compile_cpu_seconds) is built again without the vectorizer
UNVECTORIZED = "-fno-tree-vectorize"


def compile_budget(source: str) -> int:
    """CPU seconds a compile of `source` may take: settings' c_compile_cpu_seconds, and one more per
    10,000 characters (a graph of 1200 ops compiles in 11 s; the case above was 19,000 characters)."""
    return max(1, math.ceil(settings.get("c_compile_cpu_seconds") + len(source) / 10_000))


def _run_bounded(command: list[str], folder: Path, seconds: int) -> tuple[int, str] | None:
    """Runs the compiler with a CPU-time limit on each of its processes (the driver, cc1, as, ld): its
    return code and stderr, or None when a process ran past it. A limit of CPU time, not wall time: a
    loaded machine slows every compile alike."""
    returncode, stderr = _run_compiler(["sh", "-c", f'ulimit -t {seconds} && exec "$@"', "sh", *command], folder)
    # the driver killed (SIGXCPU, SIGKILL), or it says that a program it ran was (GCC: 'Killed signal
    # terminated program cc1'; clang: 'CPU time limit exceeded')
    killed = returncode < 0 or returncode in (128 + signal.SIGKILL, 128 + signal.SIGXCPU)
    if killed or "signal terminated program" in stderr or "CPU time limit" in stderr:
        return None
    return returncode, stderr


def build(source: str, tc: Toolchain, kind: str = "c") -> tuple[Path, bool]:
    """The shared object for `source`: (path, whether the compiler ran); `kind`: its folder (c_dir)."""
    key = entry_key(source, tc)
    found = lookup(key, kind)
    if found is not None:
        return found, False
    src_path, so_path, record = _paths(key, kind=kind)
    so_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=so_path.parent, prefix=".build-", ignore_cleanup_errors=True) as tmp:
        src = Path(tmp) / "module.c"
        out = Path(tmp) / "module.so"
        src.write_text(source)
        flags = list(tc.flags)
        budget = compile_budget(source)
        done = _run_bounded(tc.command(src, out), Path(tmp), budget)
        if done is None:   # over its CPU budget: the same module without the vectorizer
            flags.append(UNVECTORIZED)
            done = _run_bounded(tc.command(src, out, UNVECTORIZED), Path(tmp), budget)
        if done is None or done[0] != 0:
            why = "ran past its CPU budget twice" if done is None else f"failed:\n{done[1][-4000:]}"
            raise CompileError(f"the C compiler ({' '.join(tc.command(src, out))}) {why}")
        data = out.read_bytes()
    with _lock:
        write_atomic(src_path, source.encode())
        write_atomic(so_path, data)
        meta = {"key": key, "format": FORMAT, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                "compiler": " ".join(tc.argv), "flags": flags}
        write_atomic(record, json.dumps(meta).encode())
    return so_path, True


def _run_compiler(argv: list[str], folder: Path) -> tuple[int, str]:
    """Run the compiler in a process group of its own (its cc1 and as die with it at exit)."""
    with _running_lock:
        if _exiting:
            raise BuildAbandoned("the interpreter is exiting")
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        _running[process] = folder
    try:
        _, stderr = process.communicate()
    finally:
        with _running_lock:
            _running.pop(process, None)
    if _exiting:
        raise BuildAbandoned("the interpreter exited during the compile")
    return process.returncode, stderr


def stop_compilers() -> None:
    """At interpreter exit: kill the compilers that threads still wait for (a background tier-up the
    program no longer needs), remove their build folders, and start no other compiler."""
    global _exiting
    with _running_lock:
        _exiting = True
        running = list(_running.items())
    for process, folder in running:
        try:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass  # it has just finished, or is past killing: its folder goes anyway
        shutil.rmtree(folder, ignore_errors=True)


def _forget_compilers_in_child() -> None:
    """A forked child: the parent's compilers and locks are not the child's (a lock that the parent's
    compile thread held would stay held here forever)."""
    global _lock, _running_lock, _running
    _lock, _running_lock, _running = threading.Lock(), threading.Lock(), {}


os.register_at_fork(after_in_child=_forget_compilers_in_child)
atexit.register(stop_compilers)


# ---------------------------------------------------------------- python -m dynamo cache info|clear

def info(root: Path | None = None) -> dict[str, object]:
    folder = c_dir(root)
    entries = list(folder.glob("*/*.json")) if folder.exists() else []
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0
    return {"path": str(root or cache_root()), "c_modules": len(entries), "bytes": size}


def clear(root: Path | None = None) -> int:
    """Remove every C module (and compiler probe); returns how many modules there were."""
    base = root or cache_root()
    count = int(info(base)["c_modules"])  # type: ignore[call-overload]
    for name in ("c", "c-runtime", "toolchains"):
        shutil.rmtree(base / name, ignore_errors=True)
    return count
