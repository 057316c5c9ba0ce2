"""Timed turns (config.timed_turns): a new compiled version and the original code take turns on
the first calls, each timed; a version slower than the original is dropped for it, and explain
says so. Results are the same whichever code runs."""
import io
import time

import numpy as np
import pytest

import dynamo
from dynamo import _C
from dynamo.explain import report_from

from support import same_value


@pytest.fixture(autouse=True)
def timed_turns():
    with dynamo.config.patch(timed_turns=16):
        yield


def slow_backend(graph_module, example_inputs):
    def run(*args):
        time.sleep(0.002)  # far slower than the few operations it replaces
        return graph_module.forward(*args)
    return run


def affine(x):
    return x * 2.0 + 1.0


def test_a_version_slower_than_the_original_is_dropped():
    compiled = dynamo.compile(affine, backend=slow_backend)
    x = np.arange(4.0)
    for _ in range(dynamo.config.timed_turns + 2):
        assert same_value(compiled(x), affine(x))
    (entry,) = _C.cache_entries(affine.__code__)
    assert entry.dropped and entry.in_place and entry.probe == 0
    assert _C.is_skipped(affine.__code__)  # its only version dropped: no guards checked first
    assert entry.best_compiled > entry.best_original > 0.0
    text = str(report_from(compiled._dynamo_callback))
    assert "Dropped for the original code (slower than it per call, timed in turns):" in text
    assert "affine:" in text.split("Dropped for the original code")[1]
    assert same_value(compiled(x), affine(x))  # the original now (test_a_version_slower_by_the_clock...)


def test_turns_alternate_between_the_compiled_and_the_original_code():
    calls = []

    def counting_backend(graph_module, example_inputs):
        def run(*args):
            calls.append(1)
            return graph_module.forward(*args)
        return run

    with dynamo.config.patch(timed_turns=6):
        compiled = dynamo.compile(affine, backend=counting_backend)
        x = np.arange(3.0)
        for _ in range(6):
            assert same_value(compiled(x), affine(x))
    # the compiled code on turns 1, 3, 5; from the second pair on every call if it was clearly faster
    assert 3 <= len(calls) <= 5, calls


def test_no_turns_when_disabled():
    with dynamo.config.patch(timed_turns=0):
        compiled = dynamo.compile(affine, backend=slow_backend)
        x = np.arange(4.0)
        for _ in range(4):
            assert same_value(compiled(x), affine(x))
    (entry,) = _C.cache_entries(affine.__code__)
    assert not entry.dropped and entry.probe == 0 and entry.hits >= 3


class FakeClock:
    """The time timed turns read: about a microsecond per reading, plus what a backend spends."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 2.0 ** -20  # exact sums: the times compare as intended
        return self.now


@pytest.fixture
def clock():
    fake = FakeClock()
    _C.set_turn_timer(fake)
    yield fake
    _C.set_turn_timer(None)


def backend_costing(clock, cost, calls):
    """A backend whose compiled code takes cost[0] seconds of the fake clock per call."""
    def backend(graph_module, example_inputs):
        def run(*args):
            calls.append(1)
            clock.now += cost[0]
            return graph_module.forward(*args)
        return run
    return backend


def test_a_version_slower_by_the_clock_is_dropped_and_explain_gives_both_times(clock):
    calls = []
    compiled = dynamo.compile(affine, backend=backend_costing(clock, [1.0], calls))
    x = np.arange(4.0)
    for _ in range(dynamo.config.timed_turns + 3):
        assert same_value(compiled(x), affine(x))
    (entry,) = _C.cache_entries(affine.__code__)
    assert entry.dropped and entry.probe == 0 and _C.is_skipped(affine.__code__)
    assert len(calls) == dynamo.config.timed_turns // 2  # its turns only: none once dropped
    assert entry.best_original == 2.0 ** -20 and entry.best_compiled == 1.0 + 2.0 ** -20
    text = str(report_from(compiled._dynamo_callback))
    assert "affine: 1000001.0 us per call compiled, 1.0 us as written" in text


def test_a_version_as_fast_as_the_original_is_kept(clock):
    calls = []
    compiled = dynamo.compile(affine, backend=backend_costing(clock, [0.0], calls))
    x = np.arange(4.0)
    for _ in range(dynamo.config.timed_turns + 4):
        assert same_value(compiled(x), affine(x))
    (entry,) = _C.cache_entries(affine.__code__)
    assert not entry.dropped and entry.probe == 0 and not _C.is_skipped(affine.__code__)
    assert len(calls) == dynamo.config.timed_turns // 2 + 4  # after its turns, every call


def test_a_dropped_version_is_timed_again_after_recheck_calls(clock):
    calls, cost = [], [1.0]
    with dynamo.config.patch(timed_turns=4, timed_turns_recheck=10):
        compiled = dynamo.compile(affine, backend=backend_costing(clock, cost, calls))
        x = np.arange(4.0)
        for _ in range(4):
            assert same_value(compiled(x), affine(x))
        (entry,) = _C.cache_entries(affine.__code__)
        assert entry.dropped and _C.is_skipped(affine.__code__) and len(calls) == 2
        cost[0] = 0.0  # larger inputs, say: the compiled code now pays
        for _ in range(9):
            assert same_value(compiled(x), affine(x))
        assert entry.dropped and len(calls) == 2  # not yet
        for _ in range(4 + 3):  # the tenth call takes turns again, then the kept version runs
            assert same_value(compiled(x), affine(x))
    assert not entry.dropped and not _C.is_skipped(affine.__code__)
    assert len(calls) == 2 + 2 + 3 and entry.recheck == 40  # four times later next time


def test_a_dropped_version_that_stays_slower_is_timed_again_ever_later(clock):
    calls = []
    with dynamo.config.patch(timed_turns=2, timed_turns_recheck=3):
        compiled = dynamo.compile(affine, backend=backend_costing(clock, [1.0], calls))
        x = np.arange(4.0)
        for _ in range(2 + 3 + 2 + 12 + 1):
            assert same_value(compiled(x), affine(x))
    (entry,) = _C.cache_entries(affine.__code__)
    assert entry.dropped and entry.recheck == 48 and len(calls) == 3  # measured at calls 1, 5 and 18


def test_original_turns_and_a_dropped_version_compile_nothing_the_compiled_code_inlined(clock):
    def helper(v):
        return v * 3.0

    def outer(v):
        return helper(v) + 1.0

    compiled = dynamo.compile(outer, backend=backend_costing(clock, [1.0], []))
    x = np.arange(5.0)
    for _ in range(dynamo.config.timed_turns + 4):  # its turns, then plain Python, helper included
        assert same_value(compiled(x), outer(x))
    assert _C.is_skipped(outer.__code__)
    assert [code.co_name for code, _ in compiled._dynamo_callback.compiled_frames] == ["outer"]


# ---- alternation is invisible: the same results and side effects whichever code runs ----

def log_and_scale(values, log):
    log.append(len(values))
    print("scaling", len(values))  # a graph break
    values *= 2.0
    return values.sum()


counter = {"n": 0}


def bump_global(x):
    counter["n"] += 1
    y = x + counter["n"]
    if y.sum() > 0:  # a branch on a value: a graph break and a resume function
        return y * 2
    return y


@pytest.mark.parametrize("program", [log_and_scale, bump_global])
def test_every_turn_gives_what_plain_python_gives(program, capsys):
    compiled = dynamo.compile(program)
    for call in range(dynamo.config.timed_turns + 6):
        counter["n"] = call
        if program is log_and_scale:
            mine, theirs = np.arange(6.0) + call, np.arange(6.0) + call
            log_mine, log_theirs = [], []
            assert same_value(compiled(mine, log_mine), program(theirs, log_theirs))
            assert same_value(mine, theirs) and log_mine == log_theirs
        else:
            got = compiled(np.arange(3.0) - 1.0)
            assert counter["n"] == call + 1
            counter["n"] = call
            assert same_value(got, program(np.arange(3.0) - 1.0))
    out = capsys.readouterr().out.splitlines()
    assert len(out) % 2 == 0 and out[0::2] == out[1::2]


def test_versions_that_never_ran_again_are_dropped_with_a_slower_one(clock):
    calls = []
    compiled = dynamo.compile(affine, backend=backend_costing(clock, [1.0], calls))
    compiled(np.arange(4.0))  # a version for four items that is never called again
    x = np.arange(5.0)
    for _ in range(dynamo.config.timed_turns + 2):
        assert same_value(compiled(x), affine(x))
    entries = _C.cache_entries(affine.__code__)
    assert len(entries) == 2 and all(e.dropped for e in entries) and _C.is_skipped(affine.__code__)
    text = str(report_from(compiled._dynamo_callback))
    assert "affine: a version that never ran after the call that compiled it" in text


class Vec:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __add__(self, other):
        return Vec(self.x + other.x, self.y + other.y)

    def __mul__(self, s):
        return Vec(self.x * s, self.y * s)


class Particle:
    def __init__(self, pos, vel):
        self.pos, self.vel = pos, vel


def move(p, dt):
    force = Vec(-p.pos.x, -p.pos.y) * 0.5
    p.vel = (p.vel + force * dt) * 0.99
    p.pos = p.pos + p.vel * dt


def swarm():
    rng = np.random.default_rng(2)
    return [Particle(Vec(*rng.standard_normal(2)), Vec(0.0, 0.0)) for _ in range(6)]


def test_a_particle_update_dropped_for_plain_python_moves_every_particle_the_same(clock):
    compiled = dynamo.compile(move, backend=backend_costing(clock, [1.0], []))
    mine, theirs = swarm(), swarm()
    for _ in range(12):  # 72 calls: turns of each version, drops, then plain Python
        for p, q in zip(mine, theirs):
            compiled(p, 0.01)
            move(q, 0.01)
            assert same_value((p.pos.x, p.pos.y, p.vel.x, p.vel.y), (q.pos.x, q.pos.y, q.vel.x, q.vel.y))
    names = [code.co_name for code, _ in compiled._dynamo_callback.compiled_frames]
    # specialized on the first float, then every float as an input: velocities that start as 0.0
    # and are np.float64 after one step hit the same version (a float or an np.float64)
    assert names == ["move"] * 2
    assert _C.is_skipped(move.__code__) and all(e.dropped for e in _C.cache_entries(move.__code__))


def test_retime_measures_a_dropped_version_again():
    compiled = dynamo.compile(affine, backend=slow_backend)
    x = np.arange(4.0)
    for _ in range(dynamo.config.timed_turns + 2):
        compiled(x)
    (entry,) = _C.cache_entries(affine.__code__)
    assert entry.dropped and _C.is_skipped(affine.__code__)
    _C.retime(affine.__code__, compiled._dynamo_callback)  # what a graph moving to another backend does
    (entry,) = _C.cache_entries(affine.__code__)
    assert not entry.dropped and not entry.in_place and entry.probe == dynamo.config.timed_turns
    assert not _C.is_skipped(affine.__code__)
    for _ in range(dynamo.config.timed_turns + 2):
        assert same_value(compiled(x), affine(x))
    assert _C.cache_entries(affine.__code__)[0].dropped  # still slower: dropped again


class SteppedClock(FakeClock):
    """A fake clock whose readings number `slow` (counted from 1) come `extra` seconds later."""

    def __init__(self, slow, extra):
        super().__init__()
        self.readings, self.slow, self.extra = 0, slow, extra

    def __call__(self):
        self.readings += 1
        if self.readings in self.slow:
            self.now += self.extra
        return super().__call__()


def test_one_slow_first_call_of_the_original_does_not_end_the_turns_early():
    # the original's first turn is often slow (CPython's specialization, NumPy's first use of a
    # loop): alone it made a compiled version that is not faster look twice as fast, and kept it
    clock = SteppedClock(slow={4}, extra=1.0)  # readings 3 and 4 time the first original turn
    _C.set_turn_timer(clock)
    try:
        calls = []
        compiled = dynamo.compile(affine, backend=backend_costing(clock, [2.0 ** -19], calls))
        x = np.arange(4.0)
        for _ in range(3):
            assert same_value(compiled(x), affine(x))
        (entry,) = _C.cache_entries(affine.__code__)
        assert entry.best_original > 2.0 * entry.best_compiled and entry.probe == dynamo.config.timed_turns - 3
        for _ in range(dynamo.config.timed_turns):
            assert same_value(compiled(x), affine(x))
        # the later turns of the original were as fast as the compiled code's: it is dropped
        assert entry.dropped and entry.best_original < entry.best_compiled and _C.is_skipped(affine.__code__)
    finally:
        _C.set_turn_timer(None)


def scaled_with_a_log_line(x, log):
    y = x * 2.0
    print("scaled", len(x), file=log)  # a graph break: the rest is a resume function
    return y + 1.0


def test_resume_functions_run_compiled_in_the_compiled_turns_of_their_frame(clock):
    # a compiled turn times the version on the whole (as the original turn times the whole
    # function run plain): the resume functions it calls take no turns of their own meanwhile
    runs = {}

    def counting(graph_module, example_inputs):
        index = len(runs)
        runs[index] = 0

        def run(*args):
            runs[index] += 1
            return graph_module.forward(*args)
        return run

    compiled = dynamo.compile(scaled_with_a_log_line, backend=counting)
    x, log, plain_log = np.arange(3.0), io.StringIO(), io.StringIO()
    turns = dynamo.config.timed_turns
    for _ in range(turns):
        assert same_value(compiled(x, log), scaled_with_a_log_line(x, plain_log))
    (frame_entry,) = _C.cache_entries(scaled_with_a_log_line.__code__)
    resume_codes = [code for code, _ in compiled._dynamo_callback.compiled_frames
                    if code is not scaled_with_a_log_line.__code__]
    (resume_entry,) = _C.cache_entries(resume_codes[0])
    assert runs == {0: turns // 2, 1: turns // 2}  # each compiled turn ran both graphs
    assert frame_entry.probe == 0 and not frame_entry.dropped  # as fast by the fake clock: kept
    assert resume_entry.probe == turns and resume_entry.hits == turns // 2 - 1  # no turn taken (its first call compiled it)
    for _ in range(turns):  # the frame keeps its version: the resume function now takes its turns
        assert same_value(compiled(x, log), scaled_with_a_log_line(x, plain_log))
    assert resume_entry.probe == 0 and runs[0] == turns // 2 + turns and runs[1] == turns // 2 + turns // 2
    assert log.getvalue() == plain_log.getvalue()
