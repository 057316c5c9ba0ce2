"""backend="tiered": graphs start on the numpy backend and move to "c" once they have run long enough
(backends/tiered.py): results bitwise equal before and after the swap, cold graphs never compile C, no
compiler keeps numpy silently, threads calling through the swap, explain's tiers, enable() and the
pytest plugin, a fork and an exit with a compile in flight."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import dynamo
from dynamo import config
from dynamo.backends import registry, tiered

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One private disk cache for this module's C modules (the compiler probe runs once)."""
    return tmp_path_factory.mktemp("tiered-cache")


@pytest.fixture(autouse=True)
def private_cache(cache_dir):
    with config.patch(cache_dir=str(cache_dir)):
        yield
    assert tiered.wait_for_tier_ups(60)  # no compile of one test runs into the next


def fresh(source: str, name: str = "f"):
    """A function of its own code object (cache entries are per code)."""
    namespace = {"np": np}
    exec(textwrap.dedent(source), namespace)
    return namespace[name]


def tier_of(compiled_fn) -> tiered.TieredGraph:
    callback = dynamo.api.callback_for("tiered", False, None)
    tiers = [graph.compiled_fn._dynamo_fn.tier for code, frame in callback.compiled_frames
             if code is compiled_fn._dynamo_fn.__code__ for graph in frame.graphs]
    assert len(tiers) == 1, tiers
    return tiers[0]


def bits(x) -> bytes:
    return np.ascontiguousarray(x).tobytes()


CHAIN = """
def f(x, y):
    return np.sqrt(x * y + 1.5) - x / 3.0
"""


def test_a_hot_graph_moves_to_c_and_gives_the_same_bits():
    f = fresh(CHAIN)
    x, y = np.linspace(0.0, 3.0, 1001), np.linspace(-1.0, 1.0, 1001)
    expected = bits(f(x, y))
    compiled = dynamo.compile(f, backend="tiered")
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=False):
        first = compiled(x, y)  # due at its first call: compiled for c in this call, then run on it
    tier = tier_of(compiled)
    assert tier.state == tiered.C and tier.c_fn is not None
    assert bits(first) == expected
    for _ in range(3):
        assert bits(compiled(x, y)) == expected


def test_the_swap_in_the_background_keeps_every_result():
    f = fresh(CHAIN)
    x, y = np.linspace(0.0, 3.0, 1001), np.linspace(-1.0, 1.0, 1001)
    expected = bits(f(x, y))
    compiled = dynamo.compile(f, backend="tiered")
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=True):  # (the suite's default: in the due call)
        results = [compiled(x, y) for _ in range(3)]
        tier = tier_of(compiled)
        assert tier.state in (tiered.COMPILING, tiered.C)
        assert tiered.wait_for_tier_ups(60)
        results += [compiled(x, y) for _ in range(3)]
    assert tier.state == tiered.C
    assert all(bits(r) == expected for r in results)


def test_a_cold_graph_never_compiles_c():
    f = fresh(CHAIN)
    compiles = registry.lookup_backend("c").compiles
    compiled = dynamo.compile(f, backend="tiered")
    x = np.ones(8)
    with config.patch(tier_up_seconds=60.0):
        for _ in range(50):
            compiled(x, x)
    tier = tier_of(compiled)
    assert tier.state == tiered.NUMPY and 0.0 < tier.spent < 60.0
    assert tiered.wait_for_tier_ups(0) and registry.lookup_backend("c").compiles == compiles
    assert "numpy (" in tier.describe()


def test_a_graph_built_for_c_before_is_due_almost_at_once(tmp_path):
    f = fresh(CHAIN)
    x = np.ones(16)
    with config.patch(cache_dir=str(tmp_path), tier_up_seconds=0.0, tier_up_in_background=False):
        dynamo.compile(f, backend="tiered")(x, x)
    dynamo.reset()
    with config.patch(cache_dir=str(tmp_path), tier_up_seconds=30.0, tier_up_cached_seconds=0.001):
        compiled = dynamo.compile(f, backend="tiered")
        compiled(x, x)
        assert tier_of(compiled).budget == 0.001  # its marker is on disk: a load, not a compile, to pay for


def test_no_compiler_stays_on_numpy_without_an_error(tmp_path):
    f = fresh(CHAIN)
    x, y = np.linspace(0.0, 3.0, 11), np.linspace(-1.0, 1.0, 11)
    expected = bits(f(x, y))
    compiled = dynamo.compile(f, backend="tiered")
    with config.patch(c_compiler=str(tmp_path / "no-such-cc"), tier_up_seconds=0.0, tier_up_in_background=False):
        results = [compiled(x, y) for _ in range(3)]
        tier = tier_of(compiled)
        assert tier.state == tiered.STAYED and "no C compiler" in tier.describe()
        assert all(bits(r) == expected for r in results)
        report = dynamo.explain(fresh(CHAIN), backend="tiered")(x, y)  # a later graph stays at once
        assert "tier: stayed numpy: no C compiler" in str(report)


def test_a_failing_c_compile_stays_on_numpy(monkeypatch):
    def broken(gm, inputs):
        raise NotImplementedError("this graph has no C lowering")

    monkeypatch.setitem(registry._BACKENDS, "c", broken)
    f = fresh(CHAIN)
    x = np.arange(5.0)
    compiled = dynamo.compile(f, backend="tiered")
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=False, strict=False):
        assert bits(compiled(x, x)) == bits(f(x, x))
        assert bits(compiled(x, x)) == bits(f(x, x))
    tier = tier_of(compiled)
    assert tier.state == tiered.STAYED and "NotImplementedError: this graph has no C lowering" in tier.describe()


def test_a_failing_c_compile_is_loud_when_strict(monkeypatch):
    def broken(gm, inputs):
        raise NotImplementedError("this graph has no C lowering")

    monkeypatch.setitem(registry._BACKENDS, "c", broken)
    compiled = dynamo.compile(fresh(CHAIN), backend="tiered")
    x = np.arange(5.0)
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=False), \
            pytest.raises(RuntimeError, match="backend c failed"):
        compiled(x, x)


def test_threads_calling_while_the_graph_moves_to_c():
    f = fresh(CHAIN)
    x, y = np.linspace(0.0, 3.0, 4097), np.linspace(-1.0, 1.0, 4097)
    expected = bits(f(x, y))
    compiled = dynamo.compile(f, backend="tiered")
    wrong: list[int] = []
    start = threading.Barrier(4)

    def calls():
        start.wait()
        for _ in range(150):
            if bits(compiled(x, y)) != expected:
                wrong.append(1)

    # due within the threads' calls, compiled in the background while they call
    with config.patch(tier_up_seconds=0.0005, tier_up_seconds_per_op=0.0, tier_up_in_background=True):
        compiled(x, y)
        threads = [threading.Thread(target=calls) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert tiered.wait_for_tier_ups(60)
    assert not wrong
    assert tier_of(compiled).state == tiered.C
    assert bits(compiled(x, y)) == expected


def test_explain_shows_each_graph_tier():
    g = fresh("""
    def g(x):
        y = x * 2.0 + 1.0
        print("break")
        return np.tanh(y) - x
    """, "g")
    x = np.linspace(-1.0, 1.0, 9)
    report = dynamo.explain(g, backend="tiered")(x)
    assert report.graph_count == 2 and len(report.tiers_per_graph) == 2
    assert all(t.startswith("numpy (") for t in report.tiers_per_graph)
    assert str(report).count("  tier: numpy (") == 2
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=False):
        report = dynamo.explain(g, backend="tiered")(x)
    assert all(t.startswith("c (moved up") for t in report.tiers_per_graph), report.tiers_per_graph
    assert dynamo.explain(g, backend="numpy")(x).tiers_per_graph == [None, None]


def test_explain_of_a_graph_moved_to_c_adds_what_c_said_of_it():
    g = fresh("""
    def g(a, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * 2.0 + 1.0
        return out
    """, "g")
    a = np.linspace(-1.0, 1.0, 600)
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=False):
        report = dynamo.explain(g, backend="tiered")(a, np.empty_like(a))
    assert report.tiers_per_graph[0].startswith("c (moved up")
    assert report.notes_per_graph == [["c: the loop from <string>:3 runs as one C loop"]]


def test_a_loop_that_branches_moves_to_c_at_once():
    # the numpy backend runs a cond per iteration as Python calls (slower than the plain loop):
    # such a graph is due for c at its first call; a loop without a branch waits its budget
    branchy = fresh("""
    def f(a, out):
        for i in range(a.shape[0]):
            x = a[i]
            out[i] = x * 2.0 if x > 0 else -x
        return out
    """)
    straight = fresh("""
    def f(a, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * 2.0
        return out
    """)
    a = np.linspace(-1.0, 1.0, 700)
    states = {}
    for name, fn in (("branchy", branchy), ("straight", straight)):
        compiled = dynamo.compile(fn, backend="tiered")
        assert bits(compiled(a, np.empty_like(a))) == bits(fn(a, np.empty_like(a)))
        states[name] = tier_of(compiled).state
    assert states == {"branchy": tiered.C, "straight": tiered.NUMPY}, states


def test_enable_and_the_default_backend_setting():
    f = fresh(CHAIN)
    x = np.arange(7.0)
    with config.patch(default_backend="tiered", tier_up_seconds=0.0, tier_up_in_background=False):
        compiled = dynamo.compile(f)
        assert bits(compiled(x, x)) == bits(f(x, x))
        assert tier_of(compiled).state == tiered.C
        with dynamo.enable():
            assert bits(f(x + 1.0, x)) == bits(np.sqrt((x + 1.0) * x + 1.5) - (x + 1.0) / 3.0)


def test_tiered_is_the_default_backend_and_numpy_opts_out(tmp_path):
    source = """
    import numpy as np
    import dynamo
    f = dynamo.compile(lambda x: np.sqrt(x * 2.0 + 1.0))
    assert (f(np.ones(8)) == np.sqrt(np.ones(8) * 2.0 + 1.0)).all()
    graphs = [g for _, frame in dynamo.api.callback_for(None, False, None).compiled_frames for g in frame.graphs]
    print(dynamo.config.default_backend, [hasattr(g.compiled_fn._dynamo_fn, "tier") for g in graphs])
    """
    env = {name: value for name, value in os.environ.items() if name != "DYNAMO_BACKEND"}
    runs = [subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True,
                           timeout=300, cwd=ROOT, env={**env, "DYNAMO_CACHE_DIR": str(tmp_path), **more})
            for more in ({}, {"DYNAMO_BACKEND": "numpy"})]
    assert [run.stdout for run in runs] == ["tiered [True]\n", "numpy [False]\n"], [run.stderr for run in runs]


def run_python(source: str, cache, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "DYNAMO_CACHE_DIR": str(cache), **env})


def test_exit_with_a_compile_in_flight_prints_nothing(tmp_path):
    done = run_python("""
        import numpy as np, dynamo
        @dynamo.compile(backend="tiered")
        def f(x):
            return np.sqrt(x * 3.0 + 2.0) - x
        x = np.ones(100)
        for _ in range(3):
            f(x)
        print("done")
    """, tmp_path, DYNAMO_TIER_UP_SECONDS="0", DYNAMO_LOGS="tiers")
    assert done.returncode == 0 and done.stdout == "done\n", done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr, done.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_moves_its_graphs_up_too(tmp_path):
    done = run_python("""
        import os, numpy as np, dynamo
        from dynamo.backends import tiered
        @dynamo.compile(backend="tiered")
        def f(x):
            return np.sqrt(x * 3.0 + 2.0) - x
        x = np.linspace(0.0, 1.0, 50)
        expected = (np.sqrt(x * 3.0 + 2.0) - x).tobytes()
        f(x)
        f(x)  # due: its compile may still run when the process forks
        pid = os.fork()
        if pid == 0:
            ok = all(f(x).tobytes() == expected for _ in range(3))
            ok = ok and tiered.wait_for_tier_ups(120) and f(x).tobytes() == expected
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert tiered.wait_for_tier_ups(120) and f(x).tobytes() == expected
        print(os.waitstatus_to_exitcode(status))
    """, tmp_path, DYNAMO_TIER_UP_SECONDS="0")
    assert done.returncode == 0 and done.stdout == "0\n", done.stdout + done.stderr


def test_the_pytest_plugin_compiles_test_bodies_tiered(tmp_path):
    (tmp_path / "test_sample.py").write_text(textwrap.dedent("""
        import numpy as np

        def test_chain():
            x = np.linspace(0.0, 1.0, 33)
            for _ in range(3):
                assert (np.sqrt(x * 2.0 + 1.0) - x).tobytes() == (np.sqrt(x * 2.0 + 1.0) - x).tobytes()
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "dynamo.pytest_plugin",
                           "--dynamo-backend", "tiered", str(tmp_path / "test_sample.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT, "DYNAMO_CACHE_DIR": str(tmp_path / "cache"),
                               "DYNAMO_TIER_UP_SECONDS": "0"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "dynamo (tiered backend)" in done.stdout


def test_a_move_to_c_times_the_frame_again():
    f = fresh(CHAIN)
    x = np.linspace(0.0, 1.0, 64)
    compiled = dynamo.compile(f, backend="tiered")
    now = [0.0]

    def clock():  # the turns' clock: every call takes as long, so the compiled version is kept
        now[0] += 2.0 ** -20
        return now[0]

    dynamo._C.set_turn_timer(clock)
    try:
        with config.patch(timed_turns=4, tier_up_seconds=60.0, tier_up_in_background=False):
            moved_and_timed_again(f, compiled, x)
    finally:
        dynamo._C.set_turn_timer(None)


def moved_and_timed_again(f, compiled, x):
    for _ in range(8):
        compiled(x, x)
    (entry,) = dynamo._C.cache_entries(f.__code__)
    assert entry.probe == 0 and not entry.dropped
    tier = tier_of(compiled)
    tier.budget = 0.0
    assert bits(compiled(x, x)) == bits(f(x, x))
    assert tier.state == tiered.C
    (entry,) = dynamo._C.cache_entries(f.__code__)
    assert entry.probe == 4 and not entry.dropped  # the C code takes the turns anew
    for _ in range(6):
        assert bits(compiled(x, x)) == bits(f(x, x))


@pytest.fixture
def even_clock():
    """The turns' clock: every call takes as long (no version is dropped by chance)."""
    now = [0.0]

    def clock():
        now[0] += 2.0 ** -20
        return now[0]

    dynamo._C.set_turn_timer(clock)
    yield
    dynamo._C.set_turn_timer(None)


def test_turns_wait_while_the_graph_is_on_numpy_and_start_when_it_moves(even_clock):
    # timed on numpy, a version slower than plain would be dropped, run no graph and never move to c
    f = fresh(CHAIN)
    x = np.linspace(0.0, 1.0, 64)
    compiled = dynamo.compile(f, backend="tiered")
    # (no recheck hits for a long while: the graph could be due before them, so the turns wait)
    with config.patch(timed_turns=4, timed_turns_recheck=10**12, tier_up_seconds=60.0, tier_up_in_background=False):
        for _ in range(8):
            assert bits(compiled(x, x)) == bits(f(x, x))
        (entry,) = dynamo._C.cache_entries(f.__code__)
        assert (entry.probe, entry.dropped, entry.best_compiled, entry.best_original) == (0, 0, 0.0, 0.0)
        assert not tier_of(compiled).released
        tier_of(compiled).budget = 0.0
        compiled(x, x)
        (entry,) = dynamo._C.cache_entries(f.__code__)
        assert tier_of(compiled).state == tiered.C and entry.probe == 4
        for _ in range(4):
            assert bits(compiled(x, x)) == bits(f(x, x))
        (entry,) = dynamo._C.cache_entries(f.__code__)
        assert entry.probe == 0 and entry.best_compiled > 0.0 and entry.best_original > 0.0


def test_deferred_turns_start_after_the_recheck_hits_or_when_the_graph_stays_numpy(even_clock, monkeypatch):
    x = np.linspace(0.0, 1.0, 64)
    monkeypatch.setattr(tiered, "PROJECT_AT", 10**9)  # no early projection: the recheck hits start the turns
    with config.patch(timed_turns=4, timed_turns_recheck=5, tier_up_seconds=60.0, tier_up_in_background=False):
        f = fresh(CHAIN)
        compiled = dynamo.compile(f, backend="tiered")
        probes = []
        for _ in range(8):  # the first call compiles; hits count from the second
            compiled(x, x)
            (entry,) = dynamo._C.cache_entries(f.__code__)
            probes.append(entry.probe)
        assert probes == [0, 0, 0, 0, 0, 3, 2, 1]  # armed at the fifth hit, which takes the first turn
        g = fresh(CHAIN)
        compiled_g = dynamo.compile(g, backend="tiered")
        compiled_g(x, x)
        tier_of(compiled_g).stay("a test says so")
        (entry,) = dynamo._C.cache_entries(g.__code__)
        assert entry.probe == 4
        assert bits(compiled_g(x, x)) == bits(g(x, x))


def test_a_graph_too_fast_to_pay_for_c_soon_has_its_version_timed_after_its_first_calls(even_clock, tmp_path):
    # a hot tiny graph needs far more calls than the recheck hits to run its budget on numpy: untimed, a
    # version slower than plain would run that long; its turns start after tiered.PROJECT_AT calls instead
    # (a cache of its own: a graph built for c in this cache before has a budget of a load, not a compile)
    f = fresh(CHAIN)
    x = np.linspace(0.0, 1.0, 64)
    with config.patch(timed_turns=4, timed_turns_recheck=1000, tier_up_seconds=60.0, tier_up_in_background=False,
                      cache_dir=str(tmp_path)):
        compiled = dynamo.compile(f, backend="tiered")
        probes = []
        for _ in range(8):
            assert bits(compiled(x, x)) == bits(f(x, x))
            (entry,) = dynamo._C.cache_entries(f.__code__)
            probes.append(entry.probe)
        tier = tier_of(compiled)
        assert tiered.PROJECT_AT == 4 and probes == [0, 0, 0, 4, 3, 2, 1, 0]
        assert tier.state == tiered.NUMPY and tier.released and entry.best_compiled > 0.0 and not entry.dropped
        assert "its version is timed on numpy" in tier.describe()
        assert tier.calls == 6  # still counting (the original code took two of the turns)
        tier.budget = 0.0  # it still moves to c when due, and its version is timed again there
        assert bits(compiled(x, x)) == bits(f(x, x))
        (entry,) = dynamo._C.cache_entries(f.__code__)
        assert tier.state == tiered.C and entry.probe == 4


def test_a_graph_that_could_pay_for_c_within_the_recheck_hits_keeps_its_turns_waiting(even_clock, tmp_path):
    f = fresh(CHAIN)
    x = np.linspace(0.0, 1.0, 64)
    with config.patch(timed_turns=4, timed_turns_recheck=1000, tier_up_seconds=60.0, tier_up_in_background=False,
                      cache_dir=str(tmp_path)):
        compiled = dynamo.compile(f, backend="tiered")
        compiled(x, x)
        tier_of(compiled).spent = 59.0  # one more second of calls, at a second per call: due well before
        for _ in range(6):
            assert bits(compiled(x, x)) == bits(f(x, x))
        (entry,) = dynamo._C.cache_entries(f.__code__)
        assert entry.probe == 0 and entry.best_compiled == 0.0 and not tier_of(compiled).released


LOG = """
def f(x):
    return np.log(x) * 2.0
"""


@pytest.mark.parametrize("seconds", [60.0, 0.0], ids=["on numpy", "on c"])
def test_warnings_at_the_users_line_once_as_in_plain_python(seconds):
    import warnings

    x = np.array([0.0, 1.0, 2.0])

    def caught(fn):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("default")
            for _ in range(3):
                fn(x)
        return [(w.category, str(w.message), w.filename, w.lineno) for w in got]

    expected = caught(fresh(LOG))
    compiled = dynamo.compile(fresh(LOG), backend="tiered")
    with config.patch(tier_up_seconds=seconds, tier_up_in_background=False):
        assert caught(compiled) == expected
    assert tier_of(compiled).state == (tiered.C if seconds == 0.0 else tiered.NUMPY)


# 50 steps of 4 ops written out, one graph of 200 ops (a loop of them would stay a loop past the bound)
UNROLLED = "def f(x):\n" + "    x = x * 0.5 + 1.0\n    x = np.sqrt(x) - 0.25\n" * 50 + "    return x\n"


def test_a_graph_over_the_op_bound_stays_on_numpy_and_explain_says_why():
    f = fresh(UNROLLED)
    x = np.linspace(0.0, 2.0, 33)
    compiles = registry.lookup_backend("c").compiles
    compiled = dynamo.compile(f, backend="tiered")
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=False, tier_up_max_ops=199):
        results = [compiled(x) for _ in range(3)]
        tier = tier_of(compiled)
        report = dynamo.explain(fresh(UNROLLED), backend="tiered")(x)
    assert tier.state == tiered.STAYED and tier.ops == 200
    assert "stayed numpy: 200 ops, over config.tier_up_max_ops (199)" in str(report), str(report)
    assert registry.lookup_backend("c").compiles == compiles
    assert all(bits(r) == bits(f(x)) for r in results)


def test_a_big_graph_runs_on_numpy_as_long_as_its_compile_would_take():
    f = fresh(UNROLLED)
    x = np.linspace(0.0, 2.0, 33)
    compiled = dynamo.compile(f, backend="tiered")
    with config.patch(tier_up_seconds=0.001, tier_up_seconds_per_op=0.01, tier_up_max_ops=200):
        compiled(x)
    tier = tier_of(compiled)
    assert tier.state == tiered.NUMPY and tier.budget == pytest.approx(2.0)
    assert tier.describe().endswith("it moves to c after 2.000 s: 200 ops, a C compile of about 2.0 s)")
    small = dynamo.compile(fresh(CHAIN), backend="tiered")
    with config.patch(tier_up_seconds=0.001, tier_up_seconds_per_op=0.01):
        small(x, x)
    assert tier_of(small).budget == pytest.approx(0.05)  # 5 ops


def test_the_ops_of_a_loop_body_count_in_the_estimate():
    graphs = []

    def keeps_loops(gm, inputs):
        graphs.append(gm)
        return gm.forward

    keeps_loops.compiles_loops = True
    f = fresh("""
    def f(x, n):
        for i in range(n):
            x = np.sqrt(x * 0.5 + 1.0)
        return x
    """)
    dynamo.compile(f, backend=keeps_loops)(np.ones(4), 100)  # over loop_unroll_threshold: a loop node
    (gm,) = graphs
    loops = [n for n in gm.graph.nodes if n.op == "call_module"]
    assert len(loops) == 1, gm.code
    body = gm.get_attribute(loops[0].target).body
    outer = sum(1 for n in gm.graph.nodes if n.op not in ("placeholder", "output", "get_attr"))
    inner = sum(1 for n in body.graph.nodes if n.op not in ("placeholder", "output", "get_attr"))
    assert inner >= 3 and tiered._ops(gm) == outer + inner


TIME_STEPS = """
def f(u, steps):
    for i in range(steps):
        lap = u[:-2] + u[2:] - 2.0 * u[1:-1]
        u[1:-1] += 0.1 * lap - 0.01 * u[1:-1]
        u[0] = u[1]
    return u
"""


def loop_nodes(compiled_fn) -> list[int]:
    callback = compiled_fn._dynamo_callback
    return [frame.loop_count for code, frame in callback.compiled_frames if code is compiled_fn._dynamo_fn.__code__]


def test_short_loops_unrolled_past_the_op_limit_stay_loops_and_move_to_c():
    """A short time-step loop unrolled into more ops than config.tier_up_max_ops made a graph that stayed
    on numpy for good (NumPy-benchmarks' grayscott: 40 steps, 1,331 ops, 1.04x plain where c's loop node
    made 1.97x); it is captured as a loop node instead, and the graph moves to c."""
    f = fresh(TIME_STEPS)
    u = np.random.default_rng(1).random(50)
    with config.patch(tier_up_max_ops=60, tier_up_seconds=0.0, tier_up_in_background=False):
        compiled = dynamo.compile(f, backend="tiered")
        for _ in range(3):
            assert bits(compiled(u.copy(), 10)) == bits(f(u.copy(), 10))
    assert loop_nodes(compiled) == [1]  # one compile, the loop a loop node
    tier = tier_of(compiled)
    assert tier.state == tiered.C and tier.ops <= 60, tier.describe()
    # within the limit the loop is unrolled, as for backend numpy
    g = fresh(TIME_STEPS)
    with config.patch(tier_up_max_ops=1000):
        small = dynamo.compile(g, backend="tiered")
        assert bits(small(u.copy(), 10)) == bits(g(u.copy(), 10))
    assert loop_nodes(small) == [0]


def test_the_op_limit_is_the_backends():
    assert registry.graph_op_limit("numpy") is None and registry.graph_op_limit("c") is None
    with config.patch(tier_up_max_ops=77):
        assert registry.graph_op_limit("tiered") == 77
        assert registry.graph_op_limit(tiered.tiered_backend) == 77
        assert registry.graph_op_limit(registry.lookup_backend_deferred("tiered")) == 77
