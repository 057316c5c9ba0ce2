"""Tests of fx_ir/fingerprint.py (stable structural keys, also across processes) and of to_dot().

Cross-process stability is checked in a subprocess with a different hash seed.
"""
from __future__ import annotations

import operator
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dynamo.fx_ir import Graph, GraphModule, ShapeProp, canonical_form, fingerprint, to_dot

HERE = Path(__file__).resolve().parent


def affine(constant: Any = 2.0, target: Any = np.multiply, name: str = "x", **kwargs: Any) -> Graph:
    g = Graph()
    x = g.placeholder(name)
    y = g.call_function(target, (x, constant), kwargs)
    g.output(g.call_method("sum", (y,), {"axis": 0}))
    return g


def test_separately_built_identical_graphs_agree(program) -> None:  # type: ignore[no-untyped-def]
    assert fingerprint(program.build()) == fingerprint(program.build())
    assert len(fingerprint(program.build())) == 64


def test_node_names_do_not_matter() -> None:
    assert fingerprint(affine(name="x")) == fingerprint(affine(name="renamed"))


def test_all_programs_differ(programs) -> None:  # type: ignore[no-untyped-def]
    prints = {fingerprint(p.build()) for p in programs.values()}
    assert len(prints) == len(programs)


@pytest.mark.parametrize(
    "other",
    [
        lambda: affine(constant=3.0),
        lambda: affine(constant=2),
        lambda: affine(constant=np.float32(2.0)),
        lambda: affine(constant=True),
        lambda: affine(target=np.add),
        lambda: affine(target=operator.mul),
        lambda: affine(dtype=np.float32),
        lambda: affine(constant=np.array([2.0])),
        lambda: affine(constant=(2.0,)),
        lambda: affine(constant=-0.0),
    ],
)
def test_different_programs_differ(other) -> None:  # type: ignore[no-untyped-def]
    assert fingerprint(other()) != fingerprint(affine())


def test_keyword_order_does_not_matter() -> None:
    assert fingerprint(affine(dtype=np.float32, casting="unsafe")) == fingerprint(
        affine(casting="unsafe", dtype=np.float32)
    )


def test_arrays_count_by_content(rng) -> None:  # type: ignore[no-untyped-def]
    data = rng.random((3, 2))
    assert fingerprint(affine(constant=data)) == fingerprint(affine(constant=data.copy()))
    assert fingerprint(affine(constant=data)) == fingerprint(affine(constant=np.asfortranarray(data)))
    changed = data.copy()
    changed[1, 1] += 1e-12
    assert fingerprint(affine(constant=data)) != fingerprint(affine(constant=changed))
    assert fingerprint(affine(constant=data)) != fingerprint(affine(constant=data.astype(np.float32)))
    assert fingerprint(affine(constant=data)) != fingerprint(affine(constant=data.reshape(2, 3)))


def test_meta_shapes_count_unless_excluded() -> None:
    a, b = affine(), affine()
    ShapeProp(a).run(np.ones((2, 3)))
    ShapeProp(b).run(np.ones((2, 4)))
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a, include_meta=False) == fingerprint(b, include_meta=False) == fingerprint(affine())
    c = affine()
    ShapeProp(c).run(np.ones((2, 3), np.float32))
    assert fingerprint(a) != fingerprint(c)


def test_symbolic_sizes_in_meta() -> None:
    sympy = pytest.importorskip("sympy")
    from dynamo.fx_ir import TensorMeta

    s0, s1 = sympy.symbols("s0 s1", positive=True, integer=True)
    a, b, c = affine(), affine(), affine()
    a.output_node.meta["val"] = TensorMeta((s0 + 1, 3), np.float64)
    b.output_node.meta["val"] = TensorMeta((1 + s0, 3), np.float64)
    c.output_node.meta["val"] = TensorMeta((s1 + 1, 3), np.float64)
    assert fingerprint(a) == fingerprint(b) != fingerprint(c)


def test_get_attr_values_count_when_the_module_is_known() -> None:
    def build(value: Any) -> GraphModule:
        g = Graph()
        x = g.placeholder("x")
        g.output(g.call_function(np.add, (x, g.get_attr("w"))))
        return GraphModule({"w": value}, g)

    assert fingerprint(build(np.ones(3))) == fingerprint(build(np.ones(3)))
    assert fingerprint(build(np.ones(3))) != fingerprint(build(np.zeros(3)))


def test_lambdas_and_closures_are_told_apart() -> None:
    def make(k: float) -> Any:
        return lambda v: v * k

    assert fingerprint(affine(target=lambda a, b: a + b)) == fingerprint(affine(target=lambda a, b: a + b))
    assert fingerprint(affine(target=lambda a, b: a + b)) != fingerprint(affine(target=lambda a, b: a - b))
    assert fingerprint(affine(target=make(2.0))) == fingerprint(affine(target=make(2.0)))
    assert fingerprint(affine(target=make(2.0))) != fingerprint(affine(target=make(3.0)))


def test_self_referencing_closures_terminate() -> None:
    def outer() -> Any:
        def rec(a: Any, b: Any) -> Any:
            return rec if a is None else a

        return rec

    assert fingerprint(affine(target=outer())) == fingerprint(affine(target=outer()))


def test_canonical_form_is_readable() -> None:
    assert canonical_form(affine()) == "\n".join([
        "0 placeholder input tuple()",
        "1 call_function np.multiply tuple(%0,float:0x1.0000000000000p+1)",
        "2 call_method sum tuple(%1) dict(str:'axis':int:0)",
        "3 output output tuple(%2)",
    ])


_SUBPROCESS_SCRIPT = """
import sys
sys.path.insert(0, {here!r})
from conftest import PROGRAMS
from dynamo.fx_ir import fingerprint
for program in PROGRAMS:
    print(program.name, fingerprint(program.build()))
"""


def test_fingerprints_are_equal_across_processes(programs) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    result = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS_SCRIPT.format(here=str(HERE))],
        capture_output=True, text=True, env=env, check=True, timeout=60,
    )
    remote = dict(line.split() for line in result.stdout.splitlines())
    local = {name: fingerprint(p.build()) for name, p in programs.items()}
    assert remote == local


# -- DOT -------------------------------------------------------------------------------------

def test_to_dot(programs) -> None:  # type: ignore[no-untyped-def]
    g = programs["kmeans"].build()
    dot = to_dot(g)
    lines = dot.splitlines()
    assert lines[0] == 'digraph "graph" {' and lines[-1] == "}"
    assert '  "X" [label="X\\nplaceholder X", shape=ellipse];' in lines
    assert '  "norm" [label="norm\\ncall_function np.linalg.norm", shape=box];' in lines
    edges = [line.strip() for line in lines if "->" in line]
    assert edges == [
        '"means" -> "getitem";', '"X" -> "sub";', '"getitem" -> "sub";', '"sub" -> "norm";',
        '"norm" -> "argmin";', '"argmin" -> "output";',
    ]


def test_to_dot_escapes_labels() -> None:
    g = Graph()
    g.output(g.call_method("say", ('quote"d',)))
    g.find_nodes(op="call_method")[0].meta["val"] = 'has "quotes"\\'
    dot = to_dot(g, name='my "graph"')
    assert dot.startswith('digraph "my \\"graph\\"" {')
    assert '\\"quotes\\"\\\\' in dot


def test_call_module_callees_count() -> None:
    def build(inner_target: Any) -> GraphModule:
        inner = affine(target=inner_target)
        g = Graph()
        x = g.placeholder("x")
        g.output(g.call_module("sub", (x,)))
        return GraphModule({"sub": GraphModule({}, inner)}, g)

    assert fingerprint(build(np.multiply)) == fingerprint(build(np.multiply))
    assert fingerprint(build(np.multiply)) != fingerprint(build(np.add))
