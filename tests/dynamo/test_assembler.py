"""dynamo.assembler assembles the code objects the bytecode package does, byte for byte."""
from __future__ import annotations

import inspect
import json
import types

import pytest
from bytecode import Bytecode

import dynamo
from dynamo import (
    assembler,
    bytecode_compat,  # noqa: F401  (replaces the package's const_key, as in use)
    config,
)


def _codes(module: types.ModuleType) -> list[types.CodeType]:
    found: list[types.CodeType] = []
    todo = [obj.__code__ for obj in vars(module).values() if inspect.isfunction(obj)]
    todo += [f.__code__ for cls in vars(module).values() if inspect.isclass(cls)
             for f in vars(cls).values() if inspect.isfunction(f)]
    while todo:  # nested functions, comprehensions and generators too
        code = todo.pop()
        found.append(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def _fields(code: types.CodeType) -> tuple:
    return tuple(getattr(code, name) for name in assembler._FIELDS if name != "co_consts")


def _big(n: int) -> types.CodeType:
    """Jumps over more than 255 code units: EXTENDED_ARG, resolved in more than one pass."""
    body = "\n".join(f"            x = x + {i}" for i in range(n))
    source = f"def f(x, y):\n    while x < y:\n        try:\n{body}\n        except ValueError as e:\n" \
             "            return e\n    return [i for i in range(x) if i]\n"
    namespace: dict = {}
    exec(compile(source, "<big>", "exec"), namespace)  # noqa: S102 (a function too long to write out)
    return namespace["f"].__code__


@pytest.mark.parametrize("module", [json.decoder, json.encoder, inspect], ids=lambda m: m.__name__)
def test_same_code_as_the_package(module: types.ModuleType) -> None:
    codes = _codes(module) + [_big(10), _big(300)]
    assert len(codes) > 10
    for code in codes:
        source = Bytecode.from_code(code, conserve_exception_block_stackdepth=True)
        mine = assembler.to_code(source, stacksize=code.co_stacksize, compute_exception_stack_depths=False)
        theirs = source.to_code(stacksize=code.co_stacksize, compute_exception_stack_depths=False)
        assert _fields(mine) == _fields(theirs), code.co_qualname
        assert mine.co_consts == theirs.co_consts
        # the package's own depth computation first (stacksize None), then the assembly here
        plain = Bytecode.from_code(code)
        assert _fields(assembler.to_code(plain)) == _fields(plain.to_code()), code.co_qualname


def test_check_mode_compares() -> None:
    code = _big(3)
    source = Bytecode.from_code(code, conserve_exception_block_stackdepth=True)
    with config.patch(check_assembler=True):
        assembler.to_code(source, stacksize=code.co_stacksize, compute_exception_stack_depths=False)
    wrong = code.replace(co_code=bytes(len(code.co_code)))
    with pytest.raises(AssertionError, match="co_code"):
        assembler._compare(wrong, code)


def _raises_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the module's own assembly fail as a bug (or a moved bytecode internal) would."""
    def broken(bytecode: Bytecode, stacksize: int) -> types.CodeType:
        raise AttributeError("'ConcreteInstr' object has no attribute '_moved'")

    monkeypatch.setattr(assembler, "_assemble", broken)


def test_unexpected_failure_falls_back_to_the_package_counted_in_explain(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import numpy as np

    def branchy(x: np.ndarray) -> np.ndarray:
        y = x * 2
        if y.sum() > 0:  # a graph break: transformed code and a resume function are assembled
            y = y + 1
        return y

    _raises_inside(monkeypatch)
    monkeypatch.setattr(assembler, "_warned", False)
    x = np.arange(4.0)
    with config.patch(strict=False):
        report = dynamo.explain(branchy)(x)
        np.testing.assert_array_equal(dynamo.compile(branchy)(x), branchy(x))
    assert report.graph_count == 2 and report.graph_break_count == 1  # compiled all the same
    assert report.assembler_failures >= 2
    assert "AttributeError: 'ConcreteInstr' object has no attribute '_moved'" in report.assembler_error
    assert f"dynamo.assembler failed on {report.assembler_failures} code" in str(report)
    assert "please report" in str(report)
    assert caplog.text.count("internal error of dynamo.assembler") == 1
    dynamo.reset()
    assert assembler.failures == 0


def test_unexpected_failure_raises_under_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from dynamo.exc import InternalCompilerError

    _raises_inside(monkeypatch)
    with pytest.raises(InternalCompilerError, match="_moved") as info:
        dynamo.compile(lambda x: x.sum() > 0 and x * 2)(np.arange(3.0))
    assert isinstance(info.value.__cause__, AttributeError)


def _swap_then_store(names: list[str], first: str, second: str) -> Bytecode:
    """Code with locals `names` (arguments, in that order) doing `first.attr = second` by one
    LOAD_FAST_LOAD_FAST on 3.13 (two LOAD_FASTs before), then returning `first`."""
    from bytecode import Instr

    pair = ([Instr("LOAD_FAST_LOAD_FAST", (second, first))] if bytecode_compat.PY313
            else [Instr("LOAD_FAST", second), Instr("LOAD_FAST", first)])
    code = Bytecode([Instr("RESUME", 0), *pair, Instr("STORE_ATTR", "attr"), Instr("LOAD_FAST", first),
                     Instr("RETURN_VALUE")])
    code.argnames = list(names)
    code.argcount = len(names)
    return code


@pytest.mark.parametrize("last", [2, 15, 16, 20])
def test_a_pair_of_locals_past_index_15_reads_the_right_locals(last: int) -> None:
    # 3.13 packs the two locals of LOAD_FAST_LOAD_FAST in 4 bits each: the package packed
    # (14, 16) as 0xF0, which reads locals 15 and 0 (a crash when 0 was deleted: CPython's
    # test_descr under the plugin); past 15 the pair must become two single loads
    names = [f"v{i}" for i in range(last + 1)]
    source = _swap_then_store(names, names[last], names[last - 2])

    class Box:
        pass

    for code in (assembler.to_code(source, stacksize=4), assembler._package_to_code(source, 4)):
        values = list(range(last + 1))
        values[last] = Box()
        result = types.FunctionType(code, {})(*values)
        assert isinstance(result, Box) and result.attr == last - 2
