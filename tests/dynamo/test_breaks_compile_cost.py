"""Compile cost of a function with many graph breaks: each resume function is analysed from the
bytecode it was assembled from, so the original is the only code parsed, however many breaks, and
holds only the code its entry can reach."""
import dis
import traceback

import numpy as np
import pytest
from bytecode import Bytecode, Instr

import dynamo
from dynamo import resume
from support import assert_matches_python, same_value


def _opaque(value):
    print(end="")  # a side effect: every call is a graph break
    return value


def many_breaks(a):
    total = a * 1
    total = total + _opaque(1)
    total = total + _opaque(2)
    total = total + _opaque(3)
    total = total + _opaque(4)
    total = total + _opaque(5)
    total = total + _opaque(6)
    return total


def test_resume_functions_are_not_parsed_back(monkeypatch):
    parsed = []
    original_from_code = Bytecode.from_code

    def counting(code, *args, **kwargs):
        parsed.append(code.co_qualname)
        return original_from_code(code, *args, **kwargs)

    monkeypatch.setattr(Bytecode, "from_code", staticmethod(counting))
    assert_matches_python(many_breaks, np.arange(3.0))
    resumed = [name for name in parsed if "<resume" in name]
    assert parsed.count("many_breaks") <= 2  # the original (the plain run and the trace)
    assert resumed == [], resumed
    dynamo.reset()


def loop_then_breaks(a):
    total = a * 0
    for i in range(3):  # before the later breaks: dead code to the resume functions after it
        total = total + a * i
        _opaque(i)
    total = total + _opaque(1)
    try:
        total = total + _opaque(2)
        total = total * _opaque(3)
    except ZeroDivisionError:
        total = total - 1
    total = total + _opaque(4)
    return total / _opaque(a.size)


def _resume_codes(original):
    from dynamo.resume_origins import origins
    return [code for code, origin in origins.items() if origin.original is original]


def _lines(code):
    return {line for _, _, line in code.co_lines() if line is not None}


def test_resume_functions_hold_only_the_code_after_their_entry():
    """A resume function is made of the code its entry can reach: a function with n breaks
    assembles and analyses n suffixes, not n copies of the whole function."""
    dynamo.reset()
    compiled = dynamo.compile(loop_then_breaks, backend="eager")
    for _ in range(2):
        assert same_value(compiled(np.arange(4.0)), loop_then_breaks(np.arange(4.0)))
    codes = _resume_codes(loop_then_breaks.__code__)
    assert len(codes) >= 5
    first_line = loop_then_breaks.__code__.co_firstlineno
    loop_lines = set(range(first_line + 2, first_line + 5))
    for code in codes:
        entry = resume.entry_line(code)
        assert first_line + 1 not in _lines(code), code.co_qualname  # the code before the loop
        if entry > max(loop_lines):  # after the loop, the loop is dead code (3.12's except clause,
            # placed after the code that follows the try, may show lines before the entry)
            assert not loop_lines & _lines(code), (code.co_qualname, sorted(_lines(code)))
    total = sum(len(code.co_code) for code in codes)
    assert total < len(codes) * len(loop_then_breaks.__code__.co_code) * 3 // 4
    dynamo.reset()


def test_an_error_after_trimmed_resume_functions_shows_the_users_lines():
    def failing(a):
        total = a * 1
        total = total + _opaque(1)
        for i in range(2):
            total = total + i
        total = total + _opaque(2)
        return total + _opaque(None)  # TypeError here, after three breaks

    def where(fn):
        try:
            fn(np.arange(3.0))
        except TypeError as error:
            frames = [f for f in traceback.extract_tb(error.__traceback__) if f.name == "failing"]
            return [(f.lineno, f.line) for f in frames]
        raise AssertionError("no error")

    compiled = dynamo.compile(failing, backend="eager")
    assert where(compiled) == where(failing)
    assert where(compiled) == where(failing)  # cached
    dynamo.reset()


class _Meta(type):
    pass


def test_a_break_at_the_start_of_a_with_block_over_a_cell():
    """A resume function that starts where a with block's try region starts, in a function whose
    cell is read inside the block (the read gets a handler of its own, which splits the region):
    the region is split where the copy begins too (CPython's test_descr test_disappearing_custom_mro:
    nested try blocks, an internal error)."""
    import unittest

    def with_cell(case, a):
        class Base:
            pass

        class Meta(_Meta):
            def mro(cls):
                del Meta.mro  # a break in a frame the class creation calls
                return (Base,)

        with case.assertRaises(TypeError):
            class Made(metaclass=Meta):
                pass
        return a + 1

    assert_matches_python(with_cell, unittest.TestCase(), np.arange(3.0))
    dynamo.reset()


def _many_breaks_source(name: str, breaks: int) -> str:
    lines = [f"def {name}(a):", "    total = a * 1"]
    lines += [f"    total = total + _opaque({i})" for i in range(breaks)]
    return "\n".join(lines + ["    return total"])


def _made(source: str, name: str):
    namespace = {"_opaque": _opaque, "np": np}
    exec(compile(source, __file__, "exec"), namespace)  # noqa: S102 (functions of any number of breaks)
    return namespace[name]


def _assembled_items(monkeypatch, fn, *args) -> tuple[int, int]:
    """(instructions the assembler assembled, resume functions made) while compiling fn's frames;
    the compiled result equals the plain one, and every frame compiled once."""
    from dynamo import assembler

    assembled = []
    original_assemble = assembler._assemble

    def counting(bytecode, stacksize, seed=None):
        assembled.append(sum(1 for item in bytecode if isinstance(item, Instr)))
        return original_assemble(bytecode, stacksize, seed)

    dynamo.reset()
    monkeypatch.setattr(assembler, "_assemble", counting)
    monkeypatch.setattr(dynamo.config, "check_assembler", False)  # (which assembles everything twice)
    compiled = dynamo.compile(fn, backend="eager")
    assert same_value(compiled(*args), fn(*args))
    monkeypatch.undo()
    assert same_value(compiled(*args), fn(*args))
    frames = [code for code, _ in compiled._dynamo_callback.compiled_frames if code.co_name == fn.__name__]
    assert len(frames) == len(set(frames))  # each of fn's frames compiled once
    resumed = len(_resume_codes(fn.__code__))
    dynamo.reset()
    return sum(assembled), resumed


def test_a_frame_with_n_breaks_assembles_its_body_once(monkeypatch):
    """Each resume function holds the rest of its frame; its body's bytes are the ones assembled
    for the first resume function, so a frame with n breaks assembles O(n) instructions, not
    n * n / 2 (20 and 40 breaks: 2,879 and 8,502 instructions before, 1,599 and 3,128 now: the
    frame's body once, each resume function's prologue, each transformed code)."""
    sizes = {}
    for breaks in (20, 40):
        fn = _made(_many_breaks_source("breaks_%d" % breaks, breaks), "breaks_%d" % breaks)
        assembled, resumed = _assembled_items(monkeypatch, fn, np.arange(3.0))
        assert resumed == breaks
        sizes[breaks] = assembled
        body = sum(1 for _ in dis.get_instructions(fn.__code__))
        assert assembled < 2 * body + 100 * breaks, (breaks, assembled, body)  # the transformed codes: ~75 each
    assert sizes[40] < 2.3 * sizes[20], sizes  # linear, not quadratic


def _spliced_programs():
    def closure_reader(a):
        scale = a.size

        def inner(b):
            total = b * 1
            total = total + _opaque(scale)  # a free variable read after breaks
            for i in range(2):
                total = total + _opaque(i) * scale
            try:
                total = total / _opaque(0.0 if scale > 100 else 1.0)
            except ZeroDivisionError:
                total = total - scale
            return total + _opaque(scale)
        return inner(a)

    long_jumps = "\n".join(
        ["def long_jumps(a):", "    total = a * 1", "    for i in range(2):", "        if _opaque(i):"]
        + [f"            total = total + {k}" for k in range(150)]  # jumps over more than 255 code units
        + ["        total = total + _opaque(i)", "    try:", "        total = total + _opaque(1)",
           "    except ValueError as error:", "        return error", "    return total"])
    many_locals = "\n".join(
        ["def many_locals(a):"] + [f"    v{k} = a + {k}" for k in range(24)]
        + [f"    v{k} = v{k} + v{23 - k} * _opaque({k})" for k in range(0, 24, 4)]
        + ["    return " + " + ".join(f"v{k}" for k in range(24))])
    def unused_varargs(*args, **kwargs):  # slots the body never names (CPython's test_descr)
        _opaque(1)
        return _opaque(2)

    def used_varargs(a, *args, **kwargs):
        total = a * 1
        total = total + _opaque(len(args))
        return total + _opaque(len(kwargs))

    return [closure_reader, _made(long_jumps, "long_jumps"), _made(many_locals, "many_locals"), unused_varargs,
            used_varargs]


@pytest.mark.parametrize("fn", _spliced_programs(), ids=lambda fn: fn.__name__)
def test_spliced_resume_functions_run_as_assembled_ones(fn):
    """A resume function made of its own prologue and its frame's body bytes (locals renumbered,
    exception and line tables cut) has the instructions, positions and handlers of the one
    assembled from its instructions (config.check_assembler compares both for each); results,
    errors and tracebacks are the plain function's."""
    from dynamo import assembler, config

    dynamo.reset()
    with config.patch(check_assembler=True, strict=True):
        assert_matches_python(fn, np.arange(3.0))
        assert_matches_python(fn, np.arange(3.0))
    assert _resume_codes(fn.__code__) or fn.__name__ == "closure_reader"
    assert assembler.failures == 0
    dynamo.reset()


def test_the_check_of_spliced_code_finds_a_difference():
    from dynamo import resume_splice

    fn = _made(_many_breaks_source("checked", 3), "checked")
    code = fn.__code__
    other = code.replace(co_linetable=bytes(len(code.co_linetable)))
    with pytest.raises(AssertionError, match="instructions of"):
        resume_splice.same_behaviour(other, code)


def test_what_made_resume_functions_keeps_is_bounded():
    """Most resume functions are never analyzed (deferred ones run once as Python): the bytecode they
    were assembled from and the bodies spliced into them are kept for the latest 64 only, since every
    gc.collect() of the program walks each item kept."""
    from dynamo import bytecode_analysis, resume_splice

    functions = []
    for i in range(80):  # a code object each
        namespace = {"_opaque": _opaque}
        exec(f"def breaks_{i}(a):\n    b = a + {i}\n    _opaque(b)\n    return b * 2\n", namespace)  # noqa: S102
        functions.append(namespace[f"breaks_{i}"])
    with dynamo.config.patch(defer_resume_compiles=True, compile_generated_code=True), dynamo.enable(backend="eager"):
        results = [fn(1.0) for fn in functions]
    assert results == [(1.0 + i) * 2 for i in range(80)]
    assert 0 < len(bytecode_analysis._assembled_from) <= 64
    assert 0 < len(resume_splice._bodies) <= 64


def cell_and_two_handlers(a, items):
    total = [a]

    def helper():   # total is a cell: the resume functions take it as a free variable
        return total
    try:
        helper()
    except Exception:
        pass
    try:   # runs in Python, and hands off inside this handler's exit, after the first handler's
        del items
    except Exception:
        pass
    return total, a, _missing  # noqa: F821 - NameError, as plain Python raises it


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_a_resume_function_after_two_handlers_drops_the_dead_jump_back(backend):
    """3.13 puts each except handler after the function's body, and its exit jumps back to the
    code after its try: a resume function whose code starts after the second try keeps the first
    handler as dead code, whose jump back went with the code cut (KeyError of a Label: an internal
    error, and the frame ran uncompiled; fuzz_python seed 3200005)."""
    assert_matches_python(cell_and_two_handlers, 1, [2], backend=backend)
