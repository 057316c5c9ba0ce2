"""Corpus: rich comparisons and binary operators of user classes whose methods return
NotImplemented: Python then asks the other operand (reflected method) or falls back to identity."""
import fractions

import dynamo


def _same_results(fn, *args):
    assert dynamo.compile(fn)(*args) == fn(*args)


class _Declines:
    def __eq__(self, other):
        return NotImplemented

    def __lt__(self, other):
        return NotImplemented

    def __add__(self, other):
        return NotImplemented


class _Decides:
    def __eq__(self, other):
        return "decides eq"

    def __gt__(self, other):
        return "decides gt"

    def __radd__(self, other):
        return "decides radd"


class _Plain:
    pass


def test_not_implemented_hands_over_to_the_other_operand():
    def f(a, b, c):
        return a == b, a < b, a + b, a == c, a != c, a == a, b == a

    a, b, c = _Declines(), _Decides(), _Plain()
    assert f(a, b, c) == ("decides eq", "decides gt", "decides radd", False, True, True, "decides eq")
    _same_results(f, a, b, c)


def test_returning_not_implemented_itself():
    def f(a):
        return a.__eq__(a), NotImplemented, a.__eq__(a) is NotImplemented

    _same_results(f, _Declines())


def test_fraction_compared_with_an_object_it_does_not_know():
    class Half:
        def __eq__(self, other):
            return other == fractions.Fraction(1, 2)

    def f(x, h):
        return x == h, h == x, x != h

    _same_results(f, fractions.Fraction(1, 2), Half())
    _same_results(f, fractions.Fraction(3, 4), Half())
