"""explain's HTML page in a real browser: headless Chromium loads the report of a small program
(a graph break, a loop, a recompile) and the test reads the rendered DOM; a screenshot is kept."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "build" / "test-artifacts"

PROGRAM = textwrap.dedent("""
    import numpy as np

    def smooth(u, steps):
        v = np.sqrt(np.abs(u)) + 1.0
        print("norm", float(np.linalg.norm(v)))
        for _ in range(steps):
            v = 0.5 * (v + np.roll(v, 1))
        return v.sum() < 1e9

    for n in (16, 16, 40):
        smooth(np.linspace(-1, 1, n), 700)
""")


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def browser(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(chromium() is None and not os.environ.get("CI"),
                    reason="no chromium (.ci/run installs Debian's chromium; CI fails without it)")
def test_report_page_renders_in_chromium(tmp_path):
    assert chromium() is not None, "chromium is not installed: .ci/run installs it with apt"
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    page = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "dynamo", "explain", "--html", str(page), str(script)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    dom = browser("--dump-dom", page.as_uri()).stdout
    assert "<svg class=\"graph\"" in dom, dom[:2000]
    graphs = len(re.findall(r"<h3 id=\"g\d+\">", dom))
    assert graphs >= 2 and len(re.findall(r"<svg class=\"graph\"", dom)) == graphs  # one picture per graph
    lines = dict((int(n), state) for state, n in re.findall(r"<tr class=\"ln-(\w+)\" id=\"L\d+-(\d+)\"", dom))
    assert lines[5] == "graph"          # v = np.sqrt(np.abs(u)) + 1.0
    assert lines[6] == "break"          # print(...)
    assert lines[8] == "loop"           # the body of the captured 700-iteration loop
    assert re.search(r"Captured loops</td><td><b>[1-9]", dom)
    assert "unsupported side effect: print()" in dom
    assert re.search(r"smooth</b>: 3 calls, 2 compiles, 1 recompile", dom)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "explain_page.png"
    browser(f"--screenshot={shot}", "--window-size=1280,1600", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 10_000
