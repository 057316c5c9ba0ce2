"""The `sizes` guard instruction: a relation between array sizes as an integer stack program,
run in C with Python's integer semantics (dynamo/shapes/guards.py writes the programs)."""
import itertools

import numpy as np
import pytest
import sympy

from dynamo import _C
from dynamo.array_layout import LAYOUT_VERIFIED, sizes_spec
from dynamo.fx_ir.size_source import python_source
from dynamo.shapes.guards import size_program

pytestmark = pytest.mark.skipif(not LAYOUT_VERIFIED, reason="ndarray layout not verified on this NumPy")

s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
WHERE = {s0: (0, 0), s1: (1, 1)}  # s0 = a.shape[0], s1 = b.shape[1]


def program(relation):
    arrays, code = size_program(relation, WHERE)
    loads = [("load_arg", k, k) for k in range(2)]
    return _C.GuardProgram([*loads, ("sizes", tuple(arrays), sizes_spec(code))], 2)


def holds(prog, a, b):
    return prog.check((a, b), {}) == -1


@pytest.mark.parametrize("relation", [
    sympy.Eq(s0, s1), sympy.Ne(s0, s1), s0 > 6, s0 <= s1 + 1, sympy.Eq(sympy.Mod(s0, 4), 0),
    sympy.Ge(sympy.floor(s0 / 3) - s1, -2), sympy.Lt(sympy.ceiling(s0 / 4), s1), sympy.Eq(sympy.Min(s0, 5), 5),
    sympy.Ge(sympy.Max(s0, s1) ** 2, 30), sympy.Gt(sympy.Abs(s0 - s1), 2), sympy.Eq(sympy.Mod(s0 - 3 * s1, 5), 1),
    sympy.Eq(sympy.floor((s0 - 3 * s1) / 4), -2),
])
def test_programs_agree_with_python_integer_arithmetic(relation):
    prog = program(relation)
    reference = eval("lambda s0, s1: " + python_source(relation, {s0: "s0", s1: "s1"}))
    for n, m in itertools.product(range(0, 12), range(0, 12)):
        assert holds(prog, np.zeros(n), np.zeros((1, m))) == reference(n, m), (relation, n, m)


def test_a_wrong_type_or_too_few_dimensions_fails_the_check():
    prog = program(sympy.Eq(s0, s1))
    assert holds(prog, np.zeros(3), np.zeros((1, 3)))
    assert not holds(prog, np.zeros(3), np.zeros(3))  # b has no dimension 1
    assert not holds(prog, [0, 0, 0], np.zeros((1, 3)))
    assert not holds(prog, np.zeros(3).view(np.matrix), np.zeros((1, 3)))


def test_overflow_fails_the_check_instead_of_wrapping():
    big = sympy.Integer(2 ** 62)
    prog = program(sympy.Ne(s0 * s0 * big, s1))  # 4 * 2**62 wraps to 0 in 64 bits
    assert not holds(prog, np.zeros(2), np.zeros((1, 5)))
    assert holds(program(sympy.Ne(s0 * big, s1)), np.zeros(1), np.zeros((1, 5)))


@pytest.mark.parametrize("code", [
    (1, 5),                  # leaves a value on the stack
    (2,),                    # pops an empty stack
    (0, 7, 0, 1, 0, 10),     # register 7 is not one of the instruction's
    (0, 0, -1, 1, 0, 10),    # negative dimension
    (99,),                   # unknown operation
    (1,),                    # ends inside an operation
    tuple(itertools.chain.from_iterable((1, 0) for _ in range(17))) + (10,) * 8,  # too deep
])
def test_bad_programs_are_rejected_when_built(code):
    with pytest.raises(ValueError):
        _C.GuardProgram([("load_arg", 0, 0), ("sizes", (0,), sizes_spec(code))], 1)


def test_a_dynamic_int_argument_is_read_as_an_exact_int():
    arrays, code = size_program(sympy.Eq(s0, s1), {s0: (0, None), s1: (1, 1)})  # s0 is the int itself
    prog = _C.GuardProgram([("load_arg", 0, 0), ("load_arg", 1, 1), ("sizes", arrays, sizes_spec(code))], 2)
    assert prog.check((4, np.zeros((1, 4))), {}) == -1
    assert prog.check((5, np.zeros((1, 4))), {}) == 2
    for other in (4.0, True, 2 ** 70, "4", np.int64(4)):
        assert prog.check((other, np.zeros((1, 4))), {}) == 2, other
