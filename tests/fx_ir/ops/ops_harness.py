"""Differential harness for the op registry: run NumPy on real arrays and the rule on their metas.

`check` wants NumPy's exception type, or its dtype, shape, scalar-ness, aliasing and writes.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import settings

from dynamo.fx_ir.ops import Attribute, Method, OpRuleError, lookup_attribute, lookup_function, lookup_method
from dynamo.fx_ir.tensor_meta import TensorMeta

DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                np.uint32, np.uint64, np.float16, np.float32, np.float64,
                                np.complex64, np.complex128)]
RNG = np.random.default_rng(0)

# DYNAMO_OPS_EXAMPLES=<factor> runs every property test with factor times more random examples;
# by default the examples are derandomized, so the suite is deterministic and fast
_SCALE = int(os.environ.get("DYNAMO_OPS_EXAMPLES", "1"))


def examples(n: int) -> Callable[[Any], Any]:
    """Hypothesis settings for a property test of about n examples."""
    return settings(max_examples=n * _SCALE, deadline=None, derandomize=_SCALE == 1, database=None)


def sample(shape: tuple[int, ...] = (), dtype: Any = np.float64, rng: np.random.Generator = RNG,
           scalar: bool = False) -> Any:
    """Random values safe for every ufunc: positive, small, no zeros (so no data-dependent errors)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        values = rng.integers(0, 2, size=shape).astype(bool)
    elif dtype.kind in "iu":
        values = rng.integers(1, 6, size=shape).astype(dtype)
    elif dtype.kind == "c":
        values = (rng.uniform(0.5, 2, size=shape) + 1j * rng.uniform(0.5, 2, size=shape)).astype(dtype)
    else:
        values = rng.uniform(0.5, 2, size=shape).astype(dtype)
    if scalar:
        return dtype.type(values.reshape(-1)[0])
    return values


class Const:
    """A NumPy value the rule should see as a constant, not as a traced array or scalar."""

    def __init__(self, value: Any) -> None:
        self.value = value


def to_meta(x: Any) -> Any:
    """Arrays and NumPy scalars become TensorMeta (as the frontend traces them); the rest stays."""
    if isinstance(x, Const):
        return x.value
    if isinstance(x, np.ndarray | np.generic):
        return TensorMeta.from_value(x)
    if isinstance(x, list):
        return [to_meta(v) for v in x]
    if isinstance(x, tuple):
        return tuple(to_meta(v) for v in x)
    return x


def _copy(x: Any) -> Any:
    if isinstance(x, Const):
        return _copy(x.value)
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, list | tuple):
        return type(x)(_copy(v) for v in x)
    return x


def _lookup(target: Any) -> Any:
    if isinstance(target, Method):
        return lookup_method(target.name)
    if isinstance(target, Attribute):
        return lookup_attribute(target.name)
    return lookup_function(target)


def _call_numpy(target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if isinstance(target, Method):
        return getattr(args[0], target.name)(*args[1:], **kwargs)
    if isinstance(target, Attribute):
        return getattr(args[0], target.name)
    return target(*args, **kwargs)


def compare(meta: Any, value: Any, where: str = "result") -> None:
    if isinstance(value, np.ndarray):
        assert isinstance(meta, TensorMeta), f"{where}: expected an array meta, got {meta!r}"
        assert not meta.scalar, f"{where}: NumPy gave an ndarray, rule says NumPy scalar"
        assert meta.dtype == value.dtype, f"{where}: dtype {meta.dtype} != NumPy's {value.dtype}"
        assert meta.shape == value.shape, f"{where}: shape {meta.shape} != NumPy's {value.shape}"
        assert all(type(d) is int for d in meta.shape), f"{where}: non-int size in {meta.shape}"
    elif isinstance(value, np.generic):
        assert isinstance(meta, TensorMeta) and meta.scalar, f"{where}: NumPy gave a scalar, rule {meta!r}"
        assert meta.dtype == value.dtype, f"{where}: dtype {meta.dtype} != NumPy's {value.dtype}"
    elif isinstance(value, list | tuple):
        assert type(meta) is type(value), f"{where}: {type(meta).__name__} != {type(value).__name__}"
        assert len(meta) == len(value), f"{where}: {len(meta)} results, NumPy gives {len(value)}"
        for i, (m, v) in enumerate(zip(meta, value)):
            compare(m, v, f"{where}[{i}]")
    else:
        assert meta == value and type(meta) is type(value), f"{where}: {meta!r} != NumPy's {value!r}"


def _resolve(ref: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if isinstance(ref, tuple):
        return _resolve(ref[0], args, kwargs)[ref[1]]
    return args[ref] if isinstance(ref, int) else kwargs[ref]


def _arrays(x: Any) -> list[np.ndarray]:
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, list | tuple):
        return [a for v in x for a in _arrays(v)]
    return []


def _check_alias(result: Any, view_ref: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if isinstance(result, list | tuple):
        refs = view_ref if isinstance(view_ref, tuple) and len(view_ref) == len(result) and not (
            len(view_ref) == 2 and isinstance(view_ref[0], str)) else (view_ref,) * len(result)
        for r, ref in zip(result, refs):
            _check_alias(r, ref, args, kwargs)
        return
    if not isinstance(result, np.ndarray) or result.size == 0:
        return
    inputs = _arrays((args, tuple(kwargs.values())))
    if view_ref is None:
        shared = [a for a in inputs if a.size and np.shares_memory(result, a)]
        assert not shared, "rule says a new array, but NumPy's result shares memory with an input"
    else:
        source = _resolve(view_ref, args, kwargs)
        assert np.shares_memory(result, source), f"rule says a view of {view_ref!r}; NumPy's result is not"


def check(target: Any, *args: Any, _expect: type[BaseException] | None = None, **kwargs: Any) -> Any:
    """Compare the registry row of `target` with NumPy on these (real) arguments."""
    info = _lookup(target)
    assert info is not None, f"no registry row for {target!r}"
    real_args, real_kwargs = _copy(args), {k: _copy(v) for k, v in kwargs.items()}
    before = _copy((real_args, real_kwargs))
    metas = to_meta(args)
    meta_kwargs = {k: to_meta(v) for k, v in kwargs.items()}
    numpy_exc: BaseException | None = None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = _call_numpy(target, real_args, real_kwargs)
        except Exception as exc:  # noqa: BLE001 - any NumPy error is a valid expectation
            numpy_exc = exc
    try:
        meta = info.infer(*metas, **meta_kwargs)
    except OpRuleError as exc:
        if _expect is not None and isinstance(exc, _expect):
            return exc
        raise AssertionError(f"{info.name}: rule gave up ({type(exc).__name__}: {exc}) but NumPy "
                             f"{'raised ' + repr(numpy_exc) if numpy_exc else 'succeeded'}") from exc
    except Exception as exc:
        if numpy_exc is None:
            raise AssertionError(f"{info.name}: rule raised {exc!r}, NumPy succeeded") from exc
        assert type(exc) is type(numpy_exc), (f"{info.name}: rule raised {type(exc).__name__}({exc}), "
                                              f"NumPy {type(numpy_exc).__name__}({numpy_exc})")
        return exc
    assert _expect is None, f"{info.name}: expected {_expect.__name__}"
    if numpy_exc is not None:
        raise AssertionError(f"{info.name}: NumPy raised {numpy_exc!r}, rule returned {meta!r}")
    compare(meta, value, info.name)
    effects = info.effects(*metas, **meta_kwargs)
    _check_alias(value, effects.view_of, real_args, real_kwargs)
    _check_untouched(before, (real_args, real_kwargs), effects.mutates)
    return meta


def _check_untouched(before: Any, after: Any, mutates: tuple[Any, ...]) -> None:
    (bargs, bkw), (aargs, akw) = before, after
    written = set()
    for ref in mutates:
        written.add(id(_resolve(ref, aargs, akw)))
    for b, a in zip(_arrays((bargs, tuple(bkw.values()))), _arrays((aargs, tuple(akw.values())))):
        if id(a) not in written:
            assert np.array_equal(a, b, equal_nan=True), "an input the rule says is not written changed"


def call_as_graph(target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Any]] | None:
    """The checked call as a one-node graph for a backend test (the backend corpus plugins): array
    arguments become placeholders, behind np.positive where that is exact and cheap so that a
    backend lowers the op inside a kernel; the graph returns the result and every input (to compare
    in-place writes). None when there is nothing to compare (a nondeterministic op, no array input)."""
    import builtins

    from dynamo.fx_ir import Graph, GraphModule, map_aggregate

    info = _lookup(target)
    effects = info.effects(*to_meta(args), **{k: to_meta(v) for k, v in kwargs.items()})
    if effects.nondeterministic:
        return None  # np.empty_like and friends
    args, kwargs = _copy(args), {k: _copy(v) for k, v in kwargs.items()}
    mutated = {id(_resolve(ref, args, kwargs)) for ref in effects.mutates}
    g = Graph()
    inputs: list[Any] = []

    def lift(value: Any) -> Any:
        if isinstance(value, Const):
            return value.value
        if not isinstance(value, np.ndarray):
            return value
        placeholder = g.placeholder(f"x{len(inputs)}")
        inputs.append(value)
        if id(value) in mutated or value.dtype.kind not in "iuf" or value.ndim == 0:
            return placeholder  # written in place, or no cheap exact identity op: used as it is
        return g.call_function(np.positive, (placeholder,))

    call_args = map_aggregate(args, lift)
    call_kwargs = {k: map_aggregate(v, lift) for k, v in kwargs.items()}
    if isinstance(target, Method):
        node = g.call_method(target.name, call_args, call_kwargs)
    elif isinstance(target, Attribute):
        node = g.call_function(builtins.getattr, (call_args[0], target.name))
    else:
        node = g.call_function(target, call_args, call_kwargs)
    g.output((node, *[p for p in g.nodes if p.op == "placeholder"]))
    return (GraphModule({}, g), inputs) if inputs else None


def also_check_through(backend_check: Any, stats: dict[str, Any]) -> None:
    """Make every later `check(target, *args)` (the corpus plugins install this before the test
    modules import `check`) also run the checked call as a graph, `backend_check(target, gm, inputs)`
    comparing a backend with it. `stats` counts the checks and the graphs compiled."""
    original = check

    def check_and_compile(target: Any, *args: Any, _expect: type[BaseException] | None = None, **kwargs: Any) -> Any:
        result = original(target, *args, _expect=_expect, **kwargs)
        stats["checked"] += 1
        if _expect is None and not isinstance(result, BaseException):
            made = call_as_graph(target, args, kwargs)
            if made is not None:
                backend_check(target, *made)
                stats["compiled"] += 1
        return result

    globals()["check"] = check_and_compile
