"""Calls that read the calling function's locals by name (eval, exec, locals, vars): they see every
local with its value, and no name of dynamo's own, after a graph break as in plain Python."""
import sys

import numpy as np

import dynamo

from support import assert_matches_python


def test_eval_sees_locals_that_only_the_string_reads():
    def f(a, text):
        width = 4 + 3            # read by nothing but the string
        doubled = a * 2
        return eval(text) + 1

    assert_matches_python(f, np.ones(2), "np.arange(width) * doubled[0]")


def test_locals_and_vars_list_the_users_names_only():
    def f(a, n):
        shift = n + 1
        b = a + shift
        return sorted(locals()), sorted(vars()), b

    assert_matches_python(f, np.arange(3.0), 2)


def test_exec_reads_locals_after_a_data_dependent_branch():
    def f(a, code):
        scale = 2.0
        b = a * scale
        if b.sum() > 0:
            scale = scale + 1
        found = {}
        exec(code, globals(), {"found": found, **locals()})
        return found["value"], sorted(locals())

    assert_matches_python(f, np.ones(3), "found['value'] = scale * 10")
    assert_matches_python(f, -np.ones(3), "found['value'] = scale * 10")


def test_a_frame_object_reads_the_callers_locals():
    def f(a):
        marker = "here"
        b = a - 1
        return sys._getframe().f_locals["marker"], b

    assert_matches_python(f, np.arange(2.0))


def test_reference_counts_read_in_a_generator_expression():
    def f(objects):
        before = [sys.getrefcount(o) for o in objects]
        table = np.array(objects)
        taken = table.take(np.array([1, 0]))
        del table, taken
        return before == [sys.getrefcount(o) for o in objects]

    objects = [object() for _ in range(3)]
    assert f(objects) is True
    assert dynamo.compile(f)(objects) is True
