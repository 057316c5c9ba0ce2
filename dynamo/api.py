"""The user-facing entry points: compile(), enable(), disable(), reset().

They only switch the per-thread compile callback of dynamo._C on and off; what happens to a
frame is decided by convert_frame.ConvertFrame.
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from . import _C, serialization, skipfiles
from .backends.registry import UnknownBackend, lookup_backend_deferred
from .exc import InvalidBackend

if TYPE_CHECKING:
    from .convert_frame import ConvertFrame

F = TypeVar("F", bound=Callable[..., Any])

# One callback per (backend, options): functions compiled the same way share cache entries.
_callbacks: dict[tuple, ConvertFrame] = {}


def callback_for(backend: Any, fullgraph: bool, dynamic: bool | None) -> ConvertFrame:
    if backend is None:
        from . import config

        backend = config.default_backend
    try:
        compiler = lookup_backend_deferred(backend)
    except UnknownBackend as error:
        raise InvalidBackend(error.name, error.known) from None
    name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
    key = (compiler, fullgraph, dynamic)
    if key not in _callbacks:
        # the tracer is imported with the first callback (`import dynamo` stays cheap)
        from .convert_frame import ConvertFrame

        if not _callbacks:
            _keep_freed_memory()
        _callbacks[key] = ConvertFrame(compiler, name, fullgraph, dynamic)
    return _callbacks[key]


def _keep_freed_memory() -> None:
    """Once, when the first function is compiled: config.keep_freed_memory."""
    from . import _C, config

    if config.keep_freed_memory:
        _C.keep_freed_memory(64 << 20, 32 << 20)


def compile(
    fn: Callable[..., Any] | None = None,
    *,
    backend: str | Callable[..., Any] | None = None,
    fullgraph: bool = False,
    dynamic: bool | None = None,
) -> Any:
    """Compile `fn` (a function, method, lambda or closure) for `backend`.

    Usable as `@compile`, `@compile(backend="eager")` or `compile(fn)`. The result behaves like
    `fn` (same name, docstring, signature) and returns exactly what `fn` returns. No backend named:
    config.default_backend.
    """
    if not isinstance(fullgraph, bool):
        raise TypeError(f"compile(fullgraph=...) takes a bool, got {fullgraph!r}")
    if dynamic not in (None, True, False):
        raise TypeError(f"compile(dynamic=...) takes None, True or False, got {dynamic!r}")
    callback = callback_for(backend, fullgraph, dynamic)
    if fn is None:
        return functools.partial(_wrap, callback=callback)
    return _wrap(fn, callback)


def _wrap(fn: Callable[..., Any], callback: ConvertFrame) -> Any:
    if isinstance(fn, _C.CompiledFunction):
        fn = fn._dynamo_fn
    if isinstance(fn, types.MethodType):
        # bound method: compile the function, bind it to the same object again
        return types.MethodType(_wrap(fn.__func__, callback), fn.__self__)
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(_wrap(fn.__func__, callback))
    if inspect.isclass(fn) or not callable(fn):
        raise TypeError(
            f"dynamo.compile takes a function, method or lambda, not {type(fn).__name__!r}; "
            "to compile a callable object, compile its __call__ method"
        )
    code = getattr(fn, "__code__", None)
    if isinstance(code, types.CodeType):
        skipfiles.request(code)  # compiled even if exec made it
    compiled = _C.CompiledFunction(fn, callback)
    functools.update_wrapper(compiled, fn)
    return compiled


class _CallbackContext:
    """Sets this thread's compile callback for a block (`with`) or a call (decorator)."""

    def __init__(self, callback: Any):
        self.callback = callback
        # What each `with` replaced, per thread: one context object may be entered by
        # several threads at once, and each must get its own callback back.
        self._local = threading.local()

    def __enter__(self) -> None:
        saved = self._local.__dict__.setdefault("saved", [])
        saved.append(_C.set_eval_frame(self.callback))

    def __exit__(self, *exc: Any) -> None:
        _C.set_eval_frame(self._local.saved.pop())

    def __call__(self, fn: F) -> F:
        callback = self.callback

        @functools.wraps(fn)
        def run_with_callback(*args: Any, **kwargs: Any) -> Any:
            previous = _C.set_eval_frame(callback)
            try:
                return fn(*args, **kwargs)
            finally:
                _C.set_eval_frame(previous)

        return run_with_callback  # type: ignore[return-value]


def enable(
    backend: str | Callable[..., Any] | None = None, *, fullgraph: bool = False, dynamic: bool | None = None
) -> _CallbackContext:
    """`with dynamo.enable():` compiles every frame started inside the block."""
    return _CallbackContext(callback_for(backend, fullgraph, dynamic))


def disable(fn: F | None = None) -> Any:
    """Run `fn` (decorator) or a block (`with dynamo.disable():`) without compiling anything."""
    if fn is None:
        return _CallbackContext(None)
    if isinstance(fn, _C.CompiledFunction):
        fn = fn._dynamo_fn
    if not callable(fn):
        raise TypeError(f"dynamo.disable takes a callable, not {type(fn).__name__!r}")
    # a CompiledFunction with no callback runs fn with the hook suspended; unlike a wrapper
    # function it pickles (dynamo.serialization), so disabled functions travel to workers too
    disabled = _C.CompiledFunction(fn, None)
    functools.update_wrapper(disabled, fn)
    return disabled


def reset() -> None:
    """Forget every compiled version of every function (caches, SKIP marks, warnings)."""
    _C.reset()
    assembler = sys.modules.get(f"{__package__}.assembler")  # loaded with the tracer, if it ever ran
    if assembler is not None:
        assembler.reset_failures()
    convert_frame = sys.modules.get(f"{__package__}.convert_frame")
    if convert_frame is not None:
        convert_frame.forget_sympy_needs()
    for callback in _callbacks.values():
        callback.reset()


serialization.install()
