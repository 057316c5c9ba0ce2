"""Facts about a code object's bytecode that graph breaks need: the flat instruction list with
jump and exception-handler targets, instruction offsets, which locals are live where, the stack
depth before each instruction, which instructions lie on a cycle (a loop), and which locals are
certainly bound at each point."""
from __future__ import annotations

import dis
import types
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress

from bytecode import Bytecode, CellVar, FreeVar, Instr, Label, TryBegin, TryEnd

from .assembler import trusted_bytecode

# Instructions after which control never falls through to the next one.
_NO_FALLTHROUGH = frozenset({
    "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT",
    "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
})
_READS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"}
_WRITES = {"STORE_FAST"}
# Callables that read their caller's locals by name (eval("x + 1"), locals(), a frame's f_locals):
# in a code that names one of them, every call may read every local. numpy.bmat("A,B;C,D") looks
# the names up in its caller's frame (sys._getframe().f_back.f_locals).
_FRAME_READERS = frozenset({"eval", "exec", "locals", "vars", "dir", "f_locals", "breakpoint", "bmat"})
_CALLS = frozenset({"CALL", "CALL_KW", "CALL_FUNCTION_EX", "PRECALL"})


@dataclass
class CodeFacts:
    instructions: list[Instr]
    label_index: dict[Label, int]
    offsets: list[int]                   # CPython's byte offset of each instruction
    handler: dict[int, int] = field(default_factory=dict)  # index -> exception handler index
    # indexes inside a try/except or with block (their handler starts with PUSH_EXC_INFO), as
    # opposed to the cleanup-only regions CPython adds around 3.12 inlined comprehensions
    in_user_region: frozenset[int] = frozenset()
    live_in: list[frozenset[str]] = field(default_factory=list)
    handler_depth: dict[int, int] = field(default_factory=dict)  # handler index -> stack depth there
    cells: frozenset[str] = frozenset()  # the code's cell variables
    read_by_calls: frozenset[str] = frozenset()  # locals every call may read (see _FRAME_READERS)
    reads_frame: bool = False  # a call may read the frame's locals by name, its temporaries too
    _depths: list[int | None] | None = None
    _components: list[list[int]] | None = None
    _on_cycle: list[bool] | None = None
    _first_needed: list[int] | None = None

    def successors(self, index: int) -> list[int]:
        inst = self.instructions[index]
        result = []
        if inst.name not in _NO_FALLTHROUGH and index + 1 < len(self.instructions):
            result.append(index + 1)
        if isinstance(inst.arg, Label):
            result.append(self.label_index[inst.arg])
        if index in self.handler:
            result.append(self.handler[index])
        return result

    def live_locals(self, index: int) -> frozenset[str]:
        """Locals that may be read at or after instruction `index` before being written."""
        return self.live_in[index] if index < len(self.live_in) else frozenset()

    def written_before(self, index: int) -> frozenset[str]:
        """Plain locals that some instruction before `index` (in code order) writes: a superset of
        those a path reaching `index` from the code's start may have bound."""
        return frozenset(name for inst in self.instructions[:index] for name in _reads_writes(inst, self.cells)[1])

    def may_read_locals_by_name(self, index: int) -> bool:
        """Whether instruction `index` is a call that may read the frame's locals by name."""
        return self.reads_frame and self.instructions[index].name in _CALLS

    def stack_depth(self, index: int) -> int | None:
        """Items on the value stack before instruction `index` (None: unreachable from the start)."""
        if self._depths is None:
            self._depths = _stack_depths(self)
        return self._depths[index]

    def in_loop(self, index: int) -> bool:
        """Whether instruction `index` lies on a cycle of the control flow (exception edges
        included): it may run again after it ran. A backward jump alone does not make a loop:
        3.12 jumps back from an except clause to the shared code after the try."""
        if self._on_cycle is None:  # for every instruction at once: a frame asks once per break
            self._on_cycle = _on_cycle(self, self.components())
        return self._on_cycle[index]

    def first_needed(self, index: int) -> int:
        """The lowest index of an instruction that may run after instruction `index` or after any
        later one (a later one may be dead code that jumps back, as 3.12's copy of a loop's
        condition after a `break`): a copy of the code from there on is whole, and what comes
        before it is dead code to a function that starts at `index`."""
        if self._first_needed is None:
            needed = _first_reachable(self, self.components())
            for later in range(len(needed) - 2, -1, -1):
                needed[later] = min(needed[later], needed[later + 1])
            self._first_needed = needed
        return self._first_needed[index]

    def components(self) -> list[list[int]]:
        if self._components is None:
            self._components = _components(self)
        return self._components

    def bound_locals(self, start: int, bound: frozenset[str]) -> list[frozenset[str] | None]:
        """For each instruction, the plain locals bound on every path that reaches it from
        instruction `start` (where `bound` are bound); None where no path from `start` reaches."""
        return _bound_locals(self, start, bound)


def _reads_writes(inst: Instr, cells: frozenset[str] = frozenset()) -> tuple[set[str], set[str]]:
    """Plain locals the instruction reads and writes. `cells`: the code's cell variables, which
    3.13 loads (to build a closure) with LOAD_FAST of the bare name when the cell is also an
    argument: those are cells, never plain locals."""
    name = inst.name
    if isinstance(inst.arg, (CellVar, FreeVar)) or (isinstance(inst.arg, str) and inst.arg in cells):
        return set(), set()
    if name in _READS:
        return {inst.arg}, set()
    if name in _WRITES:
        return set(), {inst.arg}
    if name == "LOAD_FAST_LOAD_FAST":
        return set(inst.arg), set()
    if name == "STORE_FAST_STORE_FAST":
        return set(), set(inst.arg)
    if name == "STORE_FAST_LOAD_FAST":
        store, load = inst.arg
        return ({load} if load != store else set()), {store}
    return set(), set()


# Bytecode that code objects were assembled from (resume functions): parsing them back would
# give the same instructions, at the price of the dearest step of a graph break. Only the latest
# _ASSEMBLED_KEPT: a resume function is analyzed when it is compiled, soon after it is made or never
# (config.defer_resume_compiles: most run once as Python), and every item kept alive is walked by each
# gc.collect() of the program.
_assembled_from: dict[types.CodeType, Bytecode] = {}
_ASSEMBLED_KEPT = 64
# resume code -> (the code its body is copied from, index shift of that body, its prologue length)
_derived_from: dict[types.CodeType, tuple[types.CodeType, int, int]] = {}
_CACHE = dis.opmap["CACHE"]
_NOT_CACHE = bytes(0 if opcode == _CACHE else 1 for opcode in range(256))  # bytes.translate: 1 for an instruction


def derived_from(code: types.CodeType, original: types.CodeType, shift: int, prologue: int) -> None:
    """`code` is a new prologue of `prologue` instructions, then the instructions of `original`
    from index `prologue - shift` on: which locals are live in that body is the original's."""
    _derived_from[code] = (original, shift, prologue)


def assembled_from(code: types.CodeType, source: Bytecode) -> None:
    """`code` is `source.to_code()`: its analysis may start from `source` instead of a parse."""
    _assembled_from[code] = source
    if len(_assembled_from) > _ASSEMBLED_KEPT:
        del _assembled_from[next(iter(_assembled_from))]  # the oldest: parsed if it is ever analyzed


# The parse and analysis caches serve a frame's chain of resume functions (each analysis reads the
# original's) and helpers inlined again and again: 64 codes keep those hits (CPython's test_dict
# under the pytest plugin: 1297 hits of 2042 with 64, 1287 of 2026 with 512); 512 kept ~50,000
# objects alive that every gc.collect() of the program walked.
@lru_cache(maxsize=64)
def _parsed(code: types.CodeType) -> Bytecode:
    source = _assembled_from.pop(code, None)
    if source is not None:
        return source
    # the exception table's own depths are kept: resume functions jump into the middle of blocks
    return Bytecode.from_code(code, conserve_exception_block_stackdepth=True)


def bytecode_of(code: types.CodeType) -> Bytecode:
    """A fresh Bytecode of `code`. Parsing is the dearest step of compiling a frame, and a frame
    with many graph breaks is parsed once per resume function, so the parse is shared: the list
    is new, its items are not (copy an item before changing it)."""
    source = _parsed(code)
    return trusted_bytecode(list.__iter__(source), like=source)


def item_starts(code: types.CodeType) -> tuple[Bytecode, list[int], list[tuple[TryBegin, ...]]]:
    """The items of bytecode_of(code) (shared: copy one before changing it), and for each index
    i up to the number of instructions: the position of the first item after instruction i - 1
    (instruction i's labels and try blocks come from there on) and the try blocks open there
    (those that cover instruction i - 1). A resume function copies the code from one of them."""
    source = _parsed(code)
    found = getattr(source, "_dynamo_starts", None)
    if found is None:
        starts, blocks = [0], [()]
        opened: list[TryBegin] = []
        for position, item in enumerate(list.__iter__(source)):
            if isinstance(item, Instr):
                starts.append(position + 1)
                blocks.append(tuple(opened))
            elif isinstance(item, TryBegin):
                opened.append(item)
            elif isinstance(item, TryEnd) and opened:
                opened.pop()
        found = source._dynamo_starts = (starts, blocks)
    return source, found[0], found[1]


def exception_entries(code: types.CodeType) -> list[tuple[int, int, int, int]]:
    """The entries of code's exception table: (start, end, handler) in code units and the stack
    depth to unwind to, shifted left by one, with lasti (whether the handler gets the offset of the
    instruction that raised) in the low bit."""
    table = code.co_exceptiontable
    entries = []
    position = 0

    def number() -> int:
        nonlocal position
        byte = table[position]
        value = byte & 63
        position += 1
        while byte & 64:
            byte = table[position]
            value = (value << 6) | (byte & 63)
            position += 1
        return value

    while position < len(table):
        start = number()
        length = number()
        handler = number()
        entries.append((start, start + length, handler, number()))
    return entries


@lru_cache(maxsize=64)
def analyze(code: types.CodeType) -> CodeFacts:
    instructions: list[Instr] = []
    label_index: dict[Label, int] = {}
    pending_handlers: list[Label] = []
    covered: dict[int, Label] = {}
    for item in list.__iter__(_parsed(code)):  # (a Bytecode's own __iter__ checks every item)
        if type(item) is Instr:  # (most items: the isinstance chain below is for the rest)
            if pending_handlers:
                covered[len(instructions)] = pending_handlers[-1]
            instructions.append(item)
        elif isinstance(item, Label):
            label_index[item] = len(instructions)
        elif isinstance(item, TryBegin):
            pending_handlers.append(item.target)
        elif isinstance(item, TryEnd):
            if pending_handlers:
                pending_handlers.pop()
        elif isinstance(item, Instr):
            if pending_handlers:
                covered[len(instructions)] = pending_handlers[-1]
            instructions.append(item)
    # every code unit but the inline caches starts an instruction, as dis lists them
    co_code = code.co_code
    offsets = list(compress(range(0, len(co_code), 2), co_code[::2].translate(_NOT_CACHE)))
    if len(offsets) != len(instructions):  # never expected; offsets are only used for names
        offsets = list(range(0, 2 * len(instructions), 2))
    facts = CodeFacts(instructions, label_index, offsets, cells=frozenset(code.co_cellvars))
    if _FRAME_READERS.intersection(code.co_names):
        facts.read_by_calls = frozenset(code.co_varnames) - facts.cells
        facts.reads_frame = True  # even with no locals: a transformed frame's own would show
    facts.handler = {index: label_index[label] for index, label in covered.items() if label in label_index}
    index_at = dict(zip(offsets, range(len(offsets))))
    for _, _, target, depth_lasti in exception_entries(code):
        if 2 * target in index_at:  # the handler starts with the exception (and lasti) pushed
            facts.handler_depth[index_at[2 * target]] = (depth_lasti >> 1) + (depth_lasti & 1) + 1
    user_handlers = {target for target in facts.handler.values()
                     if target < len(instructions) and instructions[target].name == "PUSH_EXC_INFO"}
    # a handler of one instruction that a user's handler covers (resume.unbound_cell_read) is
    # inside the user's block too
    user_handlers |= {target for target in facts.handler.values() if facts.handler.get(target) in user_handlers}
    facts.in_user_region = frozenset(index for index, target in facts.handler.items() if target in user_handlers)
    facts.live_in = _derived_liveness(code, facts) or _liveness(facts)
    return facts


def _derived_liveness(code: types.CodeType, facts: CodeFacts) -> list[frozenset[str]] | None:
    """A resume function's liveness from its original's (a frame with many graph breaks has as
    many resume functions, each the size of the frame): the body's is the original's, shifted,
    and the straight-line prologue's and tail's (resume.unbound_cell_read's handlers, which read
    no locals and leave to the body's handlers) follow in one backward pass each. The original's
    cells are free variables of the resume function, which liveness ignores as it ignores cells.
    None: compute it in full."""
    derived = _derived_from.get(code)
    if derived is None:
        return None
    original, shift, prologue = derived
    if not (_FRAME_READERS.isdisjoint(code.co_names) and _FRAME_READERS.isdisjoint(original.co_names)):
        return None  # calls may read locals (the original's: in code cut from the resume function)
    base = analyze(original).live_in
    body_end = len(base) + shift
    count = len(facts.instructions)
    if body_end > count:
        return None
    live_in: list[frozenset[str]] = [frozenset()] * prologue + base[prologue - shift:] + [frozenset()] * (count - body_end)
    for index in [*range(count - 1, body_end - 1, -1), *range(prologue - 1, -1, -1)]:
        successors = facts.successors(index)
        if any(s <= index and (index < prologue or not prologue <= s < body_end) for s in successors):
            return None  # a loop, or a jump back: not the straight line this pass is for
        reads, writes = _reads_writes(facts.instructions[index], facts.cells)
        out = frozenset().union(*(live_in[s] for s in successors))
        live_in[index] = frozenset(reads | (out - writes))
    return live_in


def _liveness(facts: CodeFacts) -> list[frozenset[str]]:
    count = len(facts.instructions)
    effects = [_reads_writes(inst, facts.cells) for inst in facts.instructions]
    for inst, (reads, _) in zip(facts.instructions, effects):
        if inst.name in _CALLS:
            reads |= facts.read_by_calls
    successors = [facts.successors(index) for index in range(count)]
    predecessors: list[list[int]] = [[] for _ in range(count)]
    for index, targets in enumerate(successors):
        for target in targets:
            predecessors[target].append(index)
    live_in: list[frozenset[str]] = [frozenset()] * count
    # backward dataflow to its fixpoint, revisiting only what a change reaches (a whole pass per
    # change made large test functions quadratic)
    todo = list(range(count))  # popped from the end: the last instruction first
    queued = [True] * count
    while todo:
        index = todo.pop()
        queued[index] = False
        reads, writes = effects[index]
        out = frozenset().union(*(live_in[target] for target in successors[index]))
        new = frozenset(reads | (out - writes))
        if new != live_in[index]:
            live_in[index] = new
            for before in predecessors[index]:
                if not queued[before]:
                    queued[before] = True
                    todo.append(before)
    # one object per distinct set: neighbouring instructions mostly share theirs, and analyses stay
    # cached (thousands of sets each the collector would walk at every gc.collect())
    distinct: dict[frozenset[str], frozenset[str]] = {}
    return [distinct.setdefault(live, live) for live in live_in]


def _on_cycle(facts: CodeFacts, components: list[list[int]]) -> list[bool]:
    """Whether each instruction lies on a cycle: its strongly connected component has more than
    one instruction, or it jumps to itself."""
    result = [False] * len(facts.instructions)
    for component in components:
        if len(component) > 1 or component[0] in facts.successors(component[0]):
            for member in component:
                result[member] = True
    return result


def _first_reachable(facts: CodeFacts, components: list[list[int]]) -> list[int]:
    """For each instruction, the lowest index reachable from it (itself included): a component
    comes after every component it reaches, so theirs are known when it is reached."""
    result = list(range(len(facts.instructions)))
    for component in components:
        lowest = min(component)
        for member in component:
            for successor in facts.successors(member):
                lowest = min(lowest, result[successor])
        for member in component:
            result[member] = lowest
    return result


def _components(facts: CodeFacts) -> list[list[int]]:
    """The strongly connected components of the control flow (exception edges included), each
    after every component it reaches (Tarjan's algorithm, without recursion)."""
    count = len(facts.instructions)
    successors = [facts.successors(index) for index in range(count)]
    order = [-1] * count  # discovery order
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in range(count):
        if order[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            node, edge = work.pop()
            if edge == 0:
                order[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack[node] = True
            elif edge <= len(successors[node]):  # back from the child at edge - 1
                child = successors[node][edge - 1]
                low[node] = min(low[node], low[child])
            descended = False
            while edge < len(successors[node]):
                child = successors[node][edge]
                edge += 1
                if order[child] < 0:
                    work.append((node, edge))
                    work.append((child, 0))
                    descended = True
                    break
                if on_stack[child]:
                    low[node] = min(low[node], order[child])
            if descended:
                continue
            if low[node] == order[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _stack_depths(facts: CodeFacts) -> list[int | None]:
    count = len(facts.instructions)
    depths: list[int | None] = [None] * count
    todo = [(0, 0)] if count else []
    while todo:
        index, depth = todo.pop()
        if depths[index] is not None:
            continue  # CPython's compiler guarantees one depth per instruction
        depths[index] = depth
        inst = facts.instructions[index]
        if index in facts.handler:
            target = facts.handler[index]
            if target in facts.handler_depth:
                todo.append((target, facts.handler_depth[target]))
        if isinstance(inst.arg, Label):
            todo.append((facts.label_index[inst.arg], depth + inst.stack_effect(jump=True)))
            if inst.name not in _NO_FALLTHROUGH and index + 1 < count:
                todo.append((index + 1, depth + inst.stack_effect(jump=False)))
        elif inst.name not in _NO_FALLTHROUGH and index + 1 < count:
            todo.append((index + 1, depth + inst.stack_effect()))
    return depths


def _comprehension_names(facts: CodeFacts) -> frozenset[str]:
    """Names a 3.12+ inlined comprehension saves and restores (LOAD_FAST_AND_CLEAR): their
    binding after the comprehension is whatever it was before it, unbound included."""
    return frozenset(inst.arg for inst in facts.instructions
                     if inst.name == "LOAD_FAST_AND_CLEAR" and not isinstance(inst.arg, (CellVar, FreeVar)))


def _bound_locals(facts: CodeFacts, start: int, bound: frozenset[str]) -> list[frozenset[str] | None]:
    count = len(facts.instructions)
    saved = _comprehension_names(facts)
    state: list[frozenset[str] | None] = [None] * count
    state[start] = frozenset(bound)
    todo = [start]
    while todo:
        index = todo.pop()
        before = state[index]
        assert before is not None
        inst = facts.instructions[index]
        after = set(before)
        if not isinstance(inst.arg, (CellVar, FreeVar)):
            reads, writes = _reads_writes(inst, facts.cells)
            after |= {name for name in writes if name not in saved}
            # a comprehension's restore puts back what LOAD_FAST_AND_CLEAR took, which may be unbound
            # (a resume function's prologue pushes NULL for it): such a name is surely bound no more
            after -= {name for name in writes if name in saved}
            if inst.name == "DELETE_FAST":
                after.discard(inst.arg)
        edges = [(succ, frozenset(after)) for succ in facts.successors(index) if succ != facts.handler.get(index)]
        if index in facts.handler:  # an exception may come before the instruction's effect
            edges.append((facts.handler[index], before))
        for succ, value in edges:
            old = state[succ]
            new = value if old is None else old & value
            if new != old:
                state[succ] = new
                todo.append(succ)
    return state


def side_by_side(original: types.CodeType, transformed: types.CodeType, width: int = 60) -> str:
    """The two codes' instructions in two columns (DYNAMO_LOGS=bytecode): what the frame had,
    and what runs instead of it."""
    def lines(code: types.CodeType) -> list[str]:
        out = []
        for inst in dis.get_instructions(code):
            arg = "" if inst.arg is None else f" {inst.argrepr or inst.arg}"
            line = f"{inst.positions and inst.positions.lineno or '':>4} " if inst.starts_line else "     "
            out.append(f"{line}{inst.opname}{arg}"[:width])
        return out

    left, right = lines(original), lines(transformed)
    rows = [f"{'original: ' + original.co_qualname:<{width}} | transformed"]
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else ""
        b = right[index] if index < len(right) else ""
        rows.append(f"{a:<{width}} | {b}")
    return "\n".join(rows)
