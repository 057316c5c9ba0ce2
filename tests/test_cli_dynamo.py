"""`python -m dynamo run|explain script.py [args]` in a subprocess: exit status, the program's
own output unchanged, and (explain) one report on stderr with the most frequent reasons first."""
import os
import re
import subprocess
import sys

import pytest

PROGRAMS = os.path.join(os.path.dirname(__file__), "dynamo", "break_programs")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, cwd=PROGRAMS):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT, "PYTHONWARNINGS": "ignore"})


@pytest.fixture(scope="module")
def plain_kmeans():
    return run("prog_kmeans.py")


def test_run_leaves_output_and_exit_status_unchanged(plain_kmeans):
    compiled = run("-m", "dynamo", "run", "--backend", "eager", "prog_kmeans.py")
    assert compiled.returncode == plain_kmeans.returncode == 0
    assert compiled.stdout == plain_kmeans.stdout
    assert "dynamo explain" not in compiled.stderr


def test_explain_prints_the_report_after_the_unchanged_output(plain_kmeans):
    explained = run("-m", "dynamo", "explain", "--backend", "eager", "prog_kmeans.py")
    assert explained.returncode == 0
    assert explained.stdout == plain_kmeans.stdout
    report = explained.stderr
    assert "=== dynamo explain: prog_kmeans.py ===" in report
    for heading in ("Graph count:", "Graph break count:", "Compiled frames:", "Break reasons (most frequent first):"):
        assert heading in report
    assert "kmeans (" in report and "prog_kmeans.py:" in report


def test_explain_orders_reasons_by_frequency_and_passes_arguments():
    explained = run("-m", "dynamo", "explain", "--backend", "eager", "cli_frequency.py", "3", "4", "5")
    plain = run("cli_frequency.py", "3", "4", "5")
    assert explained.returncode == plain.returncode == 0
    assert explained.stdout == plain.stdout and "totals [3.0, 4.0, 5.0]" in plain.stdout
    reasons = explained.stderr.split("Break reasons (most frequent first):")[1]
    first = reasons.split("\n  2. ")[0]
    assert "data-dependent branch" in first and "if y.sum() > 0:" in first
    counts = [int(n) for n in re.findall(r"\n\s+(\d+) graph breaks: in", reasons)]
    assert counts and counts[0] == max(counts) >= 2


def test_program_error_gives_its_traceback_and_status_one():
    plain = run("cli_frequency.py", "--fail")
    explained = run("-m", "dynamo", "explain", "--backend", "eager", "cli_frequency.py", "--fail")
    assert plain.returncode == explained.returncode == 1
    assert explained.stdout == plain.stdout
    assert "ValueError: requested failure" in explained.stderr
    assert 'raise ValueError("requested failure")' in explained.stderr
    traceback_part = explained.stderr.split("=== dynamo explain")[0]
    assert "runpy" not in traceback_part and "dynamo/__main__.py" not in traceback_part
    assert "=== dynamo explain: cli_frequency.py ===" in explained.stderr  # the report even so


# The same entry point in-process (a subprocess costs a second of imports each).

@pytest.fixture
def in_process(monkeypatch):
    from dynamo.__main__ import main

    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(PROGRAMS)
    return main


def test_sys_exit_status_is_kept(in_process, capsys):
    assert in_process(["run", "--backend", "eager", "cli_frequency.py", "--exit"]) == 3
    assert "totals" in capsys.readouterr().out


def test_sys_exit_with_a_message_prints_it_and_gives_one(in_process, tmp_path, capsys):
    script = tmp_path / "bye.py"
    script.write_text("import sys\nsys.exit('stopping here')\n")
    assert in_process(["run", str(script)]) == 1
    assert "stopping here" in capsys.readouterr().err


def test_unknown_backend_and_missing_script_are_usage_errors(in_process, capsys):
    with pytest.raises(SystemExit) as bad_backend:
        in_process(["run", "--backend", "nope", "cli_frequency.py"])
    assert bad_backend.value.code == 2 and "unknown backend 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as missing:
        in_process(["explain", "no_such_script.py"])
    assert missing.value.code == 2 and "no such file" in capsys.readouterr().err


def test_script_sees_the_same_file_names_as_under_plain_python(tmp_path):
    script = tmp_path / "where.py"
    script.write_text("import sys\ndef f():\n    return f.__code__.co_filename\nprint(__file__, f(), sys.argv[0])\n")
    plain = run("where.py", cwd=tmp_path)
    compiled = run("-m", "dynamo", "run", "where.py", cwd=tmp_path)
    assert compiled.returncode == plain.returncode == 0
    assert compiled.stdout == plain.stdout and str(script) in plain.stdout
