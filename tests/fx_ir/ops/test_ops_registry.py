"""The registry's API: lookups by callable, method and attribute; kinds; effects; coverage.

Also enforces the package's layering: fx_ir/ops imports nothing of dynamo/backends, <800 lines.
"""
from __future__ import annotations

import ast
import builtins
import math
import operator
from pathlib import Path

import numpy as np
import pytest
from ops_harness import DTYPES, check, sample

from dynamo.fx_ir import ops
from dynamo.fx_ir.ops import (Attribute, Effects, Method, OpInfo, OpKind, UnsupportedArguments,
                              all_ops, infer_meta, lookup_attribute, lookup_function, lookup_method)
from dynamo.fx_ir.ops.elementwise import numpy_ufuncs
from dynamo.fx_ir.tensor_meta import TensorMeta

OPS_DIR = Path(ops.__file__).parent


def test_every_numpy_ufunc_has_a_row() -> None:
    ufuncs = numpy_ufuncs()
    assert len(ufuncs) > 80
    for name, ufunc in ufuncs.items():
        info = lookup_function(ufunc)
        assert info is not None, f"np.{name} has no registry row"
        assert info.ufunc is ufunc
        expected = OpKind.LINALG if ufunc.signature else OpKind.ELEMENTWISE
        assert info.kind is expected, name


@pytest.mark.parametrize(("fn", "kind"), [
    (np.add, OpKind.ELEMENTWISE), (operator.add, OpKind.ELEMENTWISE), (operator.iadd, OpKind.ELEMENTWISE),
    (np.sum, OpKind.REDUCTION), (np.add.reduce, OpKind.REDUCTION), (np.cumsum, OpKind.SCAN),
    (np.transpose, OpKind.VIEW), (np.reshape, OpKind.VIEW), (np.concatenate, OpKind.COPY_SHAPE),
    (np.zeros, OpKind.CREATION), (operator.getitem, OpKind.INDEXING), (np.matmul, OpKind.LINALG),
    (operator.matmul, OpKind.LINALG), (np.einsum, OpKind.LINALG), (len, OpKind.METADATA),
    (np.ndarray.sum, OpKind.REDUCTION), (np.maximum.accumulate, OpKind.SCAN), (np.where, OpKind.ELEMENTWISE),
])
def test_lookup_function_kinds(fn: object, kind: OpKind) -> None:
    info = lookup_function(fn)
    assert isinstance(info, OpInfo) and info.kind is kind


def test_unknown_and_excluded_callables() -> None:
    excluded = [math.sqrt, math.exp, print, input, np.random.rand, np.random.default_rng, np.save,
                np.load, np.loadtxt, np.savetxt, np.fromfile, np.add.reduceat, lambda x: x, np.seterr,
                np.random.normal, open]
    for fn in excluded:
        assert lookup_function(fn) is None, fn
    assert lookup_method("tofile") is None and lookup_method("item") is None
    assert lookup_method("tolist") is None and lookup_attribute("flags") is None
    assert lookup_attribute("strides") is None and lookup_method("no_such_method") is None
    with pytest.raises(UnsupportedArguments):
        infer_meta(print, 1)
    with pytest.raises(UnsupportedArguments):
        infer_meta("no_such_method", TensorMeta((3,), np.float64))


def test_rows_and_targets() -> None:
    rows = all_ops()
    assert len(rows) > 250
    names = [r.name for r in rows]
    assert len(names) == len(set(names)), "row names are unique"
    for row in rows:
        assert row.targets, row.name
        for target in row.targets:
            if isinstance(target, Method):
                assert lookup_method(target.name) is row
            elif isinstance(target, Attribute):
                assert lookup_attribute(target.name) is row
            else:
                assert lookup_function(target) is row
    assert lookup_function(np.amax) is lookup_function(np.max)
    assert lookup_function(np.abs) is lookup_function(np.absolute)
    assert lookup_function(np.add.reduce) is lookup_function(np.add.reduce)   # a new bound method each time
    for name in ("sum", "mean", "reshape", "transpose", "astype", "copy", "flatten", "ravel", "squeeze",
                 "swapaxes", "clip", "round", "cumsum", "argmax", "dot", "trace", "diagonal", "take",
                 "repeat", "fill", "sort", "argsort", "conj", "all", "any", "min", "max", "std", "var"):
        assert lookup_method(name) is not None, name
    for name in ("T", "mT", "real", "imag", "shape", "dtype", "ndim", "size", "itemsize", "nbytes"):
        assert lookup_attribute(name) is not None, name


def test_effects_api() -> None:
    a = TensorMeta((4, 3), np.float64)
    assert lookup_function(np.transpose).effects(a) == Effects(view_of=0)
    assert lookup_function(np.concatenate).effects([a, a]) == Effects()
    assert lookup_function(operator.setitem).effects(a, 0, 1.0).mutates == (0,)
    assert lookup_function(np.copyto).effects(a, a).mutates == (0,)
    assert lookup_method("sort").effects(a).mutates == (0,)
    assert lookup_function(np.sum).effects(a, 0, None, TensorMeta((3,), np.float64)) == Effects(3, (3,))
    assert lookup_function(np.sum).effects(a, out=TensorMeta((), np.float64)) == Effects("out", ("out",))
    assert lookup_function(np.zeros_like).effects(a) == Effects()
    assert lookup_function(np.empty_like).effects(a).nondeterministic
    assert lookup_function(np.ravel).layout_view and not lookup_function(np.transpose).layout_view


def test_attributes_match_numpy() -> None:
    for dtype in DTYPES:
        for value in (sample((2, 3), dtype), sample((), dtype), sample((0, 4, 1), dtype),
                      sample(dtype=dtype, scalar=True)):
            for name in ("T", "mT", "real", "imag", "shape", "dtype", "ndim", "size", "itemsize", "nbytes"):
                check(Attribute(name), value)
            check(len, value)
            check(np.shape, value)
            check(np.ndim, value)
            check(np.size, value)
            check(np.real, value)
            check(np.imag, value)
    check(np.size, sample((2, 3)), 1)
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.real, 1.5)                      # a Python float in, a Python float out


def test_builtins_rows() -> None:
    assert lookup_function(builtins.abs).kind is OpKind.ELEMENTWISE
    assert lookup_function(builtins.divmod) is not None
    assert infer_meta(builtins.len, TensorMeta((5, 2), np.int8)) == 5


def _modules() -> list[Path]:
    return sorted(OPS_DIR.glob("*.py"))


def test_modules_are_small_documented_and_layered() -> None:
    for path in _modules():
        source = path.read_text()
        assert source.count("\n") < 800, f"{path.name} has more than 800 lines"
        tree = ast.parse(source)
        doc = ast.get_docstring(tree, clean=False) or ""
        lines = doc.strip("\n").split("\n")
        assert len(lines) == 3 and lines[1] == "" and lines[0] and lines[2], \
            f"{path.name}: a two-line module docstring (summary, blank, detail)"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module.split(".")[0] not in ("dynamo", "backends", "fx_ir"), \
                    f"{path.name} imports {node.module}: use relative imports inside fx_ir"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] not in ("dynamo", "backends", "fx_ir"), path.name


def test_signatures_are_annotated() -> None:
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                        *([node.args.vararg] if node.args.vararg else []),
                        *([node.args.kwarg] if node.args.kwarg else [])]
                missing = [a.arg for a in args if a.annotation is None and a.arg not in ("self", "cls")]
                assert not missing, f"{path.name}:{node.lineno} {node.name}: unannotated {missing}"
                assert node.returns is not None, f"{path.name}:{node.lineno} {node.name}: no return annotation"


def test_dtype_queries_and_views() -> None:
    for dtype in DTYPES:
        a = sample((2, 3), dtype)
        check(np.result_type, a, 1.0)
        check(np.result_type, a, sample((), np.int8))
        check(np.iscomplexobj, a)
        check(np.isrealobj, a)
        check(Method("view"), a)
        check(Method("view"), a, np.dtype(f"i{dtype.itemsize}") if dtype.itemsize in (1, 2, 4, 8) else dtype)
    with pytest.raises(UnsupportedArguments):
        infer_meta("view", TensorMeta((2, 4), np.float64), np.float32)   # itemsize change: layout


def test_a_memoized_numpy_error_is_replayed_as_a_new_equal_instance():
    """The probe memo raises a fresh copy of NumPy's error each time (so no traceback keeps frames
    alive); NumPy's AxisError keeps its fields in __slots__, which the copy must carry too."""
    from dynamo.fx_ir.ops.promotion import _fresh

    for error in (np.exceptions.AxisError(1, 1, "destination"), ValueError("plain"),
                  np.exceptions.AxisError("a message only")):
        copy = _fresh(error)
        assert type(copy) is type(error) and str(copy) == str(error) and copy.args == error.args
        assert copy is not error
        assert getattr(copy, "axis", None) == getattr(error, "axis", None)
