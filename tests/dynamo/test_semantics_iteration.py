"""Loops over an array that the loop body writes see each row when the loop reaches it (views of
an n-d array, scalar copies of a 1-d one), and a closure's earlier read keeps the old value."""
import numpy as np
import pytest

from semantics_helpers import BACKENDS, check_same


def scale_while_iterating(x):
    kept = []
    for v in x:
        x *= 2
        kept.append(v)
    return kept, v


def add_reversed_rows(x):
    kept = []
    for row in x:
        x[::-1] += row
        kept.append(np.copy(row))
    return kept, row


def write_last_row(x):
    kept = []
    for row in x:
        x[-1] = row
        kept.append(row)
    return kept, row, x


def rows_after_a_print(x):
    kept = []
    for row in x:
        x *= 2
        kept.append(row)
    print(row)
    return kept, row


def closure_read_then_rebind(z):
    v = (lambda: z)()
    z = z.mean()
    return v, z


def closure_read_then_rebind_with_a_break(z):
    v = (lambda: z)()
    z = z.mean()
    print(v)
    return v, z


ONE_D = lambda: (np.arange(4.0),)  # noqa: E731
TWO_D = lambda: (np.arange(6.0).reshape(3, 2),)  # noqa: E731
CASES = [(fn, make) for fn in (scale_while_iterating, add_reversed_rows, write_last_row, rows_after_a_print)
         for make in (ONE_D, TWO_D)]
CASES += [(closure_read_then_rebind, ONE_D), (closure_read_then_rebind_with_a_break, ONE_D)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make_args", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_loop_sees_the_writes_of_its_body(fn, make_args, backend, capsys):
    check_same(fn, make_args, backend)
