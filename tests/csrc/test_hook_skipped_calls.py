"""Calls through a compiled function of a code skipped for good (it gave up recompiling, or cannot
be compiled): the hook is on around them only for the frames they start, and is left off once their
calls start none, but for one call in QUIET_RECHECK, which looks again."""
from dynamo import _C

from hook_helpers import assert_hook_off

QUIET_CALLS = 16  # csrc/compiled_function.c
QUIET_RECHECK = 256


def leaf(x):
    return _C.hook_installed(), x + 1  # a builtin: no frame for the hook to look at


def helper(x):
    return x * 2


def sometimes_calls(x, call):
    if call:
        return _C.hook_installed(), helper(x)
    return _C.hook_installed(), x


class SkipThenAsk:
    """Answers SKIP for `skipped` and None (run it as it is, ask again next time) for the others."""

    def __init__(self, skipped):
        self.skipped = skipped
        self.asked: list[str] = []

    def __call__(self, view):
        if view.f_code is self.skipped:
            return _C.SKIP
        self.asked.append(view.f_code.co_name)
        return None


def test_a_skipped_function_that_starts_no_frames_runs_with_the_hook_off():
    compiled = _C.CompiledFunction(leaf, SkipThenAsk(leaf.__code__))
    hooked = []
    for x in range(2 + QUIET_CALLS + QUIET_RECHECK):
        on, result = compiled(x)
        assert result == x + 1
        hooked.append(on)
    assert _C.is_skipped(leaf.__code__)
    # the first call asked (SKIP), the next QUIET_CALLS found no frame started, then the hook is off
    # but for the QUIET_RECHECK-th call without it
    assert hooked[:1 + QUIET_CALLS] == [True] * (1 + QUIET_CALLS)
    off = hooked[1 + QUIET_CALLS:]
    assert [i for i, on in enumerate(off) if on] == [QUIET_RECHECK - 1]
    _C.clear_cache(leaf.__code__)
    assert_hook_off()


def test_a_skipped_function_whose_calls_start_frames_keeps_the_hook_on():
    callback = SkipThenAsk(sometimes_calls.__code__)
    compiled = _C.CompiledFunction(sometimes_calls, callback)
    for x in range(3 * QUIET_CALLS):  # each call starts helper's frame, which the callback is asked about
        assert compiled(x, True) == (True, 2 * x)
    assert callback.asked == ["helper"] * (3 * QUIET_CALLS)
    for x in range(QUIET_CALLS + 1):
        compiled(x, False)
    assert compiled(1, False) == (False, 1)
    callback.asked.clear()
    calls = 0
    while compiled(1, True) == (False, 2):  # plain Python until the next look: helper unseen
        calls += 1
    assert 0 < calls < QUIET_RECHECK
    assert callback.asked == ["helper"]  # the look: a frame started, so the hook stays on
    assert compiled(1, True) == (True, 2)
    assert compiled(1, True) == (True, 2)
    assert callback.asked == ["helper"] * 3
    _C.clear_cache(sometimes_calls.__code__)
    assert_hook_off()


def test_clearing_the_cache_forgets_the_quiet_calls():
    compiled = _C.CompiledFunction(leaf, SkipThenAsk(leaf.__code__))
    for x in range(2 + QUIET_CALLS):
        compiled(x)
    assert compiled(0)[0] is False
    _C.clear_cache(leaf.__code__)
    for _ in range(1 + QUIET_CALLS):
        assert compiled(0)[0] is True
    _C.clear_cache(leaf.__code__)
    assert_hook_off()


class SkipUnhookedThenAsk(SkipThenAsk):
    """Answers SKIP_UNHOOKED for `skipped`: its frames and the frames they start run plain."""

    def __call__(self, view):
        if view.f_code is self.skipped:
            return _C.SKIP_UNHOOKED
        self.asked.append(view.f_code.co_name)
        return None


def test_a_code_skipped_unhooked_runs_its_calls_plain_from_its_first_call():
    callback = SkipUnhookedThenAsk(sometimes_calls.__code__)
    compiled = _C.CompiledFunction(sometimes_calls, callback)
    # the first call too runs helper unseen (the hook is installed around that call, but its thread's
    # callback is suspended); later calls do not even install the hook
    assert compiled(1, True)[1] == 2
    for x in range(3):
        assert compiled(x, True) == (False, 2 * x)
    assert _C.is_skipped(sometimes_calls.__code__)
    assert callback.asked == []  # helper's frames were never looked at
    assert_hook_off()
    _C.clear_cache(sometimes_calls.__code__)  # then asked again, and SKIP_UNHOOKED again
    assert compiled(4, True)[1] == 8
    assert compiled(4, True) == (False, 8)
    assert callback.asked == []
    _C.clear_cache(sometimes_calls.__code__)
    assert_hook_off()


def test_a_code_skipped_with_the_hook_on_still_shows_its_calls():
    callback = SkipThenAsk(sometimes_calls.__code__)
    compiled = _C.CompiledFunction(sometimes_calls, callback)
    assert compiled(1, True) == (True, 2)
    assert callback.asked == ["helper"]
    _C.clear_cache(sometimes_calls.__code__)
    assert_hook_off()
