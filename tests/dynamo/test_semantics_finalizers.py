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


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [delete_then_rebind, delete_a_list_of_finalized_objects, still_held_elsewhere,
                                counted_instances])
def test_del_runs_where_plain_python_runs_it(backend, fn):
    check_same(fn, lambda: (np.ones(2),), backend, observe=lambda: list(LOG), reset=LOG.clear)


def test_the_break_names_the_finalizer():
    report = dynamo.explain(delete_then_rebind)(np.ones(2))
    reasons = [str(reason) for reason in report.break_reasons]
    assert sum("may run its class's __del__ here" in reason for reason in reasons) == 2, reasons
