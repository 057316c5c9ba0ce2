"""Objects live as long as in plain Python, the compiling call included (a weakref made before a
graph break dies with the frame, before its referent), and iterators keep their positions."""
import weakref

import numpy as np
import pytest

from semantics_helpers import BACKENDS, check_same

EVENTS: list = []


class Thing:
    pass


def on_death(ref):
    EVENTS.append("referent died with the weakref alive")


def weakref_then_del(x, thing):
    ref = weakref.ref(thing, on_death)
    del thing
    EVENTS.append("after del")
    return x + 1, ref is not None


def zip_then_next(x):
    it = iter([1, 2, 3])
    pairs = list(zip(it, [10]))
    return pairs, next(it), x * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_weakref_dies_with_the_frame_on_the_compiling_call(backend):
    # each call's Thing dies when the next call's arguments replace it: after reset(), seen then
    check_same(weakref_then_del, lambda: (np.ones(2), Thing()), backend, observe=lambda: list(EVENTS),
               reset=EVENTS.clear, calls=3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_iterator_keeps_its_position_after_zip(backend):
    check_same(zip_then_next, lambda: (np.ones(2),), backend)

