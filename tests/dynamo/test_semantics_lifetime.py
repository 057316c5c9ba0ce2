"""Objects live as long as in plain Python, the compiling call included (a weakref made before a
graph break dies with the frame, before its referent), and iterators keep their positions."""
import gc
import weakref

import numpy as np
import pytest

import dynamo
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



def cycle_through_an_iterator_then_collect(x):
    obj = Thing()
    ref = weakref.ref(obj)
    container = [obj, 1]
    obj.x = iter(container)  # obj -> iterator -> list -> obj: a cycle only the collector frees
    del obj, container
    gc.collect()  # a graph break: the objects the replay built must not outlive their names
    return ref() is None, x + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cycle_through_an_iterator_is_collected_at_a_break(backend):
    check_same(cycle_through_an_iterator_then_collect, lambda: (np.ones(2),), backend)


def dead_local_outlives_a_break(x):
    thing = Thing()
    ref = weakref.ref(thing)
    print(end="")  # a graph break: `thing` is never read again, but the frame still names it
    return ref() is None, x + 1


def dead_local_dies_when_assigned_after_a_break(x):
    things = [Thing()]
    ref = weakref.ref(things[0])
    print(end="")  # a graph break
    alive = ref() is not None
    things = None  # plain Python lets go here, not before the break nor at the return
    return alive, ref() is None, x * 2


def dead_argument_outlives_a_break(x, thing):
    ref = weakref.ref(thing)
    print(end="")
    return ref() is None, x - 1


def rebuilt_sets_keep_their_addresses(x):
    first = set(range(3))
    second = set(first)
    # `first` is dead after id(first) (a graph break), yet plain Python holds it: `second`
    # rebuilt after it must not take its address
    return id(first) != id(second), x + 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [dead_local_outlives_a_break, dead_local_dies_when_assigned_after_a_break,
                                rebuilt_sets_keep_their_addresses])
def test_a_dead_local_holds_its_object_as_in_plain_python(backend, fn):
    check_same(fn, lambda: (np.ones(2),), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dead_argument_holds_its_object_across_a_break(backend):
    check_same(dead_argument_outlives_a_break, lambda: (np.ones(2), Thing()), backend)


class Mapping(dict):
    pass


def keys_iterator(d):
    return iter(d.keys())  # d.keys, a builtin method bound to the argument, reaches a break


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_method_bound_to_an_argument_is_not_kept_by_the_cache(backend):
    compiled = dynamo.compile(keys_iterator, backend=backend)
    for _ in range(2):  # compiling call, then another object: the guard must not hold the first
        mapping = Mapping(a=1)
        ref = weakref.ref(mapping)
        assert list(compiled(mapping)) == list(keys_iterator(mapping)) == ["a"]
        del mapping
        gc.collect()
        assert ref() is None


def class_defined_then_deleted(x):
    # CPython's test_descr (test_remove_subclass): the cache entry's guards held the class made here
    class Parent:
        pass

    class Child(Parent):
        pass
    listed = Parent.__subclasses__() == [Child]
    child = weakref.ref(Child)
    del Child
    gc.collect()
    return listed, Parent.__subclasses__() == [], child() is None, x + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_class_made_by_the_call_is_freed_after_del(backend):
    check_same(class_defined_then_deleted, lambda: (np.ones(2),), backend, calls=3)


class NeverEqual:
    def __eq__(self, other):
        return False


def objects_counted_around_calls(x):
    # CPython's test_descr (test_slots): compiling __eq__ on its first call allocated objects the collector tracks
    g = NeverEqual()
    before = len(gc.get_objects())
    for _ in range(10):
        g == g  # noqa: B015
    return len(gc.get_objects()) - before, x + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_frame_that_lists_the_collectors_objects_sees_no_compiler_objects(backend):
    dynamo.reset()
    compiled = dynamo.compile(objects_counted_around_calls, backend=backend)
    expected = objects_counted_around_calls(np.ones(2))[0]
    assert expected == 0
    for _ in range(2):
        assert compiled(np.ones(2))[0] == expected
