"""Namedtuples (collections.namedtuple, typing.NamedTuple) read from the frame and made while tracing:
fields by name, tuple behaviour, _replace/_asdict, methods and properties of the class, match; compiled
vs plain, in one graph with no break."""
import collections
import typing

import numpy as np
import pytest

import dynamo
from support import assert_matches_python

Point = collections.namedtuple("Point", "x y z", defaults=(0.5,))


class State(typing.NamedTuple):
    pos: np.ndarray
    vel: np.ndarray
    dt: float = 0.1

    def energy(self):
        return 0.5 * (self.vel ** 2).sum()

    def step(self):
        return State(self.pos + self.dt * self.vel, self.vel, self.dt)

    @property
    def speed(self):
        return np.sqrt((self.vel ** 2).sum())

    @classmethod
    def at_rest(cls, pos):
        return cls(pos, pos * 0.0)


class Indexed(Point):  # its own __getitem__: its fields and its items differ; stays a user object
    __slots__ = ()

    def __getitem__(self, i):
        return 42


X = np.linspace(-1.0, 1.0, 5)


def breaks_of(fn, *args):
    report = dynamo.explain(fn)(*args)
    return report.graph_count, [str(b).splitlines()[0] for b in report.break_reasons]


def fields_items_and_unpacking(p):
    a, b, c = p
    return p.x * p.y + p[0] - len(p) + a * b * c, p[1:], p[:], type(p) is Point, isinstance(p, tuple)


def replace_asdict_and_defaults(p, x):
    q = p._replace(y=x * 2)
    d = q._asdict()
    return q, d["y"] + d["z"], Point._fields, Point(x, x), Point(y=1.0, x=x, z=3.0), p == Point(1.0, 2.0)


def time_steps(s):
    for _ in range(3):
        s = s.step()
    return s.pos, s.energy(), s.speed, s.dt, State.at_rest(s.pos)


def in_containers(points, x):
    total = x * 0
    for p in points:
        total = total + p.x * x + p.y
    return total, {p: i for i, p in enumerate(points)}, sorted(points), hash(points[0]) == hash(tuple(points[0]))


@pytest.mark.parametrize("backend", ["eager", "numpy"])
@pytest.mark.parametrize("program, args", [
    (fields_items_and_unpacking, (Point(X, X * 2, 3.0),)),
    (replace_asdict_and_defaults, (Point(1.0, 2.0), X)),
    (time_steps, (State(X, X + 1.0),)),
    (in_containers, ([Point(1.0, 2.0), Point(3.0, 4.0)], X)),
])
def test_namedtuples_compile_in_one_graph_like_plain(program, args, backend):
    assert_matches_python(program, *args, backend=backend, expect_graph=True)
    graphs, breaks = breaks_of(program, *args)
    assert (graphs, breaks) == (1, []), breaks


def matched(p):
    match p:
        case Point(x=0, y=y):
            return y
        case Point(x, y, z):
            return x + y + z


def test_match_on_namedtuples():
    for p in (Point(0, 5), Point(1, 5, 2)):
        assert_matches_python(matched, p)
        assert breaks_of(matched, p)[1] == []


def test_a_namedtuple_with_its_own_getitem_stays_an_object_and_is_right():
    def f(p):
        return p.x * 2, p[0]

    assert_matches_python(f, Indexed(X, X))


def test_new_field_values_on_later_calls_are_guarded():
    def f(p):
        return p.x * p.y

    compiled = dynamo.compile(f)
    for p in (Point(X, 2.0), Point(X, 3.0), Point(X[:3], 2.0), Point(2, 3)):
        assert repr(compiled(p)) == repr(f(p))

