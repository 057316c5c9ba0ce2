"""The project as a user installs it: an sdist built from the checkout, a wheel built from that sdist,
the wheel installed into a fresh virtualenv and used from a folder outside the checkout.

Every test here runs on each Python of CI (.ci/run runs tests/run.py under each): the editable install
the rest of the suite uses would never notice a module missing from the wheel. The dependencies come
from pip's configured index and cache, as for any user; nothing of the checkout is on sys.path.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# where each source folder lands in the installed package (setup.py's package_dir)
INSTALLED_AS = {"dynamo": "dynamo", "fx_ir": "dynamo/fx_ir", "backends": "dynamo/backends"}
# a smoke subset of the suite run against the installed package, with the helper modules it imports;
# copied into one folder (test file names are unique across tests/), fx_ir's with its own conftest.py
SMOKE_FILES = {
    ".": ["conftest.py", "support.py", "test_smoke.py", "dynamo/breaks_helpers.py", "dynamo/numpy_samples.py",
          "dynamo/test_breaks_classic.py", "dynamo/test_explain_report.py", "dynamo/test_guards_arrays.py",
          "backends/numpy_backend_helpers.py", "backends/test_numpy_backend_compile.py"],
    "fx_ir": ["fx_ir/conftest.py", "fx_ir/test_graph.py"],
}


def source_modules() -> dict[str, str]:
    """Each module of the three package roots: its path in the checkout -> its path once installed."""
    modules = {}
    for folder, installed in INSTALLED_AS.items():
        for path in (ROOT / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                relative = path.relative_to(ROOT / folder).as_posix()
                modules[path.relative_to(ROOT).as_posix()] = f"{installed}/{relative}"
    return modules


def run(command: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    """Run a command with the caller's environment minus anything that would put the checkout on
    sys.path; fail with its output when it fails."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    environment.update(env)
    result = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (f"{' '.join(map(str, command))} exited with {result.returncode}\n"
                                    f"--- stdout\n{result.stdout[-6000:]}\n--- stderr\n{result.stderr[-6000:]}")
    return result


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and a wheel built from the sdist (as pip does with a source release): a file the
    sdist lacks fails the wheel's build. No build isolation: setuptools and wheel are test extras."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)], cwd=out)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def installed_python(dists: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv (no system site-packages) with the wheel, its declared dependencies, and
    pytest for the smoke tests, installed by this Python's pip."""
    env_dir = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], cwd=env_dir)
    python = env_dir / "bin" / "python"
    # --no-compile: byte-compiling all of sympy up front would take longer than every other step
    run([sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check", "-q", "install",
         "--no-compile", str(dists["wheel"]), "pytest"], cwd=env_dir)
    return python


def test_wheel_holds_every_module_and_the_extension_and_no_tests(dists: dict[str, Path]) -> None:
    names = zipfile.ZipFile(dists["wheel"]).namelist()
    modules = {name for name in names if name.endswith(".py")}
    assert modules == set(source_modules().values())
    assert [name for name in names if name.startswith("dynamo/_C.") and name.endswith(".so")]
    assert not [name for name in names if name.startswith("tests/") or "/tests/" in name]


def test_sdist_holds_every_module_and_the_c_sources_and_no_tests(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    c_sources = {f"csrc/{path.name}" for path in (ROOT / "csrc").iterdir() if path.suffix in (".c", ".h")}
    assert c_sources and c_sources <= names
    assert set(source_modules()) <= names
    assert "setup.py" in names and "pyproject.toml" in names and "MANIFEST.in" in names
    assert not [name for name in names if name.startswith(("tests/", "benchmarks/", ".ci/"))]


def test_installed_wheel_compiles_a_numpy_function_to_one_graph(installed_python: Path, tmp_path: Path) -> None:
    program = tmp_path / "user_program.py"
    program.write_text(textwrap.dedent('''
        import sys

        import numpy as np

        import dynamo

        assert dynamo.__file__.startswith(sys.prefix), dynamo.__file__  # the installed package


        def scale_and_shift(x, y):
            return np.sin(x) * y + 1


        x = np.linspace(0, 1, 7)
        report = dynamo.explain(scale_and_shift, backend="numpy")(x, 3.0)
        print(report)
        assert report.graph_count == 1, report
        assert not report.break_reasons, report  # no graph break, nothing run in Python or uncompiled
        np.testing.assert_array_equal(dynamo.compile(scale_and_shift)(x, 3.0), scale_and_shift(x, 3.0))
        print("ok")
    '''))
    result = run([str(installed_python), str(program)], cwd=tmp_path)
    assert result.stdout.rstrip().endswith("ok")
    assert "Graph count: 1" in result.stdout


def test_demo_runs_with_the_installed_package(installed_python: Path, tmp_path: Path) -> None:
    result = run([str(installed_python), str(ROOT / "benchmarks" / "demo.py"), "--installed", "--quick"],
                 cwd=tmp_path)
    rows = [line for line in result.stdout.splitlines() if line.startswith(("kmeans", "row softmax", "Black", "trivial"))]
    assert len(rows) == 4 and all(" True " in row for row in rows), result.stdout
    assert "Frames that ran uncompiled: 0" in result.stdout


def test_smoke_tests_pass_against_the_installed_package(installed_python: Path, tmp_path: Path) -> None:
    # pytest puts only the copies' folders on sys.path, never the checkout: `import dynamo` finds
    # the installed package
    suite = tmp_path / "smoke"
    for folder, names in SMOKE_FILES.items():
        (suite / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copy(ROOT / "tests" / name, suite / folder / Path(name).name)
    (suite / "test_installed_location.py").write_text(textwrap.dedent('''
        """The smoke tests import the installed package, not the checkout."""
        import sys

        import dynamo


        def test_dynamo_comes_from_the_virtualenv():
            assert dynamo.__file__.startswith(sys.prefix), dynamo.__file__
    '''))
    result = run([str(installed_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)], cwd=tmp_path)
    assert " passed" in result.stdout and "skipped" not in result.stdout, result.stdout[-3000:]
