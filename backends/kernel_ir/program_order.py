"""Program order across NumPy steps: work the program did before a NumPy step (read later, or never read)
is computed before that step runs, so that floating-point warnings come in NumPy's order and count."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from ...fx_ir import Node
from ...fx_ir.passes.cse import may_warn
from .exprs import Op, Reduce, index_var, walk
from .values import TensorValue

if TYPE_CHECKING:
    from .lowering import Lowerer


def computes(value: TensorValue) -> bool:
    """Whether the value runs an operation (which may warn), not only reads memory."""
    xs = tuple(index_var(f"x{k}") for k in range(value.ndim))
    return any(isinstance(e, (Op, Reduce)) for e in walk([value.at(xs)]))


# ops that read an array argument's shape and dtype, never its values
_LAYOUT_ONLY = (np.zeros_like, np.ones_like, np.empty_like, np.full_like)


def reads_values(user: Node, node: Node) -> bool:
    """Whether `user` reads the values of `node`, not only its layout (np.full_like(v, s) of an otherwise
    unread v = a ** a: the power still runs in NumPy and warns, fuzz seed 1070161)."""
    if user.target not in _LAYOUT_ONLY or user.args[:1] != (node,):
        return True
    return any(arg is node for arg in (*user.args[1:], *user.kwargs.values()))


def flows_only_back_into(node: Node, root: Node, depth: int = 0) -> bool:
    """Whether `node`'s value (a view of `root`, work on it) is read only by stores into `root` itself:
    `v[::1] /= s` of a v nothing else reads (fuzz seed 1071227: the division never ran, nor warned)."""
    if depth > 8 or not node.users or node.op != "call_function":
        return False
    for user in node.users:
        if user.target is operator.setitem and user.args[0] is root and not user.users:
            if any(arg is node for arg in user.args[1:2]):   # the stored-into index is read
                return False
        elif user.op != "call_function" or (user.is_impure() and user.args[:1] != (node,)) \
                or not flows_only_back_into(user, root, depth + 1):   # in place on the view: its memory is root's
            return False
    return True


def realize_unread(lowerer: Lowerer, at: Node) -> None:
    """Work nobody reads still runs, as in NumPy (before `at`, the output): its floating-point
    warnings are the program's; unread work is also run before a NumPy step writes what it reads
    (Lowerer.realize_readers)."""
    if lowerer.check is None:
        return
    for n in lowerer.graph.nodes:
        if n is at:
            break
        # an unread in-place result (`v //= v` as the last use of v) is its root's new value; a value read
        # only by writes into it (`v[...] = b`, fuzz seed 1061219) is unread too
        root = lowerer.root.get(n, n)
        value = lowerer.env.get(root)
        read = any(reads_values(user, n) for user in n.users) if n is not root else not lowerer.unread(n)
        if read or root.op == "placeholder" or not isinstance(value, TensorValue) or value.buffer is not None:
            continue
        # an unread view (`(1 // m).reshape(-1)`, fuzz seed 1008824): the value it views was computed
        while isinstance(base := value.notes.get("view_of"), Node):
            root = lowerer.root.get(base, base)
            value = lowerer.env.get(root)
            if not isinstance(value, TensorValue) or value.buffer is not None:
                break
        if isinstance(value, TensorValue) and value.buffer is None and "view_of" not in value.notes \
                and root.op != "placeholder" and computes(value):
            lowerer.realize(root)


def realize_earlier_work(lowerer: Lowerer, at: Node) -> None:
    """Before a NumPy step that may warn, the lazy values of earlier nodes that compute something and
    are read from `at` on (or never) are stored: computed when a later kernel reads them, their
    warnings came after the step's (fuzz seed 1045852: `remainder` before a NumPy `//`, read by a `**`
    after it, warned second)."""
    if lowerer.check is None or not may_warn(at):
        return
    here = lowerer.position[at]
    for node in lowerer.graph.nodes:
        if node is at:
            break
        value = lowerer.env.get(node)
        if node in lowerer.root or not isinstance(value, TensorValue) or value.buffer is not None \
                or "view_of" in value.notes or not computes(value):
            continue
        if lowerer.unread(node) or lowerer.read_from(node, here):
            lowerer.realize(node)

