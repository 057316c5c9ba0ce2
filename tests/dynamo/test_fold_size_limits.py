"""Huge Python values are never built while tracing: repetition, powers, padding and walks of long
ranges run in Python past config.fold_size_limit, long containers read from the frame past
config.container_size_limit."""
import numpy as np
import pytest

import dynamo
from support import assert_matches_python, graph_breaks


def _breaks_for_size(fn, *args):
    dynamo.reset()  # a fresh compile: the reasons recorded are this call's
    compiled = dynamo.compile(fn, backend="eager")
    assert_matches_python(fn, *args)
    compiled(*args)
    return [b for b in graph_breaks(compiled) if "fold_size_limit" in b]


def test_repeating_a_tuple_of_arrays_past_the_limit_runs_in_python():
    def f(a, n):
        many = (a,) * n
        return len(many), many[-1] is a, a * 2

    assert _breaks_for_size(f, np.arange(3.0), 10**7)  # 10M trackers would take minutes
    with dynamo.config.patch(fold_size_limit=50):
        assert _breaks_for_size(f, np.arange(3.0), 51)
        assert not _breaks_for_size(f, np.arange(3.0), 50)


@pytest.mark.parametrize("n", [3, 5000])
def test_constant_operations_that_grow_with_their_operands(n):
    def f(n):
        text = "ab" * n
        return len(text), 7 ** n % 1000, (1 << n) % 97, "x".rjust(n)[-2:], len([0] * n), sum(range(n))

    with dynamo.config.patch(fold_size_limit=1000):
        assert bool(_breaks_for_size(f, n)) == (n > 1000)


def test_in_place_repetition_of_a_list_checks_the_size_first():
    def f(a, n):
        items = [a, a]
        items *= n
        return len(items), items[0] is items[-1]

    with dynamo.config.patch(fold_size_limit=100):
        assert _breaks_for_size(f, np.ones(2), 60)
        assert not _breaks_for_size(f, np.ones(2), 50)


def test_long_containers_in_the_frame_are_not_traced_item_by_item():
    def f(values, a):
        return len(values), a + 1

    with dynamo.config.patch(container_size_limit=100):
        for values in ([1.5] * 101, tuple(range(101)), {i: i for i in range(101)}):
            assert_matches_python(f, values, np.arange(2))
        compiled = dynamo.compile(f, backend="eager")
        compiled(list(range(101)), np.arange(2))
        assert any("container_size_limit" in str(reason) for _, frame in compiled._dynamo_callback.compiled_frames
                   for reason in [frame.fallback_reason, *frame.breaks] if reason is not None)
