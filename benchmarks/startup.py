"""Start-up cost of whole programs: short scripts (benchmarks/scripts/) run plain and under
`python -m dynamo run`, side by side, in CPU time of the whole process (user + sys).

Issue #16's targets: `import dynamo` under 0.1 s over `import numpy`, and a whole script under
`python -m dynamo run` at most 0.3 s slower than plain plus the compile time of its own functions.
The runs alternate (plain, compiled, plain, ...) so that a change of the machine's load touches
both; each figure is the median of --runs runs. A script's output must be the same both ways.
It also says whether sympy was imported (the dearest import dynamo may need: dynamic sizes,
loop variables the body reads).

Run: python3 benchmarks/startup.py [--runs N] [script ...]   (sets up .venv/ on first use)
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / ".ci"))
from bootstrap import ensure_venv  # noqa: E402

SCRIPTS = HERE / "scripts"
# printed to stderr by the script's process at exit: whether sympy was imported (sitecustomize-free:
# the check runs as an atexit hook installed by -c before the script starts)
_SYMPY_PROBE = ("import atexit, sys; atexit.register(lambda: sys.stderr.write("
                "'\\n[sympy %s]\\n' % ('sympy' in sys.modules)))")


def cpu_of(command: list[str]) -> tuple[float, str, str]:
    """(user + sys CPU seconds of the child process, its stdout, its stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, cwd=SCRIPTS, env=_environment())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout, done.stderr


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run: compiled modules cached
    return env


def _runner(script: Path, compiled: bool) -> list[str]:
    """The script run as `python script.py` or `python -m dynamo run script.py`, with the probe."""
    code = (f"{_SYMPY_PROBE}; import runpy; sys.argv = {[str(script)]!r}; "
            + ("from dynamo.__main__ import main; sys.exit(main(['run', sys.argv[0]]))" if compiled
               else "runpy.run_path(sys.argv[0], run_name='__main__')"))
    return [sys.executable, "-c", code]


def side_by_side(label: str, plain: list[str], compiled: list[str], runs: int) -> tuple[float, float, str]:
    """Median CPU seconds of each command, alternated; the compiled run's sympy note."""
    cpu_of(plain), cpu_of(compiled)  # warm the file cache and the .pyc files
    plain_times, compiled_times, note = [], [], ""
    for _ in range(runs):
        t, out_plain, _ = cpu_of(plain)
        plain_times.append(t)
        t, out_compiled, err = cpu_of(compiled)
        compiled_times.append(t)
        if out_compiled != out_plain:
            raise SystemExit(f"{label}: the output differs under dynamo:\n{out_plain}\n---\n{out_compiled}")
        note = "sympy imported" if "[sympy True]" in err else ""
    return statistics.median(plain_times), statistics.median(compiled_times), note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="alternated runs of each command (default 5)")
    parser.add_argument("scripts", nargs="*", help="scripts of benchmarks/scripts to run (default: all)")
    options = parser.parse_args()
    names = options.scripts or sorted(p.stem for p in SCRIPTS.glob("*.py"))
    print(f"{'program':<26} {'plain s':>8} {'dynamo s':>9} {'extra s':>8}  note")
    imports = side_by_side("import", [sys.executable, "-c", "import numpy"],
                           [sys.executable, "-c", "import numpy, dynamo"], options.runs)
    print(f"{'import numpy (, dynamo)':<26} {imports[0]:8.3f} {imports[1]:9.3f} {imports[1] - imports[0]:8.3f}")
    for name in names:
        script = SCRIPTS / f"{Path(name).stem}.py"
        plain, compiled, note = side_by_side(name, _runner(script, False), _runner(script, True), options.runs)
        print(f"{script.stem:<26} {plain:8.3f} {compiled:9.3f} {compiled - plain:8.3f}  {note}")


if __name__ == "__main__":
    ensure_venv(("test",))
    main()
