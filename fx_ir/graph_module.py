"""GraphModule: a Graph plus the attributes it reads, compiled into a real Python `forward`.

Generated source is registered in linecache under its own name; where it names the user's lines
(`# File "...", line N` comments) its code runs at them (user_lines), so that tracebacks and
warnings show the program's lines, as plain Python does.
"""
from __future__ import annotations

import copy
import itertools
import linecache
import types
import weakref
from collections.abc import Mapping
from typing import Any

from .codegen import PythonCode
from .graph import Graph
from .node import Opcode
from .user_lines import exec_at_user_lines

# Process-wide, so every generated file name is unique even across GraphModules.
_source_counter = itertools.count()


class AttributeHolder:
    """An intermediate object for dotted attribute paths (`consts.c0` installs `consts`)."""

    def __repr__(self) -> str:
        return f"AttributeHolder({', '.join(sorted(vars(self)))})"


def _resolve(root: Any, qualname: str) -> Any:
    if isinstance(root, Mapping):
        if qualname in root:
            return root[qualname]
        head, _, rest = qualname.partition(".")
        if head not in root or not rest:
            raise AttributeError(f"root has no entry {qualname!r}")
        return _resolve(root[head], rest)
    value = root
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


class GraphModule:
    """Runs a Graph as compiled Python. `root` (a dict or an object) provides what get_attr/call_module name.

    >>> gm = GraphModule({"means": means}, graph)
    >>> gm(X)              # calls the generated forward; gm.code shows its source
    """

    def __init__(self, root: Mapping[str, Any] | object, graph: Graph, class_name: str = "GraphModule") -> None:
        self.class_name = class_name
        self._graph = graph
        self._code: PythonCode | None = None
        self._filename = ""
        self._forward: Any = None
        self._drop_source: Any = None
        for node in graph.nodes:
            if node.op in (Opcode.GET_ATTR, Opcode.CALL_MODULE):
                try:
                    value = _resolve(root, node.target)
                except (AttributeError, KeyError) as exc:
                    raise AttributeError(
                        f"{class_name}: node {node.name} ({node.op.value}) needs attribute {node.target!r}, "
                        f"which the root does not provide ({exc})"
                    ) from None
                self.set_attribute(node.target, value)
        self.graph = graph

    # -- graph and code -----------------------------------------------------------------------

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, graph: Graph) -> None:
        graph.owning_module = self
        self._graph = graph
        self.recompile()

    def recompile(self) -> PythonCode:
        """Regenerate `forward` from the graph; call after editing the graph. The source is
        written now, from the graph as it is; it is compiled when `forward` is first read (a
        backend that generates code of its own never runs it, and compiling is most of the cost)."""
        code = self._graph.python_code("self")
        if self._forward is None and self._filename:  # the source before, never compiled: nothing shows it
            self._drop_source.detach()
            linecache.cache.pop(self._filename, None)
        filename = f"<fx_ir-generated-{next(_source_counter)}>"
        linecache.cache[filename] = (len(code.src), None, code.src.splitlines(keepends=True), filename)
        # dropped with the module while it is not compiled, then with the compiled function
        self._drop_source = weakref.finalize(self, linecache.cache.pop, filename, None)
        self._code, self._filename = code, filename
        self._forward = None
        return code

    @property
    def forward(self) -> Any:
        """The generated function, bound to this module (compiled on first read)."""
        if self._forward is None:
            code, filename = self._code, self._filename
            assert code is not None
            namespace = dict(code.globals)
            exec_at_user_lines(code.src, filename, namespace)
            forward = namespace["forward"]
            # Drop the linecache entry with the function, so recompiling in a loop does not leak sources.
            self._drop_source.detach()
            weakref.finalize(forward, linecache.cache.pop, filename, None)
            self._forward = types.MethodType(forward, self)
        return self._forward

    @property
    def code(self) -> str:
        """The generated source of `forward`."""
        if self._code is None:  # a module whose forward was never generated (logging reads it)
            self.recompile()
        assert self._code is not None
        return self._code.src

    @property
    def filename(self) -> str:
        """The linecache name of the current `forward` source, as it appears in tracebacks."""
        return self._filename

    def node_at_line(self, lineno: int) -> str | None:
        """The name of the node whose statement is on `lineno` of the generated source."""
        assert self._code is not None
        return self._code.lineno_map.get(lineno)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def print_readable(self) -> str:
        """The generated code as a class body, for reading (returned, not printed)."""
        body = "".join(f"    {line}\n" if line else "\n" for line in self.code.splitlines())
        return f"class {self.class_name}:\n{body}"

    def __repr__(self) -> str:
        return f"{self.class_name}(\n{self.print_readable()})"

    def __deepcopy__(self, memo: dict[int, Any]) -> GraphModule:
        """An independent module: copied graph, deep-copied attributes, freshly compiled forward."""
        internal = {"class_name", "forward"}
        root = {k: copy.deepcopy(v, memo) for k, v in vars(self).items() if k not in internal and not k.startswith("_")}
        return GraphModule(root, self._graph.copy(), self.class_name)

    # -- attributes ---------------------------------------------------------------------------

    def get_attribute(self, qualname: str) -> Any:
        """The value at a dotted attribute path, as get_attr and call_module read it."""
        value: Any = self
        for part in qualname.split("."):
            try:
                value = getattr(value, part)
            except AttributeError:
                raise AttributeError(f"{self.class_name} has no attribute {qualname!r} (missing {part!r})") from None
        return value

    def set_attribute(self, qualname: str, value: Any) -> None:
        """Install `value` at a dotted path, creating AttributeHolders for missing intermediate parts."""
        parts = qualname.split(".")
        if hasattr(GraphModule, parts[0]) or parts[0] in ("class_name", "forward") or parts[0].startswith("_"):
            raise ValueError(f"attribute name {parts[0]!r} would shadow a GraphModule member; choose another name")
        owner: Any = self
        for part in parts[:-1]:
            if not hasattr(owner, part):
                setattr(owner, part, AttributeHolder())
            owner = getattr(owner, part)
        setattr(owner, parts[-1], value)

    def delete_attribute(self, qualname: str) -> None:
        head, _, last = qualname.rpartition(".")
        owner = self.get_attribute(head) if head else self
        delattr(owner, last)


def module_callee(node: Any) -> Any:
    """What a call_module node calls (a loop, a cond), read from its graph's module; None for any
    other node, or one whose graph has no module."""
    if node.op != Opcode.CALL_MODULE:
        return None
    getter = getattr(node.graph.owning_module, "get_attribute", None)
    if getter is None:
        return None
    try:
        return getter(node.target)
    except AttributeError:
        return None
