"""Lowering cost of values read several times by the next one (x = x * x - x, setitems that read
the array they write): each value is evaluated once per index, and printing stays bounded."""
import numpy as np
import pytest

import dynamo
from dynamo.backends.kernel_ir import exprs, values

CHAIN = 30


def chain_source(steps):
    return "def f(x):\n" + "".join("    x = x * x - x\n" for _ in range(steps)) + "    return x\n"


@pytest.mark.parametrize("backend", ["c"])
def test_a_value_read_three_times_per_step_is_evaluated_once_per_index(backend, monkeypatch):
    namespace = {"np": np}
    exec(chain_source(CHAIN), namespace)
    f = namespace["f"]
    evaluations = [0]
    real_at = values.TensorValue.at

    def counting_at(self, index):
        evaluations[0] += 1
        return real_at(self, index)
    monkeypatch.setattr(values.TensorValue, "at", counting_at)
    x = np.random.default_rng(0).random(64) * 0.1
    np.testing.assert_array_equal(dynamo.compile(f, backend=backend)(x), f(x))
    assert evaluations[0] < 50 * CHAIN  # it was 3 ** CHAIN: a 12-step chain took 54 s to lower


def test_printing_a_shared_expression_is_cut_at_the_limit():
    x = exprs.Load("x", 0, np.float64)
    for _ in range(40):
        x = exprs.Op("subtract", (exprs.Op("multiply", (x, x), np.float64), x), np.float64)
    text = exprs.format_expr(x)
    assert len(text) < 4 * exprs.FORMAT_LIMIT and text.endswith(")") and "..." in text


def unread_copies_of_rows(v):
    # fuzz seed 2023150: each unread `np.array(list(v))` was kept as unread work (marked impure), which the
    # lowering took for a NumPy step that may write v: every view of v lowered before it was lowered again
    kept = []
    for _ in range(40):
        np.array(list(v))
        kept.append(v[0] * 2)
    return kept[-1]


@pytest.mark.parametrize("backend", ["c"])
def test_unread_work_is_not_taken_for_a_write(backend, monkeypatch):
    from dynamo.backends.kernel_ir import lowering

    refreshed = []
    real_refresh = lowering.Lowerer.refresh_views

    def counting_refresh(self, buffers, at):
        refreshed.append(at.name)
        return real_refresh(self, buffers, at)
    monkeypatch.setattr(lowering.Lowerer, "refresh_views", counting_refresh)
    v = np.arange(6.0).reshape(3, 2)
    dynamo.reset()
    got = dynamo.compile(unread_copies_of_rows, backend=backend)(v)
    np.testing.assert_array_equal(got, unread_copies_of_rows(v))
    assert refreshed == []
