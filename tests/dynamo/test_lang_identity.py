"""Corpus: object identity of immutable values (strings, big ints, floats) through compiled frames:
`is` must see the objects plain Python sees, also after a graph break and on a cached call."""
import dynamo
from support import graph_breaks


def _break():
    print(end="")  # runs in Python: a graph break


def test_returned_argument_is_the_object_passed_on_a_cached_call():
    def identity(x):
        return x

    compiled = dynamo.compile(identity)
    for first, second in (("abc def", "".join(["abc", " def"])), (10**20, int("1" + "0" * 20)), (1.5, float("1.5"))):
        assert first == second and first is not second
        assert compiled(first) is first
        assert compiled(second) is second  # guarded by value: the first call's code must not return `first`


def test_argument_kept_across_a_graph_break_is_the_object_passed():
    def f(x):
        y = x
        _break()
        return y

    compiled = dynamo.compile(f)
    s1, s2 = "x y z", "".join(["x y", " z"])
    assert compiled(s1) is s1
    assert compiled(s2) is s2
    assert graph_breaks(compiled)


def test_computed_string_is_not_the_equal_literal():
    def f(op):
        a = b = "xyzpdq"
        c = a[:3] + b[3:]
        return a is c, a is b, c is c, op(a, c), op(a, b), a is not c

    import operator

    def python_is(x, y):
        return x is y

    for op in (operator.is_, python_is):
        expected = f(op)
        assert dynamo.compile(f)(op) == expected == (False, True, True, False, True, True)


def test_computed_string_passed_across_a_graph_break_stays_its_own_object():
    def f():
        a = "xyzpdq"
        c = "".join([a[:3], a[3:]])
        d = c
        _break()
        return a is c, c is d, c == a

    compiled = dynamo.compile(f)
    assert compiled() == f() == (False, True, True)
    assert graph_breaks(compiled)


class _Node:
    def __init__(self, i, owner):
        self.i = i
        self.owner = owner


def test_objects_made_while_tracing_that_reach_themselves(caplog):
    def f():
        heap = []
        heap.extend(_Node(i, heap) for i in range(3))
        _break()  # the nodes and the list lead to each other: they cannot be rebuilt
        return [n.i for n in heap], heap[0].owner is heap

    with caplog.at_level("WARNING", logger="dynamo"):
        assert dynamo.compile(f)() == f() == ([0, 1, 2], True)
    assert "internal error" not in caplog.text


def test_list_and_dict_made_while_tracing_that_contain_themselves(caplog):
    def f():
        lst = [1]
        lst.append(lst)
        d = {}
        d["me"] = d
        _break()
        return lst[1] is lst, len(lst), d["me"] is d

    with caplog.at_level("WARNING", logger="dynamo"):
        assert dynamo.compile(f)() == f() == (True, 2, True)
    assert "internal error" not in caplog.text


def test_enum_member_reached_by_attribute_alias_and_lookup_is_one_object():
    import enum

    class Level(enum.IntEnum):
        LOW = 1
        HIGH = 3
        TOP = 3  # an alias: the same member as HIGH

    def f(values):
        return (Level.TOP is Level(values[1]) is Level["TOP"], Level.TOP is Level["TOP"],
                Level.LOW is Level["TOP"], Level.HIGH is not Level["TOP"])

    assert dynamo.compile(f)([1, 3]) == f([1, 3]) == (True, True, False, False)


class _Plain:
    pass


class _WithInit:
    def __init__(self):
        pass


def test_a_slot_wrapper_read_from_the_frame_is_the_constant_it_is():
    # scikit-learn's _build_repr: `init is object.__init__` was False for a class without
    # __init__ (a frame value is never a constant, the rule said), so its repr listed *args
    def f(obj):
        init = type(obj).__init__
        _break()  # init comes back from the frame: a wrapper_descriptor object
        return init is object.__init__, init is not object.__init__, init == object.__init__, init != object.__init__

    compiled = dynamo.compile(f)
    for obj in (_Plain(), _WithInit(), _Plain()):
        assert compiled(obj) == f(obj)
