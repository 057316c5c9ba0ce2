"""A __del__ runs where plain Python runs it: when a compiled function deletes or rebinds the last
name of an object whose class has one, between the same two lines of the program."""
import numpy as np
import pytest

import dynamo
from semantics_helpers import BACKENDS, check_same

LOG: list = []


class Finalized:
    def __init__(self, tag):
        self.tag = tag

    def __del__(self):
        LOG.append(("del", self.tag))


def delete_then_rebind(x):
    first = Finalized(1)
    LOG.append("made")
    del first  # __del__ runs here in plain Python
    LOG.append("after del")
    second = Finalized(2)
    second = None  # and here
    LOG.append("end")
    return x + 1


def delete_a_list_of_finalized_objects(x):
    things = [Finalized(4), Finalized(5)]
    LOG.append("made")
    del things  # the list goes, and its items with it
    LOG.append("after del")
    return x + 2


def still_held_elsewhere(x):
    thing = Finalized(3)
    keep = [thing]
    del thing  # the list holds it: no __del__ here
    LOG.append("after del")
    return x - 1, len(keep)


def counted_instances(x):
    class Counted:
        count = 0

        def __new__(cls):
            cls.count += 1
            return object.__new__(cls)

        def __del__(self):
            type(self).count -= 1

    made = Counted()
    alive = Counted.count
    del made
    return alive, Counted.count, x + 1


def _steps(n):
    try:
        for q in range(n):
            yield q
    finally:
        LOG.append("generator finalized")


def generator_held_to_the_end(x):
    steps = _steps(3)   # a generator with a try block: the frame runs in Python up to line +2
    LOG.append(next(steps))
    LOG.append("after next")   # the frame's own code hands on to a resume function here
    with np.errstate(all="ignore"):
        y = x / 0
    LOG.append("after with")
    return y   # plain Python finalizes the generator after this line, as the frame ends


def generator_held_into_a_raise(x):
    steps = _steps(3)
    LOG.append(next(steps))
    LOG.append("after next")
    return x + missing_name  # noqa: F821 - the traceback holds the frame, and the generator with it


def generator_bound_in_a_try(x):
    try:   # bound on one path only: the hand-off after the try passes it on where it is bound
        steps = _steps(int(x[0]))
        LOG.append(next(steps))
    except ValueError:
        pass
    LOG.append("after try")
    return x + missing_name  # noqa: F821


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [delete_then_rebind, delete_a_list_of_finalized_objects, still_held_elsewhere,
                                counted_instances, generator_held_to_the_end, generator_held_into_a_raise,
                                generator_bound_in_a_try])
def test_del_runs_where_plain_python_runs_it(backend, fn):
    check_same(fn, lambda: (np.ones(2),), backend, observe=lambda: list(LOG), reset=LOG.clear)


def test_the_break_names_the_finalizer():
    report = dynamo.explain(delete_then_rebind)(np.ones(2))
    reasons = [str(reason) for reason in report.break_reasons]
    assert sum("may run its class's __del__ here" in reason for reason in reasons) == 2, reasons
