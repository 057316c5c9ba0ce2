"""The program's own special methods run exactly as often compiled as plain: a key's __hash__
and __eq__ (dict and set operations, guards), a class's __getattribute__ (the trace's type checks)."""
import numpy as np
import pytest

from semantics_helpers import BACKENDS, check_same

CALLS: list = []


class Key:
    def __init__(self, value):
        self.value = value

    def __hash__(self):
        CALLS.append("hash")
        return hash(self.value)

    def __eq__(self, other):
        CALLS.append("eq")
        return isinstance(other, Key) and other.value == self.value


class Watched:
    def __getattribute__(self, name):
        CALLS.append(name)
        return object.__getattribute__(self, name)

    def scale(self):
        return 3


def set_then_read(d, k, x):
    d[k] = x
    return d[k] + 1


def setdefault_twice(d, k, x):
    d.setdefault(k, x * 2)
    d.setdefault(k, x * 3)
    return x + 1


def set_of_keys(k, x):
    s = {k, Key(2)}
    return len(s), x * 2


def method_of_a_watched_argument(w, x):
    return x * w.scale(), isinstance(w, Watched)


def method_of_a_new_watched_object(x):
    w = Watched()
    return x * w.scale()


CASES = [
    (set_then_read, lambda: ({}, Key(1), np.ones(2))),
    (set_then_read, lambda: ({Key(1): 0}, Key(1), np.ones(2))),
    (setdefault_twice, lambda: ({}, Key(1), np.ones(2))),
    (set_of_keys, lambda: (Key(1), np.ones(2))),
    (method_of_a_watched_argument, lambda: (Watched(), np.ones(2))),
    (method_of_a_new_watched_object, lambda: (np.ones(2),)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make_args", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_user_code_runs_as_often_as_plain(fn, make_args, backend):
    check_same(fn, make_args, backend, observe=lambda: list(CALLS), reset=CALLS.clear, calls=3)
