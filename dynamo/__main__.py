"""`python -m dynamo run script.py [args]` runs a program with every frame compiled;
`python -m dynamo explain script.py [args]` also prints one report of what dynamo made of it
(to stderr, after the program's own output): every compiled function with its graphs and
breaks, the break reasons most frequent first, recompilations."""
from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback

from . import api
from .exc import InvalidBackend
from .explain import report_from


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynamo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("run", "explain"))
    parser.add_argument("--backend", default="numpy", help="backend name (default: numpy)")
    parser.add_argument("script", help="the Python program to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the program")
    options = parser.parse_args(argv)
    if not os.path.isfile(options.script):
        parser.error(f"no such file: {options.script}")
    try:
        callback = api.callback_for(options.backend, False, None)
    except InvalidBackend as error:  # before the program starts
        parser.error(str(error))
    # as `python script.py` would: argv, and the script's directory first on the import path
    sys.argv = [options.script, *options.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(options.script)))
    status = 0
    try:
        with api.enable(backend=options.backend):
            runpy.run_path(options.script, run_name="__main__")
    except SystemExit as exit_:
        status = _exit_status(exit_.code)
    except Exception as error:  # the program's own error: reported as Python would, exit status 1
        _print_user_traceback(error, options.script)
        status = 1
    finally:
        sys.stdout.flush()
        if options.command == "explain":
            report = report_from(callback)
            print(f"\n=== dynamo explain: {options.script} ===\n{report.format(guards=0)}", file=sys.stderr)
    return status


def _exit_status(code: object) -> int:
    """What the interpreter makes of SystemExit(code): None is 0, an int is itself, anything
    else is printed to stderr and gives 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_user_traceback(error: BaseException, script: str) -> None:
    """The traceback from the script's frames on (not runpy's or this module's)."""
    tb = error.__traceback__
    target = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != target:
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb if tb is not None else error.__traceback__)


if __name__ == "__main__":
    sys.exit(main())
