"""Frames whose trace made no graph and whose code is the original run as written for good, with no
guards (issue 16: a guarded `f(x) -> x` cost 3x a plain call), unless the trace computed on their inputs
or tested their types: arrays in those inputs would make a graph, so such frames keep their guards."""
import numpy as np

import dynamo
from dynamo import _C

from support import compile_with_counter, same_value


def compiled_versions(compiled, code):
    return sum(1 for c, _ in compiled._dynamo_callback.compiled_frames if c is code)


def run_both(fn, calls, **options):
    compiled, counter = compile_with_counter(fn, **options)
    for args in calls:
        want, got = fn(*args), compiled(*args)
        assert same_value(got, want), (got, want)
    return compiled, counter


def passes_through(x):
    return x


def test_a_frame_that_moves_values_runs_as_written_whatever_its_inputs():
    compiled, counter = run_both(passes_through, [(1.0,), (2.0,), ("s",), (np.arange(3.0),), (None,)] * 3)
    assert _C.is_skipped(passes_through.__code__)
    assert _C.cache_entries(passes_through.__code__) == []
    # traced once: the float's value (guarded before) and the other types call for no other version
    assert compiled_versions(compiled, passes_through.__code__) == 1
    assert counter.frame_count == 0
    report = dynamo.explain(passes_through)(1.0)  # (explain resets: traced afresh)
    assert report.frames == ["passes_through"] and report.graph_count == 0 and not report.guards


class Holder:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value


def test_a_method_that_reads_an_attribute_runs_as_written():
    objects = [Holder(1.5), Holder("s"), Holder(np.ones(2)), Holder(None)]
    compiled, counter = run_both(Holder.get, [(h,) for h in objects] * 2)
    assert _C.is_skipped(Holder.get.__code__) and compiled_versions(compiled, Holder.get.__code__) == 1
    assert counter.frame_count == 0


def rebuilds(table, key):
    return [table[key], key]


def test_code_the_trace_rewrote_keeps_its_guards():
    # the list is rebuilt from the table's item: not the original code, so its entry stays
    compiled, counter = run_both(rebuilds, [({"a": 1.5}, "a"), ({"a": 1.5}, "a")])
    assert not _C.is_skipped(rebuilds.__code__) and len(_C.cache_entries(rebuilds.__code__)) == 1
    assert counter.frame_count == 0


def scales(x):
    return x * 2.0 + 1.0


def test_arithmetic_on_an_input_keeps_the_guards_so_arrays_still_compile():
    compiled, counter = run_both(scales, [(3.0,), (np.arange(4.0),), (np.arange(4.0),)])
    assert not _C.is_skipped(scales.__code__)
    assert compiled_versions(compiled, scales.__code__) == 2  # the float (no graph), then the array
    assert counter.frame_count == 1


def sines_of_arrays(x):
    if isinstance(x, np.ndarray):
        return np.sin(x)
    return x


def test_a_type_test_on_an_input_keeps_the_guards():
    compiled, counter = run_both(sines_of_arrays, [("text",), (np.arange(4.0),), ("other",), (np.arange(4.0),)])
    assert not _C.is_skipped(sines_of_arrays.__code__)
    assert counter.frame_count == 1


def totals(values):
    return sum(values)


def test_a_sum_of_a_list_keeps_the_guards():
    compiled, counter = run_both(totals, [([1.0, 2.0],), (np.arange(4.0),)])
    assert not _C.is_skipped(totals.__code__)
    assert counter.frame_count == 1


def numpy_on_a_number(x):
    return np.sqrt(x)


def test_a_numpy_call_on_an_input_keeps_the_guards():
    compiled, counter = run_both(numpy_on_a_number, [(4.0,), (np.arange(4.0),)])
    assert not _C.is_skipped(numpy_on_a_number.__code__)
    assert counter.frame_count == 1


def test_after_reset_the_frame_is_traced_again():
    compiled, _ = run_both(passes_through, [(1.0,)])
    assert _C.is_skipped(passes_through.__code__)
    dynamo.reset()
    assert not _C.is_skipped(passes_through.__code__)
    compiled, _ = run_both(passes_through, [(2.0,)])
    assert compiled_versions(compiled, passes_through.__code__) == 1
