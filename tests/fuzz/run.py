"""Differential fuzzing campaign: random NumPy programs run plain and compiled on each backend.

Usage: python tests/fuzz/run.py --count N --seed S [--backend B ...] [--kind python] [--minimize] [--out DIR]
       python tests/fuzz/run.py --count N --seed S --workers 2 --journal FILE [--backend B ...]
       python tests/fuzz/run.py --summary FILE ...
With --journal the campaign runs in niced worker processes with a watchdog, resumes where the journal
stops, and appends one line per chunk of seeds (tests/fuzz/campaigns/ keeps the project's journals).
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
    parser.add_argument("--kind", choices=("numpy", "python"), default="numpy",
                        help="programs over NumPy arrays (default) or pure-Python programs (fuzz_python.py)")
    parser.add_argument("--minimize", action="store_true", help="shrink each new kind of failure")
    parser.add_argument("--minimize-seconds", type=float, default=120.0)
    parser.add_argument("--out", type=Path, help="folder to write each failure's program into")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--journal", type=Path, help="run in worker processes; resume from and append to FILE")
    parser.add_argument("--workers", type=int, default=2, help="worker processes with --journal (at most 2 here)")
    parser.add_argument("--summary", type=Path, nargs="+", help="print the programs run per backend in journals")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plain-only", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)

    import fuzz_parallel as parallel

    if options.summary:
        print(parallel.summary(options.summary))
        return 0
    if options.plain_only:   # the watchdog's question: does the plain program finish at all?
        from fuzz_campaign import generator
        from fuzz_harness import execute

        program = generator(options.kind)(options.seed)
        execute(program.source, program.arguments, None, str(options.seed))
        return 0

    import fuzz_campaign as campaign

    backends = options.backend or campaign.default_backends()
    seeds = range(options.seed, options.seed + options.count)
    if options.worker:
        return parallel.worker_main(backends, seeds, options.kind)
    if options.journal:
        started = time.monotonic()
        totals = parallel.run_parallel(backends, seeds, workers=options.workers, journal=options.journal,
                                       out=options.out, log=(lambda text: None) if options.quiet else print,
                                       kind=options.kind)
        print(f"{sum(totals.values())} program runs in {time.monotonic() - started:.0f} s: {dict(totals)}")
        print(parallel.summary([options.journal]))
        return 1 if totals["failure"] else 0
    summary = campaign.Campaign(backends, minimize=options.minimize, minimize_seconds=options.minimize_seconds,
                                out=options.out, log=None if options.quiet else print, kind=options.kind)
    started = time.monotonic()
    summary.run(seeds)
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
