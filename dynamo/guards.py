"""Guards: the conditions under which a compiled frame may be reused, as data, compiled into
a GuardProgram that dynamo._C runs before every cached call, and printed readably."""
from __future__ import annotations

import enum
import math
import operator
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import _C
from .array_layout import layout_spec, pattern_layout_spec, sizes_spec
from .class_shapes import ClassShape
from .sources import AttrSource, Source


class GuardKind(enum.Enum):
    TYPE_IS = "type_is"
    ID_IS = "id_is"
    EQUALS = "equals"
    LEN_IS = "len_is"
    CALL = "call"  # value(x) must be true: a predicate with a describe(name) method (dict key order)
    SAME_AS = "same_as"  # value: another Source that must be the very same object (aliasing relied on)
    DISTINCT_FROM = "distinct_from"  # value: another Source that must be a different object
    NO_OVERLAP = "no_overlap"  # value: NoOverlap(other source): two arrays that share no memory
    VIEW_OF = "view_of"  # value: input_views.ViewOf(other source, ...): the array is that slice of other
    # value: shapes.guards.SizeEntry, one relation of the dynamic sizes; all of an entry's
    # relations are checked by one generated predicate over the arrays' shapes (call_many)
    SIZES = "sizes"
    # value: a predicate of no arguments on the process's state (source: sources.StateSource),
    # with a describe(name) method
    STATE = "state"


@dataclass(frozen=True, eq=False)
class Guard:
    source: Source
    kind: GuardKind
    value: Any

    def _key(self) -> tuple:
        # an identity guard is about the object, which may be unhashable (a function's __globals__)
        return (self.source, self.kind, id(self.value) if self.kind is GuardKind.ID_IS else self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Guard) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        name = self.source.name()
        if self.kind is GuardKind.TYPE_IS:
            return f"type({name}) is {_describe(self.value)}"
        if self.kind is GuardKind.ID_IS:
            return f"{name} is {_describe(self.value)}"
        if self.kind is GuardKind.LEN_IS:
            return f"len({name}) == {self.value}"
        if self.kind in (GuardKind.CALL, GuardKind.NO_OVERLAP, GuardKind.SIZES, GuardKind.VIEW_OF, GuardKind.STATE):
            return self.value.describe(name)
        if self.kind in _RELATIONS:
            return f"{name} {'is' if self.kind is GuardKind.SAME_AS else 'is not'} {self.value.name()}"
        return f"{name} == {_shown(self.value)}"


def _shown(value: Any) -> str:
    """repr(value) for a reason text, which must never raise: an int past
    sys.get_int_max_str_digits() has no repr (ValueError; CPython's test_math recompiles for one)."""
    try:
        return repr(value)
    except ValueError:
        if isinstance(value, int):
            return f"<int of {value.bit_length()} bits>"
        raise


def _describe(value: Any) -> str:
    if isinstance(value, np.dtype):
        return repr(value)
    if isinstance(value, type):
        return value.__qualname__ if value.__module__ == "builtins" else f"{value.__module__}.{value.__qualname__}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return _shown(value)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return f"<{type(value).__name__} {name}>" if name else f"<{type(value).__name__} at {id(value):#x}>"


@dataclass(frozen=True)
class NoOverlap:
    """The guarded array shares no memory with the array at `other` (the graph writes one of them).

    `owned`: both owned their buffers when traced, so the cheap form holds: neither is a view
    (`.base is None`) and they are two objects. Otherwise NumPy's bounds check decides."""

    other: Source
    owned: bool

    def describe(self, name: str) -> str:
        return f"not np.may_share_memory({name}, {self.other.name()})"


@dataclass(frozen=True)
class FloatIs:
    """x is exactly this float or complex (or NumPy floating scalar): == cannot tell 0.0 from -0.0,
    and NaN equals nothing, so zeros and NaNs are guarded by sign and NaN-ness too."""

    value: Any

    def __call__(self, x: Any) -> bool:
        return all(_same_float(a, b) for a, b in zip(_parts(x), _parts(self.value)))

    def describe(self, name: str) -> str:
        return f"{name} == {self.value!r} (sign and NaN exact)"


@dataclass(frozen=True)
class IsDouble:
    """x is a Python float or an np.float64: both the same IEEE double, and + - * of them give the
    same bits; a run-time float that the trace used only that way takes either (its result takes
    the type Python gives it when the graph runs)."""

    def __call__(self, x: Any) -> bool:
        kind = type(x)
        return kind is float or kind is np.float64

    def describe(self, name: str) -> str:
        return f"type({name}) is float or numpy.float64"


_DOUBLE_TYPES = (float, np.float64)


@dataclass(frozen=True, eq=False)
class TimeIs:
    """x is exactly this datetime64 / timedelta64: == converts units (a day equals 24 hours) and
    NaT equals nothing, so the unit is compared too and NaT is matched as NaT."""

    value: Any

    def _key(self) -> tuple:
        # by unit and count: NumPy refuses to hash a generic (unitless) timedelta64 other than 0
        return (self.value.dtype, int(self.value.view(np.int64)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimeIs) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __call__(self, x: Any) -> bool:
        if not isinstance(x, np.generic) or x.dtype != self.value.dtype:
            return False
        if np.isnat(self.value):
            return bool(np.isnat(x))
        return bool(x == self.value)

    def describe(self, name: str) -> str:
        return f"{name} == {self.value!r} (unit exact)"


@dataclass(frozen=True)
class OnDevice:
    """x (a device array, its exact type guarded before) is on this device: the graph's calls run
    there, and one on another device would mix devices with the arrays made on this one."""

    device: str
    device_of: Callable[[Any], str | None]

    def __call__(self, x: Any) -> bool:
        return self.device_of(x) == self.device

    def describe(self, name: str) -> str:
        return f"{name} is on {self.device}"


def _parts(x: Any) -> tuple[float | np.floating, ...]:
    if isinstance(x, (complex, np.complexfloating)):
        return x.real, x.imag
    return (float(x),)


def _same_float(a: float | np.floating, b: float | np.floating) -> bool:
    if a != a or b != b:
        return a != a and b != b
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@dataclass(frozen=True)
class IsReferent:
    """x is this very object, held by a weak reference: a function made by a call (a closure, a
    nested def) would otherwise be kept alive by the cache entry, and with it everything its
    cells reach, where plain Python frees it when the call that made it ends (SciPy's
    line_search_wolfe1 closures held a multiprocessing Pool through a bound method). Once the
    object is gone the guard fails, as no new object can be it."""

    ident: int
    ref: Any = field(compare=False)
    label: str = field(compare=False)

    @classmethod
    def of(cls, value: Any) -> "IsReferent":
        return cls(id(value), weakref.ref(value), _describe(value))

    def __call__(self, x: Any) -> bool:
        target = self.ref()  # None once the object is gone, which must not match an x of None
        return target is not None and target is x

    def describe(self, name: str) -> str:
        return f"{name} is {self.label}"


def made_by_a_call(value: Any) -> bool:
    """A function that a call creates (a closure or a def inside a function): a new one each
    time, so that nothing but its maker's frame should keep it alive."""
    return isinstance(value, types.FunctionType) and (
        value.__closure__ is not None or "<locals>" in value.__qualname__)


@dataclass(frozen=True)
class DtypeIs:
    """x is this dtype in every way a program can see: == ignores the scalar type (a record dtype
    equals its plain structured dtype), the metadata, which arrays made with it carry, and the
    align flag of a struct (isalignedstruct, alignment) when the offsets agree."""

    value: np.dtype

    def __call__(self, x: Any) -> bool:
        v = self.value
        return (isinstance(x, np.dtype) and x == v and x.type is v.type and x.isalignedstruct == v.isalignedstruct
                and x.alignment == v.alignment and x.flags == v.flags and _same_metadata(x.metadata, v.metadata))

    def describe(self, name: str) -> str:
        return f"{name} == {self.value!r} (scalar type, align flag and metadata too)"


def _same_metadata(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    try:
        return bool(dict(a) == dict(b))
    except Exception:  # values whose comparison raises or is ambiguous (arrays): not the same
        return False


def dtype_guard(value: np.dtype) -> tuple["GuardKind", Any]:
    """The guard that a source holds exactly this dtype: identity for NumPy's shared instances
    (checked in C), the full comparison otherwise."""
    if value.metadata is None and _is_shared_instance(value):
        return GuardKind.ID_IS, value
    return GuardKind.CALL, DtypeIs(value)


def needs_exact_float_guard(value: Any) -> bool:
    """A zero or NaN (in any part) of a float-like value: == would accept a different value."""
    if not isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return False
    return any(part == 0.0 or part != part for part in _parts(value))


class GuardSet:
    """An ordered, duplicate-free collection of guards for one compiled entry."""

    def __init__(self) -> None:
        self._guards: dict[Guard, None] = {}

    def add(self, source: Source, kind: GuardKind, value: Any) -> None:
        self._guards[Guard(source, kind, value)] = None

    def __iter__(self):
        return iter(self._guards)

    def __len__(self) -> int:
        return len(self._guards)

    def __str__(self) -> str:
        return "\n".join(str(g) for g in self._guards)

    def compile(self) -> Any:
        """The GuardProgram that checks every guard, each source fetched once."""
        return _ProgramBuilder().build(list(self._guards))


def failure_reason(program: Any, failed_at: int, rerun: Callable[[Any], int] | None = None) -> str:
    """Readable text for the instruction `failed_at` of a program built by GuardSet.compile.
    `rerun(program)` runs another program on the same frame: with it, a failed array layout
    (one struct_is for type, dtype and sizes) names the part that failed."""
    what = program.info[failed_at]
    if isinstance(what, Source):
        return f"{what.name()} could not be read"
    if isinstance(what, (ArrayLayout, SizeCheck)) and rerun is not None:
        return what.failure(rerun)
    return str(what)


_RELATIONS = {GuardKind.SAME_AS: operator.is_, GuardKind.DISTINCT_FROM: operator.is_not}


def _no_shared_memory(a: Any, b: Any) -> bool:
    return not np.may_share_memory(a, b)


@dataclass(frozen=True)
class ArrayLayout:
    """The guards of one array input checked as one: exact ndarray, dtype, shape. With NumPy's
    struct layout verified (dynamo.array_layout) they lower to one `struct_is` instruction: a
    type check and three word compares in C, about 15 ns instead of 160 ns of attribute reads."""

    guards: tuple[Guard, ...]
    sizes: Any = None  # shapes.guards.SizeGuards whose per-array sizes the struct_is checks too

    def __str__(self) -> str:
        return " and ".join(str(g) for g in self.guards)

    def failure(self, rerun: Callable[[Any], int]) -> str:
        """The part that failed, each checked on its own (the slow path: a recompile)."""
        for guard in self.guards:
            single = GuardSet()
            single.add(guard.source, guard.kind, guard.value)
            if rerun(single.compile()) >= 0:
                return str(guard)
        if self.sizes is not None:
            return size_failure(self.sizes, rerun) or str(self)
        return str(self)


@dataclass(frozen=True, eq=False)
class SizeCheck:
    """The relations between dynamic sizes checked in C (one `sizes` instruction); prints as the
    first of them, and a failure names the one that failed."""

    sizes: Any  # shapes.guards.SizeGuards
    index: int

    def __str__(self) -> str:
        return self.sizes.texts[self.index].split("  ")[0]

    def failure(self, rerun: Callable[[Any], int]) -> str:
        return size_failure(self.sizes, rerun) or f"{self} failed"


def merge_size_programs(programs: list[tuple[tuple[Any, ...], tuple[int, ...]]]) -> tuple[tuple[Any, ...], tuple[int, ...]]:
    """One `sizes` program checking every relation in turn (each leaves the stack empty), over
    the union of their arrays: one instruction per call instead of one per relation."""
    from .shapes.guards import remap_size_program

    sources: list[Any] = []
    code: list[int] = []
    for program_sources, program in programs:
        for source in program_sources:
            if source not in sources:
                sources.append(source)
        code += remap_size_program(program, [sources.index(s) for s in program_sources])
    return tuple(sources), tuple(code)


def size_failure(sizes: Any, rerun: Callable[[Any], int]) -> str | None:
    """Which size guard fails, with the sizes seen (`Eq(s0, 8) failed: L['x'].shape[0] is 9`):
    every size guard run again by the Python predicate (the slow path: a recompile)."""
    check, _ = sizes.predicate(set())
    builder = _ProgramBuilder()
    registers = tuple(builder.load(source) for source in sizes.value_sources())
    builder.emit(sizes, "call_many", check, registers)
    program = _C.GuardProgram(builder.instructions, max(len(builder.registers), 1), builder.info)
    try:
        return str(sizes) if rerun(program) >= 0 else None
    except Exception:  # a size read from an item of a value that is no longer a tuple (-1 for (3,))
        return f"{sizes} (its sizes cannot be read)"


class _ProgramBuilder:
    """Lowers guards to GuardProgram instructions; each instruction's info is the guard it checks
    (or the source it loads), so a failure prints as the guard was written."""

    def __init__(self) -> None:
        self.instructions: list[tuple] = []
        self.info: list[Any] = []  # per instruction: the guard checked or source loaded
        self.registers: dict[Source, int] = {}
        self.layouts: dict[Guard, tuple[Any, ArrayLayout]] = {}  # TYPE_IS ndarray guard -> struct_is
        self.covered: set[Guard] = set()  # guards checked by a struct_is already
        self.in_struct: set[Source] = set()  # dynamic arrays whose sizes a struct_is checks

    def build(self, guards: list[Guard]) -> Any:
        self.find_array_layouts(guards)
        for guard in guards:
            if guard not in self.covered:
                _LOWERINGS.get(guard.kind, _ProgramBuilder.lower_check)(self, guard)
        return _C.GuardProgram(self.instructions, max(len(self.registers), 1), self.info)

    def find_array_layouts(self, guards: list[Guard]) -> None:
        by_key = {(g.source, g.kind): g for g in guards}
        patterns: dict[Source, tuple] = {}  # dynamic arrays: sizes as a struct_is ssize_pattern
        owners: dict[Source, Any] = {}
        for guard in guards:
            if guard.kind is GuardKind.SIZES:
                patterns.update(guard.value.guards.patterns)
                owners.update(dict.fromkeys(guard.value.guards.patterns, guard.value.guards))
        self.in_struct = set()
        for guard in guards:
            if guard.kind is not GuardKind.TYPE_IS or guard.value is not np.ndarray:
                continue
            dtype = by_key.get((AttrSource(guard.source, "dtype"), GuardKind.EQUALS))
            shape = by_key.get((AttrSource(guard.source, "shape"), GuardKind.EQUALS))
            if shape is None:  # dynamic sizes: the layout pins ndim, the size guards the sizes
                shape = by_key.get((AttrSource(guard.source, "ndim"), GuardKind.EQUALS))
            if dtype is None or shape is None or not isinstance(dtype.value, np.dtype):
                continue
            if type(shape.value) is int and _is_shared_instance(dtype.value):
                pattern = patterns.get(guard.source)
                spec = None if pattern is None else pattern_layout_spec(pattern, dtype.value)
                if spec is not None:
                    self.layouts[guard] = (spec, ArrayLayout((guard, dtype, shape), owners.get(guard.source)))
                    self.covered |= {dtype, shape}
                    self.in_struct.add(guard.source)
                continue
            if not (isinstance(shape.value, tuple) and all(type(d) is int for d in shape.value)):
                continue  # symbolic sizes: checked one by one
            if not _is_shared_instance(dtype.value):
                continue  # not NumPy's shared instance (unpickled arrays have their own): compared by ==
            spec = layout_spec(shape.value, dtype.value)
            if spec is not None:
                self.layouts[guard] = (spec, ArrayLayout((guard, dtype, shape)))
                self.covered |= {dtype, shape}

    def emit(self, info: Any, *instruction: Any) -> None:
        self.instructions.append(instruction)
        self.info.append(info)

    def load(self, source: Source) -> int:
        if source not in self.registers:
            op, *operands = source.guard_load(self.load)
            self.registers[source] = reg = len(self.registers)
            self.instructions.append((op, reg, *operands))
            self.info.append(source)
        return self.registers[source]

    # ---- one lowering per guard kind ----------------------------------------------------------------
    def lower_check(self, guard: Guard) -> None:
        self.emit(guard, guard.kind.value, self.load(guard.source), guard.value)

    def lower_type_is(self, guard: Guard) -> None:
        if guard in self.layouts:
            spec, layout = self.layouts[guard]
            self.emit(layout, "struct_is", self.load(guard.source), spec)
        else:
            self.lower_check(guard)

    def lower_relation(self, guard: Guard) -> None:  # two sources: checked by a call on both registers
        self.emit(guard, "call_many", _RELATIONS[guard.kind], (self.load(guard.source), self.load(guard.value)))

    def lower_no_overlap(self, guard: Guard) -> None:
        overlap: NoOverlap = guard.value
        a, b = self.load(guard.source), self.load(overlap.other)
        if overlap.owned:  # neither is a view, and they are two arrays: their buffers are apart
            self.emit(guard, "id_is", self.load(AttrSource(guard.source, "base")), None)
            self.emit(guard, "id_is", self.load(AttrSource(overlap.other, "base")), None)
            self.emit(guard, "call_many", operator.is_not, (a, b))
        else:
            self.emit(guard, "call_many", _no_shared_memory, (a, b))

    def lower_view_of(self, guard: Guard) -> None:
        self.emit(guard, "call_many", guard.value, (self.load(guard.source), self.load(guard.value.other)))

    def lower_call(self, guard: Guard) -> None:
        if isinstance(guard.value, IsDouble):  # two type pointers compared in C: no Python frame per call
            self.emit(guard, "type_in", self.load(guard.source), _DOUBLE_TYPES)
        elif isinstance(guard.value, ClassShape):  # compared in C: no Python frame per call (~1.3 us)
            self.emit(guard, "class_shape", self.load(guard.source), (guard.value.of_type, guard.value.shape))
        else:
            self.lower_check(guard)

    def lower_state(self, guard: Guard) -> None:
        self.emit(guard, "call_many", guard.value, ())

    def lower_sizes(self, guard: Guard) -> None:
        """The first entry emits the checks of them all: one C `sizes` instruction per relation
        that has a program, then the generated predicate for the rest (if any); the other
        entries only print."""
        if guard.value.index == 0:
            sizes = guard.value.guards
            in_c = {i: c for i, c in sizes.c_checks().items() if sizes_spec(c[1]) is not None}
            if in_c:  # the relations: one C instruction running their programs one after another
                sources, program = merge_size_programs(list(in_c.values()))
                registers = tuple(self.load(source) for source in sources)
                self.emit(SizeCheck(sizes, min(in_c)), "sizes", registers, sizes_spec(program))
            check, _ = sizes.predicate(self.in_struct, frozenset(in_c))
            if check is not None:
                registers = tuple(self.load(source) for source in sizes.value_sources())
                self.emit(sizes, "call_many", check, registers)


_LOWERINGS: dict[GuardKind, Callable[[_ProgramBuilder, Guard], None]] = {
    GuardKind.SIZES: _ProgramBuilder.lower_sizes,
    GuardKind.TYPE_IS: _ProgramBuilder.lower_type_is,
    GuardKind.SAME_AS: _ProgramBuilder.lower_relation,
    GuardKind.DISTINCT_FROM: _ProgramBuilder.lower_relation,
    GuardKind.NO_OVERLAP: _ProgramBuilder.lower_no_overlap,
    GuardKind.VIEW_OF: _ProgramBuilder.lower_view_of,
    GuardKind.STATE: _ProgramBuilder.lower_state,
    GuardKind.CALL: _ProgramBuilder.lower_call,
}


def _is_shared_instance(dtype: np.dtype) -> bool:
    """NumPy's one instance of this dtype, which C may compare by pointer (False for a copy made by
    unpickling, and for dtypes that no type string names: StringDType, user dtypes)."""
    try:
        return np.dtype(dtype.str) is dtype
    except TypeError:
        return False
