"""Binary operators dispatch as Python's do: a right operand of a proper subclass is asked first
(comparisons always, arithmetic when it overrides the reflected method), and an in-place method
returning NotImplemented falls back to the binary operator."""
import numpy as np
import pytest

from semantics_helpers import BACKENDS, check_same

CALLS: list = []


class Base:
    def __eq__(self, other):
        CALLS.append("Base.eq")
        return NotImplemented

    def __ne__(self, other):
        CALLS.append("Base.ne")
        return NotImplemented

    def __floordiv__(self, other):
        CALLS.append("Base.floordiv")
        return "Base //"

    def __rfloordiv__(self, other):
        CALLS.append("Base.rfloordiv")
        return "Base r//"

    def __add__(self, other):
        CALLS.append("Base.add")
        return "Base +"

    def __sub__(self, other):
        CALLS.append("Base.sub")
        return "Base -"

    def __lt__(self, other):
        CALLS.append("Base.lt")
        return NotImplemented


class Derived(Base):
    def __eq__(self, other):
        CALLS.append("Derived.eq")
        return NotImplemented

    def __ne__(self, other):
        CALLS.append("Derived.ne")
        return "Derived !="

    def __rfloordiv__(self, other):
        CALLS.append("Derived.rfloordiv")
        return NotImplemented

    def __radd__(self, other):
        CALLS.append("Derived.radd")
        return "Derived r+"

    def __gt__(self, other):
        CALLS.append("Derived.gt")
        return "Derived >"


class Power:
    def __init__(self, value):
        self.value = value

    def __ipow__(self, other):
        CALLS.append("ipow")
        return NotImplemented

    def __pow__(self, other):
        CALLS.append("pow")
        return self.value ** other

    def __iadd__(self, other):
        CALLS.append("iadd")
        return NotImplemented


class Right:
    def __radd__(self, other):
        CALLS.append("Right.radd")
        return "Right r+"


def compare_and_combine(a, b, x):
    return a != b, a // b, a + b, a - b, a < b, a == b, x + 1


def power_in_place(p, x):
    p **= 2
    return p, x * 2


def add_in_place_falls_to_the_right(p, q, x):
    p += q
    return p, x - 1


CASES = [
    (compare_and_combine, lambda: (Base(), Derived(), np.arange(3.0))),
    (compare_and_combine, lambda: (Derived(), Base(), np.arange(3.0))),
    (compare_and_combine, lambda: (Derived(), Derived(), np.arange(3.0))),
    (power_in_place, lambda: (Power(3), np.arange(3.0))),
    (add_in_place_falls_to_the_right, lambda: (Power(3), Right(), np.arange(3.0))),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make_args", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_operators_dispatch_as_python(fn, make_args, backend):
    check_same(fn, make_args, backend, observe=lambda: list(CALLS), reset=CALLS.clear)
