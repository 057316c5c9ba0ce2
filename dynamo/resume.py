"""Resume functions: after a graph break, the rest of a frame continues in a new function made
from the original bytecode, entered at the instruction after the break with the same stack.

A resume function takes the stack items and the live locals as arguments (the frame's cells
as its closure), is named like the user's function (tracebacks) and is compiled by the hook
like any frame; one made from a resume function is made from the original code. A generator
can be resumed after one of its yields too. One that starts inside a loop or a try/with block
is run as plain Python up to where that code ends, where it hands over to the resume function
for the rest (python_region), so that loops never turn into recursion."""
from __future__ import annotations

import inspect
import sys
import types
from functools import lru_cache

from bytecode import CellVar, FreeVar, Instr, Label, TryBegin, TryEnd

from . import assembler, resume_splice
from . import bytecode_compat as compat
from .bytecode_analysis import analyze, assembled_from, bytecode_of, derived_from, item_starts
from .resume_origins import PythonRegion, ResumeOrigin, origin_of, origins as _origins, region_codes as _region_codes
from .sources import STACK_PREFIX

_PROLOGUE = frozenset({"RESUME", "COPY_FREE_VARS", "MAKE_CELL", "RETURN_GENERATOR"})

_cache: dict[tuple, types.CodeType] = {}


def stack_arg(position: int) -> str:
    return f"{STACK_PREFIX}{position}"


def resume_code(code: types.CodeType, target: int, stack_size: int, null_positions: frozenset[int],
                live_locals: tuple[str, ...], method_loads: frozenset[tuple[int, str]] = frozenset(),
                after_yield: bool = False) -> types.CodeType:
    """Code that rebuilds a stack of `stack_size` items (NULLs at `null_positions`, the others
    passed as leading arguments), takes `live_locals` as the following arguments, and jumps to
    instruction `target` of `code` (an index into bytecode_analysis.analyze(code).instructions).
    A (position, name) of `method_loads` makes the two items from `position` on by loading the
    method `name` of the argument passed for them, as the original code did before its call.

    The original's cells and free variables all become free variables of the resume function:
    the caller passes its cells (closure_names) as the closure, so both share them.

    after_yield: `code` is a generator function and `target` follows one of its yields. The new
    generator first stops at a yield of its own, under the same exception handlers, so that once
    primed with next() it is suspended just like the original: what send() delivers lands on the
    stack where the original's yield left it, and throw() and close() run the same handlers."""
    original, shift = origin_of(code)
    if original is not code and target < entry_index(code):
        # a break in a resume function's prologue (its reload of a method, which may break too: a
        # set's add): no instruction of the original is there, so this resume is made from that code
        original, shift = code, 0
    target -= shift
    key = (original, target, stack_size, null_positions, live_locals, method_loads, after_yield)
    if key in _cache:
        return _cache[key]
    facts = analyze(original)
    # the code before the first instruction that can run after the target is dead here (cut
    # with the original's prologue): a frame with many breaks would otherwise assemble and
    # analyse its whole code again for each of them
    first = facts.first_needed(target)
    if after_yield and target - 1 in facts.handler:  # the pause's handler (see below)
        first = min(first, facts.first_needed(facts.handler[target - 1]))
    cut = max(_prologue_length(facts), first)
    source, starts, open_blocks = item_starts(original)
    target_label = Label()
    covering = open_blocks[target][-1] if open_blocks[target] else None  # active at the yield before `target`
    # the try blocks open where the copy starts, emitted before its first instruction unless they
    # end before it
    pending: list = list(open_blocks[cut])
    body: list = []
    first_instr = starts[cut + 1] - 1
    begun: list = []  # blocks that begin at the first instruction
    for item in list.__getitem__(source, slice(starts[cut], first_instr)):
        if isinstance(item, TryEnd) and item.entry in pending:
            pending.remove(item.entry)
            continue
        if isinstance(item, TryBegin):
            begun.append(item)
        body.append(item)
    body += pending
    unbound_handlers: list = []  # the code after the body that raises a cell's UnboundLocalError
    at_target = starts[target + 1] - 1
    if not original.co_cellvars:  # the instructions as they are, the target labelled
        body += list.__getitem__(source, slice(first_instr, at_target))
        body.append(target_label)
        body += list.__getitem__(source, slice(at_target, None))
    else:
        body += _with_cells_free(original, facts, source, first_instr, cut, at_target, target_label,
                                 pending + begun, unbound_handlers)
    body += unbound_handlers
    lineno = line_at(facts, target, original.co_firstlineno)
    free = [name for name, _ in closure_names(original)]
    prologue: list = []
    if free:
        prologue.append(Instr("COPY_FREE_VARS", len(free), lineno=lineno))
    if original.co_flags & inspect.CO_GENERATOR:  # a generator resumed after one of its yields
        prologue += [Instr("RETURN_GENERATOR", lineno=lineno), Instr("POP_TOP", lineno=lineno)]
    prologue.append(Instr("RESUME", 0, lineno=lineno))
    passed = 0
    methods = dict(method_loads)
    for position in range(stack_size):
        if position in null_positions:
            prologue.append(Instr("PUSH_NULL", lineno=lineno))
        elif position - 1 in methods:
            continue  # the second item of a method load
        else:  # the stack holds the item now: the argument must not keep it alive longer
            prologue.append(Instr("LOAD_FAST", stack_arg(passed), lineno=lineno))
            prologue.append(Instr("DELETE_FAST", stack_arg(passed), lineno=lineno))
            passed += 1
            if position in methods:
                prologue += [Instr(i.name, i.arg, lineno=lineno) for i in compat.method_load_instrs(methods[position])]
    if after_yield:
        yield_instr = facts.instructions[target - 1]
        assert yield_instr.name == "YIELD_VALUE", yield_instr
        pause = [Instr("LOAD_CONST", None, lineno=lineno), yield_instr.copy()]
        if covering is not None:
            tried = TryBegin(covering.target, covering.push_lasti, covering.stack_depth)
            pause = [tried, *pause, TryEnd(tried)]
        prologue += pause
    prologue.append(Instr("JUMP_FORWARD", target_label, lineno=lineno))

    resumed = assembler.trusted_bytecode(prologue + _dead_jumps_dropped(body))
    stack_args = [stack_arg(i) for i in range(passed)]
    if live_locals and live_locals[0] == self_argument(original):  # super() reads the first local
        resumed.argnames = [live_locals[0], *stack_args, *live_locals[1:]]
    else:
        resumed.argnames = stack_args + list(live_locals)
    resumed.argcount = len(resumed.argnames)
    resumed.posonlyargcount = 0
    resumed.kwonlyargcount = 0
    # Tracebacks show co_name: the user's function name, at the user's source lines. The
    # qualname tells the resume functions apart (explain, logs).
    resumed.name = original.co_name
    resumed.qualname = f"{original.co_qualname}.<resume at line {lineno}>"
    resumed.filename = original.co_filename
    resumed.first_lineno = original.co_firstlineno
    resumed.freevars = free
    resumed.cellvars = []
    resumed.flags = (original.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)) | inspect.CO_NESTED
    if not free:
        resumed.flags &= ~inspect.CO_NESTED
    # the body is the original's, at the same depths; the prologue pushes what the original had
    # (+ 3: a handler of unbound_cell_read calls UnboundLocalError above the depth it unwinds to)
    stacksize = original.co_stacksize + 3

    def assemble() -> types.CodeType:
        return assembler.to_code(resumed, stacksize=stacksize, compute_exception_stack_depths=False)

    result = None
    if not original.co_cellvars and not after_yield:  # the body's bytes as assembled once (resume_splice)
        start = _prologue_length(facts)
        body_bytes = resume_splice.body_of(original, list.__getitem__(source, slice(starts[start], None)), start,
                                           len(facts.instructions) - start, stacksize)
        if body_bytes is not None:
            result = resume_splice.splice(body_bytes, cut, target, prologue[:-1], lineno, resumed, stacksize)
            if result is not None:
                result = resume_splice.checked(result, assemble)
    if result is None:
        result = assemble()
    assembled_from(result, resumed)
    _cache[key] = result
    # the new prologue replaces the original's and the dead code before `cut`
    prologue_instrs = sum(isinstance(item, Instr) for item in prologue)
    shift = prologue_instrs - cut
    _origins[result] = ResumeOrigin(original, shift, facts.in_loop(target), target, target in facts.in_user_region)
    derived_from(result, original, shift, prologue_instrs)
    return result


def _with_cells_free(original: types.CodeType, facts, source: list, start: int, index: int, at_target: int,
                     target_label: Label, opened: list, unbound_handlers: list) -> list:
    """The items of `source` from position `start` (instruction `index`) on, for a resume
    function where the original's cells are free variables: a cell read that may find it unbound
    raises the plain function's error (unbound_cell_read, its handlers added to
    `unbound_handlers`); `target_label` before the item at `at_target`. `opened`: the try blocks
    open at `start`."""
    body: list = []
    handlers: list = list(opened)  # the exception handlers active at the current point of the original
    region: dict = {block: block for block in opened}  # the original's TryBegin -> the one open now
    cells = original.co_cellvars
    for position in range(start, len(source)):
        item = list.__getitem__(source, position)
        if position == at_target:
            body.append(target_label)
        if isinstance(item, TryBegin):
            handlers.append(item)
            region[item] = item
        elif isinstance(item, TryEnd) and handlers:
            handlers.pop()
            item = TryEnd(region.pop(item.entry, item.entry))
        elif isinstance(item, Instr):
            index += 1
            if item.name in ("LOAD_DEREF", "DELETE_DEREF") and isinstance(item.arg, CellVar):
                enclosing = handlers[-1] if handlers else None
                block = region.get(enclosing) if enclosing is not None else None
                body += unbound_cell_read(item, block, facts.stack_depth(index - 1) or 0, unbound_handlers)
                if block is not None:
                    region[enclosing] = body[-1]
                continue
            if isinstance(item.arg, CellVar):  # a cell of the original is passed in the closure
                item = item.copy()
                item.arg = FreeVar(item.arg.name)
            elif item.name == "LOAD_FAST" and item.arg in cells:
                item = item.copy()  # 3.13 loads an argument's cell (for a closure) by its bare name
                item.arg = FreeVar(item.arg)
        body.append(item)
    return body


def unbound_cell_read(inst: Instr, opened: TryBegin | None, depth: int | None, handlers: list) -> list:
    """`inst` (LOAD_DEREF or DELETE_DEREF of a cell of the original code) for code where that cell
    is a free variable, which CPython reports unbound with NameError ("cannot access free
    variable"): the cell's own function raises UnboundLocalError ("cannot access local variable").
    The instruction gets a handler of its own (appended to `handlers`: it drops the NameError
    and raises the plain function's error at the same source position, under the handler
    `opened` covers the instruction with, which is ended before and opened again after it).
    `depth`: the stack depth before the instruction (None: the assembler computes it)."""
    name = inst.arg.name
    handler = Label()
    own = TryBegin(handler, False, depth) if depth is not None else TryBegin(handler, False)
    read = inst.copy()
    read.arg = FreeVar(name)
    instrs: list = [TryEnd(opened)] if opened is not None else []
    instrs += [own, read, TryEnd(own)]
    raising = [Instr("POP_TOP"), *compat.callable_with_null([Instr("LOAD_CONST", UnboundLocalError)]),
               Instr("LOAD_CONST", f"cannot access local variable {name!r} where it is not associated with a value"),
               *compat.call_instrs(1), Instr("RAISE_VARARGS", 1)]
    for instr in raising:
        instr.location = inst.location
    if opened is not None:
        again = TryBegin(opened.target, opened.push_lasti, opened.stack_depth)
        instrs.append(again)
        handled = TryBegin(opened.target, opened.push_lasti, opened.stack_depth)
        raising = [handled, *raising, TryEnd(handled)]
    handlers += [handler, *raising]
    return instrs


def self_argument(code: types.CodeType) -> str | None:
    """The first argument of a function that calls super() without arguments: super() reads the
    frame's first local, so a resume function of it takes that argument first (even where
    nothing else reads it later)."""
    original, _ = origin_of(code)
    if not original.co_argcount or "__class__" not in original.co_freevars + original.co_cellvars:
        return None
    for inst in analyze(original).instructions:
        if inst.name == "LOAD_SUPER_ATTR" or (inst.name == "LOAD_GLOBAL" and compat.global_arg(inst)[1] == "super"):
            return original.co_varnames[0]
    return None


def arrange_live(code: types.CodeType, live: "set[str] | frozenset[str] | tuple[str, ...] | list[str]",
                 bound: "set[str] | frozenset[str] | dict | None" = None) -> tuple[str, ...]:
    """The live locals in the order a resume function of `code` takes them after its stack
    arguments: sorted, and with self_argument() added (when `bound` says it is bound) and moved
    to the front, where resume_code puts it before the stack arguments."""
    names = sorted(live)
    first = self_argument(code)
    if first is not None and (first in names or bound is None or first in bound):
        names = [first] + [name for name in names if name != first]
    return tuple(names)


def passing_order(code: types.CodeType, stack: list, live: tuple[str, ...]) -> list:
    """Stack items and live-local names in the order the arguments of the resume function
    resume_code(code, ..., live) are passed."""
    if live and live[0] == self_argument(code):
        return [live[0], *stack, *live[1:]]
    return [*stack, *live]


def cells_not_resumable(code: types.CodeType) -> str | None:
    """Why no resume function can be made from `code`, if one cannot: a 3.12+ inlined
    comprehension that captures its variable in a closure saves and restores that cell through
    the slot it shares with a local name, which a resume function (whose cells are free
    variables) does not have."""
    return _captured_comprehension_cell(origin_of(code)[0])


@lru_cache(maxsize=64)  # asked at every break of a frame
def _captured_comprehension_cell(original: types.CodeType) -> str | None:
    cells = set(original.co_cellvars)
    if not cells:
        return None
    for inst in analyze(original).instructions:
        if "FAST" not in inst.name or inst.name == "LOAD_FAST":
            continue
        names = inst.arg if isinstance(inst.arg, tuple) else (inst.arg,)
        captured = [name for name in names if isinstance(name, str) and name in cells]
        if captured:
            return (f"a comprehension captures its variable {captured[0]!r} in a closure, and that cell cannot "
                    "be handed to a resume function")
    return None


def hiding_handler(handler: Label, depth: int | None = None) -> list:
    """The exception handler (at `handler`) of a call of a resume function: it takes the calling
    frame out of the traceback and re-raises, so that a traceback shows each of the user's
    functions once, at the line where the exception happened. `depth`: the stack depth of the
    guarded call, when the bytecode package is not to compute it."""
    cleanup = Label()
    region = TryBegin(cleanup, push_lasti=True) if depth is None else TryBegin(cleanup, True, depth + 1)
    return [handler, region, Instr("PUSH_EXC_INFO"),
            *compat.callable_with_null([Instr("LOAD_CONST", _hide_this_frame)]), Instr("COPY", 3),
            *compat.call_instrs(1), Instr("POP_TOP"), Instr("RERAISE", 0), TryEnd(region),
            cleanup, Instr("COPY", 3), Instr("POP_EXCEPT"), Instr("RERAISE", 1)]


def _dead_jumps_dropped(body: list) -> list:
    """The copied code with each jump to a label it does not hold made a NOP. Everything that may
    run after the target lies at or after the cut (first_needed), so such a jump is dead code
    between the cut and the target whose label went with the code before the cut (3.13: a target
    inside an except handler, after another handler whose exit jumps back before the cut; fuzz_python
    seed 3200005: KeyError of a Label, the frame ran uncompiled)."""
    held = {item for item in body if isinstance(item, Label)}
    return [Instr("NOP", location=item.location)
            if isinstance(item, Instr) and isinstance(item.arg, Label) and item.arg not in held else item
            for item in body]


def _hide_this_frame(error: BaseException) -> None:
    """Drop the calling frame's own entry from the head of error's traceback."""
    tb = error.__traceback__
    if tb is not None and tb.tb_frame is sys._getframe(1):
        error.__traceback__ = tb.tb_next


def closure_names(code: types.CodeType) -> list[tuple[str, bool]]:
    """The closure a resume function made from `code` takes: (name, is a cell of `code`) for its
    cells, then its free variables (a resume function's own cells are all free variables)."""
    return [(name, True) for name in code.co_cellvars] + [(name, False) for name in code.co_freevars]


def _make_resume_function(code: types.CodeType, resume: types.CodeType) -> list[Instr]:
    """Instructions of `code` (or code transformed from it) that push the function for
    `resume`, made with the frame's globals and cells."""
    cells = closure_names(code)
    instrs = [compat.load_closure_instr(CellVar(name) if is_cell else FreeVar(name)) for name, is_cell in cells]
    if cells:
        instrs.append(Instr("BUILD_TUPLE", len(cells)))
    return instrs + compat.make_function_instrs(resume, bool(cells))


def begin_resume_call(code: types.CodeType, resume: types.CodeType) -> list[Instr]:
    """The start of a call of the resume function `resume` from `code`; push its arguments,
    then end_resume_call. The call lets go of its references to what it passes: the frame
    calling a resume function stays alive until it returns, and plain Python's frame would have
    dropped a value at the `del` (or last use) the resume function runs, so the arguments go
    through a list that _C.call_moving empties into the resume function's frame (a CALL keeps
    its arguments on the caller's stack until it returns), and the caller's locals are cleared."""
    from . import _C

    return compat.callable_with_null([Instr("LOAD_CONST", _C.call_moving)]) + _make_resume_function(code, resume)


def end_resume_call(code: types.CodeType, count: int, arguments_only: bool = False) -> list[Instr]:
    """After the `count` arguments: move them into a list, clear the caller's locals (the
    arguments' other holders; in transformed code only the argument slots hold values of the
    program, its temporaries aside), call."""
    return [Instr("BUILD_LIST", count), *_clear_locals(code, arguments_only), *compat.call_instrs(2)]


def _clear_locals(code: types.CodeType, arguments_only: bool = False) -> list[Instr]:
    """Empty the locals of `code`'s frame, which only returns what it calls next returns. Cells
    stay: the resume function shares them."""
    names = code.co_varnames[: compat.argument_slots(code)] if arguments_only else code.co_varnames
    clearing: list[Instr] = []
    for name in names:
        if name not in code.co_cellvars:
            clearing += [Instr("LOAD_CONST", None), Instr("STORE_FAST", name)]
    return clearing


def _prologue_length(facts) -> int:
    """Instructions before the user's code: cells, free variables, a generator's creation
    (RETURN_GENERATOR and the POP_TOP of what it leaves), RESUME."""
    count = 0
    for inst in facts.instructions:
        if inst.name in _PROLOGUE or (inst.name == "POP_TOP" and count and facts.instructions[count - 1].name == "RETURN_GENERATOR"):
            count += 1
        else:
            break
    return count


def clear_cache() -> None:
    _cache.clear()
    resume_splice.clear_cache()
    _origins.clear()
    _regions.clear()
    _region_codes.clear()


def entry_index(code: types.CodeType) -> int:
    """Index of the first instruction of the user's code: after the prologue, or for a resume
    function, the instruction its prologue jumps to."""
    origin = _origins.get(code)
    if origin is not None:  # where its prologue jumps to
        return origin.target + origin.index_shift
    return _prologue_length(analyze(code))


def entry_line(code: types.CodeType) -> int:
    """The user's source line where a (resume) function starts: that of its first instruction,
    or where that instruction leads when it has none (3.11's jump back to a loop's head)."""
    return line_at(analyze(code), entry_index(code), code.co_firstlineno)


def line_at(facts, index: int, default: int) -> int:
    """The source line of instruction `index`, or of where it leads when it has none."""
    seen: set[int] = set()
    while index < len(facts.instructions) and index not in seen:
        seen.add(index)
        inst = facts.instructions[index]
        if compat.has_line(inst):
            return inst.lineno
        index = facts.label_index[inst.arg] if inst.name.startswith("JUMP") and isinstance(inst.arg, Label) else index + 1
    return default


_regions: dict[tuple, PythonRegion | None] = {}  # (source code, start) -> its region


def python_region(code: types.CodeType, start: int | None = None) -> PythonRegion | None:
    """`code` as it is, except that where control leaves the region that instruction `start`
    is in (the first point after it with an empty stack, outside loops and exception handlers)
    it calls the resume function for that point, which the hook compiles. `start` defaults to
    where the code starts. None when no such point exists: then the whole frame runs in Python.
    Made once per code object and start."""
    key = (code, start)
    if key not in _regions:
        region = _regions[key] = _make_region(code, entry_index(code) if start is None else start)
        if region is not None:
            _region_codes[region.code] = region
    return _regions[key]


def _make_region(code: types.CodeType, entry: int) -> PythonRegion | None:
    if cells_not_resumable(code):
        return None
    facts = analyze(code)
    bound = facts.bound_locals(0, frozenset(code.co_varnames[: compat.argument_slots(code)]) - set(code.co_cellvars))
    # a resume function's code ends with the handlers unbound_cell_read appends, which no index of
    # its original maps to (a hand-off there resumed past the original's end: fuzz seed 1031167)
    original, shift = origin_of(code)
    end = min(len(facts.instructions), len(analyze(original).instructions) + shift)
    exit_index = next((index for index in range(entry + 1, end) if _can_hand_off(facts, index, bound)), None)
    if exit_index is None:
        return None
    # the normal way out of try/except jumps over the handlers: hand off where the paths meet
    while facts.instructions[exit_index].name in ("JUMP_FORWARD", "JUMP"):
        target = facts.label_index[facts.instructions[exit_index].arg]
        if target <= exit_index or not _can_hand_off(facts, target, bound):
            break
        exit_index = target
    lineno = line_at(facts, exit_index, entry_line(code))
    surely_bound = bound[exit_index]
    assert surely_bound is not None
    # plain Python's frame holds a local no later code reads until it is assigned again or the frame
    # ends (a generator's finally, a __del__ or a weakref sees when it goes, and so does a traceback's
    # frame): the resume function takes every bound local (fuzz_python seed 211: a generator
    # finalized before a later with block; 102: a dead local of a frame that raises)
    arguments = frozenset(code.co_varnames[: compat.argument_slots(code)])
    held = (facts.written_before(exit_index) | arguments) - set(code.co_cellvars)
    live = arrange_live(code, facts.live_locals(exit_index) | held, surely_bound)
    if all(name in surely_bound for name in live):
        resume = resume_code(code, exit_index, 0, frozenset(), live)
        hand_off = begin_resume_call(code, resume) + [Instr("LOAD_FAST", name) for name in live]
        hand_off += end_resume_call(code, len(live))
    else:  # a local assigned in a loop or a with block may be unbound: pass those that are bound
        # assembled now with them all: a resume function that cannot be made is the compiler's error,
        # reported as it compiles (the frame runs as written), not one the program gets at the
        # hand-off (3.13, fuzz_python seed 3200300: KeyError of a Label)
        resume_code(code, exit_index, 0, frozenset(), live)
        cells = closure_names(code)
        hand_off = compat.callable_with_null([Instr("LOAD_CONST", HandOff(code, exit_index, tuple(live)))])
        hand_off += compat.callable_with_null([Instr("LOAD_CONST", globals)]) + compat.call_instrs(0)
        if cells:
            hand_off += [compat.load_closure_instr(CellVar(name) if is_cell else FreeVar(name)) for name, is_cell in cells]
            hand_off.append(Instr("BUILD_TUPLE", len(cells)))
        else:
            hand_off.append(Instr("LOAD_CONST", None))
        hand_off += compat.callable_with_null([Instr("LOAD_CONST", locals)]) + compat.call_instrs(0)
        hand_off += _clear_locals(code) + compat.call_instrs(3)  # the snapshot of locals() holds them now
    # the call under a handler that takes this frame out of tracebacks (hiding_handler), from
    # the callable on (the stack is empty here), as CPython guards a call
    handler = Label()
    guarded = TryBegin(handler, False, 0)
    hand_off = [guarded, *hand_off, TryEnd(guarded), Instr("RETURN_VALUE")]
    tail = hiding_handler(handler, depth=0)
    compat.set_lines(hand_off + tail, lineno, only_missing=False)
    transformed = bytecode_of(code)
    items: list = []
    index = 0
    for item in transformed:
        if isinstance(item, Instr):
            if index == exit_index:
                items.extend(hand_off)
            index += 1
        items.append(item)
    transformed.clear()
    transformed.extend(items + tail)
    stacksize = max(code.co_stacksize, 6 + len(live) + len(closure_names(code)))
    region = assembler.to_code(transformed, stacksize=stacksize, compute_exception_stack_depths=False)
    return PythonRegion(compat.flatten_signature(region), line_at(facts, entry, code.co_firstlineno), lineno, code,
                        facts.in_loop(entry))


class HandOff:
    """The hand-off at the end of a Python region when some locals read later may be unbound
    (assigned only inside a loop, or in a with block whose exception was suppressed): calls the
    resume function that takes the locals that are bound (the others stay unbound there too)."""

    def __init__(self, code: types.CodeType, index: int, live: tuple[str, ...]) -> None:
        self.code, self.index, self.live = code, index, live

    def __call__(self, frame_globals: dict, closure: tuple | None, frame_locals: dict) -> object:
        from . import _C

        previous = _C.set_eval_frame(None)  # making code calls library code: never compile that
        try:
            bound = arrange_live(self.code, [name for name in self.live if name in frame_locals], frame_locals)
            resume = resume_code(self.code, self.index, 0, frozenset(), bound)
            function = types.FunctionType(resume, frame_globals, resume.co_name, None, closure)
        finally:
            _C.set_eval_frame(previous)
        values = [frame_locals.pop(name) for name in bound]
        frame_locals.clear()  # the resume function's frame holds the values alone (begin_resume_call)
        try:
            return _C.call_moving(function, values)
        except BaseException as error:  # this frame is no frame of the user's: out of the traceback
            _hide_this_frame(error)
            raise

    def __repr__(self) -> str:
        return f"<hand-off to {self.code.co_qualname} at instruction {self.index}>"


def _can_hand_off(facts, index: int, bound: list) -> bool:
    return (facts.stack_depth(index) == 0 and index not in facts.handler
            and facts.instructions[index].name not in _PROLOGUE and bound[index] is not None
            and not facts.in_loop(index))
