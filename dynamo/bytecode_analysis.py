"""Facts about a code object's bytecode that graph breaks need: the flat instruction list with
jump and exception-handler targets, instruction offsets, and which locals are live where."""
from __future__ import annotations

import dis
import types
from dataclasses import dataclass, field
from functools import lru_cache

from bytecode import Bytecode, CellVar, FreeVar, Instr, Label, TryBegin, TryEnd

# Instructions after which control never falls through to the next one.
_NO_FALLTHROUGH = frozenset({
    "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT",
    "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
})
_READS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"}
_WRITES = {"STORE_FAST"}


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


def _reads_writes(inst: Instr) -> tuple[set[str], set[str]]:
    name = inst.name
    if isinstance(inst.arg, (CellVar, FreeVar)):  # 3.13 loads cells with LOAD_FAST: not a plain local
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


@lru_cache(maxsize=512)
def analyze(code: types.CodeType) -> CodeFacts:
    instructions: list[Instr] = []
    label_index: dict[Label, int] = {}
    pending_handlers: list[Label] = []
    covered: dict[int, Label] = {}
    for item in Bytecode.from_code(code):
        if isinstance(item, Label):
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
    offsets = [i.offset for i in dis.get_instructions(code)]
    if len(offsets) != len(instructions):  # never expected; offsets are only used for names
        offsets = list(range(0, 2 * len(instructions), 2))
    facts = CodeFacts(instructions, label_index, offsets)
    facts.handler = {index: label_index[label] for index, label in covered.items() if label in label_index}
    facts.in_user_region = frozenset(
        index for index, target in facts.handler.items()
        if target < len(instructions) and instructions[target].name == "PUSH_EXC_INFO"
    )
    facts.live_in = _liveness(facts)
    return facts


def _liveness(facts: CodeFacts) -> list[frozenset[str]]:
    count = len(facts.instructions)
    effects = [_reads_writes(inst) for inst in facts.instructions]
    live_in: list[set[str]] = [set() for _ in range(count)]
    changed = True
    while changed:  # backward dataflow to a fixpoint; code objects are small
        changed = False
        for index in range(count - 1, -1, -1):
            out: set[str] = set()
            for succ in facts.successors(index):
                out |= live_in[succ]
            reads, writes = effects[index]
            new = reads | (out - writes)
            if new != live_in[index]:
                live_in[index] = new
                changed = True
    return [frozenset(s) for s in live_in]
