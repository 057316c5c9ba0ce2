"""`pytest -p dynamo.pytest_plugin` in a subprocess: test bodies run compiled, outcomes are those
of the plain run, the summary counts frames, graphs and breaks, and a bad backend is a usage
error; slow: NumPy's own lib test modules pass compiled exactly where they pass plain."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from dynamo import config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SAMPLE_TESTS = '''
import numpy as np
import pytest

CALLS = []


def scaled(x, k):
    return np.sqrt(x * k + 1.0).sum()


def test_graph_of_numpy_code():
    x = np.arange(6.0)
    assert scaled(x, 2.0) == np.sqrt(x * 2.0 + 1.0).sum()


def test_break_on_data_and_side_effects():
    x = np.linspace(-1.0, 1.0, 5)
    if x.max() > 0:  # a branch on array data: a graph break
        CALLS.append(float(x.sum()))
    assert CALLS == [0.0]


def test_exception_reaches_pytest_raises():
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        np.ones(3) + np.ones(4)


def test_failure_is_reported():
    assert np.arange(3).sum() == 4
'''


def run_pytest(path, *options):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *options, str(path)],
                          cwd=path if os.path.isdir(path) else os.path.dirname(path), capture_output=True, text=True,
                          timeout=900, env={**os.environ, "PYTHONPATH": ROOT, "PYTHONWARNINGS": "ignore"})


def outcomes(result):
    """{test id: PASSED/FAILED/SKIPPED/...} from the -rA short summary."""
    found = {}
    for line in result.stdout.splitlines():
        match = re.match(r"(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)", line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "test_sample.py"
    path.write_text(SAMPLE_TESTS)
    return path


def test_bodies_run_compiled_with_the_outcomes_of_the_plain_run(sample):
    plain = run_pytest(sample)
    compiled = run_pytest(sample, "-p", "dynamo.pytest_plugin", "--dynamo-backend=eager")
    assert outcomes(compiled) == outcomes(plain)
    assert outcomes(plain)["test_sample.py::test_failure_is_reported"] == "FAILED"
    assert list(outcomes(plain).values()).count("PASSED") == 3
    assert "dynamo" not in plain.stdout
    summary = compiled.stdout.split("dynamo (eager backend)", 1)[1]
    counts = summary_counts(compiled)
    assert int(counts["frames compiled"]) >= 4 and int(counts["graphs"]) >= 2
    assert int(counts["graph breaks"]) >= 1
    # what follows a break in a test body runs once: as Python (test_break_on_data_and_side_effects)
    assert int(counts["resume functions run once as Python"]) >= 1
    assert "most frequent reasons" in summary and "test_sample.py:" in summary


def summary_counts(result):
    summary = result.stdout.split("dynamo (eager backend)", 1)[1]
    return dict(part.split(": ") for part in summary.splitlines()[1].split(", "))


def test_resume_functions_compile_at_their_first_call_on_request(sample):
    deferred = summary_counts(run_pytest(sample, "-p", "dynamo.pytest_plugin", "--dynamo-backend=eager"))
    at_once = run_pytest(sample, "-p", "dynamo.pytest_plugin", "--dynamo-backend=eager", "--dynamo-resumes=first-call")
    assert outcomes(at_once)["test_sample.py::test_break_on_data_and_side_effects"] == "PASSED"
    counts = summary_counts(at_once)
    assert counts["resume functions run once as Python"] == "0"
    assert int(counts["frames compiled"]) > int(deferred["frames compiled"])


def test_unknown_backend_is_a_usage_error(sample):
    result = run_pytest(sample, "-p", "dynamo.pytest_plugin", "--dynamo-backend=no-such-backend")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--dynamo-backend" in result.stderr and "no-such-backend" in result.stderr


BROKEN_COMPILER_TESTS = '''
import numpy as np
import pytest


@pytest.fixture
def broken_compiler(monkeypatch):
    """A bug of dynamo, injected: recording any graph node raises."""
    from dynamo.output_graph import OutputGraph

    def broken(self, *args, **kwargs):
        raise KeyError("injected bug")

    monkeypatch.setattr(OutputGraph, "create_node", broken)


def test_meets_the_bug(broken_compiler):
    x = np.arange(3.0)
    assert (x * 2.0).sum() == 6.0
'''


def test_internal_errors_fail_the_test_unless_strict_is_off(tmp_path):
    path = tmp_path / "test_broken.py"
    path.write_text(BROKEN_COMPILER_TESTS)
    strict = run_pytest(path, "-p", "dynamo.pytest_plugin")
    assert outcomes(strict) == {"test_broken.py::test_meets_the_bug": "FAILED"}
    assert "InternalCompilerError" in strict.stdout and "KeyError: 'injected bug'" in strict.stdout
    assert "test_broken.py" in strict.stdout.split("InternalCompilerError", 1)[1]  # the user's line
    lenient = run_pytest(path, "-p", "dynamo.pytest_plugin", "--dynamo-strict=off")
    assert outcomes(lenient) == {"test_broken.py::test_meets_the_bug": "PASSED"}
    summary = lenient.stdout.split(f"dynamo ({config.default_backend} backend)", 1)[1]
    assert "internal errors: 1" in summary and "internal error: please report: KeyError" in summary


# NumPy's lib test modules that run in a few seconds plain; copied out of site-packages, which
# dynamo never compiles, so that their test bodies are compiled
NUMPY_LIB_TESTS = ("test_ufunclike.py", "test_type_check.py", "test_stride_tricks.py")


@pytest.mark.slow
def test_numpy_lib_tests_pass_compiled_where_they_pass_plain(tmp_path):
    source = os.path.join(os.path.dirname(np.__file__), "lib", "tests")
    for name in NUMPY_LIB_TESTS:
        if not os.path.exists(os.path.join(source, name)):
            pytest.skip(f"this NumPy ships no lib/tests/{name}")
        shutil.copy(os.path.join(source, name), tmp_path / name)
    plain = run_pytest(tmp_path)
    compiled = run_pytest(tmp_path, "-p", "dynamo.pytest_plugin")
    assert outcomes(plain), plain.stdout[-2000:]
    assert outcomes(compiled) == outcomes(plain), compiled.stdout[-4000:]
    assert f"dynamo ({config.default_backend} backend)" in compiled.stdout


GC_TESTS = '''
import gc
import sys
import weakref


class Node:
    pass


def cycle():
    node = Node()
    node.self = node
    return node


MODULE_LEVEL = [cycle()]  # made when the module is imported, after the plugin froze its own objects


def test_a_cycle_made_by_the_test_is_collected():
    ref = weakref.ref(cycle())
    gc.collect()
    assert ref() is None


def test_a_cycle_of_the_module_is_collected_once_dropped():
    ref = weakref.ref(MODULE_LEVEL.pop())
    gc.collect()
    assert ref() is None


def test_what_the_harness_loaded_is_frozen():
    print("FROZEN", gc.get_freeze_count(), "dynamo.symbolic_convert" in sys.modules)
'''


def test_the_compiler_is_loaded_and_frozen_before_the_tests_and_their_cycles_are_collected(tmp_path):
    # the compiler lives as long as the run: frozen before the first test module is
    # imported, so gc.collect() in a test does not walk them, and every object of the tests is
    # collected as in the plain run
    path = tmp_path / "test_gc.py"
    path.write_text(GC_TESTS)
    plain = run_pytest(path, "-s")
    compiled = run_pytest(path, "-s", "-p", "dynamo.pytest_plugin", "--dynamo-backend=eager")
    assert outcomes(compiled) == outcomes(plain) == {f"test_gc.py::{name}": "PASSED" for name in (
        "test_a_cycle_made_by_the_test_is_collected", "test_a_cycle_of_the_module_is_collected_once_dropped",
        "test_what_the_harness_loaded_is_frozen")}
    # (a plain run may have frozen objects of its own: pytest on 3.12 does)
    plain_frozen, plain_loaded = re.search(r"FROZEN (\d+) (\w+)", plain.stdout).groups()
    compiled_frozen, compiled_loaded = re.search(r"FROZEN (\d+) (\w+)", compiled.stdout).groups()
    assert (plain_loaded, compiled_loaded) == ("False", "True")
    assert int(compiled_frozen) > int(plain_frozen)


BACKGROUND_TESTS = '''
import dynamo


def test_report_where_graphs_move():
    print("IN_BACKGROUND", dynamo.config.tier_up_in_background)
'''


def test_graphs_move_to_c_in_the_tests_own_calls_not_in_a_thread_beside_them(tmp_path):
    # a compile thread beside the tests raced their catch_warnings (one process-wide filter list)
    path = tmp_path / "test_background.py"
    path.write_text(BACKGROUND_TESTS)
    plain = run_pytest(path, "-s")
    compiled = run_pytest(path, "-s", "-p", "dynamo.pytest_plugin")
    assert "IN_BACKGROUND True" in plain.stdout
    assert "IN_BACKGROUND False" in compiled.stdout
