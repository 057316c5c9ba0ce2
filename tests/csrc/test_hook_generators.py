"""Generators, coroutines and async generators under dynamo.compile: they work, their frames are
never intercepted (first run, resumption, throw/close), the frames their bodies start are."""
import asyncio
import traceback

import pytest

import dynamo
from dynamo import _C
from dynamo.convert_frame import ConvertFrame

from hook_helpers import assert_hook_off


@pytest.fixture
def compiled_frames(monkeypatch):
    names = []
    compile_frame = ConvertFrame.compile_frame

    def spy(self, frame):
        names.append(frame.f_code.co_name)
        return compile_frame(self, frame)

    monkeypatch.setattr(ConvertFrame, "compile_frame", spy)
    return names


def helper(x):
    return x * 10


def counting(n):
    for i in range(n):
        yield helper(i)


def returns_generator(n):
    return counting(n)


def sums_generator(n):
    return sum(counting(n))


def test_compiled_function_returning_a_generator(compiled_frames):
    cf = dynamo.compile(returns_generator, backend="eager")
    for _ in range(2):
        assert list(cf(3)) == [0, 10, 20]  # consumed outside: unhooked
    assert compiled_frames == ["returns_generator"]
    assert _C.cache_entries(counting.__code__) == []
    assert_hook_off()


def test_generator_consumed_inside_the_compiled_function(compiled_frames):
    cf = dynamo.compile(sums_generator, backend="eager")
    assert cf(4) == 60
    assert cf(n=4) == 60
    # the generator's body starts helper() frames, which are compiled; counting never
    assert compiled_frames == ["sums_generator", "helper"]
    assert _C.cache_entries(counting.__code__) == []
    assert _C.cache_entries(helper.__code__)[0].hits == 7


def test_compiled_generator_function(compiled_frames):
    cgen = dynamo.compile(counting, backend="eager")
    assert cgen.__name__ == "counting"
    g = cgen(3)
    assert next(g) == 0
    assert list(g) == [10, 20]
    assert list(cgen(n=2)) == [0, 10]
    assert compiled_frames == []
    assert _C.cache_entries(counting.__code__) == []
    assert not _C.is_skipped(counting.__code__)
    assert_hook_off()


def test_generator_created_outside_and_resumed_inside(compiled_frames):
    g = counting(5)
    next(g)

    @dynamo.compile(backend="eager")
    def take(gen, k):
        return [next(gen) for _ in range(k)]

    assert take(g, 2) == [10, 20]
    assert take(g, 2) == [30, 40]
    assert "counting" not in compiled_frames
    assert "helper" in compiled_frames


def test_generator_calling_compiled_functions():
    chelper = dynamo.compile(helper, backend="eager")

    def gen(n):
        for i in range(n):
            yield chelper(i) + chelper(x=i)

    assert list(gen(3)) == [0, 20, 40]
    assert _C.cache_entries(helper.__code__)[0].hits == 5
    assert_hook_off()


def closing_generator(log):
    try:
        while True:
            try:
                yield "ready"
            except ValueError as error:
                log.append(("caught", str(error), helper(1)))
    finally:
        log.append(("finally", helper(2)))


def test_throw_and_close_through_compiled_frames(compiled_frames):
    @dynamo.compile(backend="eager")
    def drive(gen, log):
        next(gen)
        answer = gen.throw(ValueError("thrown"))
        gen.close()
        return answer

    log = []
    assert drive(closing_generator(log), log) == "ready"
    assert log == [("caught", "thrown", 10), ("finally", 20)]
    log.clear()
    assert drive(closing_generator(log), log=log) == "ready"
    assert log == [("caught", "thrown", 10), ("finally", 20)]
    assert "closing_generator" not in compiled_frames
    assert compiled_frames == ["drive", "helper"]  # helper(1) and helper(2): one entry (int)
    assert _C.cache_entries(closing_generator.__code__) == []
    assert_hook_off()


def test_exception_out_of_a_generator_keeps_its_lines():
    def failing_gen():
        yield 1
        raise KeyError("from the generator")  # generator line

    @dynamo.compile(backend="eager")
    def consume():
        return list(failing_gen())  # consuming line

    with pytest.raises(KeyError) as info:
        consume()
    lines = [fs.line for fs in traceback.extract_tb(info.value.__traceback__)]
    assert 'raise KeyError("from the generator")  # generator line' in lines
    assert "return list(failing_gen())  # consuming line" in lines
    assert_hook_off()


async def acompute(x):
    await asyncio.sleep(0)
    return helper(x)


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield helper(i)


async def amain(n):
    values = [v async for v in agen(n)]
    return values, await acompute(n)


def test_compiled_coroutine_function_run_by_asyncio(compiled_frames):
    ccoro = dynamo.compile(acompute, backend="eager")
    assert asyncio.run(ccoro(2)) == 20
    assert asyncio.run(ccoro(x=3)) == 30
    assert compiled_frames == []  # the event loop runs the coroutine outside compiled calls
    assert _C.cache_entries(acompute.__code__) == []


def test_asyncio_run_inside_a_compiled_function(compiled_frames):
    @dynamo.compile(backend="eager")
    def run(n):
        return asyncio.run(amain(n))

    assert run(3) == ([0, 10, 20], 30)
    assert run(3) == ([0, 10, 20], 30)
    user = [name for name in compiled_frames if name in ("run", "amain", "agen", "acompute", "helper")]
    assert user == ["run", "helper"]  # coroutines and async generators never; helper once
    for fn in (amain, agen, acompute):
        assert _C.cache_entries(fn.__code__) == []
    assert _C.cache_entries(helper.__code__)[0].hits >= 7
    assert_hook_off()


def test_coroutine_throw_through_compiled_frames():
    async def waits(log):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            log.append(helper(4))
            raise

    @dynamo.compile(backend="eager")
    def run(log):
        async def main():
            task = asyncio.ensure_future(waits(log))
            await asyncio.sleep(0)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                return "cancelled"

        return asyncio.run(main())

    log = []
    assert run(log) == "cancelled"
    assert log == [40]
    assert_hook_off()
