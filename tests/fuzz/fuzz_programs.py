"""Random Python functions over NumPy, as source text, for the differential fuzzer.

Every candidate expression is evaluated while generating on two example environments (the shapes
and dtypes of the first and of the third call), so the programs are valid most of the time.
"""
from __future__ import annotations

import ast
import math
import random
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

FLOATS = ["float64", "float32", "float16"]
INTS = ["int64", "int32", "int16", "int8", "uint8", "uint16"]
DTYPES = FLOATS * 3 + INTS + ["bool", "complex128", "complex64"]
# the third call may bring another dtype of the same kind
DTYPE_FLIPS = {"float64": "float32", "float32": "float64", "int64": "int32", "int32": "int64",
               "int8": "int16", "complex128": "complex64", "uint8": "uint16"}
UNARY = ["exp", "sin", "cos", "sqrt", "abs", "negative", "floor", "ceil", "sign", "log", "log1p",
         "square", "tanh", "isnan", "isfinite", "logical_not", "invert", "positive", "rint", "arctan",
         "expm1", "reciprocal", "conjugate", "signbit", "trunc", "cbrt", "exp2", "fabs", "deg2rad"]
BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "maximum", "minimum", "fmax",
          "fmin", "hypot", "arctan2", "power", "mod", "logaddexp", "copysign", "greater", "less_equal",
          "equal", "not_equal", "logical_and", "logical_xor", "bitwise_and", "bitwise_or", "left_shift",
          "heaviside", "fmod", "remainder"]
OPS = ["+", "-", "*", "/", "//", "%", "**", "<", ">", "<=", ">=", "==", "!=", "&", "|", "^", "<<", ">>", "@"]
AUG = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="]
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "any", "all",
              "cumsum", "cumprod", "ptp"]
PY_LITERALS = ["0", "1", "2", "-1", "3", "7", "-5", "255", "300", "2**31", "0.5", "-1.5", "0.0", "-0.0",
               "2.5", "1e300", "1e-300", "float('nan')", "float('inf')", "-float('inf')", "True", "False",
               "(1+2j)", "1j", "0.1", "3.0"]
NP_LITERALS = ["np.float32(1.5)", "np.float64(-2.0)", "np.int8(3)", "np.uint8(200)", "np.int64(-7)",
               "np.float16(0.1)", "np.bool_(True)", "np.int32(5)", "np.complex64(1-1j)", "np.uint16(9)"]
INDEXES = ["0", "-1", "1", "1:", ":-1", "::-1", "::2", ":", "None", "...", "0, 1", "-1, ::-1", ":, 0",
           ":, None", "[0, -1]", "[1, 0, 1]", "np.array([0, 1])", "..., 0", "1:, ::2", "-2:", "[-1]",
           "np.array([True, False])", "[[0], [1]]", "::-2, 1:"]
EXCEPT_TYPES = ["Exception", "(IndexError, ValueError)", "(TypeError, ValueError, IndexError)",
                "ArithmeticError", "np.linalg.LinAlgError", "(KeyError, IndexError)", "BaseException"]
RAISING = ["np.take({a}, 10**6)", "{a}[10**6]", "{a}.reshape(7, 13, 17)", "np.linalg.inv(np.zeros((2, 2)))",
           "int({s}) // 0", "[1, 2][5]", "{{'k': 1}}['missing']", "{a}.astype(np.int8) + 1000",
           "np.ones(3) + np.ones(4)", "int(float('nan'))", "np.concatenate([{a}, np.ones((9, 9, 9))])",
           "{a}.sum(axis=7)", "np.array([1, 2]).item()", "float('x' + str({s}))", "np.zeros(-1)",
           "np.empty((2, 2)).reshape(3)", "1 / 0", "math.log(-1)", "{a}[np.array([1.5])]"]


@dataclass
class Env:
    """One example environment: sizes and argument dtypes of one call, and example values."""
    sizes: dict[str, int]
    dtypes: dict[str, str]
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class Argument:
    name: str
    kind: str            # "array", "float", "int", "bool"
    shape: tuple = ()    # dims: "N", "M" or ints
    dtype: str = ""


@dataclass
class Program:
    """A generated module: globals and helpers, then `def f(...)`; arguments() makes call inputs."""
    source: str
    args: list[Argument]
    envs: list[Env]       # sizes and dtypes of call 1 (and 2) and call 3
    seed: int
    scalar_values: list[dict[str, Any]]

    def arguments(self, call: int) -> list[Any]:
        """Inputs of call 0, 1 or 2 (call 1 repeats call 0's shapes, dtypes and scalars, new array data)."""
        env = self.envs[0 if call < 2 else 1]
        rng = np.random.default_rng(self.seed * 7 + call)
        out = []
        for arg in self.args:
            if arg.kind == "array":
                shape = tuple(env.sizes[d] if isinstance(d, str) else d for d in arg.shape)
                out.append(random_array(rng, shape, env.dtypes[arg.name]))
            else:
                out.append(self.scalar_values[0 if call < 2 else 1][arg.name])
        return out


def random_array(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "u":
        return rng.integers(0, 10, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-5, 10, shape).astype(dt)
    values = np.array(np.round(rng.uniform(-3, 3, shape), 2))
    if dt.kind == "c":
        values = values + 1j * np.round(rng.uniform(-3, 3, shape), 2)
    values = np.array(values)
    special = rng.random(shape) < 0.04
    if special.any():
        values[special] = rng.choice([0.0, -0.0, np.nan, np.inf, -np.inf], size=int(special.sum()))
    return values.astype(dt)


class _Rejected(Exception):
    pass


class Generator:
    """Builds one program statement by statement; each candidate is checked on both environments."""

    def __init__(self, seed: int, *, long_loop: int = 600, max_statements: int = 14) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.long_loop = long_loop
        self.max_statements = max_statements
        self.counter = 0
        self.lines: list[str] = []          # body of f
        self.module: list[str] = ["import math", "import numpy as np", ""]
        self.globals_declared: set[str] = set()
        self.scope: list[str] = []          # names usable in f
        self.envs: list[Env] = []
        self.long_loop_used = False
        self.block_locals: list[str] = []

    # ---- environments and evaluation -------------------------------------------------------------
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def namespaces(self) -> list[dict[str, Any]]:
        return [env.values for env in self.envs]

    def evaluate(self, expr: str) -> list[Any]:
        results = []
        for ns in self.namespaces():
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                check_bounded(expr, ns)
                results.append(eval(expr, ns))  # noqa: S307 - generated test programs
        return results

    def execute(self, stmt: str) -> None:
        for ns in self.namespaces():
            check_bounded(stmt, ns)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                exec(stmt, ns)  # noqa: S102

    def try_expr(self, make: Callable[[], str], accept: Callable[[list[Any]], bool] | None = None,
                 tries: int = 25) -> tuple[str, list[Any]]:
        for _ in range(tries):
            try:
                expr = make()
                values = self.evaluate(expr)
            except _Rejected:
                continue
            except Exception:  # noqa: BLE001 - an invalid candidate: try another
                continue
            if consistent(values) and (accept is None or accept(values)):
                return expr, values
        raise _Rejected

    # ---- picking operands --------------------------------------------------------------------------
    def names_where(self, test: Callable[[Any], bool]) -> list[str]:
        return [n for n in self.scope if all(test(ns[n]) for ns in self.namespaces())]

    def pick(self, test: Callable[[Any], bool]) -> str:
        names = self.names_where(test)
        if not names:
            raise _Rejected
        # recent values more often: programs chain operations
        weights = [1 + i for i in range(len(names))]
        return self.rng.choices(names, weights)[0]

    def array(self) -> str:
        return self.pick(lambda v: isinstance(v, np.ndarray))

    def array_nd(self, ndim_min: int = 1) -> str:
        return self.pick(lambda v: isinstance(v, np.ndarray) and v.ndim >= ndim_min)

    def scalar(self) -> str:
        r = self.rng.random()
        if r < 0.35:
            return self.rng.choice(PY_LITERALS)
        if r < 0.5:
            return self.rng.choice(NP_LITERALS)
        try:
            return self.pick(lambda v: isinstance(v, (int, float, complex, np.generic)))
        except _Rejected:
            return self.rng.choice(PY_LITERALS)

    def operand(self) -> str:
        return self.array() if self.rng.random() < 0.6 else self.scalar()

    # ---- expressions -------------------------------------------------------------------------------
    def expr_array(self) -> str:
        rng = self.rng
        kind = rng.randrange(16)
        a = self.array()
        if kind == 0:
            return f"np.{rng.choice(UNARY)}({a})"
        if kind in (1, 2):
            return f"{self.operand()} {rng.choice(OPS)} {self.operand()}"
        if kind == 3:
            return f"np.{rng.choice(BINARY)}({self.operand()}, {self.operand()})"
        if kind == 4:
            red = rng.choice(REDUCTIONS)
            axis = rng.choice(["", "axis=0", "axis=-1", "axis=1", "axis=None", "axis=(0, 1)"])
            keep = ", keepdims=True" if rng.random() < 0.4 and red not in ("cumsum", "cumprod") else ""
            sep = ", " if axis and keep else ""
            if rng.random() < 0.5:
                return f"{a}.{red}({axis}{keep})" if red != "ptp" else f"np.ptp({a}{', ' + axis if axis else ''}{keep})"
            return f"np.{red}({a}{', ' if axis or keep else ''}{axis}{sep if axis else ''}{keep.lstrip(', ')})"
        if kind == 5:
            return f"{a}[{rng.choice(INDEXES)}]"
        if kind == 6:
            cond = f"{a} {rng.choice(['>', '<', '>=', '!='])} {self.scalar()}"
            return f"np.where({cond}, {self.operand()}, {self.operand()})"
        if kind == 7:
            b = self.array()
            return rng.choice([f"np.concatenate([{a}, {b}])", f"np.stack([{a}, {b}])", f"np.dot({a}, {b})",
                               f"np.outer({a}, {b})", f"np.broadcast_to({a}, {b}.shape)", f"{a}[{b} > 0]",
                               f"np.concatenate([{a}, {b}], axis=-1)", f"np.vstack([{a}, {b}])",
                               f"np.matmul({a}, {b}.T)", f"{a}[np.argsort({b}, axis=None)[:2]]"])
        if kind == 8:
            return rng.choice([f"{a}.T", f"{a}.reshape(-1)", f"np.expand_dims({a}, 0)", f"np.squeeze({a})",
                               f"{a}.ravel()", f"{a}.flatten()", f"np.swapaxes({a}, 0, -1)", f"np.flip({a})",
                               f"np.roll({a}, 1)", f"np.sort({a})", f"np.argsort({a}, kind='stable')",
                               f"np.diff({a})", f"np.repeat({a}, 2)", f"np.tile({a}, 2)", f"{a}.copy()",
                               f"np.ascontiguousarray({a}[::-1])", f"np.transpose({a})", f"{a}.reshape({a}.shape[0], -1)",
                               f"np.atleast_2d({a})", f"{a}.reshape(-1, 1)"])
        if kind == 9:
            dt = rng.choice(DTYPES)
            return rng.choice([f"{a}.astype(np.{dt})", f"np.zeros_like({a})", f"np.ones_like({a}, dtype=np.{dt})",
                               f"np.full_like({a}, {self.scalar()})", f"np.asarray({a}, dtype=np.{dt})",
                               f"np.arange({a}.shape[0], dtype=np.{dt})", f"np.linspace(0, 1, {a}.shape[-1])",
                               f"np.zeros({a}.shape, np.{dt})", f"np.eye({a}.shape[0])", f"np.ones(({a}.size,))",
                               f"np.array([{self.scalar()}, {self.scalar()}])", f"np.arange(6.0).reshape(2, 3)"])
        if kind == 10:
            return rng.choice([f"np.clip({a}, {self.scalar()}, {self.scalar()})", f"np.round({a}, 1)",
                               f"np.nan_to_num({a})", f"np.cumsum({a}, axis=0)", f"np.maximum.reduce({a})",
                               f"np.add.accumulate({a})", f"np.linalg.norm({a}, axis=-1)", f"np.abs({a}) ** 0.5",
                               f"np.isclose({a}, {self.operand()})", f"np.unique({a})", f"np.nonzero({a})[0]",
                               f"np.einsum('i...->...', {a})", f"np.multiply.outer({a}, {self.array()})"])
        if kind == 11:
            lst = self.pick(lambda v: isinstance(v, list) and v and all(isinstance(x, np.ndarray) for x in v))
            return rng.choice([f"{lst}[-1]", f"np.stack({lst})", f"sum({lst})", f"np.concatenate({lst})",
                               f"{lst}[0] + {lst}[-1]"])
        if kind == 12:
            return f"{self.helper()}({a})"
        if kind == 13:
            return rng.choice([f"sum({a}[:-1] for _ in range(3))", f"np.array([{a}[i] * i for i in range(2)])",
                               f"(lambda y: y * 2 - {self.scalar()})({a})", f"[{a}, {a} * 2][1]",
                               f"{{'x': {a}}}['x'] + 1", f"({a}, {self.operand()})[0]", f"np.array(list({a}))"])
        if kind == 14:
            return f"-{a}" if rng.random() < 0.5 else f"~{a}"
        return f"{self.operand()} {rng.choice(OPS)} ({self.operand()} {rng.choice(OPS)} {self.operand()})"

    def expr_scalar(self) -> str:
        rng = self.rng
        kind = rng.randrange(8)
        if kind == 0:
            a = self.array()
            return rng.choice([f"float({a}.sum())", f"{a}.shape[0]", f"len({a})", f"{a}.size", f"int({a}.argmax())",
                               f"{a}.ndim", f"bool({a}.any())", f"{a}.mean()", f"{a}.max()", f"{a}.dtype.itemsize",
                               f"{a}.item(0)", f"{a}[0, 0]", f"{a}.sum()", f"np.count_nonzero({a})"])
        if kind in (1, 2):
            return f"{self.scalar()} {rng.choice(OPS[:16])} {self.scalar()}"
        if kind == 3:
            s = self.scalar()
            return rng.choice([f"abs({s})", f"round({s}, 2)", f"max({s}, {self.scalar()})", f"-{s}",
                               f"int({s})", f"float({s})", f"bool({s})", f"min({s}, 1)", f"divmod({s}, 3)[0]",
                               f"math.floor({s})", f"np.sqrt({s})", f"{s} if {s} else 1.0"])
        if kind == 4:
            lst = self.pick(lambda v: isinstance(v, (list, dict, tuple)))
            return rng.choice([f"len({lst})", f"bool({lst})", f"{lst}.count(1)" if True else ""])
        if kind == 5:
            return f"G_num * {self.scalar()}" if "G_num" in self.envs[0].values else self.scalar()
        return f"{self.scalar()}"

    def expression(self) -> tuple[str, list[Any]]:
        make = self.expr_array if self.rng.random() < 0.75 else self.expr_scalar
        return self.try_expr(make)

    def helper(self) -> str:
        """A module-level helper over one parameter (sometimes reading a global, or recursive)."""
        name = self.fresh("helper")
        param_example = "p"
        for ns in self.namespaces():
            ns[param_example] = ns[self.array()]
        saved_scope = self.scope
        self.scope = [param_example]
        try:
            body, _ = self.try_expr(self.expr_array)
        finally:
            self.scope = saved_scope
        extra = self.rng.random()
        if extra < 0.2:
            lines = [f"def {name}(p, depth=2):", f"    if depth == 0:", f"        return {body}",
                     f"    return {name}(p, depth - 1)"]
        elif extra < 0.4 and "G_list" in self.envs[0].values:
            lines = [f"def {name}(p):", f"    G_list.append(p.shape)", f"    return {body}"]
        else:
            lines = [f"def {name}(p):", f"    return {body}"]
        src = "\n".join(lines)
        for ns in self.namespaces():
            exec(src, ns)  # noqa: S102
        self.module.extend(lines + [""])
        return name

    # ---- statements ----------------------------------------------------------------------------------
    def emit(self, lines: list[str], indent: int) -> None:
        self.lines.extend("    " * indent + line for line in lines)

    def statement(self, indent: int, depth: int, in_try: bool = False) -> None:
        """Appends one statement (maybe compound) valid on both environments; may raise _Rejected."""
        rng = self.rng
        r = rng.random()
        nested_ok = depth < 2
        if r < 0.28:
            expr, values = self.expression()
            name = self.fresh()
            self.execute(f"{name} = {expr}")
            self.emit([f"{name} = {expr}"], indent)
            self.scope.append(name)
            self.block_locals.append(name)
        elif r < 0.38:
            self.in_place(indent)
        elif r < 0.44:
            self.container_statement(indent)
        elif r < 0.49:
            self.print_statement(indent)
        elif r < 0.53:
            self.global_statement(indent)
        elif r < 0.60 and nested_ok:
            self.if_statement(indent, depth)
        elif r < 0.68 and nested_ok:
            self.loop_statement(indent, depth)
        elif r < 0.71 and nested_ok:
            self.try_statement(indent, depth)
        elif r < 0.77:
            self.closure_statement(indent)
        elif r < 0.81:
            self.reassign(indent)
        elif r < 0.83 and in_try:
            self.raising_statement(indent)
        else:
            expr, _ = self.expression()
            name = self.fresh()
            self.execute(f"{name} = {expr}")
            self.emit([f"{name} = {expr}"], indent)
            self.scope.append(name)
            self.block_locals.append(name)

    def in_place(self, indent: int) -> None:
        rng = self.rng
        target = self.pick(lambda v: isinstance(v, np.ndarray) and v.flags.writeable and v.ndim > 0)
        kind = rng.randrange(5)
        if kind == 0:
            stmt = f"{target} {rng.choice(AUG)} {self.operand()}"
        elif kind == 1:
            stmt = f"{target}[{rng.choice(INDEXES)}] = {self.operand()}"
        elif kind == 2:
            stmt = f"{target}[{rng.choice(INDEXES)}] {rng.choice(AUG[:4])} {self.operand()}"
        elif kind == 3:
            stmt = f"np.{rng.choice(BINARY[:10])}({target}, {self.operand()}, out={target})"
        else:
            stmt = f"{target}[{target} {rng.choice(['>', '<'])} {self.scalar()}] = {self.scalar()}"
        self.check_statement(stmt, in_place_of=target)
        self.emit([stmt], indent)

    def check_statement(self, stmt: str, in_place_of: str | None = None) -> None:
        before = [exact_signature(ns[in_place_of]) for ns in self.namespaces()] if in_place_of else None
        try:
            self.execute(stmt)
        except Exception as error:  # noqa: BLE001
            raise _Rejected from error
        if before is not None and before != [exact_signature(ns[in_place_of]) for ns in self.namespaces()]:
            raise _Rejected

    def reassign(self, indent: int) -> None:
        """`v = <expr of the same type>`: valid in any block (the type after the block is known)."""
        target = self.pick(lambda v: isinstance(v, (np.ndarray, int, float, np.generic)))
        sig = [exact_signature(ns[target]) for ns in self.namespaces()]
        expr, values = self.try_expr(self.expr_array if isinstance(self.envs[0].values[target], np.ndarray)
                                     else self.expr_scalar,
                                     accept=lambda vals: [exact_signature(v) for v in vals] == sig)
        self.execute(f"{target} = {expr}")
        self.emit([f"{target} = {expr}"], indent)

    def container_statement(self, indent: int) -> None:
        rng = self.rng
        containers = self.names_where(lambda v: isinstance(v, (list, dict)))
        if not containers or rng.random() < 0.3:
            name = self.fresh("c")
            stmt = rng.choice([f"{name} = []", f"{name} = {{}}", f"{name} = [{self.operand()}]",
                               f"{name} = ({self.operand()}, {self.operand()})",
                               f"{name} = {{'a': {self.operand()}}}"])
            self.check_statement(stmt)
            self.scope.append(name)
            self.block_locals.append(name)
            self.emit([stmt], indent)
            return
        c = rng.choice(containers)
        if isinstance(self.envs[0].values[c], list):
            stmt = rng.choice([f"{c}.append({self.operand()})", f"{c}.extend([{self.operand()}, {self.operand()}])",
                               f"{c}.insert(0, {self.operand()})", f"{c}.reverse()",
                               f"{c}[-1] = {self.operand()}", f"{c} += [{self.operand()}]"])
        else:
            key = rng.choice(["'a'", "'b'", "1", "(1, 2)"])
            stmt = rng.choice([f"{c}[{key}] = {self.operand()}", f"{c}.setdefault({key}, {self.operand()})",
                               f"{c}.update(z={self.operand()})", f"{c}.pop({key}, None)"])
        self.check_statement(stmt)
        self.emit([stmt], indent)

    def print_statement(self, indent: int) -> None:
        rng = self.rng
        x = rng.choice(self.scope) if self.scope else "0"
        stmt = rng.choice([f"print({x})", f"print('v', {x}, sep='|')", f"print(repr({x}))",
                           f"print(type({x}).__name__, np.shape({x}))", f"print(f'{{{x}!r}}')",
                           f"print(np.asarray({x}).dtype, end=';')"])
        self.check_statement(stmt.replace("print(", "str(") if "end=" not in stmt else "0")
        self.emit([stmt], indent)

    def global_statement(self, indent: int) -> None:
        rng = self.rng
        kind = rng.randrange(4)
        if kind == 0:
            self.globals_declared.add("G_num")
            stmt = rng.choice(["G_num += 1", f"G_num = G_num * 2 + {rng.choice(['1', '0.5', 'True'])}",
                               f"G_num = {self.expr_scalar_safe()}"])
        elif kind == 1:
            stmt = f"G_list.append({self.operand()})"
        elif kind == 2:
            stmt = rng.choice([f"G_arr[{rng.choice(['0', '-1', ':2', '::2'])}] = {self.scalar()}", "G_arr += 1",
                               f"G_arr *= {self.scalar()}"])
            if "G_arr" in stmt.split("[")[0].split(" ")[0] and "=" in stmt and "[" not in stmt:
                self.globals_declared.add("G_arr")
        else:
            stmt = f"G_dict[{rng.choice(['0', 'len(G_dict)', repr('k')])}] = {self.operand()}"
        self.check_statement(stmt)
        self.emit([stmt], indent)

    def expr_scalar_safe(self) -> str:
        expr, _ = self.try_expr(self.expr_scalar, accept=lambda vals: all(isinstance(v, (int, float)) for v in vals))
        return expr

    def body(self, indent: int, depth: int, count: int, in_try: bool = False) -> None:
        start = len(self.lines)
        made = 0
        for _ in range(count * 4):
            if made >= count:
                break
            mark = len(self.lines)
            try:
                self.statement(indent, depth, in_try)
                made += 1
            except Exception:  # noqa: BLE001 - _Rejected, or a candidate failing on an example
                del self.lines[mark:]
        if len(self.lines) == start:
            self.emit(["pass"], indent)

    def block(self, indent: int, depth: int, count: int, in_try: bool = False) -> None:
        """A nested body; names it creates are dropped from scope afterwards (they may not exist)."""
        saved_locals = self.block_locals
        self.block_locals = []
        self.body(indent, depth, count, in_try)
        for name in self.block_locals:
            if name in self.scope:
                self.scope.remove(name)
        self.block_locals = saved_locals

    def if_statement(self, indent: int, depth: int) -> None:
        cond, _ = self.try_expr(lambda: self.rng.choice([
            f"{self.array()}.sum() > {self.scalar()}", f"{self.scalar()} < {self.scalar()}",
            f"{self.array()}[0].any()", f"len({self.array()}) > 2", f"{self.array()}.max() >= 1",
            f"isinstance({self.pick(lambda v: True)}, np.ndarray)", f"not {self.array()}.all()",
            f"G_num > 2"]), accept=lambda vals: all(isinstance(v, (bool, np.bool_)) for v in vals))
        self.emit([f"if {cond}:"], indent)
        self.block(indent + 1, depth + 1, self.rng.randint(1, 3))
        if self.rng.random() < 0.6:
            self.emit(["else:"], indent)
            self.block(indent + 1, depth + 1, self.rng.randint(1, 2))

    def loop_statement(self, indent: int, depth: int) -> None:
        rng = self.rng
        i = self.fresh("i")
        kind = rng.randrange(4)
        if kind == 0 and not self.long_loop_used and depth == 0:
            self.long_loop_used = True
            header, example = f"for {i} in range({self.long_loop}):", 0
        elif kind == 1:
            arr = self.array_nd(1)
            header, example = f"for {i} in {arr}:", None
            for ns in self.namespaces():
                ns[i] = ns[arr][0] if len(ns[arr]) else None
            if any(ns[i] is None for ns in self.namespaces()):
                raise _Rejected
        elif kind == 2:
            header, example = f"for {i}, {i}x in enumerate({self.pick(lambda v: isinstance(v, (list, tuple)))}):", 0
            for ns in self.namespaces():
                ns[i + "x"] = None
        else:
            header, example = f"for {i} in range({rng.choice(['3', '2', '5', '1, 4', '0'])}):", 0
        if example is not None:
            for ns in self.namespaces():
                ns[i] = example
        self.emit([header], indent)
        self.scope.append(i)
        self.block_locals.append(i)
        self.block(indent + 1, depth + 1, rng.randint(1, 3))
        if rng.random() < 0.15 and kind != 1:
            self.emit([f"if {i} == 1:", "    break" if rng.random() < 0.5 else "    continue"], indent + 1)

    def try_statement(self, indent: int, depth: int) -> None:
        self.emit(["try:"], indent)
        self.block(indent + 1, depth + 1, self.rng.randint(1, 3), in_try=True)
        if self.rng.random() < 0.5:
            self.raising_statement(indent + 1)
        error = self.fresh("e")
        self.emit([f"except {self.rng.choice(EXCEPT_TYPES)} as {error}:",
                   f"    print('caught', type({error}).__name__, {error})"], indent)
        if self.rng.random() < 0.3:
            self.emit(["finally:", "    print('finally')"], indent)

    def raising_statement(self, indent: int) -> None:
        a = self.array() if self.names_where(lambda v: isinstance(v, np.ndarray)) else "np.ones(3)"
        expr = self.rng.choice(RAISING).format(a=a, s=self.scalar())
        self.emit([f"{self.fresh('r')} = {expr}"], indent)

    def closure_statement(self, indent: int) -> None:
        inner = self.fresh("inner")
        captured = self.array()
        for ns in self.namespaces():
            ns["y"] = ns[self.array()]
        saved = self.scope
        self.scope = ["y", captured]
        try:
            body, _ = self.try_expr(self.expr_array)
        finally:
            self.scope = saved
        arg = self.array()
        name = self.fresh()
        lines = [f"def {inner}(y):", f"    return {body}"]
        self.execute("\n".join(lines))
        values = self.evaluate(f"{inner}({arg})")
        if not consistent(values):
            raise _Rejected
        self.execute(f"{name} = {inner}({arg})")
        self.emit(lines + [f"{name} = {inner}({arg})"], indent)
        self.scope.append(name)
        self.block_locals.append(name)

    # ---- the whole program ---------------------------------------------------------------------------
    def generate(self) -> Program:
        rng = self.rng
        sizes_a = {"N": rng.randint(2, 5), "M": rng.randint(2, 5)}
        sizes_b = {"N": rng.randint(2, 7), "M": rng.randint(2, 7)}
        patterns = [("N", "M"), ("M",), ("N",), ("N", 1), (1, "M"), ("N", "M"), (), ("M", "N"), (2, "N", "M"), (0,)]
        args: list[Argument] = []
        dtypes_a, dtypes_b = {}, {}
        for k in range(rng.randint(1, 3)):
            shape = rng.choice(patterns[:6] if k == 0 else patterns)
            dtype = rng.choice(DTYPES)
            name = f"a{k}"
            args.append(Argument(name, "array", shape, dtype))
            dtypes_a[name] = dtype
            dtypes_b[name] = DTYPE_FLIPS.get(dtype, dtype) if rng.random() < 0.3 else dtype
        scalars_a, scalars_b = {}, {}
        for k in range(rng.randint(0, 2)):
            kind = rng.choice(["float", "int", "bool"])
            name = f"s{k}"
            args.append(Argument(name, kind))
            pick = {"float": lambda: round(rng.uniform(-4, 4), 2), "int": lambda: rng.randint(-3, 9),
                    "bool": lambda: rng.random() < 0.5}[kind]
            scalars_a[name] = pick()
            scalars_b[name] = pick() if rng.random() < 0.7 else scalars_a[name]
        self.envs = [Env(sizes_a, dtypes_a), Env(sizes_b, dtypes_b)]
        program = Program("", args, self.envs, self.seed, [scalars_a, scalars_b])
        module_globals = ["G_num = 0", "G_list = []", "G_arr = np.arange(6.0)", "G_dict = {}"]
        for env, call in zip(self.envs, (0, 2)):
            env.values.update({"np": np, "math": math})
            exec("\n".join(module_globals), env.values)  # noqa: S102
            for arg, value in zip(args, program.arguments(call)):
                env.values[arg.name] = value
        self.module.extend(module_globals + [""])
        self.scope = [a.name for a in args]
        self.block_locals = []
        self.body(1, 0, rng.randint(3, self.max_statements))
        if rng.random() < 0.08:
            self.raising_statement(1)
        self.emit([self.return_statement()], 1)
        header = f"def f({', '.join(a.name for a in args)}):"
        declared = [f"    global {', '.join(sorted(self.globals_declared))}"] if self.globals_declared else []
        program.source = "\n".join(self.module + [header] + declared + self.lines) + "\n"
        return program

    def return_statement(self) -> str:
        rng = self.rng
        live = self.scope[-6:]
        r = rng.random()
        if r < 0.5:
            return f"return {live[-1]}"
        if r < 0.8:
            chosen = rng.sample(live, min(len(live), rng.randint(2, 3)))
            return f"return {', '.join(chosen)}" if len(chosen) > 1 else f"return {chosen[0]}"
        if r < 0.9:
            return f"return {{'first': {live[0]}, 'last': {live[-1]}}}"
        return f"return [{', '.join(live[-2:])}]"


# a Python int raised to (or shifted by) more than this never finishes in the program (CPython's big-int
# power cannot be interrupted): such a candidate is rejected before it runs
MAX_INT_EXPONENT = 64
MAX_INT_BITS = 4096


def check_bounded(source: str, namespace: dict[str, Any]) -> None:
    """Raises _Rejected if `source` raises a Python int to a large power or shifts one far, or if a
    Python int it reads is already huge (it grows in loops: `v = v * v` run 600 times)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(namespace.get(node.id), int) \
                and namespace[node.id].bit_length() > MAX_INT_BITS:
            raise _Rejected
    _bounded(ast.parse(source), namespace)


def _bounded(node: ast.AST, namespace: dict[str, Any]) -> None:
    # children first: the exponent of an outer power may itself hold an unbounded one
    for child in ast.iter_child_nodes(node):
        _bounded(child, namespace)
    op = node.op if isinstance(node, (ast.BinOp, ast.AugAssign)) else None
    if not isinstance(op, (ast.Pow, ast.LShift, ast.Mult)):
        return
    right = node.right if isinstance(node, ast.BinOp) else node.value
    left = node.left if isinstance(node, ast.BinOp) else node.target
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            values = [eval(compile(ast.Expression(side), "<bound>", "eval"), namespace)  # noqa: S307
                      for side in (left, right)]
    except Exception:  # noqa: BLE001 - the candidate fails anyway: it is rejected where it runs
        return
    ints = [v for v in values if isinstance(v, (int, np.integer)) and not isinstance(v, bool)]
    if isinstance(op, ast.Mult):  # int * int is fast; a sequence times a huge int is not
        if any(isinstance(v, (str, list, tuple, bytes)) for v in values) and any(abs(int(v)) > 4096 for v in ints):
            raise _Rejected
        return
    if isinstance(values[1], (int, np.integer)) and abs(int(values[1])) > MAX_INT_EXPONENT \
            and isinstance(values[0], int):
        raise _Rejected


def signature(value: Any) -> tuple:
    """Type, dtype and ndim: what a reassignment in a block must keep."""
    if isinstance(value, (np.ndarray, np.generic)):
        return (type(value).__name__ if isinstance(value, np.ndarray) else "npscalar", value.dtype.kind, np.ndim(value))
    return (type(value).__name__,)


def exact_signature(value: Any) -> tuple:
    """Type, dtype and shape: what a statement run many times in a loop must keep."""
    if isinstance(value, (np.ndarray, np.generic)):
        return (type(value).__name__, value.dtype.str, np.shape(value))
    return (type(value).__name__,)


def consistent(values: list[Any]) -> bool:
    """Both environments gave a value of the same kind (dtypes may differ within a kind)."""
    first = signature(values[0])
    if any(signature(v) != first for v in values[1:]):
        return False
    return not any(isinstance(v, np.ndarray) and v.size > 4096 for v in values)


def generate(seed: int, **options: Any) -> Program:
    return Generator(seed, **options).generate()
