"""benchmarks/foreign.py on kernels of our own written in the collection's format (`#setup:` and `#run:`
comment lines): files read, results and mutated arguments compared bitwise, compiles counted."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCALE_ROWS = textwrap.dedent("""\
    #setup: import numpy as np ; x = np.arange(12.0).reshape(4, 3) ; w = np.ones(3)
    #run: scale_rows(x, w, 2.5)
    import numpy as np

    def scale_rows(a, w, s):
        for i in range(a.shape[0]):
            a[i] *= w * s
        return a.sum(axis=1), np.float64(s)
    """)


@pytest.fixture(scope="module")
def foreign():
    spec = importlib.util.spec_from_file_location("foreign_benchmark", ROOT / "benchmarks" / "foreign.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kernel_files_read_setup_run_and_function(foreign, tmp_path):
    (tmp_path / "scale_rows.py").write_text(SCALE_ROWS)
    (tmp_path / "no_run.py").write_text("def f(x):\n    return x\n")
    kernels = foreign.kernel_files(tmp_path, None)
    assert [k.name for k in kernels] == ["scale_rows"]
    assert kernels[0].function == "scale_rows" and kernels[0].setup.startswith("import numpy")


def test_measure_compares_results_and_mutated_arguments(foreign, tmp_path):
    (tmp_path / "scale_rows.py").write_text(SCALE_ROWS)
    kernel = foreign.kernel_files(tmp_path, None)[0]
    options = foreign.parse_args(["--rounds", "2", "--round-seconds", "0.001", "--settle", "1"])
    row = foreign.measure(kernel, "numpy", options)
    assert row["status"] == "ok" and row["exact"], row
    assert row["compiles"] == 1 and row["recompiles_later"] == 0 and row["breaks"] == 0
    assert row["ratio"] > 0


def test_differences_are_bitwise(foreign):
    import numpy as np

    same = [("out", np.array([0.0, np.nan]))]
    assert foreign.differences(same, [("out", np.array([0.0, np.nan]))]) == []
    assert foreign.differences(same, [("out", np.array([-0.0, np.nan]))])  # the sign of zero
    assert foreign.differences(same, [("out", np.array([np.nan, 0.0]))])  # NaN in another place
    assert foreign.differences(same, [("out", np.array([0.0, np.nan], np.float32))])  # dtype
    assert foreign.differences([("out", 1.0)], [("out", np.float64(1.0))])  # type


def test_without_the_collection_says_what_it_needs(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "foreign.py"), "--numpy-benchmarks",
                           str(tmp_path / "missing")], capture_output=True, text=True)
    assert done.returncode != 0 and "needs --numpy-benchmarks" in done.stderr
