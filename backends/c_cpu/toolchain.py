"""The system C compiler: which one, with which flags, and whether it has OpenMP.

Found from the settings (CC), else the compiler Python was built with, else `cc`; a missing compiler
is a CCompilerUnavailable saying what to install. Probes are cached on disk: a warm process runs none.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import settings


class CCompilerUnavailable(RuntimeError):
    """backend="c" needs a C compiler and there is none; the message says what to install."""


# NumPy neither fuses multiply-add nor reorders float math: neither may the compiler
BASE_FLAGS = ("-O3", "-std=gnu11", "-fPIC", "-shared", "-ffp-contract=off", "-fno-fast-math",
              "-fno-math-errno", "-ftrapping-math", "-fno-semantic-interposition", "-w")


@dataclass(frozen=True)
class Toolchain:
    """A compiler command (`argv`), what identifies it (path, size, mtime: read without running it)
    and the flags every kernel module is built with."""

    argv: tuple[str, ...]
    identity: str
    flags: tuple[str, ...]
    openmp: bool

    def command(self, source: Path, output: Path, *extra: str) -> list[str]:
        return [*self.argv, *self.flags, *extra, str(source), "-o", str(output), "-lm"]


def compiler_argv() -> tuple[str, ...]:
    """The compiler command: settings' c_compiler (CC), sysconfig's CC, then `cc`; first found wins."""
    candidates = [settings.get("c_compiler"), sysconfig.get_config_var("CC"), "cc"]
    tried = []
    for candidate in candidates:
        if not candidate:
            continue
        argv = shlex.split(str(candidate))
        if not argv:
            continue
        path = shutil.which(argv[0])
        tried.append(argv[0])
        if path is not None:
            return (path, *argv[1:])
        if candidate == settings.get("c_compiler"):
            raise CCompilerUnavailable(
                f"backend='c': the C compiler CC={candidate!r} was not found; install it, or unset CC "
                "to use the system compiler")
    raise CCompilerUnavailable(
        f"backend='c' needs a C compiler and none was found (tried {', '.join(tried) or 'nothing'}): install "
        "gcc or clang (Debian/Ubuntu: apt install gcc; Fedora: dnf install gcc; macOS: xcode-select --install) "
        "or set CC to one; backend='numpy' needs none")


def identity_of(path: str) -> str:
    real = os.path.realpath(path)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


@functools.lru_cache(maxsize=1)
def cpu_features() -> str:
    """What the host's instruction set is (part of every cache key: -march=native code is the CPU's)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return hashlib.sha256(line.encode()).hexdigest()[:16]
    except OSError:
        pass
    return f"{platform.machine()}:{platform.processor()}"


def toolchain(cache_root: Path) -> Toolchain:
    argv = compiler_argv()
    native = bool(settings.get("c_native"))
    want_openmp = bool(settings.get("c_openmp"))
    return _toolchain(argv, identity_of(argv[0]), native, want_openmp, str(cache_root))


@functools.lru_cache(maxsize=16)
def _toolchain(argv: tuple[str, ...], identity: str, native: bool, want_openmp: bool, root: str) -> Toolchain:
    probe = _probe(argv, identity, Path(root))
    flags = list(BASE_FLAGS)
    if probe["clang"]:
        flags.append("-ffp-exception-behavior=maytrap")  # clang's -ftrapping-math: no spurious FP flags
    if native and probe["native"]:
        flags.append("-march=native")
    openmp = want_openmp and bool(probe["openmp"])
    if openmp:
        flags.append("-fopenmp")
    return Toolchain(argv, identity, tuple(flags), openmp)


def _probe(argv: tuple[str, ...], identity: str, root: Path) -> dict[str, object]:
    """Whether -march=native and -fopenmp work, and the version: remembered per compiler on disk."""
    key = hashlib.sha256(f"{argv}|{identity}|{cpu_features()}".encode()).hexdigest()[:24]
    path = root / "toolchains" / f"{key}.json"
    try:
        found = json.loads(path.read_text())
        if isinstance(found, dict) and found.get("identity") == identity and "clang" in found:
            return found
    except (OSError, ValueError):
        pass
    with tempfile.TemporaryDirectory(prefix="dynamo-cc-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text("#include <omp.h>\nint probe(void) { int n = 0;\n#pragma omp parallel reduction(+:n)\n"
                       "n += 1;\nreturn n + omp_get_max_threads(); }\n")
        out = Path(tmp) / "probe.so"

        def works(*extra: str) -> bool:
            try:
                done = subprocess.run([*argv, "-shared", "-fPIC", *extra, str(src), "-o", str(out)],
                                      capture_output=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired):
                return False
            return done.returncode == 0
        native = works("-march=native", "-fopenmp") or works("-march=native")
        openmp = works("-fopenmp")
    try:
        version = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    found = {"identity": identity, "native": native, "openmp": openmp, "clang": "clang" in version.lower(),
             "version": version.splitlines()[0] if version else "unknown"}
    write_atomic(path, json.dumps(found).encode())
    return found


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename: readers see all of it or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
