"""Types of the C extension built from csrc/ (the eval-frame hook and per-code cache), for mypy.

Keep in step with the method and member tables of csrc/*.c: a name missing here fails the type check.
"""
import types
from typing import Any, Callable

SKIP: object  # the callback's answer: the hook ignores this code from now on
SKIP_UNHOOKED: object  # the same, and the frames its calls start run with the hook off too
CACHE_FULL: object  # the callback's answer: run the original code, the cache is at its limit

class GuardProgram:
    instructions: Any
    nregs: int
    info: Any
    def __init__(self, spec: Any, nregs: int, info: Any = None) -> None: ...
    def check(self, args: Any, globals: dict[str, Any], builtins: Any = None, closure: Any = None) -> int: ...

class CacheEntry:
    guard: GuardProgram
    code: types.CodeType
    owner: Any
    hits: int
    in_place: int
    unhooked: int
    probe: int  # timed calls left in which the original and the compiled code take turns
    dropped: int  # the timed turns found the compiled code slower: hits run the original
    best_compiled: float  # seconds of the fastest timed call of the compiled code (0.0: none)
    best_original: float
    recheck: int  # calls after which a dropped version is timed again (0: never)
    part_of_caller: int  # a resume function's version: no turns of its own during a compiled turn

class FrameView:
    f_code: types.CodeType
    f_func: types.FunctionType
    f_globals: dict[str, Any]
    f_builtins: dict[str, Any]
    f_closure: tuple[types.CellType, ...] | None
    f_args: tuple[Any, ...]
    f_locals: dict[str, Any]

class CompiledFunction:
    _dynamo_fn: Any  # the original callable
    _dynamo_callback: Any
    def __init__(self, fn: Callable[..., Any], callback: Any) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __reduce__(self) -> Any: ...  # answered by the reducer set_compiled_function_reducer registered
    def __copy__(self) -> CompiledFunction: ...
    def __deepcopy__(self, memo: Any) -> CompiledFunction: ...
    def __get__(self, instance: Any, owner: Any = None) -> Any: ...
    def __getattr__(self, name: str) -> Any: ...  # what functools.update_wrapper copied into its __dict__

def set_compiled_function_reducer(reducer: Callable[[CompiledFunction], Any] | None) -> None: ...
def call_moving(fn: Callable[..., Any], values: list[Any]) -> Any: ...
def set_eval_frame(callback: Any) -> Any: ...
def get_eval_frame() -> Any: ...
def hook_installed() -> bool: ...
def reset() -> None: ...
def cache_entries(code: types.CodeType) -> list[CacheEntry]: ...
def is_skipped(code: types.CodeType) -> bool: ...
def mark_skip(code: types.CodeType) -> None: ...
def set_turn_timer(timer: Callable[[], float] | None) -> None: ...
def clear_cache(code: types.CodeType) -> None: ...
def retime(code: types.CodeType, owner: Any) -> None: ...
