"""Differential fuzzing campaign: random NumPy programs run plain and compiled on each backend.

Usage: python tests/fuzz/run.py --count N --seed S [--backend B ...] [--minimize] [--out DIR]
Backends: eager, numpy, numpy-tiny (tiny blocks, two threads), triton (under TRITON_INTERPRET=1),
c (when registered). Failures of classes another change owns (fuzz_known.py) are counted apart.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="first seed; program k uses seed + k")
    parser.add_argument("--backend", action="append", help="repeatable; default: every CPU backend")
    parser.add_argument("--minimize", action="store_true", help="shrink each new kind of failure")
    parser.add_argument("--minimize-seconds", type=float, default=120.0)
    parser.add_argument("--out", type=Path, help="folder to write each failure's program into")
    parser.add_argument("--quiet", action="store_true")
    options = parser.parse_args(argv)

    import fuzz_campaign as campaign

    backends = options.backend or campaign.default_backends()
    summary = campaign.Campaign(backends, minimize=options.minimize, minimize_seconds=options.minimize_seconds,
                                out=options.out, log=None if options.quiet else print)
    started = time.monotonic()
    summary.run(range(options.seed, options.seed + options.count))
    print(summary.report(time.monotonic() - started))
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / ".ci"))
    from bootstrap import ensure_venv

    if "triton" in sys.argv:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: it decides at import
    ensure_venv(("test",))
    sys.path[:0] = [str(ROOT), str(HERE)]
    sys.exit(main(sys.argv[1:]))
