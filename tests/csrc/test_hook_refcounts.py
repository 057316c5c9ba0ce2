"""No reference leaks: the reference counts of arguments, results, the function, its code objects
and the callback are unchanged after 10k calls on every path through the hook, errors included;
memory stays flat over 100k calls (traced allocations) and 1M calls (RSS)."""
import gc
import os
import tracemalloc

import pytest

import dynamo
from dynamo import _C
from dynamo.bytecode_compat import flatten_signature

from hook_helpers import Counter, assert_hook_off, refcounts

N = 10_000


class Arg:
    """Arguments whose counts nothing else touches (small ints and strings are shared)."""


RESULT = Arg()


def target(a, b):
    return RESULT


def target_kw(a, *args, b, **kw):
    return RESULT


def raises(a, b):
    raise ValueError("user error")


def uses_cell(a, b):
    def inner():
        return a, b

    return inner() and RESULT


def calls_target(a, b):
    return target(a, b=b)


def identity_answer(view):
    """dynamo's identity transformation, built here: the same code, guarded on argument types."""
    program = []
    for slot, value in enumerate(view.f_args):
        program += [("load_arg", slot, slot), ("type_is", slot, type(value))]
    return _C.GuardProgram(program, max(len(view.f_args), 1)), flatten_signature(view.f_code)


def raising_callback(view):
    raise RuntimeError("callback error")


def raise_if_marked(x):
    if getattr(x, "marked", False):
        raise LookupError("guard error")  # a LookupError from `call` is an error, not a failure
    return True


def guard_answer(view):
    return (_C.GuardProgram([("load_arg", 0, 0), ("call", 0, raise_if_marked)], 1),
            flatten_signature(view.f_code))


def swallow(call, errors):
    def run():
        try:
            call()
        except errors:
            pass

    return run


def make_paths():
    """name -> (function whose code is tracked, callback, call(cf, a, b) for one call)."""
    return {
        "fast": (target, Counter(identity_answer), lambda cf, a, b: cf(a, b)),
        "hook-keyword": (target, Counter(identity_answer), lambda cf, a, b: cf(a, b=b)),
        "hook-varargs": (target_kw, Counter(identity_answer), lambda cf, a, b: cf(a, b, b=b, c=a)),
        "hook-nested": (target, Counter(identity_answer), None),
        "cells": (uses_cell, Counter(identity_answer), lambda cf, a, b: cf(a, b)),
        "miss-none": (target, Counter(), lambda cf, a, b: (cf(a, b), cf(a, b=b))),
        "skip": (target, Counter(lambda view: _C.SKIP), lambda cf, a, b: (cf(a, b), cf(a, b=b))),
        "user-error": (raises, Counter(identity_answer),
                       lambda cf, a, b: (swallow(lambda: cf(a, b), ValueError)(),
                                         swallow(lambda: cf(a, b=b), ValueError)())),
        "callback-error": (target, Counter(raising_callback),
                           lambda cf, a, b: (swallow(lambda: cf(a, b), RuntimeError)(),
                                             swallow(lambda: cf(a, b=b), RuntimeError)())),
        "guard-error": (target, Counter(guard_answer), None),
    }


PATHS = make_paths()


def run_path(name, a, b):
    """Returns (tracked objects, run(n) doing n calls)."""
    fn, callback, call = PATHS[name]
    cf = _C.CompiledFunction(fn, callback)
    if name == "hook-nested":
        outer = _C.CompiledFunction(calls_target, callback)

        def call(cf, a, b):
            return outer(a, b)
    if name == "guard-error":
        marked = Arg()
        marked.marked = True
        cf(a, b)  # compile with an unmarked argument

        def call(cf, a, b):
            swallow(lambda: cf(marked, b), LookupError)()
            swallow(lambda: cf(marked, b=b), LookupError)()
            cf(a, b)

    def run(n):
        for _ in range(n):
            call(cf, a, b)

    return [fn, fn.__code__, callback, cf], run


@pytest.mark.parametrize("name", list(PATHS))
def test_no_reference_leaks_over_10k_calls(name):
    a, b = Arg(), Arg()
    tracked, run = run_path(name, a, b)
    run(10)  # compile, create the cached function objects
    entries = _C.cache_entries(tracked[1])
    extra = [e.code for e in entries] + [e.guard for e in entries] + entries
    before = refcounts(a, b, RESULT, *tracked, *extra)
    run(N)
    after = refcounts(a, b, RESULT, *tracked, *extra)
    assert after == before
    assert_hook_off()
    callback = tracked[2]
    if name in ("fast", "hook-keyword", "hook-varargs", "user-error"):
        assert callback.calls == 1  # every later call was a hit
    if name == "cells":
        assert callback.calls == 2  # uses_cell, and the inner function it calls
    del entries, extra


def test_no_leaks_under_set_eval_frame_and_dynamo_compile():
    a, b = Arg(), Arg()
    callback = Counter(identity_answer)
    cf = dynamo.compile(target, backend="eager")

    def run(n):
        for _ in range(n):
            cf(a, b)
            cf(a, b=b)
        previous = _C.set_eval_frame(callback)
        try:
            for _ in range(n):
                target(a, b)
        finally:
            _C.set_eval_frame(previous)

    run(10)
    before = refcounts(a, b, RESULT, target, target.__code__, callback, cf, cf._dynamo_callback)
    run(N // 2)
    after = refcounts(a, b, RESULT, target, target.__code__, callback, cf, cf._dynamo_callback)
    assert after == before
    assert_hook_off()


def test_compiled_function_and_callback_are_freed():
    import weakref

    class Callback:
        def __call__(self, view):
            return identity_answer(view)

    def f(a, b):
        return RESULT

    callback = Callback()
    cf = _C.CompiledFunction(f, callback)
    cf(Arg(), 1)
    refs = [weakref.ref(callback), weakref.ref(cf), weakref.ref(f)]
    del cf, callback
    gc.collect()
    assert refs[1]() is None
    assert refs[0]() is not None  # the cache entry still names its owner
    dynamo.reset()
    gc.collect()
    assert refs[0]() is None  # reset drops the entries and with them the owner
    del f
    gc.collect()
    assert refs[2]() is None


def test_frame_views_kept_in_a_cycle_are_collected():
    import weakref

    class Keeper:
        views = None

    kept = Keeper()
    kept.views = []

    def callback(view):
        kept.views.append(view)
        return None

    def f(x):
        return kept  # the view's closure reaches `kept`, which holds the view: a cycle

    _C.CompiledFunction(f, callback)(1)
    probe = weakref.ref(kept)
    del kept, f, callback
    gc.collect()
    assert probe() is None


def mixed_calls(n, a, b):
    fast = _C.CompiledFunction(target, Counter(identity_answer))
    kw = _C.CompiledFunction(target_kw, Counter(identity_answer))
    miss = _C.CompiledFunction(uses_cell, Counter())
    errs = _C.CompiledFunction(raises, Counter(identity_answer))
    for _ in range(n):
        fast(a, b)
        kw(a, b=b)
        miss(a, b)
        try:
            errs(a, b=b)
        except ValueError:
            pass


def test_memory_stable_over_100k_calls():
    a, b = Arg(), Arg()
    mixed_calls(1000, a, b)
    gc.collect()
    tracemalloc.start()
    try:
        mixed_calls(1000, a, b)
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        mixed_calls(25_000, a, b)  # 100k calls on four paths
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert growth < 64 * 1024, f"{growth} bytes more after 100k calls"


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_memory_stable_over_1m_calls():
    # about a second here: not marked slow
    a, b = Arg(), Arg()
    mixed_calls(10_000, a, b)
    gc.collect()
    start = rss_bytes()
    objects = len(gc.get_objects())
    mixed_calls(250_000, a, b)  # 1M calls on four paths
    gc.collect()
    grown = rss_bytes() - start
    assert grown < 4 * 1024 * 1024, f"RSS grew by {grown} bytes over 1M calls"
    assert len(gc.get_objects()) - objects < 100
