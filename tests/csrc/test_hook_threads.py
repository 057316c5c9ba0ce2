"""The callback is per thread: a compiled thread and an uncompiled one run at the same time, the
uncompiled thread's frames never reach the callback, and the hook is installed exactly while some
thread has a callback."""
import sys
import threading
import warnings

import pytest

import dynamo
from dynamo import _C

from hook_helpers import Recorder, assert_hook_off

TIMEOUT = 20


def plain_work(n):
    return sum(step(i) for i in range(n))


def step(i):
    return i % 7


def here(rec):
    """The frames the recorder saw of code in this file (threading's own frames left out)."""
    return [view.f_code.co_name for view in rec.views if view.f_code.co_filename == __file__]


def run_threads(*targets):
    errors = []

    def wrap(target):
        def run():
            try:
                target()
            except BaseException as error:  # reported in the main thread
                errors.append(error)

        return run

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "thread hung"
    if errors:
        raise errors[0]


def test_compiled_and_uncompiled_threads_at_the_same_time():
    inside = threading.Event()  # the compiled thread is inside its compiled call
    done = threading.Event()  # the uncompiled thread has finished its work
    rec = Recorder()
    results = {}
    seen_in_plain = []

    def compiled_body(n):
        inside.set()
        total = 0
        while not done.is_set():  # keep starting frames until the other thread is done
            total += step(n)
        return total + plain_work(n)

    cf = _C.CompiledFunction(compiled_body, rec)

    def compiled_thread():
        results["compiled"] = cf(10)
        results["compiled_ident"] = threading.get_ident()
        results["compiled_after"] = (_C.get_eval_frame(), _C.hook_installed())

    def plain_thread():
        assert inside.wait(TIMEOUT)
        try:
            seen_in_plain.append((_C.get_eval_frame(), _C.hook_installed()))
            results["plain"] = [plain_work(200) for _ in range(50)]
        finally:
            done.set()

    run_threads(compiled_thread, plain_thread)
    assert results["plain"] == [plain_work(200)] * 50
    assert results["compiled"] > 0
    # the plain thread ran while the hook was installed, with no callback of its own
    assert seen_in_plain == [(None, True)]
    assert set(rec.threads) == {results["compiled_ident"]}
    assert here(rec)[:2] == ["compiled_body", "step"]
    assert "plain_work" in here(rec)  # the compiled thread's own call of it
    assert results["compiled_after"] == (None, False)
    assert_hook_off()


def test_hook_stays_installed_while_any_thread_has_a_callback():
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()
    observed = {}
    rec_a, rec_b = Recorder(), Recorder()

    def body_a():
        a_inside.set()
        assert b_inside.wait(TIMEOUT)
        return step(1)

    def body_b():
        b_inside.set()
        assert a_left.wait(TIMEOUT)
        # thread A has left its compiled call: still hooked here
        observed["b_after_a"] = (_C.hook_installed(), _C.get_eval_frame() is rec_b)
        return step(2)

    def thread_a():
        _C.CompiledFunction(body_a, rec_a)()
        observed["a_after"] = _C.get_eval_frame()
        a_left.set()

    def thread_b():
        assert a_inside.wait(TIMEOUT)
        _C.CompiledFunction(body_b, rec_b)()

    run_threads(thread_a, thread_b)
    assert observed == {"a_after": None, "b_after_a": (True, True)}
    assert here(rec_a) == ["body_a", "step"]
    assert here(rec_b) == ["body_b", "step"]
    assert set(rec_a.threads) != set(rec_b.threads)
    assert_hook_off()


def many_threads_compiling_and_hitting_the_same_functions():
    @dynamo.compile(backend="eager")
    def work(n, scale=1):
        return plain_work(n) * scale

    expected = plain_work(30)
    barrier = threading.Barrier(8)
    failures = []

    def worker(k):
        def run():
            barrier.wait(TIMEOUT)
            for i in range(300):
                got = work(30) if i % 3 else work(30, scale=1.0) if i % 2 else work(n=30)
                if got != expected:
                    failures.append((k, i, got))
            if _C.get_eval_frame() is not None:
                failures.append((k, "callback left behind"))

        return run

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no Python warning of ours may reach the program
        run_threads(*(worker(k) for k in range(8)))
    assert failures == []
    assert_hook_off()
    entries = _C.cache_entries(work._dynamo_fn.__code__)
    assert sum(e.hits for e in entries) >= 8 * 300 - 16
    return entries


def test_many_threads_compiling_and_hitting_the_same_functions():
    # two argument type combinations: threads that miss at once wait for the first one's
    # entry instead of each adding their own copy
    entries = many_threads_compiling_and_hitting_the_same_functions()
    assert 1 <= len(entries) <= 2


def test_a_thread_setting_its_own_callback_does_not_affect_another():
    rec_main = Recorder()
    rec_thread = Recorder()
    thread_ready, main_checked = threading.Event(), threading.Event()

    def thread_body():
        previous = _C.set_eval_frame(rec_thread)
        try:
            thread_ready.set()
            assert main_checked.wait(TIMEOUT)
            step(1)
        finally:
            _C.set_eval_frame(previous)

    t = threading.Thread(target=thread_body)
    t.start()
    try:
        assert thread_ready.wait(TIMEOUT)
        assert _C.get_eval_frame() is None and _C.hook_installed()
        step(0)  # hook installed for the other thread: not ours
        _C.CompiledFunction(step, rec_main)(5)
        assert _C.hook_installed()  # leaving our compiled call keeps the other thread's hook
    finally:
        main_checked.set()
        t.join(TIMEOUT)
    assert rec_main.names == ["step"]
    assert here(rec_thread) == ["step"]
    assert_hook_off()


@pytest.mark.skipif(not hasattr(sys, "getswitchinterval"), reason="no switch interval")
def test_threads_switching_inside_compiled_code():
    # switch threads every few bytecodes so that GIL hand-overs land inside the hook's paths
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        entries = many_threads_compiling_and_hitting_the_same_functions()
    finally:
        sys.setswitchinterval(old)
    # a switch between the compile lock's release and the entry's insertion in C may still
    # add a copy; never enough to reach the cache size limit
    assert len(entries) < dynamo.config.cache_size_limit


@pytest.mark.parametrize("make_context", [dynamo.disable, lambda: dynamo.enable("eager")],
                         ids=["disable", "enable"])
def test_one_context_object_entered_by_two_threads(make_context):
    context = make_context()  # e.g. a module-level `no_compile = dynamo.disable()`
    rec_a, rec_b = Recorder(), Recorder()
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()
    restored = {}

    def thread_a():
        previous = _C.set_eval_frame(rec_a)
        try:
            with context:
                a_inside.set()
                assert b_inside.wait(TIMEOUT)
            restored["a"] = _C.get_eval_frame() is rec_a
        finally:
            a_left.set()
            _C.set_eval_frame(previous)

    def thread_b():
        previous = _C.set_eval_frame(rec_b)
        try:
            assert a_inside.wait(TIMEOUT)
            with context:
                b_inside.set()
                assert a_left.wait(TIMEOUT)  # a leaves the block first
            restored["b"] = _C.get_eval_frame() is rec_b
        finally:
            _C.set_eval_frame(previous)

    run_threads(thread_a, thread_b)
    assert restored == {"a": True, "b": True}  # each thread got its own callback back
    assert_hook_off()
