"""The struct_is guard instruction: exact type plus C-struct fields, as array guards use it."""
import numpy as np
import pytest

from dynamo import _C
from dynamo.array_layout import LAYOUT_VERIFIED, struct_spec

pytestmark = pytest.mark.skipif(not LAYOUT_VERIFIED, reason="ndarray layout not verified on this NumPy")


def program_for(array):
    return _C.GuardProgram([("load_arg", 0, 0), ("struct_is", 0, struct_spec(array))], 1)


def check(program, value):
    return program.check((value,), {})


def test_same_layout_passes_and_any_difference_fails():
    program = program_for(np.zeros((3, 4)))
    assert check(program, np.ones((3, 4))) == -1
    assert check(program, np.ones((3, 4))[:, ::-1]) == -1  # strides are not part of it
    for other in (np.zeros((4, 3)), np.zeros((3, 4, 1)), np.zeros(12), np.zeros((3, 4), np.float32),
                  np.zeros((3, 4)).view(np.matrix), [[0.0] * 4] * 3, None, 3.0):
        assert check(program, other) == 1, other


def test_zero_dimensional_and_empty_arrays():
    assert check(program_for(np.ones(())), np.zeros(())) == -1
    assert check(program_for(np.zeros(())), np.zeros(1)) == 1
    assert check(program_for(np.zeros((2, 0))), np.zeros((2, 0))) == -1
    assert check(program_for(np.zeros((2, 0))), np.zeros((0, 2))) == 1


def test_byte_order_is_a_different_dtype():
    program = program_for(np.zeros(3, "<f8"))
    assert check(program, np.zeros(3, ">f8")) == 1


@pytest.mark.parametrize("spec", [
    (np.ndarray, ((4, "int", 1),)),                      # inside the object header
    (np.ndarray, ((10_000, "ptr", None),)),              # past the end of the struct
    (np.ndarray, ((24, "float", 1.0),)),                 # unknown kind
    (np.ndarray, ((24, "ssize_array", [1, 2]),)),         # values must be a tuple
    ("ndarray", ()),                                      # not a type
])
def test_bad_specs_are_rejected_when_built(spec):
    with pytest.raises((TypeError, ValueError)):
        _C.GuardProgram([("load_arg", 0, 0), ("struct_is", 0, spec)], 1)
