"""`python -m dynamo run script.py [args]` runs a program with every frame compiled;
`python -m dynamo explain script.py [args]` also prints one report of what dynamo made of it."""
from __future__ import annotations

import argparse
import runpy
import sys

from . import api
from .explain import report_from


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynamo", description=__doc__)
    parser.add_argument("command", choices=("run", "explain"))
    parser.add_argument("--backend", default="numpy", help="backend name (default: numpy)")
    parser.add_argument("script", help="the Python program to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the program")
    options = parser.parse_args(argv)
    sys.argv = [options.script, *options.args]
    status = 0
    try:
        with api.enable(backend=options.backend):
            runpy.run_path(options.script, run_name="__main__")
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        if options.command == "explain":
            report = report_from(api.callback_for(options.backend, False, None))
            print(f"\n=== dynamo explain: {options.script} ===\n{report}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
