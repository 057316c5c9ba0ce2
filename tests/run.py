"""The test command of the README: sets up .venv/<python>/ if needed, then runs pytest.

Usage: python3 tests/run.py [pytest arguments]   (e.g. -k guards, --runslow)
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".ci"))
from bootstrap import ensure_venv  # noqa: E402

if __name__ == "__main__":
    ensure_venv(("test",))
    # this script's folder (tests/) is on sys.path first, where tests/dynamo/ would shadow the
    # installed package: the repository root, where the real dynamo/ lives, goes first instead
    sys.path.insert(0, str(ROOT))
    import pytest

    args = sys.argv[1:]
    chosen_paths = [a for a in args if not a.startswith("-") and (ROOT / a).exists() or Path(a).exists()]
    sys.exit(pytest.main(["-q", *([] if chosen_paths else [str(ROOT / "tests")]), *args]))
