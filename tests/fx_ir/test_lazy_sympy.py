"""fx_ir.lazy_sympy: sympy stands in until first used, and is_sympy answers without importing it,
also while another thread is still importing it."""
from __future__ import annotations

import sys
import types

import pytest

from fx_ir.lazy_sympy import is_sympy, sympy


def test_sympy_values_are_told_from_others() -> None:
    x = sympy.Symbol("x", integer=True)
    assert is_sympy(x) and is_sympy(x + 1) and is_sympy(sympy.Integer(3))
    assert not is_sympy(3) and not is_sympy("x") and not is_sympy(None)


def test_a_sympy_module_still_initializing_in_another_thread_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # what sys.modules holds while a background compile's `import sympy` runs: the module object
    # exists, its attributes do not yet (reading .Basic raised AttributeError in the tracing thread)
    monkeypatch.setitem(sys.modules, "sympy", types.ModuleType("sympy"))
    assert not is_sympy(3)
    assert not is_sympy(object())
