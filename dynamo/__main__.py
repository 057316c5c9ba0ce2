"""`python -m dynamo run script.py [args]` runs a program with every frame compiled;
`python -m dynamo explain script.py [args]` also prints one report of what dynamo made of it
(to stderr, after the program's own output): every compiled function with its graphs and
breaks, the break reasons most frequent first, recompilations.
`python -m dynamo cache info` describes the on-disk cache (backend "c"), `cache clear` empties it."""
from __future__ import annotations

import argparse
import builtins
import os
import sys
import types
from typing import Any

from . import api
from .exc import InvalidBackend
from .explain import report_from


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["cache"]:
        return _cache_command(args[1:])
    parser = argparse.ArgumentParser(prog="python -m dynamo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("run", "explain"))
    parser.add_argument("--backend", default=None,
                        help="backend name (default: dynamo.config.default_backend, DYNAMO_BACKEND)")
    parser.add_argument("--html", metavar="PATH", help="explain: also write the report as an HTML page to PATH")
    parser.add_argument("script", help="the Python program to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the program")
    options = parser.parse_args(argv)
    if options.html and options.command != "explain":
        parser.error("--html goes with the explain command")
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
            _run_as_main(options.script)
    except SystemExit as exit_:
        status = _exit_status(exit_.code)
    except Exception as error:  # the program's own error: reported as Python would, exit status 1
        _print_user_traceback(error, options.script)
        status = 1
    finally:
        sys.stdout.flush()
        if options.command == "explain":
            report = report_from(_everything_compiled(callback))
            print(f"\n=== dynamo explain: {options.script} ===\n{report.format(guards=0)}", file=sys.stderr)
            if options.html:
                with open(options.html, "w", encoding="utf-8") as page:
                    page.write(report.to_html(title=f"dynamo explain: {options.script}"))
                print(f"=== HTML report written to {options.html} ===", file=sys.stderr)
    return status


def _everything_compiled(main_callback: Any) -> types.SimpleNamespace:
    """What every callback compiled, `enable()`'s first: the program's own `@dynamo.compile`
    functions have callbacks of their own, and the report covers them too."""
    callbacks = [main_callback, *(c for c in api._callbacks.values() if c is not main_callback)]
    return types.SimpleNamespace(compiled_frames=[f for c in callbacks for f in c.compiled_frames],
                                 recompiles=[r for c in callbacks for r in c.recompiles],
                                 given_up=[g for c in callbacks for g in c.given_up])


def _run_as_main(script: str) -> None:
    """Run the script as `python script.py` does: its code and `__file__` carry the absolute
    path while sys.argv[0] stays as typed (runpy.run_path would rewrite argv[0])."""
    path = os.path.abspath(script)
    with open(path, "rb") as source:
        code = compile(source.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __builtins__=builtins, __cached__=None)
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        sys.modules["__main__"] = saved


def _cache_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynamo cache",
                                     description="the on-disk cache of compiled C modules (backend 'c')")
    parser.add_argument("action", choices=("info", "clear"))
    options = parser.parse_args(argv)
    from .backends.c_cpu import diskcache
    if options.action == "info":
        found = diskcache.info()
        print(f"cache folder: {found['path']}\nC modules: {found['c_modules']}\nsize: {found['bytes']} bytes")
    else:
        removed = diskcache.clear()
        print(f"removed {removed} C modules from {diskcache.cache_root()}")
    return 0


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
    """The traceback from the script's frames on (not this module's)."""
    tb = error.__traceback__
    target = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != target:
        tb = tb.tb_next
    if tb is not None:
        error.__traceback__ = tb
    # the interpreter's own display: on 3.11 only it adds NameError's and AttributeError's
    # "Did you mean" hints (traceback.print_exception has them from 3.12 on)
    sys.__excepthook__(type(error), error, error.__traceback__)


if __name__ == "__main__":
    sys.exit(main())
