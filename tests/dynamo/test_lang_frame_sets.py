"""Sets and frozensets read from the frame (arguments, globals): read, iterated, combined and changed
by element in one graph; guarded only as far as the trace read them, so a set whose other elements
change between calls compiles once; the changes replayed on the real set in the program's order."""
import copy

import numpy as np

import dynamo
from support import assert_matches_python

X = np.linspace(0.0, 1.0, 4)


def graph_and_breaks(fn, *args):
    report = dynamo.explain(fn)(*copy.deepcopy(args))
    return report.graph_count, [str(b).splitlines()[0] for b in report.break_reasons]


def reads(x, s, f):
    return (x * len(s) + (3 in s) + sum(s) + max(f) + len(s | f) + len(s & {1, 2}), sorted(s), s.issubset(f),
            s.union(f), f.union(s), f.copy() is f, bool(s))


def changes(s, x):
    s.add(5)
    s.discard(1)
    s.discard(99)
    s.remove(2)
    return x + len(s) + (5 in s) + (1 in s) + (2 in s)


def iterates(s, x):
    out = []
    for e in s:
        out.append(x * e)
    return out, list(s), tuple(s), repr(s)


def test_frame_sets_compile_in_one_graph_like_plain():
    for fn, args in ((reads, (X, {1, 2, 3}, frozenset({2, 9}))), (changes, ({1, 2, 3}, X)),
                     (iterates, ({3, 1, 2, 40, 8}, X)), (iterates, (frozenset({"b", "a", "zz"}), 1))):
        assert_matches_python(fn, *args, expect_graph=True)
        assert graph_and_breaks(fn, *args)[1] == [], fn.__name__


def test_the_changes_replay_on_the_real_set_in_order():
    def grow(s, x):
        for k in (9, 1, 17, 25, 33):  # ints whose hashes collide in a small table: order shows the history
            s.add(k)
        s.discard(9)
        return x * len(s)

    compiled = dynamo.compile(grow)
    ours, plain = {1, 2}, {1, 2}
    for _ in range(2):
        assert np.array_equal(compiled(ours, X), grow(plain, X))
        assert list(ours) == list(plain)


def test_a_visited_set_compiles_once_while_its_other_elements_change():
    def visit(x, seen, k):
        if k in seen:
            return x * 0.0
        seen.add(k)
        return x * 2.0

    compiled = dynamo.compile(visit)
    ours, plain = {100, 200}, {100, 200}
    for extra in range(6):
        for seen in (ours, plain):
            seen.add(300 + extra)  # the program's other elements come and go
            seen.discard(7)
        assert np.array_equal(compiled(X, ours, 7), visit(X, plain, 7))
        assert list(ours) == list(plain)
    assert len(compiled._dynamo_callback.compiled_frames) == 1
    # guarded: the membership of 7, not the length or every element
    guards = [str(g) for g in dynamo.explain(visit)(X, {1, 2}, 7).guards]
    assert "(7 in L['seen']) is False" in guards
    assert not any("len(L['seen'])" in g or "list(L['seen'])" in g for g in guards)


def test_a_set_iterated_after_the_trace_changed_it_runs_in_python_and_is_right():
    def change_then_iterate(s):
        s.add(7)
        return [e * 2 for e in s]

    assert_matches_python(change_then_iterate, {1, 2, 3})
    assert any("after the trace changed it" in b for b in graph_and_breaks(change_then_iterate, {1, 2, 3})[1])


def test_new_contents_and_types_are_guarded():
    def total(s, x):
        return x * sum(s)

    compiled = dynamo.compile(total)
    for s in ({1, 2}, {1, 2, 3}, frozenset({1, 2}), {1.5, 2.5}):
        assert np.array_equal(compiled(s, X), total(s, X))
