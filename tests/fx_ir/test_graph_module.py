"""Tests of fx_ir/graph_module.py: attributes from a root, nested modules, recompile, linecache and tracebacks.

Programs come from conftest.py; results are compared with plain NumPy.
"""
from __future__ import annotations

import gc
import linecache
import operator
import re
import traceback
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from dynamo.fx_ir import Graph, GraphModule


def scale_graph() -> Graph:
    """x -> x * self.consts.scale + self.bias"""
    g = Graph()
    x = g.placeholder("x")
    scaled = g.call_function(operator.mul, (x, g.get_attr("consts.scale")))
    g.output(g.call_function(operator.add, (scaled, g.get_attr("bias"))))
    return g


def test_root_dict_with_dotted_and_nested_entries() -> None:
    gm = GraphModule({"consts": {"scale": 2.0}, "bias": np.arange(3.0)}, scale_graph())
    np.testing.assert_array_equal(gm(np.ones(3)), [2.0, 3.0, 4.0])
    gm2 = GraphModule({"consts.scale": 3.0, "bias": 1.0}, scale_graph())
    assert gm2(2.0) == 7.0
    assert gm2.get_attribute("consts.scale") == 3.0


def test_root_object() -> None:
    root = SimpleNamespace(consts=SimpleNamespace(scale=10.0), bias=0.5, unused=object())
    gm = GraphModule(root, scale_graph())
    assert gm(1.0) == 10.5
    assert not hasattr(gm, "unused")  # only what the graph names is copied


def test_missing_attribute_is_a_clear_error() -> None:
    with pytest.raises(AttributeError, match=r"node consts_scale \(get_attr\) needs attribute 'consts.scale'"):
        GraphModule({"bias": 1.0}, scale_graph())


def test_call_module_with_nested_graph_module_and_backend_kernel() -> None:
    inner = GraphModule({}, scale_graph_without_attrs())
    calls: list[Any] = []

    def fused_kernel(a: Any, b: Any) -> Any:  # what a backend might store
        calls.append((a, b))
        return a - b

    g = Graph()
    x = g.placeholder("x")
    y = g.call_module("inner", (x,))
    g.output(g.call_module("kernels.fused", (y, x)))
    gm = GraphModule({"inner": inner, "kernels": {"fused": fused_kernel}}, g, class_name="Outer")
    assert gm(3.0) == 3.0 * 3.0 - 3.0
    assert calls == [(9.0, 3.0)]
    assert "kernels_fused = self.kernels.fused(inner, x)" in gm.code
    assert gm.print_readable().startswith("class Outer:\n    def forward(self, x):\n")
    assert repr(gm).startswith("Outer(\nclass Outer:")


def scale_graph_without_attrs() -> Graph:
    g = Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.mul, (x, x)))
    return g


def test_owning_module_is_set() -> None:
    g = scale_graph()
    gm = GraphModule({"consts.scale": 1, "bias": 0}, g)
    assert g.owning_module is gm and gm.graph is g
    g.lint()


def test_recompile_after_edit_keeps_names_stable() -> None:
    g = scale_graph()
    gm = GraphModule({"consts.scale": 2.0, "bias": 1.0}, g)
    before = gm.code
    assert gm(1.0) == 3.0
    add = g.find_nodes(target=operator.add)[0]
    add.target = operator.sub
    assert gm(1.0) == 3.0  # still the old code until recompile
    gm.recompile()
    assert gm(1.0) == 1.0
    assert gm.code == before.replace("add = mul + bias;  del mul", "add = mul - bias;  del mul")
    gm.recompile()
    assert gm.code.splitlines()[1:] == before.replace("+", "-").splitlines()[1:]


def test_assigning_a_new_graph_recompiles() -> None:
    gm = GraphModule({}, scale_graph_without_attrs())
    g = Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.neg, (x,)))
    gm.graph = g
    assert gm(2) == -2 and g.owning_module is gm


def test_set_attribute_creates_holders_and_refuses_to_shadow_members() -> None:
    gm = GraphModule({}, scale_graph_without_attrs())
    gm.set_attribute("a.b.c", 5)
    assert gm.get_attribute("a.b.c") == 5 and "AttributeHolder(b)" == repr(gm.a)
    for bad in ("graph", "forward", "code", "recompile", "_private"):
        with pytest.raises(ValueError, match="shadow"):
            gm.set_attribute(bad, 1)
    gm.delete_attribute("a.b.c")
    with pytest.raises(AttributeError, match="has no attribute 'a.b.c'"):
        gm.get_attribute("a.b.c")


def test_generated_source_is_in_linecache() -> None:
    gm = GraphModule({}, scale_graph_without_attrs())
    assert re.fullmatch(r"<fx_ir-generated-\d+>", gm.filename)
    assert linecache.getline(gm.filename, 1) == "def forward(self, x):\n"
    assert linecache.getline(gm.filename, 2) == "    mul = x * x\n"
    first = gm.filename
    gm.recompile()
    assert gm.filename != first


def test_tracebacks_show_generated_lines() -> None:
    g = Graph()
    x, d = g.placeholder("x"), g.placeholder("d")
    y = g.call_function(np.add, (x, 1))
    g.output(g.call_function(operator.truediv, (y, d)))
    gm = GraphModule({}, g)
    with pytest.raises(TypeError) as info:
        gm(np.ones(3), "text")
    text = "".join(traceback.format_exception(info.value))
    assert f'File "{gm.filename}", line 3, in forward' in text
    assert "truediv = add / d;  del add" in text
    assert gm.node_at_line(3) == "truediv"


def test_linecache_entry_goes_away_with_the_code() -> None:
    gm = GraphModule({}, scale_graph_without_attrs())
    old = gm.filename
    gm.recompile()
    gc.collect()
    assert old not in linecache.cache and gm.filename in linecache.cache


def test_keyword_arguments_and_defaults() -> None:
    g = Graph()
    x = g.placeholder("x")
    k = g.placeholder("k", default=10)
    g.output(g.call_function(operator.add, (x, k)))
    gm = GraphModule({}, g)
    assert gm(1) == 11 and gm(1, 2) == 3 and gm(x=1, k=5) == 6


def test_programs_run_as_modules(program, rng, same, fresh_inputs) -> None:  # type: ignore[no-untyped-def]
    gm = GraphModule({}, program.build(), class_name=program.name)
    inputs = program.inputs(rng)
    same(gm(*fresh_inputs(inputs)), program.reference(*fresh_inputs(inputs)))


def test_deepcopy_is_independent() -> None:
    import copy

    gm = GraphModule({"consts": {"scale": np.array([2.0])}, "bias": 1.0}, scale_graph())
    clone = copy.deepcopy(gm)
    assert clone.code == gm.code and clone.graph is not gm.graph and clone.graph.owning_module is clone
    clone.get_attribute("consts.scale")[0] = 10.0
    assert gm(1.0)[0] == 3.0 and clone(1.0)[0] == 11.0


def test_readme_example_runs_and_prints_what_it_claims(capsys) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "fx_ir" / "README.md").read_text()
    example = readme.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(example, "fx_ir/README.md", "exec"), {})
    printed = capsys.readouterr().out
    claimed = [line[2:] for line in example.splitlines() if line.startswith("# ") and "..." not in line]
    for line in claimed:
        assert line in printed
