"""What a program sees of itself is what plain Python shows: classes made with type() belong to
the caller's module, locals() and vars() hold the user's names only, a caught traceback's frame
is the function's own (and so is the frame of an exception made by a call that breaks the graph:
its f_back is the caller), and NameError's "Did you mean" hint survives `python -m dynamo run`."""
import os
import subprocess
import sys

import numpy as np
import pytest

from semantics_helpers import BACKENDS, check_same


def class_made_by_type(x):
    made = type("Made", (), {})
    return made.__module__, made.__qualname__, x + 1


def lambda_reads_its_locals_after_a_break(x):
    y = x + 1
    print(y.sum())
    read = lambda: sorted(locals())  # noqa: E731
    return read(), sorted(locals())


def caught_traceback_frame_is_the_functions(x):
    try:
        raise ValueError("caught")
    except ValueError as error:
        tb = error.__traceback__
    return tb.tb_frame is sys._getframe(), x + 1


def struct_sequences_keep_their_names(x):
    info = sys.float_info
    print(info.dig)
    return info.max, info, sys.version_info.major, x + 1


class FailsToInitialize(Exception):
    def __init__(self):
        # CPython's test_exceptions (testSettingException): the frame breaks at this call, with
        # nothing captured before it, and raises what the call made
        raise RuntimeError("cannot make it")


def raises_what_it_computed(y):
    y, z = y * 2, y  # a graph, then a break at the call that makes the exception
    raise ValueError("bad", z.sum(), y.sum())


def frames_of_the_traceback(x):
    y = x + 1
    outcomes = []
    for fail in (lambda: raises_what_it_computed(y), FailsToInitialize):
        try:
            fail()
        except (ValueError, RuntimeError) as error:
            tb = error.__traceback__
        frames = []
        while tb is not None:  # each frame once, with its line, called by the frame before it
            frames.append((tb.tb_frame.f_code.co_name, tb.tb_lineno, tb.tb_frame.f_back.f_code.co_name))
            raised_in = tb.tb_frame
            tb = tb.tb_next
        # its locals as they were at the raise (the transformed frame also has emptied temporaries)
        outcomes.append((frames, {k: v for k, v in raised_in.f_locals.items() if not k.startswith("___")}))
    return outcomes, y


CASES = [class_made_by_type, lambda_reads_its_locals_after_a_break, caught_traceback_frame_is_the_functions,
         struct_sequences_keep_their_names, frames_of_the_traceback]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", CASES, ids=[fn.__name__ for fn in CASES])
def test_introspection_matches_plain(fn, backend, capsys):
    check_same(fn, lambda: (np.ones(3),), backend)


def test_each_call_makes_a_new_class():
    import dynamo

    compiled = dynamo.compile(lambda x: (type("Made", (), {}), x + 1), backend="eager")
    assert compiled(np.ones(2))[0] is not compiled(np.ones(2))[0]


PROGRAM = """
import numpy as np

def f(x):
    value = x + 1
    return valeu * 2

f(np.ones(2))
"""


def test_name_error_hint_under_dynamo_run(tmp_path):
    script = tmp_path / "misspelled.py"
    script.write_text(PROGRAM)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root}
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    compiled = subprocess.run([sys.executable, "-m", "dynamo", "run", str(script)], capture_output=True, text=True,
                              timeout=120, env=env)
    assert plain.returncode == compiled.returncode == 1
    hint = "Did you mean: 'value'?"
    assert hint in plain.stderr and hint in compiled.stderr, compiled.stderr


def _divides_by_zero(x):
    y = x + 1
    return y, 1 / 0


def _lines_of_the_failure(fn):
    try:
        fn(np.ones(2))
    except ZeroDivisionError as error:
        tb, lines = error.__traceback__.tb_next, []
        while tb:
            lines.append((tb.tb_frame.f_code.co_name, tb.tb_lineno, tb.tb_frame.f_lineno))
            tb = tb.tb_next
        return lines
    raise AssertionError("no ZeroDivisionError")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_code_without_line_numbers_shows_none_compiled(backend):
    # CPython's test_exceptions (test_missing_lineno_shows_as_none): a function whose co_linetable says
    # "no location" for every instruction; its transformed code showed the first line instead of None
    import types

    import dynamo

    code = _divides_by_zero.__code__
    blank = code.replace(co_linetable=b"\xf8" * (len(code.co_code) // 2))   # one "no location" entry per unit
    fn = types.FunctionType(blank, globals(), "_divides_by_zero")
    expected = _lines_of_the_failure(fn)
    assert expected == [("_divides_by_zero", None, None)]
    dynamo.reset()
    compiled = dynamo.compile(fn, backend=backend)
    assert _lines_of_the_failure(compiled) == expected
    assert _lines_of_the_failure(compiled) == expected   # cached
