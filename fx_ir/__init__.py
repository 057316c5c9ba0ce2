"""fx_ir: the six-opcode graph IR shared by the dynamo frontend and every backend.

Installed as dynamo.fx_ir; it imports nothing from dynamo or backends.
"""
from .codegen import CodeGen, PythonCode
from .cond import Cond, cond_of
from .effects import is_impure_node, is_random, mark_impure
from .fingerprint import canonical_form, fingerprint
from .graph import NO_DEFAULT, Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, ShapeProp, meta_of
from .lint import GraphLintError
from .loops import ForLoop, WhileLoop, count_loops, loop_nodes, loop_of
from .node import Node, Opcode, map_aggregate, map_arg
from .printing import to_dot
from .tensor_meta import TensorMeta

__all__ = [
    "NO_DEFAULT",
    "CodeGen",
    "Cond",
    "ForLoop",
    "WhileLoop",
    "Graph",
    "GraphLintError",
    "GraphModule",
    "Interpreter",
    "Node",
    "Opcode",
    "PythonCode",
    "ShapeProp",
    "TensorMeta",
    "canonical_form",
    "cond_of",
    "count_loops",
    "fingerprint",
    "is_impure_node",
    "is_random",
    "loop_nodes",
    "loop_of",
    "map_aggregate",
    "map_arg",
    "mark_impure",
    "meta_of",
    "to_dot",
]
