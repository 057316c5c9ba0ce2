"""Dynamic shapes: sizes of input arrays as sympy symbols (s0, s1, ...).

- `env.ShapeEnv`: allocates symbols for dynamic dimensions, answers the op registry's size
  questions from the example values (hints) and records every answer once as a guard.
- `guards.SizeGuards`: those facts checked on every call in C (per-array sizes in `struct_is`,
  relations as `sizes` programs; a generated Python predicate for the rest), printed as relations.
- `runtime`: a symbolic size at run time: graph nodes and bytecode computing it from the input
  shapes (dynamo.variables.symbolic.SymbolicIntVariable is a size read into Python).
- `policy`: which dimensions are dynamic: `mark_dynamic` / `mark_static`, compile(dynamic=...),
  and automatic dynamic shapes (a dimension whose size changed between compiles of one code
  object becomes a symbol from then on).
"""
from .env import DynamicShapeError, ShapeEnv
from .policy import FrameState, ShapePolicy, current_policy, mark_dynamic, mark_static, policy_scope

__all__ = ["DynamicShapeError", "FrameState", "ShapeEnv", "ShapePolicy", "current_policy", "mark_dynamic",
           "mark_static", "policy_scope"]
