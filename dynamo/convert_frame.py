"""The compile callback the C hook calls on a cache miss: skip, compile, or fall back.

One ConvertFrame exists per (backend, options); cache entries belong to the callback that made
them, so a function compiled for two backends keeps two sets of entries. The tracer, guards and
shapes (and numpy with them) load with the first frame compiled: a program whose frames are all
skipped (`python -m dynamo run` of a script with no function of its own) never pays for them.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import types
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from . import _C, builtins_watch, config, resume_origins, skipfiles
from .exc import Category, DynamoError, InternalCompilerError, SourceLocation, Unsupported
from .logs import get_artifact_logger

if TYPE_CHECKING:
    from .guards import GuardSet
    from .recompiles import ValueChurn
    from .resume_origins import PythonRegion
    from .shapes import FrameState

guards_log = get_artifact_logger("guards")
breaks_log = get_artifact_logger("breaks")
internal_log = logging.getLogger("dynamo")
recompiles_log = get_artifact_logger("recompiles")
bytecode_log = get_artifact_logger("bytecode")
output_code_log = get_artifact_logger("output_code")

def trace_frame(frame: Any, backend: Any, backend_name: str, fullgraph: bool = False,
                over_budget: Mapping[types.CodeType, Unsupported] | None = None) -> "CompiledFrame":
    """Interpret the frame symbolically into a graph and build the code that replaces it.

    When an instruction cannot be captured, the state before it is the first trace's where that
    instruction changed nothing (break_reuse.py); otherwise trace again from the start and stop right
    before it (tracing is deterministic, so the second pass reaches exactly that state): the graph so
    far is compiled and the rest of the frame continues in a resume function (graph_break.py).
    With fullgraph=True the first such instruction raises instead. `over_budget`: functions that
    ran past config.trace_instruction_budget as frames of their own, which calls do not inline.
    For the backends that read sizes in their small form, the first trace of a code object runs
    without sympy (fx_ir/lazy_sympy.py); one that needs it is redone with it.
    """
    from .fx_ir.lazy_sympy import SympyNeeded, sympy_forbidden

    traced: list[Any] = []  # every trace's state, taken apart at the end (see _take_apart)
    try:
        code = frame.f_code
        if backend_name in _SMALL_SIZE_BACKENDS and config.small_sizes and code not in _NEEDED_SYMPY:
            try:
                with sympy_forbidden():
                    return _trace_frame(frame, backend, backend_name, fullgraph, traced, over_budget or {})
            except SympyNeeded as needed:
                _NEEDED_SYMPY.add(code)  # its recompiles start with sympy: no trace thrown away twice
                guards_log.debug("%s: traced again with sympy: %s leaves the small integer fragment (%s)",
                                 frame.f_code.co_qualname, needed.what, _where_needed(needed))
                _take_apart(traced)
                traced.clear()
        with sympy_forbidden(False):  # (a frame compiled while another is traced without sympy)
            return _trace_frame(frame, backend, backend_name, fullgraph, traced, over_budget or {})
    except DynamoError:  # raised on purpose: a graph break, a backend's failure, a user's error
        raise
    except Exception as error:  # anything else is a bug of ours
        raise InternalCompilerError(error, frame.f_code.co_qualname, _last_location(traced, frame.f_code)) from error
    finally:
        _take_apart(traced)


# backends that read sizes in their small form (fx_ir/small_size.py): a trace for them starts without
# sympy; the tiered backend hands its graphs to "c" with sympy sizes
_SMALL_SIZE_BACKENDS = frozenset({"numpy", "tiered"})
# code objects whose trace left the small form once
_NEEDED_SYMPY: weakref.WeakSet[types.CodeType] = weakref.WeakSet()


def forget_sympy_needs() -> None:
    """dynamo.reset(): every code object's next trace starts without sympy again."""
    _NEEDED_SYMPY.clear()


def _where_needed(needed: BaseException) -> str:
    """file:line (function) of the code that used sympy, for the guards log."""
    import traceback

    for entry in reversed(traceback.extract_tb(needed.__traceback__)):
        if not entry.filename.endswith(("lazy_sympy.py", "small_size.py")):
            return f"{os.path.basename(entry.filename)}:{entry.lineno} ({entry.name})"
    return "?"


def _last_location(traced: list[Any], code: types.CodeType) -> SourceLocation:
    """The user's line the tracer was at last (innermost inlined call), else the frame's first line."""
    for obj in reversed(traced):
        location = getattr(obj, "current_location", None)
        if location is not None:
            return location
    return SourceLocation(code.co_filename, code.co_firstlineno, code.co_name)


def load_compiler() -> None:
    """Import now what compiling frames will import on the way (the tracer, code generation,
    guards, shapes): for a harness that runs a whole program compiled and settles these long-lived
    objects before it starts. Not sympy: with it loaded, traces take other paths that cost more
    (CPython's test_generators under the pytest plugin: 7.4 s CPU -> 10.7 s), and it loads when a
    trace first needs a symbol."""
    from . import codegen, graph_break, guards, loop_capture, output_graph, resume, shapes, symbolic_convert  # noqa: F401


def _trace_frame(frame: Any, backend: Any, backend_name: str, fullgraph: bool, traced: list[Any],
                 over_budget: Mapping[types.CodeType, Unsupported]) -> "CompiledFrame":
    from .codegen import PyCodegen, assemble, starts_no_frames
    from .graph_break import (CannotBreak, NoHandOff, StartsInPython, codegen_break, describe_cannot_break,
                              explain_break, reconstruct)
    from .loop_capture import peeled_loop_broken, unrolled_past_budget, unrolled_past_op_limit
    from .loop_records import LoopRecords, RetraceWithoutLoop
    from .python_loops import PythonLoop
    from .resume import python_region
    from .translator.core import BreakHere
    from .break_reuse import kept_before_break

    code = frame.f_code
    start = time.perf_counter()
    reason: Unsupported | None = None
    loops = LoopRecords()
    runs = 0
    while True:
        loops = loops.next_trace()
        tx = _new_trace(frame, backend, backend_name, loops, over_budget, traced,
                        None if reason is None else reason.break_step)
        output = tx.output
        runs += 1
        try:
            return_value = tx.run()
        except RetraceWithoutLoop as rejected:  # that loop runs as before: unrolled, or in Python
            breaks_log.debug("%s: %s", code.co_qualname, rejected)
            if rejected.peel and rejected.key not in loops.peeled:
                loops.peeled.add(rejected.key)
            else:
                loops.rejected[rejected.key] = rejected.rejected
            continue
        except PythonLoop as loop:  # unrolled without array work: it runs in Python (a graph break)
            breaks_log.debug("%s: %s", code.co_qualname, loop)
            assert loop.site not in loops.python_loops, "GET_ITER did not find the loop it must break before"
            loops.python_loops.add(loop.site)
            continue
        except BreakHere:
            assert reason is not None  # the translator stops at a break only when given one (break_at)
        except Unsupported as error:
            if loops.pending_selections:  # it broke while `a[mask]` waited for its operand: read it eagerly
                loops.eager_selections.update(loops.pending_selections)
                continue
            if output.instructions_traced > config.trace_instruction_budget:
                forced = unrolled_past_budget(loops)
                if forced is not None:  # the retrace captures that short loop: its body traced once
                    breaks_log.debug("%s: unrolling ran past the budget: %s", code.co_qualname, error)
                    loops.forced.add(forced)
                    continue
            if tx.open_withs:  # a break inside a captured np.errstate block: that block runs in Python
                loops.plain_withs.add(tx.open_withs[0][0])
                continue
            peeled = peeled_loop_broken(tx, error)
            if peeled is not None:  # its first iteration breaks the graph: that loop runs as before
                loops.rejected[peeled.key] = peeled.rejected
                continue
            if fullgraph or reason is not None or getattr(error, "break_step", None) is None:
                # the frame runs as written: explain still lists the loops its traces could not capture
                error.loop_notes = [rejected.describe() for rejected in loops.rejected.values()]  # type: ignore[attr-defined]
                raise
            reason = detached(error)
            if not kept_before_break(tx, reason):
                continue  # traced again, to stop before the instruction
            if config.check_break_reuse:
                _check_kept_state(frame, backend, backend_name, over_budget, traced, tx, reason)
        else:
            if reason is None:  # (a retrace that stops at a break counts its steps with the loops as they were)
                forced_loops = unrolled_past_op_limit(output, loops)
                if forced_loops:
                    breaks_log.debug("%s: unrolled short loops made a graph past the backend's op limit",
                                     code.co_qualname)
                    loops.forced.update(forced_loops)
                    continue
            body = PyCodegen(code)
            reconstruct(body, tx, return_value)  # closures, generators, methods made while tracing too
            output.side_effects.codegen(body)
            breaks = []
            break
        # stopped before the instruction that breaks the graph
        reason = explain_break(tx, reason)
        try:
            body = codegen_break(tx, reason)
        except StartsInPython:
            region = python_region(code, tx.ip)
            if region is None:
                raise describe_cannot_break(reason, NoHandOff(
                    "no point after it where compiled code could take over, so the whole function "
                    "runs in Python")) from None
            breaks_log.debug("%s runs in Python up to line %d: %s", code.co_qualname, region.exit_line, reason)
            return python_region_frame(region, reason)
        except (CannotBreak, Unsupported) as why:
            raise describe_cannot_break(reason, why) from None
        breaks_log.debug("graph break in %s: %s", code.co_qualname, reason)
        breaks = [reason]
        break
    traced.append(body)
    compiled = output.compile_graph(body.graph_outputs)
    # side effects wait for the graph: if it raises, the frame runs as written instead, unless the
    # graph wrote arrays of the program's (the trace breaks before ops that may raise after such a write)
    rerun = bool(output.side_effects) and not output.numpy.memory.writes
    unhooked = starts_no_frames(code, compiled, body)
    if compiled is not None:
        compiled.called_unhooked = unhooked
    result = CompiledFrame(output.guards, assemble(code, compiled, body, rerun), [compiled] if compiled else [],
                           breaks=breaks, unhooked=unhooked)
    result.dynamic = output.shape_env.report() + [
        f"{source.name()} is a run-time float: any value hits this graph (traced with {i.value!r})"
        for source, i in output.inputs.items() if "runtime_float" in getattr(getattr(i.variable, "node", None), "meta", {})]
    result.loops = output.loops.report()
    result.loop_count = len(output.loops.captured)
    result.computes_on_inputs = output.computes_on_inputs
    result.trace_seconds = time.perf_counter() - start - (compiled.compile_seconds if compiled else 0.0)
    result.traces = runs
    return result


def _new_trace(frame: Any, backend: Any, backend_name: str, loops: Any, over_budget: Mapping[types.CodeType, Unsupported],
               traced: list[Any], break_at: int | None) -> Any:
    """The translator of one trace of `frame` (stopping before step `break_at`, when given)."""
    from .output_graph import OutputGraph
    from .symbolic_convert import InstructionTranslator

    output = OutputGraph(frame.f_code, frame.f_globals, backend, backend_name)
    output.loops = loops
    output.over_budget = over_budget
    tx = InstructionTranslator(frame, output)
    traced += [output, tx, output.builder]  # the builder's table of the frame's objects too
    tx.break_at = break_at
    return tx


def _check_kept_state(frame: Any, backend: Any, backend_name: str, over_budget: Mapping[types.CodeType, Unsupported],
                      traced: list[Any], kept: Any, reason: Unsupported) -> None:
    """config.check_break_reuse: a retrace that stops before the break reaches the state kept from
    the first trace (dynamo/break_reuse.py), or this raises."""
    from .break_reuse import state_of
    from .translator.core import BreakHere

    retrace = _new_trace(frame, backend, backend_name, kept.output.loops.next_trace(), over_budget, traced,
                         reason.break_step)
    try:
        retrace.run()
    except BreakHere:
        pass
    except Exception as error:
        raise AssertionError(f"a retrace of {frame.f_code.co_qualname} to its break raised {error!r}") from error
    else:
        raise AssertionError(f"a retrace of {frame.f_code.co_qualname} ran past its break")
    finally:
        kept.output.shape_policy.env = kept.output.shape_env  # the policy answers for the trace that goes on
    mine, theirs = state_of(kept), state_of(retrace)
    if mine != theirs:
        differing = [f"{a!r} != {b!r}" for a, b in zip(mine, theirs) if a != b]
        raise AssertionError(f"the state kept at the break in {frame.f_code.co_qualname} differs from a "
                             f"retrace's: {'; '.join(differing)}")


def _take_apart(traced: list[Any]) -> None:
    """Empty the tracer's own objects once the frame is compiled. They refer to each other (the
    output graph and its helpers, translators and their codegen) and to the frame's values
    through their VariableTrackers: left as they are, those cycles keep the program's objects
    alive until the cyclic collector runs, and with gc disabled forever, where plain Python
    frees them on return (SciPy's assert_deallocated of a Pool passed to a compiled call)."""
    for obj in traced:
        vars(obj).clear()


# Names of calls that list the objects the collector tracks: compiling a function the frame calls
# allocates code, guards and cache entries (CPython's test_descr counts the objects around a loop
# of `g == g`), so the frame and every call it makes run as written.
_OBJECT_OBSERVERS = frozenset({"get_objects"})

# What a frame may read that compiled code makes look different: such a frame runs as written,
# every instruction (so does one whose generator expressions, comprehensions or lambdas read them:
# `all(getrefcount(o) == n for o in objects)` counts the enclosing frame's references).
# (names, the reason with {code} and {names}, the hint)
_OBSERVERS: tuple[tuple[frozenset[str], str, str], ...] = (
    # compiled code holds its constants, caches and the values it passes to resume functions
    (frozenset({"getrefcount", "get_referrers", "get_referents", "getweakrefcount"}),
     "{code} calls {names}, which sees the references that compiled code holds (constants, caches, values "
     "passed across a graph break)", "the function runs uncompiled; the functions it calls are still compiled"),
    # compiled code runs a function in several frames (its transformed code, resume functions,
    # code run in Python): `tb.tb_frame is sys._getframe()`, f_back and f_locals would differ
    (frozenset({"_getframe", "currentframe", "tb_frame", "f_back", "f_locals"}),
     "{code} reads frames ({names}), and compiled code runs it in frames of its own",
     "the function runs uncompiled; the functions it calls are still compiled"),
    (_OBJECT_OBSERVERS, "{code} calls {names}, which lists the objects that compiling the functions it calls "
     "allocates", "the function and the functions it calls run uncompiled"),
)


def check_observers(code: types.CodeType) -> None:
    """Raise Unsupported when the frame reads reference counts, frames or the collector's objects."""
    used = _names_used(code)
    for names, reason, hint in _OBSERVERS:
        seen = names.intersection(used)
        if seen:
            raise Unsupported(Category.UNSUPPORTED_CALL,
                              reason.format(code=code.co_qualname, names=", ".join(sorted(seen))), hint)


def _names_used(code: types.CodeType) -> set[str]:
    """The names a code and the code objects nested in it (comprehensions, lambdas) read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


def region_reason(code: types.CodeType, in_loop: bool) -> Unsupported:
    """Why (part of) a resume function runs in Python."""
    from . import resume

    where = SourceLocation(code.co_filename, resume.entry_line(code), code.co_name)
    if in_loop:
        return Unsupported(
            Category.LOOP_BREAK, "the graph break is inside a loop, so the rest of the loop runs in Python "
            "(compiling it would break again on every iteration)",
            "move the code that breaks the graph out of the loop, or vectorize the loop with NumPy", where)
    return Unsupported(
        Category.UNSUPPORTED_OPCODE, "code inside try/except and with blocks runs in Python, so that "
        "exceptions reach their handlers", "keep NumPy work that should be compiled outside try and with "
        "blocks (code after the block is compiled again)", where)


def python_region_frame(region: PythonRegion, reason: Unsupported) -> CompiledFrame:
    """A frame that starts with code that runs in Python: its own code with a hand-off to a
    compiled resume function where that code ends (valid for every input: no guards)."""
    from .guards import GuardSet

    return CompiledFrame(GuardSet(), region.code, fallback_reason=detached(reason), python_until=region.exit_line)


def detached(error: Unsupported) -> Unsupported:
    """The reason without the traceback it was raised with: kept for explain(), it must not keep
    the tracer's frames alive, and with them every value of the user's frame (arguments that
    plain Python would have freed: a generator's finally would never run)."""
    error.__traceback__ = None
    error.__context__ = error.__cause__ = None
    return error


_reported_internal_errors: set[tuple[str, str, SourceLocation | None]] = set()


def report_internal_error(error: InternalCompilerError) -> None:
    """One warning on the `dynamo` logger per distinct internal error (its type, message and the
    user's line), with the traceback; never a Python warning, which the program could see."""
    key = (type(error.error).__name__, str(error.error), error.location)
    if key in _reported_internal_errors:
        return
    _reported_internal_errors.add(key)
    internal_log.warning("dynamo: internal error: please report: %s: %s\n  while compiling %s at %s\n  "
                         "the function runs uncompiled (explain() lists it; DYNAMO_STRICT=1 raises it)",
                         type(error.error).__name__, error.error, error.function, error.location,
                         exc_info=(type(error.error), error.error, error.error.__traceback__))


# Tracing mutates shared state (caches, counters): one frame is compiled at a time.
compile_lock = threading.RLock()


def _new_compile_lock_in_child() -> None:
    # a fork while another thread compiles copies the lock held: the child, which lacks that
    # thread, would wait for it forever at its first compile
    global compile_lock
    compile_lock = threading.RLock()


os.register_at_fork(after_in_child=_new_compile_lock_in_child)


@dataclass
class CompiledFrame:
    """What compiling one frame produced: the guards and the code that replaces the original."""

    guards: GuardSet
    code: types.CodeType
    graphs: list = field(default_factory=list)
    fallback_reason: Unsupported | None = None
    breaks: list[Unsupported] = field(default_factory=list)  # graph breaks taken, in order
    trace_seconds: float = 0.0
    traces: int = 0  # runs of the translator over the frame (a graph break kept from the first: one)
    # with fallback_reason: the line where compiled code takes over again (None: never)
    python_until: int | None = None
    unhooked: bool = False  # the code starts no frame to compile: the hook stays off (codegen.starts_no_frames)
    dynamic: list[str] = field(default_factory=list)  # explain's lines on dynamic sizes (ShapeEnv.report)
    loops: list[str] = field(default_factory=list)  # explain's lines on loops captured and not (loop_records)
    loop_count: int = 0  # loop nodes in the graphs, nested ones included
    # the trace did arithmetic, NumPy calls or type tests on the frame's inputs (variables.input_work);
    # True unless a trace said otherwise (a fallback keeps its guards)
    computes_on_inputs: bool = True


# What must be equal for a transformed code object to behave as the original (names and line
# tables may differ: they only label tracebacks, and the original's are the right ones)
_BEHAVIOUR = ("co_code", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars",
              "co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_nlocals",
              "co_exceptiontable")


def code_to_run(original: types.CodeType, compiled: CompiledFrame) -> types.CodeType:
    """The code a cache hit runs. The original itself when the frame falls back whole or the
    transformed code does nothing else: the C hook then runs the frame it was given as it is
    (no second frame made and no arguments copied into it; tracebacks show the user's frame)."""
    if compiled.fallback_reason is not None and compiled.python_until is None:
        return original
    from .bytecode_compat import flatten_signature

    code = compiled.code
    flat = flatten_signature(original)
    if all(getattr(code, name) == getattr(flat, name) for name in _BEHAVIOUR):
        return original
    return code


def runs_as_written(original: types.CodeType, compiled: CompiledFrame) -> bool:
    """Whether the frame may run its original code for good, with no guards: its trace made no graph and
    took no break, the code it made is the original (nothing rewritten), and nothing it did with its
    inputs would make a graph for other inputs (variables.input_work). The original is right whatever
    the inputs; its guards would cost time on every call (a hook lookup and checks on a call that may
    take 30 ns). Code the trace rewrote (values rebuilt from their sources, objects made without their
    __init__) keeps its entry: running the original instead would start frames that code does not."""
    return (not compiled.graphs and not compiled.breaks and compiled.fallback_reason is None
            and not compiled.computes_on_inputs and code_to_run(original, compiled) is original)


class ConvertFrame:
    def __init__(self, backend: Any, backend_name: str, fullgraph: bool, dynamic: bool | None):
        self.backend = backend
        self.backend_name = backend_name
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self._limit_warned: set[types.CodeType] = set()
        # every frame this callback compiled, in order (explain() and tests read it)
        self.compiled_frames: list[tuple[types.CodeType, CompiledFrame]] = []
        self.recompiles: list[tuple[types.CodeType, list[str]]] = []  # (code, guard failures)
        self._shape_state: FrameState | None = None  # made with the first compile (shape_state)
        self._churn: ValueChurn | None = None
        # code objects whose trace ran past config.trace_instruction_budget -> why: traced once
        self.over_budget: "weakref.WeakKeyDictionary[types.CodeType, Unsupported]" = weakref.WeakKeyDictionary()
        # frames that kept recompiling for new values and now run their original code (explain)
        self.given_up: list[tuple[types.CodeType, str]] = []
        self.deferred_resumes = 0  # resume functions run as Python at their first call (config.defer_resume_compiles)

    @property
    def shape_state(self) -> FrameState:
        """Sizes compiled for so far (automatic dynamic shapes)."""
        if self._shape_state is None:
            from .shapes import FrameState

            self._shape_state = FrameState()
        return self._shape_state

    @property
    def churn(self) -> ValueChurn:
        """Which frames recompile for new values (recompiles.ValueChurn)."""
        if self._churn is None:
            from .recompiles import ValueChurn

            self._churn = ValueChurn()
        return self._churn

    def __repr__(self) -> str:
        return f"<ConvertFrame backend={self.backend_name!r} fullgraph={self.fullgraph}>"

    def __call__(self, frame: Any) -> Any:
        if builtins_watch.changed():
            # dynamo's own code would look up the program's builtins (run its __eq__, call its
            # replacements, miss deleted names): this call runs the original, and nothing is cached
            return None
        code = frame.f_code
        if skipfiles.is_skipped(code) or (skipfiles.is_generated(code) and skipfiles.generated_code_skipped(
                resume_origins.source_of(code), frame.f_globals)):
            return _C.SKIP
        if skipfiles.is_generated(code) and skipfiles.first_call_of_generated(resume_origins.source_of(code)):
            return None  # runs as it is this once: the next call compiles it
        region = resume_origins.region_of(code)
        if region is not None or resume_origins.runs_in_python(code):
            # code that runs in Python up to where a compiled resume function takes over (or,
            # with no such point, to its end): recorded once, then left to the interpreter
            reason = region_reason(region.source if region else code, region is None or region.in_loop)
            from .guards import GuardSet  # loaded already: the tracer made that region or resume function

            breaks_log.debug("%s: %s", code.co_qualname, reason)
            self.compiled_frames.append((code, CompiledFrame(GuardSet(), code, fallback_reason=reason,
                                                             python_until=region.exit_line if region else None)))
            return _C.SKIP
        if config.defer_resume_compiles and code in resume_origins.origins and skipfiles.first_call_of_resume(
                code, resume_origins.origins[code].original):
            self.deferred_resumes += 1
            return None  # runs as it is this once: the next call compiles it
        with compile_lock:
            # Threads that miss on the same inputs at once queue on the lock: look at the cache
            # again, so that those behind the first run the original this once instead of
            # adding duplicate entries that would use up cache_size_limit.
            entries = [e for e in _C.cache_entries(code) if e.owner is self]
            if any(self._check(frame, e) < 0 for e in entries):
                return None
            if entries:
                if len(entries) >= config.cache_size_limit:
                    # past the limit a miss is frequent: reasons are formatted once, and later
                    # misses run the original without calling back
                    self._warn_cache_limit(frame, entries)
                    return _C.CACHE_FULL
                from .recompiles import float_value_guard

                failed = [self._failed_guard(frame, e) for e in entries]
                if self.dynamic is not False and any(map(float_value_guard, failed)):
                    # one float of the frame changed value: its others are numbers of the same
                    # program (a velocity at rest, then moving) and become run-time inputs too
                    self.shape_state.mark_floats_vary(code)
                if self.dynamic is not False and self.churn.keeps_changing(code, failed):  # dynamic=False: per value
                    self._give_up(frame, entries)
                    if all(e.owner is self for e in _C.cache_entries(code)):
                        # the hook leaves the code alone from now on (its callees are still
                        # compiled): checking guards first would cost more than the hits save
                        _C.clear_cache(code)
                        return _C.SKIP
                    return _C.CACHE_FULL
                self.recompiles.append((code, self._failures(frame, entries)))
                self._log_recompile(frame, entries)
            compiled = self.compile_frame(frame)
            if runs_as_written(code, compiled) and not _C.cache_entries(code):
                # the hook runs it untouched from now on, as a skipped file's code; its callees are
                # still compiled, unless the trace inlined every call it made (the code it would run
                # starts no frame: compiled.unhooked), as its entry would have run them with the hook off.
                # explain lists it with no guards, since none is checked
                guards_log.debug("%s made no graph and computes nothing on its inputs: it runs as written, "
                                 "with no guards", code.co_qualname)
                compiled.guards = type(compiled.guards)()
                self.compiled_frames.append((code, compiled))
                return _C.SKIP_UNHOOKED if compiled.unhooked else _C.SKIP
        self.compiled_frames.append((code, compiled))
        if guards_log.isEnabledFor(logging.DEBUG):
            guards_log.debug("guards for %s:\n%s", code.co_qualname, compiled.guards)
        if bytecode_log.isEnabledFor(logging.DEBUG):
            from .bytecode_analysis import side_by_side

            bytecode_log.debug("bytecode of %s:\n%s", code.co_qualname, side_by_side(code, compiled.code))
        if output_code_log.isEnabledFor(logging.DEBUG):
            for graph in compiled.graphs:  # backends that generate code log it themselves
                made = getattr(graph.compiled_fn, "_dynamo_fn", graph.compiled_fn)
                if getattr(made, "source", None) is None:
                    output_code_log.debug("code of a graph of %s (%s backend):\n%s", code.co_qualname,
                                          self.backend_name, graph.graph_module.code)
        turns = 0 if takes_device_arrays(compiled) else config.timed_turns
        if turns and retime_when_graphs_settle(code, compiled, self):
            turns = -turns  # deferred: timing numpy code that C will replace could drop the version for good
        # a resume function is timed as part of the version of the frame that calls it
        return (compiled.guards.compile(), code_to_run(code, compiled), compiled.unhooked, turns,
                config.timed_turns_recheck, code in resume_origins.origins)

    def compile_frame(self, frame: Any) -> CompiledFrame:
        """Trace the frame into a graph; when something cannot be captured, fall back to the
        frame's own code (guarded on argument types, so the same inputs do not retrace)."""
        from .shapes.env import SmallVaryingSize

        try:
            try:
                # imported here, inside the fallback: the compiler's first frame may come while a
                # module is half-imported (a signal handler of the user's runs during an import)
                from .shapes import ShapePolicy, policy_scope

                check_observers(frame.f_code)
                remembered = self.over_budget.get(frame.f_code)
                if remembered is not None and not self.fullgraph:
                    return self.fallback(frame, remembered)  # it ran past the budget before: not traced again
                policy = ShapePolicy(self.dynamic, self.shape_state, frame.f_code,
                                     small_sizes_run_original=not self.fullgraph)
                with policy_scope(policy):
                    return trace_frame(frame, self.backend, self.backend_name, self.fullgraph, self.over_budget)
            except DynamoError:
                raise
            except Exception as error:  # a bug of ours before or around tracing (trace_frame wraps its own)
                code = frame.f_code
                where = SourceLocation(code.co_filename, code.co_firstlineno, code.co_name)
                raise InternalCompilerError(error, code.co_qualname, where) from error
        except SmallVaryingSize as small:
            return self.runs_original_for(frame, small)
        except Unsupported as reason:
            if self.fullgraph:
                raise
            breaks_log.debug("%s falls back to Python: %s", frame.f_code.co_qualname, reason)
            if reason.category is Category.LOOP_BUDGET and "trace_instruction_budget" in str(reason):
                self.over_budget[frame.f_code] = detached(reason)
            return self.fallback(frame, reason)
        except InternalCompilerError as error:
            if self.fullgraph or config.strict:
                raise
            # a bug of ours must never break the user's program: it runs uncompiled, and says so
            report_internal_error(error)
            return self.fallback(frame, Unsupported(
                Category.INTERNAL_ERROR, f"please report: {type(error.error).__name__}: {error.error}",
                "this is a bug of dynamo, not of your code; the function runs uncompiled meanwhile "
                "(DYNAMO_STRICT=1 raises it with its traceback)", error.location))

    def fallback(self, frame: Any, reason: Unsupported) -> CompiledFrame:
        from .bytecode_compat import flatten_signature
        from .guards import GuardKind, GuardSet
        from .sources import LocalSource

        guards = GuardSet()
        for index, (name, value) in enumerate(zip(frame.f_code.co_varnames, frame.f_args)):
            guards.add(LocalSource(index, name), GuardKind.TYPE_IS, type(value))
        # a frame that lists the collector's objects: the hook stays off for the calls it makes
        unhooked = bool(_OBJECT_OBSERVERS.intersection(_names_used(frame.f_code)))
        return CompiledFrame(guards, flatten_signature(frame.f_code), fallback_reason=detached(reason),
                             loops=list(getattr(reason, "loop_notes", ())), unhooked=unhooked)

    def runs_original_for(self, frame: Any, small: Any) -> CompiledFrame:
        """The entry for inputs where a dimension that varies is 0 or 1 long (shapes.env.SmallVaryingSize):
        the original code runs, under the guards the trace had made up to that array and its shape."""
        from .guards import GuardKind, GuardSet
        from .sources import AttrSource

        guards = GuardSet()
        for guard in small.guards:
            guards.add(guard.source, guard.kind, guard.value)
        guards.add(AttrSource(small.source, "shape"), GuardKind.EQUALS, small.shape)
        reason = Unsupported(Category.SMALL_VARYING_SIZE, f"{small}: no dynamic version takes that size, and a "
                             "version for each such size would compile the frame again and again",
                             "the original code runs for these sizes; sizes of 2 or more run the dynamic version")
        recompiles_log.debug("%s runs its original code for %s", frame.f_code.co_qualname, small)
        return CompiledFrame(guards, frame.f_code, fallback_reason=reason)

    @staticmethod
    def _check(frame: Any, entry: Any) -> int:
        """Index of the entry's first failing guard for this frame, -1 when all pass."""
        return entry.guard.check(frame.f_args, frame.f_globals, frame.f_builtins, frame.f_closure)

    def _failures(self, frame: Any, entries: list) -> list[str]:
        """Each distinct reason once (entries that failed on the same guard say it once)."""
        from .guards import failure_reason

        reasons = []
        for entry in entries:
            failed_at = self._check(frame, entry)
            if failed_at >= 0:
                rerun = lambda program: program.check(  # noqa: E731
                    frame.f_args, frame.f_globals, frame.f_builtins, frame.f_closure)
                reasons.append(failure_reason(entry.guard, failed_at, rerun))
        return list(dict.fromkeys(reasons))

    def _failed_guard(self, frame: Any, entry: Any) -> Any:
        """What the entry's first failing guard checks (a Guard, or a layout or size check)."""
        failed_at = self._check(frame, entry)
        return entry.guard.info[failed_at] if failed_at >= 0 else None

    def _give_up(self, frame: Any, entries: list) -> None:
        """The frame recompiled for new values and would again: from now on it runs its original
        code (the functions it calls are still compiled)."""
        code = frame.f_code
        reasons = self._failures(frame, entries)
        why = (f"recompiled {len(entries) - 1} time{'s' if len(entries) != 2 else ''} for new values and would "
               f"again ({reasons[0] if reasons else 'unknown'}): it now runs its original code")
        self.given_up.append((code, why))
        recompiles_log.debug("%s (%s:%d) %s", code.co_qualname, code.co_filename, code.co_firstlineno, why)

    def _log_recompile(self, frame: Any, entries: list) -> None:
        if recompiles_log.isEnabledFor(logging.DEBUG):
            code = frame.f_code
            recompiles_log.debug(
                "recompiling %s (%s:%d), guard failures:\n%s",
                code.co_qualname, code.co_filename, code.co_firstlineno,
                "\n".join(f"  - {r}" for r in self.recompiles[-1][1]),
            )

    def _warn_cache_limit(self, frame: Any, entries: list) -> None:
        code = frame.f_code
        if code in self._limit_warned:
            return
        self._limit_warned.add(code)
        reasons = self._failures(frame, entries)
        # logged, not warnings.warn: a Python warning is seen by the program (and raised by
        # `-W error`, as NumPy's own test suite runs), and compiling must not change behaviour
        internal_log.warning(
            "dynamo: %s (%s:%d) reached config.cache_size_limit (%d) compiled versions; new inputs "
            "now run the original code. Last guard failure: %s. Raise dynamo.config.cache_size_limit, "
            "or see DYNAMO_LOGS=recompiles for every reason.",
            code.co_qualname, code.co_filename, code.co_firstlineno, config.cache_size_limit,
            reasons[0] if reasons else "unknown")

    def reset(self) -> None:
        self._limit_warned.clear()
        self._churn = None
        self.over_budget = weakref.WeakKeyDictionary()
        self.given_up.clear()
        if self._shape_state is not None:
            self._shape_state.clear()
        self.compiled_frames.clear()
        self.recompiles.clear()
        self.deferred_resumes = 0


def retime_when_graphs_settle(code: types.CodeType, compiled: CompiledFrame, owner: ConvertFrame) -> bool:
    """A graph of backend "tiered" that moves to C changes what the frame's version costs: its timed
    turns start (again) when its tier is final. Whether a graph's tier is still provisional: the turns
    then wait for it (or for config.timed_turns_recheck hits), since a version dropped while on numpy
    would run no graph, count no run time and never move to C (softmax: 0.83x on numpy, faster on c).
    A graph too fast per call to be due within those hits has its version timed after its first calls."""
    code_ref = weakref.ref(code)  # not the code itself: its cache entries hold the graph that holds this

    def retime() -> None:
        alive = code_ref()
        if alive is not None:
            _C.retime(alive, owner)

    provisional = False
    for graph in compiled.graphs:
        tier = getattr(getattr(graph.compiled_fn, "_dynamo_fn", None), "tier", None)
        if tier is not None:
            # a graph that would not be due before the recheck hits start the turns anyway starts them sooner
            tier.notify_when_settled(retime, config.timed_turns_recheck)
            provisional = provisional or not tier.settled
    return provisional


def takes_device_arrays(compiled: CompiledFrame) -> bool:
    """Whether a graph of the frame takes GPU arrays: the host time of such a call is its launches, not
    its kernels, so it cannot tell whether the version beats the original (no timed turns for it)."""
    return any(node.op == "placeholder" and node.meta.get("device")
               for graph in compiled.graphs for node in graph.graph_module.graph.nodes)
