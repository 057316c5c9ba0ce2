"""Lowering: an fx_ir graph becomes a Program of fused kernels and NumPy steps.

Nodes become index functions (inlined into their users); values that must exist in memory (outputs,
inputs of NumPy steps, reductions that would be recomputed) are stored by kernels. A node that no rule
lowers runs as NumPy code between kernels, and the reason is recorded.
"""
from __future__ import annotations

import builtins
import logging
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
import sympy

from ...fx_ir import Graph, GraphModule, Node, TensorMeta, effects, map_aggregate, map_arg
from ...fx_ir.ops import OpKind, lookup_attribute, lookup_function, lookup_method
from .exprs import Expr, Op, Reduce, index_var, loads, substitute, walk
from .program import HostStep, Kernel, Program, Ref
from .program_order import (computes, flows_only_back_into, reads_values, realize_earlier_work,
                            realize_unread)
from .scheduling import NeedsRealize, PendingStore, build_kernel, shared_costly
from .values import Buffer, TensorValue, buffer_value, kernel_dtype, kernel_dtype_kinds, sizes

log = logging.getLogger("dynamo.output_code")

MAX_RESTARTS = 64
MAX_CHAIN = 200  # lazy values nested deeper than this are stored (evaluating one recurses per level)
# buffers one kernel may touch: the C backend passes each as an argument of dynamo._C.call_native,
# which takes at most 64 (fuzz seed 1004797: 420 unrolled scalar reads made one kernel of 421)
MAX_KERNEL_BUFFERS = 48


class Unsupported(Exception):
    """This node has no lowering (with these arguments): it runs as NumPy code. The one exception
    used for control flow here, caught in Lowerer.lower_node."""


@dataclass(frozen=True)
class HostValue:
    """A non-array value that exists only on the host (a NumPy step's result, a non-array input)."""

    ref: Ref


@dataclass(frozen=True)
class Constant:
    """A Python value known at compile time (a shape, a dtype, a length)."""

    value: Any


Rule = Callable[["Lowerer", Node, tuple[Any, ...], dict[str, Any]], Any]
FUNCTION_RULES: dict[Any, Rule] = {}
METHOD_RULES: dict[str, Rule] = {}
ATTRIBUTE_RULES: dict[str, Rule] = {}


def rule(*targets: Any, methods: tuple[str, ...] = (), attributes: tuple[str, ...] = ()) -> Callable[[Rule], Rule]:
    """Register a lowering for call_function targets, ndarray method names, and attributes."""
    def register(fn: Rule) -> Rule:
        for t in targets:
            FUNCTION_RULES[id(t)] = fn
        for m in methods:
            METHOD_RULES[m] = fn
        for a in attributes:
            ATTRIBUTE_RULES[a] = fn
        return fn
    return register


def registry_row(node: Node) -> Any:
    if node.op == "call_method":
        return lookup_method(node.target)
    if node.op != "call_function":
        return None
    if node.target is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str):
        return lookup_attribute(node.args[1])
    return lookup_function(node.target)


def meta_args(node: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
    args = map_arg(node.args, lambda n: n.meta.get("val"))
    if node.op == "call_function" and node.target is builtins.getattr:
        args = args[:1]
    return args, map_arg(node.kwargs, lambda n: n.meta.get("val"))


def is_alias_node(node: Node) -> bool:
    """Whether the node's result may share memory with an argument (views, in-place results)."""
    row = registry_row(node)
    if row is None:
        return node.op in ("call_function", "call_method")  # unknown: assume the worst
    try:
        args, kwargs = meta_args(node)
        return row.effects(*args, **kwargs).view_of is not None
    except Exception:
        return True


def node_meta(node: Node) -> TensorMeta | None:
    meta = node.meta.get("val")
    return meta if isinstance(meta, TensorMeta) else None


def lowering_rule(node: Node) -> tuple[Rule | None, str]:
    """The rule registered for what `node` calls (None when there is none), and how to name it."""
    if node.op == "call_method":
        return METHOD_RULES.get(node.target), f"method {node.target}"
    if node.target is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str):
        return ATTRIBUTE_RULES.get(node.args[1]), f"attribute {node.args[1]}"
    if node.op == "call_function":
        return FUNCTION_RULES.get(id(node.target)), getattr(node.target, "__name__", repr(node.target))
    return None, node.op


class Lowerer:
    """One lowering attempt; `forced` names nodes that get a kernel of their own."""

    def __init__(self, gm: GraphModule, example_inputs: list[Any], supported_ops: frozenset[str],
                 forced: set[str], check: Callable[[Expr], str | None] | None = None,
                 runs_as_numpy: Callable[[Node], str | None] | None = None,
                 costly: Callable[[Op], bool] | None = None) -> None:
        self.gm = gm
        self.check = check
        self.runs_as_numpy = runs_as_numpy
        self.costly = costly
        self._checked: set[int] = set()
        self._checked_exprs: list[Expr] = []  # keeps the checked (hash-consed) expressions alive
        self.graph: Graph = gm.graph
        self.inputs = example_inputs
        self.supported_ops = supported_ops
        self.forced = forced
        self.env: dict[Node, Any] = {}
        self.buffers: dict[str, Buffer] = {}
        self.steps: list[Kernel | HostStep] = []
        self.pending: list[PendingStore] = []
        self.pending_shape: tuple[int, ...] | None = None
        self.pending_buffers: set[str] = set()
        self.fallbacks: list[tuple[str, str]] = []
        self.placeholders: list[str] = []
        self.constants: dict[str, Any] = {}
        self.root: dict[Node, Node] = {}        # in-place results -> the node whose memory they are
        self.writeback: dict[Node, None] = {}   # placeholders written by functionalized mutations
        # NumPy steps whose result may share memory with their arguments (np.flip, np.atleast_2d,
        # out=): the buffers under those arguments, so a write through either side reaches the other
        self.host_aliases: dict[Node, set[str]] = {}
        self.host_views: dict[Node, tuple[Any, str]] = {}   # a view's NumPy object: (its base's value, name)
        self.position = {n: k for k, n in enumerate(self.graph.nodes)}
        self.current: Node | None = None
        self._reduce_vars: dict[tuple[Any, ...], sympy.Symbol] = {}
        self.op_origins: dict[Expr, list[tuple[int, int]]] = {}   # (node position, steps made before it)
        self._depth = 0
        self._kernel_count = 0

    # -- reductions --------------------------------------------------------------------------------

    def reduce(self, kind: str, extent: int, body_fn: Callable[[sympy.Symbol], Expr], dtype: Any,
               origin: str) -> Expr:
        """A Reduce whose bound variable is named after its body, so equal reductions are one node.
        `origin`: the graph node whose lowering made it (stored on its own if it must be)."""
        dummy = index_var(f"d{self._depth}")
        self._depth += 1
        try:
            body = body_fn(dummy)
        finally:
            self._depth -= 1
        key = (kind, extent, body, np.dtype(dtype).str, origin)
        var = self._reduce_vars.get(key)
        if var is None:
            var = self._reduce_vars[key] = index_var(f"r{len(self._reduce_vars)}")
        return Reduce(kind, var, extent, substitute(body, {dummy: var}), dtype, origin)

    # -- driving -----------------------------------------------------------------------------------

    def run(self) -> Program:
        inputs = iter(self.inputs)
        output: Any = None
        for node in self.graph.nodes:
            self.current = node
            if node.op == "placeholder":
                self.lower_placeholder(node, next(inputs, None))
            elif node.op == "get_attr":
                self.lower_get_attr(node)
            elif node.op == "output":
                output = self.lower_output(node)
            else:
                self.lower_node(node)
        origins = {e: tuple(p for p, _ in ps) for e, ps in self.op_origins.items()}
        return Program(self.buffers, self.steps, self.placeholders, output, self.fallbacks, self.constants, origins,
                       {e: tuple(ps) for e, ps in self.op_origins.items()})

    def lower_placeholder(self, node: Node, example: Any) -> None:
        self.placeholders.append(node.name)
        if is_array(example) and kernel_dtype(example.dtype):
            meta = node_meta(node)
            # a graph with symbolic sizes is lowered for every size: its kernels take them as arguments
            shape = sizes(meta.shape) if meta is not None and not meta.is_static and meta.ndim == example.ndim \
                else example.shape
            buf = self.add_buffer(Buffer(node.name, shape, example.dtype, "input"))
            self.env[node] = buffer_value(buf)
        else:
            self.env[node] = HostValue(Ref(node.name))

    def lower_get_attr(self, node: Node) -> None:
        value = self.gm.get_attribute(node.target)
        self.constants[node.name] = value
        if isinstance(value, np.ndarray) and kernel_dtype(value.dtype):
            self.env[node] = buffer_value(self.add_buffer(Buffer(node.name, value.shape, value.dtype, "host")))
        else:
            self.env[node] = Constant(value)

    def lower_node(self, node: Node) -> None:
        if node.op == "call_module":
            self.fallback(node, "a loop node: the loop runs on the host, its body as NumPy code per iteration")
            return
        chosen = self.runs_as_numpy(node) if self.runs_as_numpy is not None else None
        if chosen is not None:
            self.fallback(node, chosen)
            return
        # a mutation's rule rebinds the mutated value: undone if the target refuses the result
        saved = (dict(self.env), dict(self.root), dict(self.writeback)) if self.check is not None and node.is_impure() else None
        meta, row = node_meta(node), registry_row(node)
        if self.check is not None and meta is not None and meta.scalar and row is not None \
                and row.kind == OpKind.ELEMENTWISE:
            # NumPy scalar math has its own loops and warnings ("... encountered in scalar divide")
            self.fallback(node, "NumPy scalar arithmetic")
            return
        if self.check is not None and row is not None and row.kind in (OpKind.VIEW, OpKind.INDEXING) \
                and not _writes(node):
            self.compute_whole_base(node, meta)
        try:
            value = self.lower_call(node)
        except (Unsupported, NotImplementedError, ValueError, TypeError, IndexError, OverflowError) as exc:
            self.fallback(node, str(exc) or type(exc).__name__)
            return
        if self.check is not None:
            # the result, and every value a mutation rebound (setitem returns None)
            made = [value] if isinstance(value, TensorValue) else []
            if saved is not None:
                made += [v for k, v in self.env.items() if isinstance(v, TensorValue) and saved[0].get(k) is not v]
            reason = next((r for r in map(self.refused, made) if r is not None), None)
            if reason is not None:
                if saved is not None:
                    self.env, self.root, self.writeback = saved
                self.fallback(node, reason)
                return
        self.env[node] = value
        if isinstance(value, TensorValue) and value.buffer is None and "view_of" not in value.notes:
            self.note_origin(node, value)
        if node.name in self.forced and isinstance(value, TensorValue):
            self.realize(node)
        elif isinstance(value, TensorValue) and value.buffer is None and self.chain_depth(node, value) > MAX_CHAIN:
            self.realize(node)  # values are evaluated by recursion: a long chain is stored part-way

    def compute_whole_base(self, node: Node, meta: TensorMeta | None) -> None:
        """A part of a computed value (a slice, an element): NumPy computed all of it, and warned for
        every element (fuzz seed 1005539: np.remainder(1, a)[1] missed the division by zero in another
        element), so the whole value is stored first."""
        base = node.args[0] if node.args and isinstance(node.args[0], Node) else None
        if base is None:
            return
        root = self.root.get(base, base)
        value = self.env.get(root)
        if not isinstance(value, TensorValue) or value.buffer is not None or "view_of" in value.notes \
                or not self.computes(value):
            return
        try:
            part = math.prod(int(n) for n in meta.shape) if meta is not None else -1
            whole = math.prod(int(n) for n in value.shape)
        except TypeError:
            part, whole = -1, 0   # symbolic sizes: it may be a part
        if part < whole:
            self.realize(root)

    def note_origin(self, node: Node, value: TensorValue) -> None:
        """Records the node as an origin of the op its value runs last: identical nodes are one interned
        expression, computed once, but NumPy warns once per node whose op raises a flag."""
        xs = tuple(index_var(f"x{k}") for k in range(value.ndim))
        top = value.at(xs)
        if not isinstance(top, Op):
            return
        written = self.root.get(node)   # an in-place operator: its target's value is already the new one
        for n in node.all_input_nodes:   # a value passed through (a copy, asarray) runs no op of its own
            if written is not None and self.root.get(n, n) is written:
                continue
            v = self.env.get(self.root.get(n, n))
            if isinstance(v, TensorValue) and v.ndim == value.ndim and v.shape == value.shape and v.at(xs) is top:
                return
        self.op_origins.setdefault(top, []).append((self.position[node], len(self.steps)))

    def chain_depth(self, node: Node, value: TensorValue) -> int:
        """How many lazy values deep `value` is (stored values count 0): kept in its notes."""
        inputs = [self.env.get(self.root.get(n, n)) for n in node.all_input_nodes]
        depth = 1 + max((v.notes.get("depth", 0) for v in inputs if isinstance(v, TensorValue) and v.buffer is None),
                        default=0)
        value.notes["depth"] = depth
        return depth

    def lower_call(self, node: Node) -> Any:
        meta = node.meta.get("val")
        row = registry_row(node)
        if row is not None and row.kind == OpKind.METADATA and meta is not None and not isinstance(meta, TensorMeta):
            return Constant(meta)
        fn, name = lowering_rule(node)
        if fn is None:
            raise Unsupported(f"no kernel lowering for {name}")
        args = map_aggregate(node.args, self.arg_value)
        kwargs = map_aggregate(node.kwargs, self.arg_value)
        if node.op == "call_function" and node.target is builtins.getattr:
            args = args[:1]
        if any(isinstance(v, HostValue) for v in _leaves((args, kwargs))):
            raise Unsupported("an argument exists only as a NumPy value")
        result = fn(self, node, args, kwargs)
        if isinstance(result, TensorValue):
            if not kernel_dtype(result.dtype):
                raise Unsupported(f"dtype {result.dtype} has no kernel support")
            if meta is not None and isinstance(meta, TensorMeta) and tuple(meta.shape) != result.shape:
                raise Unsupported(f"lowered shape {result.shape} differs from the recorded {meta.shape}")
        return result

    def refused(self, value: TensorValue) -> str | None:
        """The target's reason not to take some expression of this value (the `check` of lower_graph)."""
        assert self.check is not None
        for e in walk([value.at(tuple(index_var(f"x{k}") for k in range(value.ndim)))]):
            if id(e) in self._checked:
                continue
            reason = self.check(e)
            if reason is not None:
                return reason
            self._checked.add(id(e))
            self._checked_exprs.append(e)
        return None

    def arg_value(self, x: Any) -> Any:
        if isinstance(x, Node):
            value = self.env[self.root.get(x, x)]
            return value.value if isinstance(value, Constant) else value
        return x

    # -- buffers and kernels -----------------------------------------------------------------------

    def add_buffer(self, buf: Buffer) -> Buffer:
        self.buffers[buf.name] = buf
        return buf

    def realize(self, node: Node) -> Buffer:
        """Make sure the node's value is in memory (stored by the pending kernel if it is not)."""
        value = self.env[node]
        if not isinstance(value, TensorValue):
            raise TypeError(f"{node.name} is not an array value")
        if value.buffer is not None:
            return value.buffer
        buf = self.add_buffer(Buffer(self.fresh_name(node.name), value.shape, value.dtype, "temp"))
        self.store(buf, value, node.name)
        realized = buffer_value(buf)
        realized.notes.update(value.notes)
        self.env[node] = realized
        return buf

    def fresh_name(self, base: str) -> str:
        name, k = base, 1
        while name in self.buffers or name in self.constants:
            name, k = f"{base}_v{k}", k + 1
        return name

    def store(self, buf: Buffer, value: TensorValue, origin: str, mask_fn: Any = None) -> None:
        reads = {ld.buffer for ld in loads([value.at(tuple(index_var(f"x{k}") for k in range(value.ndim)))])}
        written = self.sharing({p.buffer.name for p in self.pending} | {buf.name})
        if self.pending and (self.pending_shape != value.shape or self.sharing(reads) & written
                             or len(self.pending_buffers | reads | {buf.name}) > MAX_KERNEL_BUFFERS):
            self.flush()
        self.pending.append(PendingStore(buf, value, origin, mask_fn))
        self.pending_shape = value.shape
        self.pending_buffers |= reads | {buf.name}

    def flush(self) -> None:
        if not self.pending:
            return
        assert self.pending_shape is not None
        name = f"kernel{self._kernel_count}"
        self._kernel_count += 1
        self.steps.append(build_kernel(name, self.pending_shape, self.pending, self.forced))
        self.pending, self.pending_shape, self.pending_buffers = [], None, set()

    # -- NumPy steps -------------------------------------------------------------------------------

    def realize_unread(self, at: Node) -> None:
        realize_unread(self, at)

    @staticmethod
    def computes(value: TensorValue) -> bool:
        return computes(value)

    def write_back_inputs(self) -> None:
        """Stores functionalized writes to inputs into the inputs: at the end of the graph, and before a
        NumPy step, which may raise (fuzz seed 1000456: `a[:1] = s` then np.linalg.inv of a singular
        matrix left `a` unwritten), warn, or read them."""
        # functionalized writes to inputs land last: nothing reads the inputs' old contents after.
        # A new value that reads another written input's old contents is stored aside first.
        targets = {p.name for p in self.writeback if self.env[p].buffer is not self.buffers[p.name]}
        for placeholder in self.writeback:
            value = self.env[placeholder]
            if placeholder.name not in targets:
                continue
            xs = tuple(index_var(f"x{k}") for k in range(value.ndim))
            if {ld.buffer for ld in loads([value.at(xs)])} & (targets - {placeholder.name}):
                self.realize(placeholder)
        self.flush()
        for placeholder in self.writeback:
            value = self.env[placeholder]
            target = self.buffers[placeholder.name]
            if value.buffer is target:
                continue
            self.flush()
            xs = tuple(index_var(f"x{k}") for k in range(value.ndim))
            if any(ld.buffer == target.name and ld.index != target.offset(xs) for ld in loads([value.at(xs)])):
                self.realize(placeholder)  # reads neighbours of what it writes: through a temporary
                value = self.env[placeholder]
            self.store(target, value, placeholder.name)
            self.flush()
            self.env[placeholder] = buffer_value(target)

    def fallback(self, node: Node, reason: str) -> None:
        self.fallbacks.append((node.name, reason))
        log.debug("[kernels] %s runs as NumPy code: %s", node.name, reason)
        written = {p.name for p in self.writeback if self.env[p].buffer is not self.buffers[p.name]}
        if written:   # lazy values still reading the inputs' old contents are stored first
            self.realize_readers(written, node)
            self.write_back_inputs()
        realize_earlier_work(self, node)   # stored with the step's arguments, in one kernel where they fit
        args = map_arg(node.args, self.host_argument)
        kwargs = map_arg(node.kwargs, self.host_argument)
        mutated = self.mutated_buffers(node)
        if mutated:
            self.realize_readers(mutated, node)
        self.flush()
        meta = node.meta.get("val")
        call: Any = ("method", node.target) if node.op == "call_method" else ("function", node.target)
        if node.op == "call_module":  # a loop node: the loop runs on the host, calling its body per iteration
            call = ("function", self.gm.get_attribute(node.target))
        if isinstance(meta, TensorMeta) and kernel_dtype(meta.dtype) and meta.is_static:
            buf = self.add_buffer(Buffer(self.fresh_name(node.name), tuple(meta.shape), meta.dtype, "host"))
            result = buf.name
            self.env[node] = buffer_value(buf)
        else:
            result = self.fresh_name(node.name)
            self.constants.setdefault(result, None)  # reserve the name
            self.env[node] = HostValue(Ref(result))
        self.steps.append(HostStep(node.name, call, args, kwargs, result, reason, tuple(sorted(mutated))))
        if is_alias_node(node) and node.all_input_nodes:
            # recorded also when no argument's memory is a buffer: `a.real` of a complex input (a host
            # value) is a view all the same, and `r += 1` on it must write a's memory, not a copy
            self.host_aliases[node] = set().union(*(self.memory_of(a) for a in node.all_input_nodes))
        if mutated:
            self.refresh_views(mutated, node)
        target = node.args[0] if node.args else None
        target_meta = node_meta(target) if isinstance(target, Node) else None
        # a scalar's `/=` makes a new one; a target whose meta is unknown (a specialized loop body's
        # `x[j] += s`, its index symbolic) may be one: the result is then not taken for the target
        if node.target in INPLACE_OPERATORS and isinstance(target, Node) and target in self.env \
                and target_meta is not None and not target_meta.scalar:
            # `a *= 2` run by NumPy returns `a` itself: later ops on the result act on a's memory
            # (the same root as a kernel-lowered in-place operator, so a later write lands there too)
            self.root[node] = self.root.get(target, target)

    def refresh_views(self, buffers: set[str], at: Node) -> None:
        """Views lowered before a write into their memory re-read it: lower them again, now that their
        bases are buffers (NumPy views see writes made through any alias)."""
        saved = self.current
        for node in self.graph.nodes:
            if self.position[node] >= self.position[at]:
                break
            value = self.env.get(node)
            if node in self.root:
                continue  # an in-place result: its value is its root's
            if isinstance(value, TensorValue) and "view_of" in value.notes and self.memory_of(node) & buffers:
                self.current = node
                self.env[node] = self.lower_call(node)
        self.current = saved

    def host_argument(self, node: Node) -> Ref:
        """A NumPy step's argument: a NumPy scalar where the program has one (NumPy's scalar math
        differs from its 0-d array math: its warnings name "scalar divide")."""
        ref = self.host_ref(node)
        meta = node_meta(node)
        if meta is not None and meta.scalar and isinstance(ref, Ref) and not ref.scalar:
            return Ref(ref.name, scalar=True)
        return ref

    def host_ref(self, node: Node) -> Ref:
        """The node's value on the host: its buffer, a host value, or a NumPy view of a buffer."""
        # an in-place result is its root (fuzz seed 1000624: `a <<= k; a[[0, -1]] = s` set items of a
        # temporary holding a << k, and a got the shifted values)
        node = self.root.get(node, node)
        value = self.env[node]
        if isinstance(value, HostValue):
            return value.ref
        if isinstance(value, Constant):
            return Ref(self.constant_name(node, value.value))
        base = value.notes.get("view_of")
        if value.buffer is not None and not (isinstance(base, Node) and value.buffer.name in self.memory_of(base)):
            return Ref(value.buffer.name)
        if isinstance(base, Node) and base in self.env:
            # (also a view that changes nothing, np.broadcast_to(a, a.shape) or a[...]: a new array object,
            # read-only for broadcast_to, not `a` itself; fuzz seeds 1002394, 1003873)
            # a view stays a view: NumPy takes it of the base's memory, so writes through it land there;
            # one object per view node (fuzz seed 1061064: np.atleast_2d(v) returns v itself, and v
            # returned beside it was another view object)
            made = self.host_views.get(node)
            if made is not None and made[0] is self.env[base]:
                return Ref(made[1])
            args = map_arg(self.view_args(node), self.host_ref)
            kwargs = map_arg(node.kwargs, self.host_ref)
            name = self.fresh_name(f"{node.name}_view")
            self.constants.setdefault(name, None)
            call = ("method", node.target) if node.op == "call_method" else ("function", node.target)
            self.flush()
            self.steps.append(HostStep(node.name, call, args, kwargs, name, "a view of host memory"))
            self.host_views[node] = (self.env[base], name)
            return Ref(name)
        for shared in shared_costly(self, node):  # stored with it: later kernels load them
            self.realize(shared)
        self.realize(node)
        self.flush()
        return Ref(self.env[node].buffer.name)

    def view_args(self, node: Node) -> tuple[Any, ...]:
        return node.args

    def constant_name(self, node: Node, value: Any) -> str:
        name = self.fresh_name(f"{node.name}_const")
        self.constants[name] = value
        return name

    def mutated_buffers(self, node: Node) -> set[str]:
        """Buffers a NumPy step may write: those under every array argument when the node is impure (not
        only kept as unread work: taken for a write, each of 600 unread `np.array(list(v))` lowered every
        view before it again, 10 s of compiling, fuzz seed 2023150)."""
        if not node.is_impure() or node.meta.get("unread_work"):
            return set()
        found: set[str] = set()
        for arg in node.all_input_nodes:
            found |= self.memory_of(arg)
        return found

    def memory_of(self, node: Node) -> set[str]:
        # an in-place result run by NumPy (`u += x` of a view u) is its own host buffer and also the
        # memory of its root: a later write through it writes what readers of the root's base read
        root = self.root.get(node)
        found = self.memory_of(root) if root is not None and root is not node else set()
        value = self.env.get(node)
        if node in self.host_aliases:   # a NumPy step's result that may be a view of its arguments
            own = {value.buffer.name} if isinstance(value, TensorValue) and value.buffer is not None else set()
            return found | own | self.host_aliases[node]
        if not isinstance(value, TensorValue):
            return found
        if value.buffer is not None:
            return found | {value.buffer.name}
        base = value.notes.get("view_of")
        if isinstance(base, Node):
            return found | self.memory_of(base)
        return found

    def sharing(self, buffers: set[str]) -> set[str]:
        """`buffers` and every buffer that may share memory with one of them (NumPy steps' views)."""
        if not self.host_aliases:
            return buffers
        under = set(buffers)
        for node, shared in self.host_aliases.items():
            value = self.env.get(node)
            if isinstance(value, TensorValue) and value.buffer is not None and value.buffer.name in buffers:
                under |= shared
        found = set(under)
        for node, shared in self.host_aliases.items():
            value = self.env.get(node)
            if isinstance(value, TensorValue) and value.buffer is not None and shared & under:
                found.add(value.buffer.name)
        return found

    def realize_readers(self, buffers: set[str], at: Node) -> None:
        """Before `at` writes `buffers`, store every lazy value that reads them and is used by `at` or
        later (views excepted: they alias the memory and must see the write). Fuzz seeds 1003200 and
        1004887: `a *= a; a[a < s] = s` computed the mask after `a` was stored, squaring it twice."""
        here = self.position[at]
        buffers = self.sharing(buffers)
        stored: set[str] = set()
        for node, value in list(self.env.items()):
            if not isinstance(value, TensorValue) or value.buffer is not None or "view_of" in value.notes:
                continue
            if node in self.root:
                continue  # an in-place result: its value is its root's
            # unread work runs too, before the write as in NumPy (fuzz seed 1004484: three unread `a // a`
            # computed after out= wrote zeros into a warned three times)
            unread = self.unread(node) and self.check is not None and self.computes(value)
            if not self.read_from(node, here) and node is not at and not unread:
                continue
            xs = tuple(index_var(f"x{k}") for k in range(value.ndim))
            if {ld.buffer for ld in loads([value.at(xs)])} & buffers:
                stored.add(self.realize(node).name)
        self.flush()
        if stored:   # views of them, lowered as their expressions, read them (fuzz seed 2071115)
            self.refresh_views(stored, at)

    def in_place_family(self, node: Node) -> list[Node]:
        """The node and its in-place results (`v //= 3` of v): each reads the value the root holds."""
        return [node] + [n for n, r in self.root.items() if r is node and n is not node]

    def unread(self, node: Node) -> bool:
        """Whether nothing reads the root's value: its users are its in-place results, writes into it and
        ops that read only its shape and dtype (np.full_like)."""
        family = self.in_place_family(node)
        return all(user in family or (_is_mutation(user) and user.args[:1] == (n,) and not user.users)
                   or not reads_values(user, n) or flows_only_back_into(user, n) for n in family for user in n.users)

    def read_from(self, node: Node, here: int) -> bool:
        """Whether the root's value is read at `here` or later, through it or an in-place result of it
        (fuzz seed 1010085: `v5 = a1 + 1.0; v5 //= 3; a1 //= s` then a NumPy step: v5, read only through
        its `//=`, was computed after a1 was written, from the new a1)."""
        return any(self.used_from(n, here) for n in self.in_place_family(node))

    def used_from(self, node: Node, here: int) -> bool:
        """Whether the node's value is read at position `here` or later, itself or through a view of it
        (fuzz seed 1000596: `for r in ~a: a[1] = r`, then `return r`, a row of the inverted array
        computed after the write into `a`)."""
        stack, seen = list(node.users), set()
        while stack:
            user = stack.pop()
            if user in seen:
                continue
            seen.add(user)
            if self.position.get(user, -1) >= here:
                return True
            value = self.env.get(user)
            if isinstance(value, TensorValue) and value.notes.get("view_of") is not None:
                stack.extend(user.users)
        return False

    # -- functionalized mutation -------------------------------------------------------------------

    def writes_after(self, node: Node) -> bool:
        """Whether a node after `node` writes memory (an in-place operator, a setitem, out=)."""
        here = self.position[node]
        return any(self.position[n] > here and n.op in ("call_function", "call_method") and _writes(n)
                   for n in self.graph.nodes)

    def functionalizable(self, target: Node) -> Node:
        """The node whose value a mutation of `target` replaces; Unsupported when views could see it."""
        root = self.root.get(target, target)
        value = self.env.get(root)
        if not isinstance(value, TensorValue) or "view_of" in value.notes:
            raise Unsupported("the mutated array is (or may be) a view")
        # a view taken before this write and read after it must see the write: NumPy code must run it
        here = self.position[self.current] if self.current is not None else len(self.position)
        family = [root] + [n for n, r in self.root.items() if r is root]
        stack = [u for member in family for u in member.users]
        seen, views = set(family), set(family)
        while stack:
            user = stack.pop()
            through = user.target in INPLACE_OPERATORS and user.args[0] in views  # `v <<= v` is v (fuzz seed 1181780)
            if user in seen or user is self.current or not through and (user in self.root or _is_mutation(user)):
                continue
            seen.add(user)
            if self.position.get(user, here) > here or not (through or is_alias_node(user)):
                continue
            if any(self.position.get(u, here + 1) > here for u in user.users):
                raise Unsupported(f"{user.name}, a view of the mutated array, is read after the write")
            views.add(user)
            stack.extend(user.users)
        if root.op != "placeholder" and value.buffer is not None and value.buffer.kind == "input":
            raise Unsupported("the mutated array is a graph input under another name")
        if root.op == "get_attr":
            raise Unsupported("mutation of a constant")
        if root in self.host_aliases:   # fuzz seed 1005025: `v = np.flip(a[0]); v -= v` wrote a copy
            raise Unsupported("the mutated array is a NumPy step's result that may be a view")
        return root

    def replace_value(self, root: Node, new: TensorValue) -> None:
        old = self.env[root]
        new.notes.update({k: v for k, v in old.notes.items() if k != "view_of"})
        self.env[root] = new
        if root.op == "placeholder":
            self.writeback[root] = None

    # -- output ------------------------------------------------------------------------------------

    def lower_output(self, node: Node) -> Any:
        self.current = node
        out_nodes = list(dict.fromkeys(n for n in node.all_input_nodes))
        refs: dict[Node, Any] = {}
        self.realize_unread(node)
        late: list[Node] = []
        for n in out_nodes:
            root = self.root.get(n, n)
            value = self.env[root]
            if root.op == "placeholder" or isinstance(value, (HostValue, Constant)):
                continue
            if isinstance(value, TensorValue) and "view_of" in value.notes:
                late.append(n)
                continue
            self.realize(root)
        written = {p.name for p in self.writeback if self.env[p].buffer is not self.buffers[p.name]}
        if written:   # lazy values that returned views read: computed before the inputs are written
            self.realize_readers(written, node)
        self.write_back_inputs()
        self.flush()
        for n in out_nodes:
            root = self.root.get(n, n)
            value = self.env[root]
            if isinstance(value, Constant):
                refs[n] = value.value
            elif root.op == "placeholder":
                refs[n] = Ref(root.name)
            elif n in late:
                refs[n] = self.host_ref(root)
            else:
                refs[n] = self.host_ref(root)
            if isinstance(refs[n], Ref) and (meta := node_meta(n)) is not None and meta.scalar:
                refs[n] = Ref(refs[n].name, scalar=True)
        self.flush()
        return map_arg(node.args[0], lambda n: refs[n])


INPLACE_OPERATORS = frozenset({operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                               operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
                               operator.ilshift, operator.irshift, operator.imatmul})


def _is_mutation(node: Node) -> bool:
    return node.is_impure()


def _writes(node: Node) -> bool:
    """Whether the call writes memory (impure by its target, not only kept because nothing reads it)."""
    if node.op == "call_function":
        return effects.is_impure_call(node.target, node.args, node.kwargs)
    if node.op == "call_method":
        return effects.is_impure_method(node.target, node.kwargs)
    return True


def _leaves(value: Any) -> list[Any]:
    found: list[Any] = []
    map_aggregate(value, found.append)
    return found


def lower_graph(gm: GraphModule, example_inputs: list[Any], supported_ops: frozenset[str],
                check: Callable[[Expr], str | None] | None = None,
                runs_as_numpy: Callable[[Node], str | None] | None = None,
                costly: Callable[[Op], bool] | None = None, dtype_kinds: str = "biuf") -> Program:
    """Lower with restarts: each NeedsRealize adds the reductions' nodes to the forced set. `check`
    (optional) names a reason to refuse an expression: the node that made it then runs as NumPy code;
    it also asks for NumPy's exact warnings (scalar math as NumPy code, unread work realized).
    `runs_as_numpy` (optional) names the nodes a backend leaves to NumPy by choice, with why; `costly`:
    ops worth storing rather than computing again after a NumPy step (realize_shared); `dtype_kinds`: those kernels hold."""
    forced: set[str] = set()
    with kernel_dtype_kinds(dtype_kinds):
        for _ in range(MAX_RESTARTS):
            try:
                return Lowerer(gm, example_inputs, supported_ops, forced, check, runs_as_numpy, costly).run()
            except NeedsRealize as needs:
                if needs.origins <= forced:
                    raise
                forced |= needs.origins
    raise RuntimeError("lowering did not settle on which nodes to store")


def is_array(value: Any) -> TypeGuard[Any]:
    """A NumPy array, or a GPU array (CuPy's) that kernels read in place."""
    return isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__")


def specialize(gm: GraphModule, inputs: list[Any]) -> GraphModule:
    """A copy of the graph whose metas are inferred again for these inputs (concrete shapes); a node
    whose rule fails keeps no meta, and then runs as NumPy code."""
    graph = gm.graph.copy()
    values = iter(inputs)
    for node in graph.nodes:
        if node.op == "placeholder":
            value = next(values, None)
            if isinstance(value, np.generic) or is_array(value):
                node.meta["val"] = TensorMeta(value.shape, value.dtype, scalar=isinstance(value, np.generic))
            continue
        if node.op not in ("call_function", "call_method"):
            continue
        row = registry_row(node)
        node.meta.pop("val", None)
        if row is None or any("val" not in n.meta for n in node.all_input_nodes):
            continue
        args, kwargs = meta_args(node)
        try:
            node.meta["val"] = row.infer(*args, **kwargs)
        except Exception:
            continue
    return GraphModule(gm, graph)
