"""Loops over an array that the loop body writes see each row when the loop reaches it (n-d: views, 1-d:
scalar copies), a closure's earlier read keeps the old value, a rebound iterable is walked as it was."""
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


def loop_over_a_cell_the_body_rebinds(x):
    # fuzz seed 2070669: the print's break leaves the rest of the loop to Python; its iterator was
    # rebuilt from the cell x after the replay of side effects had rebound it, so it walked the new x
    for v in x:
        x = x + 10
        print(v)

    def read():
        return x
    return v, read()


class Holder:
    def __init__(self):
        self.items = [1, 2, 3]


def loop_over_an_attribute_the_body_rebinds(holder):
    # the same through an attribute: the loop walks the list the attribute held when it started
    seen = []
    for v in holder.items:
        holder.items = holder.items[1:] + [v * 10]
        print(v)
        seen.append(v)
    return seen, holder.items


STORE = {}


def loop_over_an_argument_kept_in_a_dict(x):
    # fuzz seed 1180873 (triton; every backend): after the branch's break, x was known by the source
    # STORE[0], which the replay set to 1j before the print's break rebuilt the iterator from it
    STORE[0] = x
    if x.sum() > 100:
        pass
    STORE[0] = 1j
    for v in x:
        print(v)
    return v


ONE_D = lambda: (np.arange(4.0),)  # noqa: E731
TWO_D = lambda: (np.arange(6.0).reshape(3, 2),)  # noqa: E731
CASES = [(fn, make) for fn in (scale_while_iterating, add_reversed_rows, write_last_row, rows_after_a_print)
         for make in (ONE_D, TWO_D)]
CASES += [(closure_read_then_rebind, ONE_D), (closure_read_then_rebind_with_a_break, ONE_D),
          (loop_over_a_cell_the_body_rebinds, ONE_D), (loop_over_a_cell_the_body_rebinds, TWO_D),
          (loop_over_an_attribute_the_body_rebinds, lambda: (Holder(),)),
          (loop_over_an_argument_kept_in_a_dict, ONE_D), (loop_over_an_argument_kept_in_a_dict, TWO_D)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make_args", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_loop_sees_the_writes_of_its_body(fn, make_args, backend, capsys):
    check_same(fn, make_args, backend)
