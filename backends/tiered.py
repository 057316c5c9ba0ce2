"""The "tiered" backend: every graph starts on the numpy backend (milliseconds to compile) and moves to
backend "c" once it has run long enough to pay for a C compile, compiled in a background thread.

Each graph is called through an instance of a class of its own whose `__call__` is a staticmethod of
the code to run: a tier-up is one class attribute store under the GIL, so a call that already found
the old code finishes on it and every later call, in any thread, runs the new one; and no Python frame
of ours stands between the caller and the graph's code (backend "c" reports floating-point warnings a
fixed number of frames up, at the user's line). Until the graph is due, its `__call__` times each call
(the run time it accumulates is what pays for the compile). Without a C compiler, or when backend "c"
fails on the graph, it stays on numpy (`tier` says why; logged to dynamo.tiers, DYNAMO_LOGS=tiers).
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import os
import queue
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import settings
from ..fx_ir.cond import Cond
from ..fx_ir.graph_module import module_callee
from ..fx_ir.small_size import graph_to_sympy
from .registry import lookup_backend, register_backend

log = logging.getLogger("dynamo.tiers")

__all__ = ["TieredBackend", "TieredGraph", "tiered_backend", "wait_for_tier_ups"]

NUMPY, COMPILING, C, STAYED = "numpy", "compiling", "c", "stayed numpy"
# calls on numpy after which a graph's pace is projected (TieredGraph.project): a few, so that a first
# call slower than the rest (cold caches, NumPy's first use of a loop) weighs less
PROJECT_AT = 4


class GraphCall:
    """What the frontend calls for one graph: each graph's subclass sets `__call__` (TieredGraph.target);
    the instance carries what the frontend reads of a backend's callable (notes, source, plan)."""

    tier: "TieredGraph"
    shares_warnings_with: list[Any]


class TieredGraph:
    """One graph's tier: its callable `call` (whose class's `__call__` is swapped), the run time counted
    so far against `budget` (seconds), and `state`: numpy, compiling, c, or stayed numpy (`why`)."""

    def __init__(self, graph_module: Any, numpy_fn: Callable[..., Any], arity: int, budget: float,
                 marker: Path | None) -> None:
        self.graph_module = graph_module
        self.numpy_fn = numpy_fn
        self.c_fn: Callable[..., Any] | None = None
        self.budget = budget
        self.marker = marker  # a file that says this graph's C module was built in this cache before
        self.spent = 0.0
        self.state = NUMPY
        self.why = ""
        self.c_compile_seconds = 0.0
        self.ops = 0  # the graph's ops, its loop bodies' included, and the C compile they are estimated to cost
        self.estimate = 0.0
        self.calls = 0  # calls counted on numpy
        # called once the tier is final (moved to c, or stays numpy), or once the first calls show that the
        # graph would not be due within `patience` more calls: the frontend times the frame's version then
        self.on_settled: Callable[[], None] | None = None
        self.patience = 0
        self.released = False  # on_settled was called while the graph still counts on numpy
        # the first calls: numpy's, each timed, until the graph is due
        namespace = {"tier": self, "numpy_fn": numpy_fn, "clock": time.perf_counter, "PROJECT_AT": PROJECT_AT}
        self.counting = types.FunctionType(_counting_code(arity), namespace, "counting")
        self.call_type = type("TieredGraphCall", (GraphCall,), {"__call__": staticmethod(self.counting)})
        self.call = self.call_type()
        self.call.tier = self

    @property
    def target(self) -> Callable[..., Any]:
        """What a call of the graph runs now."""
        return self.call_type.__dict__["__call__"].__func__

    @target.setter
    def target(self, fn: Callable[..., Any]) -> None:
        self.call_type.__call__ = staticmethod(fn)  # type: ignore[method-assign]

    def due(self, args: tuple[Any, ...]) -> Any:
        """The graph has run long enough: stop counting, compile it for "c" (in the background, or
        right here when settings say so); this call runs on numpy."""
        with _WORKER.due_lock:  # threads that find it due together: one compile, by the first
            first = self.state == NUMPY and self.target is self.counting
            if first:
                self.state = COMPILING
                self.target = self.numpy_fn
        missing = _WORKER.missing_compiler()
        if not first:
            pass  # another thread found it due first: this call runs on what it left
        elif missing is not None:
            self.stay(missing)
        elif _WORKER.stopping:
            self.stay("the interpreter is exiting")
        else:
            if settings.get("tier_up_in_background"):
                _WORKER.submit(self, args)
            else:
                self.tier_up(args)
        # numpy's code for this call, whose warnings are at the user's lines whatever the stack (the C
        # code reports them a fixed number of frames up, which the frames of this call would shift)
        return self.numpy_fn(*args)

    # ---- the compile (the worker thread's job) ----------------------------------------------------
    def tier_up(self, args: tuple[Any, ...]) -> None:
        start = time.perf_counter()
        try:  # (their import can fail too: inside the try)
            from .c_cpu.diskcache import BuildAbandoned
            from .c_cpu.toolchain import CCompilerUnavailable
        except Exception as error:
            self.failed(error)
            return
        try:
            graph_to_sympy(self.graph_module)  # backend c reads sizes as sympy's
            made = lookup_backend("c")(self.graph_module, list(args))
        except CCompilerUnavailable as error:
            self.stay(_WORKER.compiler_missing(f"no C compiler ({error})"))
            return
        except BuildAbandoned:
            self.stay("the interpreter is exiting")
            return
        except Exception as error:  # a failure of backend "c" is never the user's problem
            self.failed(error)
            return
        if getattr(made, "program", None) is None:  # not C kernels (GPU arrays run eagerly on their library)
            self.stay(f"backend c made no C code for it ({type(made).__name__})")
            return
        self.c_compile_seconds = time.perf_counter() - start
        self.c_fn = made
        _copy_warning_registry(self.numpy_fn, made)
        self.state = C
        self.target = made  # the swap: calls from now on run the C code
        if self.on_settled is not None:
            self.on_settled()
        if self.marker is not None:
            _touch(self.marker)
        log.debug("tiered: a graph of %d ops moved to c after %.3f s on numpy (C %s in %.3f s)", _ops(self.graph_module),
                  self.spent, "compiled" if getattr(made, "compiled", True) else "from the disk cache",
                  self.c_compile_seconds)

    def stay(self, why: str) -> None:
        self.state, self.why = STAYED, why
        self.target = self.numpy_fn
        log.debug("tiered: a graph of %d ops stays on numpy: %s", _ops(self.graph_module), why)
        if self.on_settled is not None:
            self.on_settled()

    def notify_when_settled(self, callback: Callable[[], None], patience: int) -> None:
        """Call `callback` when the tier is final, or early when the graph cannot pay for C within `patience`
        more calls (0: only when final)."""
        self.on_settled, self.patience = callback, patience

    def project(self) -> None:
        """After the graph's first calls on numpy: one whose calls, at their pace so far, would not have run
        `budget` seconds within `patience` more calls cannot pay for a C compile soon (a hot tiny graph: an
        8-element loop body of microseconds needs half a million calls). Its frame's version is timed now
        rather than after the frontend's own wait, which could keep a version slower than plain running
        untimed for as long; the graph keeps counting, and still moves to c if it gets there."""
        if self.on_settled is None or self.patience <= 0 or self.state != NUMPY or self.released:
            return
        if self.spent + self.spent / self.calls * self.patience < self.budget:
            self.released = True
            log.debug("tiered: a graph of %d ops at %.1f us per call would not be due within %d calls: "
                      "its version is timed on numpy", _ops(self.graph_module), 1e6 * self.spent / self.calls,
                      self.patience)
            self.on_settled()

    @property
    def settled(self) -> bool:
        """Whether the code a call runs is final (c, or numpy for good)."""
        return self.state in (C, STAYED)

    def failed(self, error: Exception) -> None:
        self.stay(f"backend c failed: {type(error).__name__}: {error}")
        if settings.get("strict"):  # loud in tests: the next call raises what backend c raised
            def raise_failure(*args: Any) -> Any:
                raise RuntimeError(f"tiered: backend c failed on a graph that moved up: {error}") from error
            self.target = raise_failure

    def rearm(self) -> None:
        """A compile that never finished (the worker thread is gone after a fork): due at the next call."""
        if self.state == COMPILING:
            self.state = NUMPY
            self.target = self.counting

    def describe(self) -> str:
        """explain's line for the graph's tier."""
        if self.state == C:
            return (f"c (moved up after {self.spent:.3f} s on numpy; the C compile took {self.c_compile_seconds:.3f} s "
                    "in the background)")
        if self.state == COMPILING:
            return f"compiling for c in the background (after {self.spent:.3f} s on numpy)"
        if self.state == STAYED:
            return f"stayed numpy: {self.why}"
        cost = f": {self.ops} ops, a C compile of about {self.estimate:.1f} s" if self.budget == self.estimate > 0 else ""
        timed = "; too fast per call to pay for C soon: its version is timed on numpy" if self.released else ""
        return f"numpy ({self.spent:.3f} s run so far; it moves to c after {self.budget:.3f} s{cost}{timed})"


class TieredBackend:
    """`backend(graph_module, example_inputs) -> callable`: the numpy backend's code behind a GraphCall
    that moves to backend "c" when the graph is hot (see the module docstring)."""

    # a graph of more ops stays on numpy: the frontend keeps the short loops it unrolled past it as loops
    op_limit_setting = "tier_up_max_ops"

    def __call__(self, graph_module: Any, example_inputs: list[Any]) -> Callable[..., Any]:
        from .numpy_cpu import EagerOnDevice, numpy_backend

        numpy_fn = numpy_backend(graph_module, example_inputs)  # the backend itself, whatever "numpy" names now

        if isinstance(numpy_fn, EagerOnDevice):
            return numpy_fn  # GPU arrays: there is no C tier for them
        arity = sum(1 for n in graph_module.graph.nodes if n.op == "placeholder")
        marker = _marker(graph_module, example_inputs)
        ops = _ops(graph_module)
        estimate = ops * float(settings.get("tier_up_seconds_per_op"))
        cold = float(settings.get("tier_up_seconds"))
        if cold > 0:
            cold = max(cold, estimate)  # a big graph runs as long as its compile would take before it pays
        budget = min(cold, float(settings.get("tier_up_cached_seconds"))) if marker is not None and marker.exists() \
            else cold
        if cold > 0 and _branches_in_loops(graph_module):
            # the numpy backend runs such a loop as Python calls per iteration and per branch (2-3x the
            # plain loop's time): its C loop is compiled at once, in the background
            budget = 0.0
        tier = TieredGraph(graph_module, numpy_fn, arity, budget, marker)
        tier.ops, tier.estimate = ops, estimate
        missing = _WORKER.missing_compiler()
        if missing is not None:
            tier.stay(missing)
        elif budget < 0 or budget == float("inf"):
            tier.stay("config.tier_up_seconds is negative or infinite: tiering is off")
        elif ops > int(settings.get("tier_up_max_ops")):
            tier.stay(f"{ops} ops, over config.tier_up_max_ops ({settings.get('tier_up_max_ops')}): "
                      f"its C compile would take about {estimate:.0f} s of a core")
        elif budget == 0 and not settings.get("tier_up_in_background"):
            tier.state = COMPILING  # due before its first call (tests): compiled for "c" now
            tier.tier_up(tuple(example_inputs))
        run = tier.call
        # what the frontend reads of a backend's callable: its notes, generated source and plan
        for name in ("notes", "source", "plan", "compile_seconds"):
            if hasattr(numpy_fn, name):
                setattr(run, name, getattr(numpy_fn, name))
        # the user's warnings registry, which the frontend gives what it calls, is given to these
        run.shares_warnings_with = [numpy_fn, *([tier.c_fn] if tier.c_fn is not None else [])]
        return run


class _Worker:
    """The one background thread that compiles graphs for "c", one at a time (a C compile already
    keeps a core busy); started by the first graph due, a daemon (an exiting program never waits
    for it), made again in a forked child."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[TieredGraph, tuple[Any, ...]]] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.due_lock = threading.Lock()
        self.pending: set[TieredGraph] = set()  # submitted, not finished
        self.idle = threading.Condition(self.lock)
        self.no_compiler: tuple[Any, str] | None = None  # (settings' c_compiler, why there is no C compiler)
        self.stopping = False

    def compiler_missing(self, why: str) -> str:
        """Remember that the compiler settings name no compiler: later graphs stay on numpy at once."""
        if self.no_compiler is None:
            log.info("tiered: graphs stay on the numpy backend: %s", why)
        self.no_compiler = (settings.get("c_compiler"), why)
        return why

    def missing_compiler(self) -> str | None:
        """Why no graph can move to c (no compiler under the current settings), or None."""
        if self.no_compiler is None or self.no_compiler[0] != settings.get("c_compiler"):
            return None
        return self.no_compiler[1]

    def submit(self, tier: TieredGraph, args: tuple[Any, ...]) -> None:
        with self.lock:
            self.pending.add(tier)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.run, name="dynamo-tier-up", daemon=True)
                self.thread.start()
        self.jobs.put((tier, args))

    def run(self) -> None:
        while not self.stopping:
            tier, args = self.jobs.get()
            try:
                if not self.stopping:
                    tier.tier_up(args)
            except Exception as error:  # tier_up catches backend c's errors; anything else: numpy, and go on
                tier.failed(error)
            except BaseException:  # only at interpreter exit
                return
            finally:
                del args
                with self.lock:
                    self.pending.discard(tier)
                    self.idle.notify_all()

    def wait(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while self.pending:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.idle.wait(left)
        return True

    def after_fork_in_child(self) -> None:
        pending = list(self.pending)
        self.__init__()  # type: ignore[misc]  # the parent's thread and locks do not exist here
        for tier in pending:
            tier.rearm()

    def stop(self) -> None:
        self.stopping = True


_WORKER = _Worker()
os.register_at_fork(after_in_child=_WORKER.after_fork_in_child)
atexit.register(_WORKER.stop)


def wait_for_tier_ups(timeout: float | None = None) -> bool:
    """Wait until every graph submitted for "c" is compiled (or stayed numpy); False on timeout."""
    return _WORKER.wait(timeout)


_CODES: dict[int, types.CodeType] = {}
_SOURCE = """
def counting({params}):
    if tier.spent >= tier.budget:
        return tier.due(({params}{comma}))
    start = clock()
    result = numpy_fn({params})
    tier.spent += clock() - start
    tier.calls += 1
    if tier.calls == PROJECT_AT:
        tier.project()
    return result
"""


def _counting_code(arity: int) -> types.CodeType:
    """The code of the counting target, made once per number of graph inputs (no *args: a call passes
    its arguments as they are)."""
    code = _CODES.get(arity)
    if code is None:
        params = ", ".join(f"a{i}" for i in range(arity))
        namespace: dict[str, Any] = {}
        exec(compile(_SOURCE.format(params=params, comma="," if arity == 1 else ""), "<tiered-graph>", "exec"),
             namespace)
        code = _CODES.setdefault(arity, namespace["counting"].__code__)
    return code


def _marker(graph_module: Any, example_inputs: list[Any]) -> Path | None:
    """A file under the disk cache named after the graph's code and its inputs' types and layouts: it
    exists when this graph was compiled for "c" before (its C module is then likely on disk, and a
    tier-up costs a load, not a compile)."""
    root = settings.get("cache_dir")
    if not root:
        return None
    digest = hashlib.sha256(graph_module.code.encode())
    for value in example_inputs:
        digest.update(repr((type(value).__name__, getattr(value, "dtype", None), getattr(value, "shape", None),
                            getattr(value, "strides", None))).encode())
    return Path(root) / "tiers" / digest.hexdigest()[:32]


def _touch(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError:
        pass  # only a hint for the next process


def _copy_warning_registry(numpy_fn: Any, made: Any) -> None:
    """The frontend gave the numpy code the user's warnings registry and module name (so that a warning
    shows once per line of the program); the C code that replaces it gets them too."""
    namespace = getattr(getattr(numpy_fn, "__func__", numpy_fn), "__globals__", None)
    target = getattr(getattr(made, "__func__", made), "__globals__", None)
    if isinstance(namespace, dict) and isinstance(target, dict):
        for name in ("__warningregistry__", "__name__"):
            if name in namespace:
                target[name] = namespace[name]


def _ops(graph_module: Any) -> int:
    """The graph's ops, the bodies of its loop nodes included (each is compiled into the C module)."""
    count = 0
    for node in graph_module.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        count += 1
        if node.op == "call_module":
            body = getattr(module_callee(node), "body", None)
            if body is not None and hasattr(body, "graph"):
                count += _ops(body)
    return count


def _branches_in_loops(graph_module: Any, in_loop: bool = False) -> bool:
    """Whether a loop node of the graph (or of a loop body in it) has a cond node in its body."""
    for node in graph_module.graph.nodes:
        if node.op != "call_module":
            continue
        callee = module_callee(node)
        if in_loop and isinstance(callee, Cond):
            return True
        body = getattr(callee, "body", None)
        if body is not None and hasattr(body, "graph") and _branches_in_loops(body, True):
            return True
    return False


tiered_backend = register_backend(TieredBackend(), name="tiered")
