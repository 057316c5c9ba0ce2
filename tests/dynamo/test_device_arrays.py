"""GPU arrays as graph inputs, tested without CuPy or a GPU: a stand-in array type behaving as
CuPy's ndarray does towards NumPy (protocol dispatch, 0-d results, TypeError on mixing)."""
import operator
import types

import numpy as np
import pytest

import dynamo
from dynamo.device_arrays import device_of, dispatches_to_device, is_device_array, register_device_array_type
from support import compile_with_counter, graph_breaks


class FakeDevice:
    def __init__(self, id):
        self.id = id


def _unwrap(value, device):
    """The NumPy data behind stand-ins; a NumPy array among them is refused as CuPy refuses it."""
    if isinstance(value, FakeCudaArray):
        if value._device != device:
            raise ValueError(f"array on device {value._device} used on device {device}")
        return value._data
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)}")
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, device) for v in value)
    return value


def _wrap(value, device):
    if isinstance(value, (np.ndarray, np.generic)):  # reductions give 0-d arrays, as in CuPy
        return FakeCudaArray(np.asarray(value), device)
    if isinstance(value, tuple):
        return tuple(_wrap(v, device) for v in value)
    return value


def runs_as_a_library(cls):
    """CuPy is compiled code: frames of its methods are never traced. The stand-in's are Python,
    so they run with compiling off (a compiled caller's graph break would trace them otherwise)."""
    for name, value in list(vars(cls).items()):
        if isinstance(value, types.FunctionType):
            setattr(cls, name, dynamo.disable(value))
        elif isinstance(value, property):
            setattr(cls, name, property(dynamo.disable(value.fget)))
    return cls


@runs_as_a_library
class FakeCudaArray:
    """CuPy's ndarray in miniature: its data on 'the device', NumPy calls handed to `fakecupy`."""

    def __init__(self, data, device=0):
        self._data = np.asarray(data)
        self._device = device

    @property
    def __cuda_array_interface__(self):
        return {"shape": self._data.shape, "typestr": self._data.dtype.str, "version": 3}

    @property
    def device(self):
        return FakeDevice(self._device)

    @property
    def data(self):
        return ("device pointer", id(self._data))

    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    base = property(lambda self: None)
    T = property(lambda self: FakeCudaArray(self._data.T, self._device))

    def get(self):
        return self._data.copy()

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
                        "NumPy array explicitly.")

    def __repr__(self):
        return f"FakeCudaArray({self._data!r}, device={self._device})"

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if not hasattr(getattr(fakecupy, ufunc.__name__, None), "__call__" if method == "__call__" else method):
            return NotImplemented
        inputs, kwargs = _unwrap(inputs, self._device), {k: _unwrap(v, self._device) for k, v in kwargs.items()}
        return _wrap(getattr(ufunc, method)(*inputs, **kwargs), self._device)

    def __array_function__(self, func, types, args, kwargs):
        namespace = fakecupy.linalg if func.__module__ == "numpy.linalg" else fakecupy
        if not hasattr(namespace, func.__name__):
            return NotImplemented
        args, kwargs = _unwrap(args, self._device), {k: _unwrap(v, self._device) for k, v in kwargs.items()}
        return _wrap(func(*args, **kwargs), self._device)

    def _method(name):
        def method(self, *args, **kwargs):
            args, kwargs = _unwrap(args, self._device), {k: _unwrap(v, self._device) for k, v in kwargs.items()}
            return _wrap(getattr(self._data, name)(*args, **kwargs), self._device)
        method.__name__ = name
        return method

    for _name in ("sum", "mean", "max", "min", "reshape", "astype", "copy", "ravel", "transpose"):
        locals()[_name] = _method(_name)  # no cumprod: the 'lacks this method' case

    def _operator(ufunc, reflected=False):
        def method(self, other):
            return ufunc(other, self) if reflected else ufunc(self, other)
        return method

    __add__, __radd__ = _operator(np.add), _operator(np.add, True)
    __sub__, __rsub__ = _operator(np.subtract), _operator(np.subtract, True)
    __mul__, __rmul__ = _operator(np.multiply), _operator(np.multiply, True)
    __truediv__, __rtruediv__ = _operator(np.true_divide), _operator(np.true_divide, True)
    __gt__, __lt__ = _operator(np.greater), _operator(np.less)

    def __neg__(self):
        return np.negative(self)

    def __getitem__(self, key):
        return _wrap(self._data[_unwrap(key, self._device)], self._device)

    def __setitem__(self, key, value):
        self._data[_unwrap(key, self._device)] = _unwrap(value, self._device)

    def __len__(self):
        return len(self._data)

    def __bool__(self):
        return bool(self._data)

    del _method, _operator, _name


# the functions the stand-in library implements: a subset, so that 'it has no such function' is tested
fakecupy = types.SimpleNamespace(
    __name__="fakecupy",
    add=types.SimpleNamespace(__call__=np.add, reduce=np.add.reduce),  # no add.accumulate
    **{f.__name__: f for f in (np.exp, np.sin, np.cos, np.subtract, np.multiply, np.true_divide, np.negative,
                               np.greater, np.less, np.sqrt, np.sum, np.mean, np.max, np.where, np.concatenate,
                               np.zeros_like, np.shape, np.may_share_memory)},
    linalg=types.SimpleNamespace(norm=np.linalg.norm),
)
register_device_array_type(FakeCudaArray, lambda a: a.device.id, fakecupy, "FakeCuPy")


def same(result, expected):
    """Equal values of the same types; stand-ins compared by device and data."""
    if type(result) is not type(expected):
        return False
    if isinstance(result, FakeCudaArray):
        return result._device == expected._device and result.dtype == expected.dtype and \
            np.array_equal(result._data, expected._data)
    if isinstance(result, tuple):
        return len(result) == len(expected) and all(same(a, b) for a, b in zip(result, expected))
    return result == expected


def fx(*values, device=0):
    return FakeCudaArray(np.array(values, dtype=np.float64), device)


X = np.linspace(0.0, 1.0, 6)


# ---- recognising device arrays -------------------------------------------------------------------------

def test_device_arrays_are_recognised_by_registered_type():
    assert is_device_array(fx(1.0)) and not is_device_array(X) and not is_device_array(1.0)
    assert device_of(fx(1.0, device=1)) == "cuda:1" and device_of(X) is None


def test_what_dispatches_to_the_library():
    assert dispatches_to_device(np.exp, FakeCudaArray) and not dispatches_to_device(np.log, FakeCudaArray)
    assert dispatches_to_device(np.sum, FakeCudaArray) and not dispatches_to_device(np.cumprod, FakeCudaArray)
    assert dispatches_to_device(np.linalg.norm, FakeCudaArray) and not dispatches_to_device(np.linalg.det, FakeCudaArray)
    assert not dispatches_to_device(np.asarray, FakeCudaArray) and not dispatches_to_device(np.array, FakeCudaArray)
    assert dispatches_to_device(operator.add, FakeCudaArray) and dispatches_to_device(len, FakeCudaArray)
    assert dispatches_to_device("sum", FakeCudaArray) and not dispatches_to_device("cumprod", FakeCudaArray)
    assert not dispatches_to_device(np.exp, np.ndarray)


# ---- graphs over device arrays --------------------------------------------------------------------------

def chain(x):
    y = np.exp(x) * 2.0 + np.sin(x)
    return y, np.sum(y - 1.0), y.mean()


def test_an_elementwise_chain_and_reductions_compile_into_one_graph():
    compiled, counter = compile_with_counter(chain)
    x = fx(0.5, 1.0, 2.0)
    result = compiled(x)
    assert same(result, chain(x))
    assert counter.frame_count == 1 and graph_breaks(compiled) == []
    assert all(type(r) is FakeCudaArray for r in result) and result[1].ndim == 0  # 0-d, as CuPy returns
    placeholder = next(n for n in counter.graphs[0].graph.nodes if n.op == "placeholder")
    assert placeholder.meta["device"] == "cuda:0" and placeholder.meta["array_type"] is FakeCudaArray
    assert all(n.meta.get("device") == "cuda:0" for n in counter.graphs[0].graph.nodes if n.op == "call_function")
    compiled(fx(3.0, 4.0, 5.0))
    assert counter.frame_count == 1


def test_type_checks_see_the_device_array_type():
    def f(x):
        s = x.sum()
        return isinstance(x, np.ndarray), isinstance(s, np.ndarray), type(x) is FakeCudaArray, \
            isinstance(s, FakeCudaArray), isinstance(s, np.generic), x * 2
    compiled, counter = compile_with_counter(f)
    x = fx(1.0, 2.0)
    assert same(compiled(x), f(x))
    assert compiled(x)[:4] == (False, False, True, True)
    assert graph_breaks(compiled) == []


def test_numpy_then_device_then_numpy_compiles_twice_then_hits_the_cache():
    compiled, counter = compile_with_counter(lambda x: np.exp(x) + 1.0)
    compiled(np.ones(3))
    compiled(fx(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(compiled(np.ones(3)), np.exp(np.ones(3)) + 1.0)
    assert same(compiled(fx(1.0, 2.0, 3.0)), np.exp(fx(1.0, 2.0, 3.0)) + 1.0)
    assert counter.frame_count == 2
    reasons = compiled._dynamo_callback.recompiles[0][1]
    assert any("type(L['x']) is numpy.ndarray" in r for r in reasons), reasons


def test_another_device_recompiles_and_guards_say_the_device():
    compiled, counter = compile_with_counter(lambda x: x * 3.0)
    compiled(fx(1.0, 2.0))
    compiled(fx(1.0, 2.0))
    assert counter.frame_count == 1
    result = compiled(fx(1.0, 2.0, device=1))
    assert same(result, fx(3.0, 6.0, device=1)) and counter.frame_count == 2
    reasons = compiled._dynamo_callback.recompiles[-1][1]
    assert any("L['x'] is on cuda:0" in r for r in reasons), reasons
    guards = str(compiled._dynamo_callback.compiled_frames[-1][1].guards).splitlines()
    assert "L['x'] is on cuda:1" in guards and "L['x'].shape == (2,)" in guards


def test_device_shapes_stay_static():
    compiled, counter = compile_with_counter(lambda x: x + 1.0)
    for n in (2, 3, 4):
        assert same(compiled(FakeCudaArray(np.ones(n))), FakeCudaArray(np.ones(n) + 1.0))
    assert counter.frame_count == 3


def test_device_only_calls_keep_host_results_on_the_host():
    def f(x):
        z = np.zeros(3) + 1.0  # made on the host: no device array in it
        return np.exp(x), z
    compiled, counter = compile_with_counter(f)
    result = compiled(fx(1.0, 2.0, 3.0))
    assert type(result[0]) is FakeCudaArray and type(result[1]) is np.ndarray
    assert counter.frame_count == 1 and graph_breaks(compiled) == []


def test_views_items_and_lists_of_device_arrays():
    def f(x, y):
        a = x.T[1:]
        b = np.concatenate([x, y])
        first, *_ = b
        return a, b, first, np.linalg.norm(b), len(x)
    compiled, counter = compile_with_counter(f)
    x, y = fx(1.0, 2.0, 3.0), fx(4.0, 5.0)
    assert same(compiled(x, y), f(x, y))
    assert graph_breaks(compiled) == []


# ---- what runs in Python ------------------------------------------------------------------------------

def mixed(x, h):
    y = np.exp(x)
    return y + h


def test_mixing_a_device_and_a_numpy_array_breaks_and_raises_as_python_does():
    x = fx(1.0, 2.0, 3.0)
    with pytest.raises(TypeError) as plain:
        mixed(x, X[:3])
    compiled, counter = compile_with_counter(mixed)
    with pytest.raises(TypeError) as raised:
        compiled(x, X[:3])
    assert str(raised.value) == str(plain.value)
    breaks = graph_breaks(compiled)
    assert len(breaks) == 1 and counter.frame_count == 1, breaks  # np.exp(x) compiled, y + h in Python
    assert "mixes a FakeCuPy array on cuda:0 and a NumPy array: FakeCuPy raises TypeError for this" in breaks[0]
    assert "fakecupy.asarray(...) or .get()" in breaks[0]
    assert "return y + h" in breaks[0]


def test_a_host_scalar_from_the_graph_mixes_with_device_arrays_as_a_number():
    def f(x, h):
        return x * np.sum(h)  # a NumPy scalar, not an array: CuPy takes it
    compiled, counter = compile_with_counter(f)
    x = fx(1.0, 2.0)
    assert same(compiled(x, X), f(x, X)) and graph_breaks(compiled) == []


def breaks_and_raises(fn, x, error, match):
    """fn raises `error` plain and compiled, the compiled one after one graph break; its reason."""
    with pytest.raises(error, match=match):
        fn(x)
    compiled, counter = compile_with_counter(fn)
    with pytest.raises(error, match=match):
        compiled(x)
    breaks = graph_breaks(compiled)
    assert len(breaks) == 1 and counter.frame_count == 1, breaks
    return breaks[0]


def test_np_asarray_of_a_device_array_breaks_and_behaves_as_python():
    def f(x):
        y = x + 1.0
        return np.asarray(y)
    reason = breaks_and_raises(f, fx(1.0, 2.0), TypeError, "Implicit conversion")
    assert "numpy.asarray of a FakeCuPy array (on cuda:0) does not dispatch to FakeCuPy" in reason, reason


def test_a_function_the_library_lacks_breaks():
    def f(x):
        return np.cumprod(x * 2.0) + 1.0
    reason = breaks_and_raises(f, fx(1.0, 2.0), TypeError, "no implementation found for 'numpy.cumprod'")
    assert "FakeCuPy has no cumprod" in reason, reason


def test_a_method_the_array_type_lacks_breaks():
    def f(x):
        return (x * 2.0).cumprod()
    reason = breaks_and_raises(f, fx(1.0, 2.0), AttributeError, "cumprod")
    assert "has no attribute 'cumprod'" in reason, reason


def test_a_ufunc_method_the_library_lacks_breaks():
    def f(x):
        return np.add.accumulate(x * 2.0)
    reason = breaks_and_raises(f, fx(1.0, 2.0), TypeError, "NotImplemented")
    assert "FakeCuPy's add has no accumulate" in reason, reason


def test_device_attributes_and_get_run_in_python():
    def f(x):
        y = x * 2.0
        return y.device.id, y.get(), y.data[0]
    compiled, counter = compile_with_counter(f)
    x = fx(1.0, 2.0)
    result = compiled(x)
    assert result[0] == 0 and type(result[1]) is np.ndarray and np.array_equal(result[1], [2.0, 4.0])
    assert result[2] == "device pointer"
    breaks = graph_breaks(compiled)
    assert len(breaks) == 3, breaks  # each read runs in Python, on the array the graph computed
    assert "FakeCudaArray attribute 'device' of a FakeCuPy array of shape (2,) and dtype float64 on cuda:0" in breaks[0]
    assert "fakecupy.FakeCudaArray.get() of a FakeCuPy array" in breaks[1] and "attribute 'data'" in breaks[2]


def test_writes_into_device_arrays():
    def f(x, y):
        x[0] = y[1] * 2.0
        x += 1.0
        return x.sum()
    x, y = fx(1.0, 2.0, 3.0), fx(4.0, 5.0, 6.0)
    plain_x = FakeCudaArray(x._data.copy())
    compiled, counter = compile_with_counter(f)
    assert same(compiled(x, y), f(plain_x, y))
    assert same(x, plain_x) and counter.frame_count == 1 and graph_breaks(compiled) == []


# ---- backends ---------------------------------------------------------------------------------------------

def test_the_numpy_backend_runs_device_graphs_eagerly_and_says_so():
    x = fx(0.5, 1.0, 2.0)
    report = dynamo.explain(chain, backend="numpy")(x)
    assert report.notes_per_graph == [["runs eagerly through FakeCuPy: FakeCuPy inputs; backend='triton' fuses "
                                       "kernels on the GPU"]]
    assert same(dynamo.compile(chain)(x), chain(x))
    assert same(dynamo.compile(chain)(fx(1.0, 2.0, 3.0, device=1)), chain(fx(1.0, 2.0, 3.0, device=1)))


def test_a_graph_spliced_inline_dispatches_to_the_library():
    def straight(gm, example_inputs):  # a backend's straight-line code, spliced into the frame
        namespace = {"np": np}
        exec("def forward(x):\n    y = np.exp(x)\n    return (y * 2.0,)\n", namespace)
        namespace["forward"].inlinable = True
        return namespace["forward"]

    def f(x):
        return np.exp(x) * 2.0
    compiled = dynamo.compile(f, backend=straight)
    x = fx(0.0, 1.0)
    assert same(compiled(x), f(x)) and same(compiled(x), f(x))
    assert [g.inlined for _, frame in compiled._dynamo_callback.compiled_frames for g in frame.graphs] == [True]


def test_the_numpy_backend_still_optimizes_host_graphs():
    report = dynamo.explain(chain, backend="numpy")(X)
    assert report.notes_per_graph == [[]]


def test_versions_that_take_device_arrays_are_not_timed_against_the_original():
    # a call's host time on a GPU is its launches, not its kernels: turns cannot tell which is faster
    import time

    from dynamo import _C

    def slow(graph_module, example_inputs):
        def run(*args):
            time.sleep(0.002)
            return graph_module.forward(*args)
        return run

    def double(x):
        return x * 2.0
    with dynamo.config.patch(timed_turns=4):
        compiled = dynamo.compile(double, backend=slow)
        x = fx(1.0, 2.0)
        for _ in range(8):
            assert np.array_equal(compiled(x).get(), double(x).get())
        (entry,) = _C.cache_entries(double.__code__)
        assert not entry.dropped
        dynamo.reset()
        compiled = dynamo.compile(double, backend=slow)
        for _ in range(8):
            compiled(np.arange(2.0))
        (entry,) = _C.cache_entries(double.__code__)
        assert entry.dropped  # the same slow version on NumPy arrays is
