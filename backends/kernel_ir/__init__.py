"""The kernel IR shared by code-generating backends: graph -> index functions -> fused kernels.

It knows NumPy's semantics and nothing of any target's syntax; an emitter (Triton's) prints its kernels.
"""
from . import rules_elementwise, rules_reductions, rules_shaping  # noqa: F401  (register the rules)
from .exprs import Const, Expr, IndexValue, Load, Op, Reduce, format_expr, walk
from .lowering import Unsupported, lower_graph, specialize
from .program import Axis, HostStep, Kernel, Program, Ref, Store
from .scheduling import SMALL_AXIS, NeedsRealize
from .values import Buffer, TensorValue

__all__ = [
    "SMALL_AXIS", "Axis", "Buffer", "Const", "Expr", "HostStep", "IndexValue", "Kernel", "Load",
    "NeedsRealize", "Op", "Program", "Reduce", "Ref", "Store", "TensorValue", "Unsupported",
    "format_expr", "lower_graph", "specialize", "walk",
]
