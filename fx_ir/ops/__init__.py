"""The NumPy op registry: which calls may enter a graph, their kind, and their result meta.

Importing this package registers every row; see registry.py for OpInfo and the lookups.
"""
from . import (attributes, copies, creation, elementwise, indexing, joining, linalg,  # noqa: F401
               reductions, shaping, ufunc_methods)  # importing a module registers its rows
from .errors import DataDependentShape, OpRuleError, SymbolicDecisionNeeded, UnsupportedArguments
from .registry import (ArgRef, Attribute, Effects, Method, OpInfo, OpKind, Target, all_ops, infer_meta,
                       lookup_attribute, lookup_function, lookup_method, register)
from .symbolic import HintOracle, SizeOracle, StructuralOracle, current_oracle, using_oracle

__all__ = [
    "ArgRef", "Attribute", "DataDependentShape", "Effects", "HintOracle", "Method", "OpInfo",
    "OpKind", "OpRuleError", "SizeOracle", "StructuralOracle", "SymbolicDecisionNeeded", "Target",
    "UnsupportedArguments", "all_ops", "current_oracle", "infer_meta", "lookup_attribute",
    "lookup_function", "lookup_method", "register", "using_oracle",
]
