"""Random pure-Python functions, as source text, for the differential fuzzer (`run.py --kind python`).

Every variable has one type for the whole program (ints, str, float, list of ints, dict of str to
int, a user object with dunders), so most statements are valid; statements that may raise run inside
try blocks that log the exception's type and message. Loops are bounded and growth is clamped, so
every program terminates. Each call returns a transcript, and the dunders, generators and context
managers log into the global G_LOG (the harness compares globals named G_*), so the order and count
of user code's side effects is compared, not only the results.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

PRELUDE = '''\
import math
import numpy as np

G_LOG = []
G_N = 0
G_D = {"k": 1}


class Oops(Exception):
    pass


class Box:
    hits = 0

    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return f"Box({self.v!r})"

    def __eq__(self, other):
        G_LOG.append("eq")
        return isinstance(other, Box) and self.v == other.v

    def __hash__(self):
        G_LOG.append("hash")
        return hash(self.v)

    def __lt__(self, other):
        G_LOG.append("lt")
        return self.v < (other.v if isinstance(other, Box) else other)

    def __add__(self, other):
        G_LOG.append("add")
        if isinstance(other, (Box, int)):
            return Box(self.v + (other.v if isinstance(other, Box) else other))
        return NotImplemented

    def __radd__(self, other):
        G_LOG.append("radd")
        return Box(other * 2 + self.v) if isinstance(other, int) else NotImplemented

    def __iadd__(self, other):
        G_LOG.append("iadd")
        if isinstance(other, int) and other % 3:
            self.v += other
            return self
        return NotImplemented

    def __len__(self):
        return abs(self.v) % 5

    def __bool__(self):
        G_LOG.append("bool")
        return self.v % 3 != 0

    def __iter__(self):
        for q in range(abs(self.v) % 4):
            yield q + self.v

    def __getitem__(self, k):
        if k > 3:
            raise IndexError(f"box index {k}")
        return self.v * k

    def __contains__(self, k):
        return k == self.v

    def __call__(self, *args, **kwargs):
        Box.hits += 1
        return self.v + len(args) + sum(kwargs.values())

    def __getattr__(self, name):
        G_LOG.append("getattr " + name)
        if name.startswith("no"):
            raise AttributeError(name)
        return len(name)

    @property
    def twice(self):
        return self.v * 2

    def report(self):
        print("report", self.v)   # a graph break inside a method the frame calls
        return self.v


class Sub(Box):
    def __radd__(self, other):
        G_LOG.append("sub radd")
        return Sub(self.v - (other.v if isinstance(other, Box) else other))

    def __eq__(self, other):
        G_LOG.append("sub eq")
        return isinstance(other, Box) and abs(self.v) == abs(other.v)

    __hash__ = Box.__hash__


class Ctx:
    def __init__(self, tag):
        self.tag = tag

    def __enter__(self):
        G_LOG.append(("enter", self.tag))
        return self.tag

    def __exit__(self, kind, value, tb):
        G_LOG.append(("exit", self.tag, kind.__name__ if kind else None))
        return kind is Oops


def gen(n):
    G_LOG.append(("gen", n))
    try:
        for q in range(n % 6):
            if q == 3:
                continue
            got = yield q * q - n
            if got is not None:
                G_LOG.append(("sent", got))
    finally:
        G_LOG.append(("gen done", n))


def make_counter(start):
    count = start

    def bump(step=1):
        nonlocal count
        count += step
        return count
    return bump


def kw(a, b=2, *rest, c=3, **extra):
    return (a, b, rest, c, sorted(extra.items()))


def pick(seq, k):
    return seq[k % len(seq)] if seq else k


def show(v):
    print("show", v)   # a graph break inside a function the frame calls
    return v
'''

INT_VARS = ["a", "b", "n"]
LOOP_INTS = ["i", "j"]
CLAMPS = ["97", "1000", "2**31", "10**9 + 7"]
EXCEPTIONS = ["ZeroDivisionError", "(TypeError, ValueError)", "Oops", "Exception", "IndexError",
              "(KeyError, IndexError)", "ArithmeticError", "LookupError", "AttributeError"]
STR_LITERALS = ["''", "'ab'", "'x-y-z'", "'Zq'", "' pad '", "'ünï'", "'a,b,,c'", "'%'", "'0'"]
FLOAT_LITERALS = ["0.5", "-1.25", "0.0", "-0.0", "3.0", "1e300", "1e-300", "float('inf')", "float('nan')",
                  "0.1", "2.5"]


@dataclass
class Program:
    """A generated module whose `def f(a, b, s, L, x)` returns a transcript; arguments() makes inputs."""
    source: str
    seed: int
    values: list[tuple]

    def arguments(self, call: int) -> list[Any]:
        """Inputs of call 0, 1 (the same values, new objects) or 2 (other values)."""
        a, b, s, items, data = self.values[0 if call < 2 else 1]
        return [a, b, s, list(items), np.array(data)]


class Generator:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.loop_depth = 0
        self.uses_array = self.rng.random() < 0.4
        # how many top-level statements run inside a try: a try block runs in Python (up to the
        # point after it where compiled code takes over), outside one the statements are traced,
        # and an exception there leaves a compiled frame with its side effects
        self.try_rate = self.rng.choice([0.2, 0.5, 0.8])

    def pick(self, *options: str) -> str:
        return self.rng.choice(options)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def small(self) -> str:
        return str(self.rng.randint(-3, 9))

    # ---- expressions, one generator per type; depth bounds their size ---------------------------------
    def int_(self, d: int = 0) -> str:
        if d > 2 or self.chance(0.3):
            leaves = ["a", "b", "n", "i", "j", self.small(), self.small(), "len(L)", "len(s)", "len(D)", "G_N",
                      "bx.v", "Box.hits", "len(bx)"]
            if self.uses_array:
                leaves += ["int(x[0])", "x.size", "int(x.sum() > 0)"]
            return self.pick(*leaves)
        k = self.rng.random()
        x, y = self.int_(d + 1), self.int_(d + 1)
        if k < 0.3:
            op = self.pick("+", "-", "*", "//", "%", "&", "|", "^", "+", "-")
            return f"({x} {op} {y})"
        if k < 0.34:
            return f"({x} << ({y} % 5))"
        if k < 0.4:
            return self.pick(f"abs({x})", f"-{x}", f"~{x}", f"int({self.float_(d + 1)} // 1 % 50)")
        if k < 0.46:
            return self.pick(f"max({x}, {y})", f"min({x}, {y}, {self.small()})", f"sum(L[:{self.small()}])",
                             f"divmod({x}, {self.pick('3', '-2', y)})[{self.rng.randint(0, 1)}]")
        if k < 0.52:
            return f"({x} if {self.bool_(d + 1)} else {y})"
        if k < 0.56:
            return f"(n := {x})"
        if k < 0.62:
            return self.pick(f"L[{x}]", f"pick(L, {x})", f"D[{self.str_(d + 1)}]", f"D.get({self.str_(d + 1)}, {y})",
                             f"bx[{x} % 5]", f"G_D.get('k', 0)")
        if k < 0.68:
            return self.pick(f"sum(gen({x}))", f"len([q for q in L if q % 2])", f"sum(q * {y} for q in L)",
                             f"len({{q % 3 for q in L}})", f"len(list(gen({x})))", f"sum(bx)")
        if k < 0.73:
            return self.pick(f"kw({x}, c={y})[3]", f"kw(*L[:2], {x}, z=1)[1]",
                             f"len(kw({x}, {y}, {self.small()}, e={y})[2])", f"bx({x}, w={y})",
                             f"make_counter({x})({y})", f"(lambda p, q=2: p * q - {y})({x})")
        if k < 0.78:
            return self.pick(f"s.count({self.str_(d + 1)})", f"s.find({self.str_(d + 1)})", f"ord(s[{x}])",
                             f"int({self.str_(d + 1)})", f"len({self.str_(d + 1)})", f"len(str({x}))")
        if k < 0.82:
            return self.pick(f"round({self.float_(d + 1)})", f"int({self.float_(d + 1)})",
                             f"math.floor({self.float_(d + 1)})", f"bx.twice", f"bx.{self.pick('name', 'size', 'no_such')}")
        if k < 0.86:
            return self.pick(f"sorted(L, key=lambda q: -q)[0]", f"L.index({x})", f"max(L, default={y})",
                             f"next(iter(L), {y})", f"[*L, {x}][-1]", f"len(D | {{'q': {x}}})")
        if k < 0.88:
            return self.pick(f"show({x})", "bx.report()", f"sum(show(q) for q in L)", "len(kw(*L, **D)[4])",
                             f"len([show(q) for q in L if q != {y}])")
        if k < 0.9:
            return f"(bx + {x}).v" if self.chance(0.5) else f"({x} + bx).v"
        if k < 0.94 and self.uses_array:
            return self.pick(f"int(x[{x} % 3])", f"int(np.sum(x > {y}))", f"int(x.argmax())",
                             f"len(x[{x} % 3:].tolist())")
        return f"len(({x}, {y}, *L))"

    def float_(self, d: int = 0) -> str:
        if d > 2 or self.chance(0.35):
            leaves = ["fl", "fl", *FLOAT_LITERALS, "float(a)", "a / 4"]
            if self.uses_array:
                leaves += ["float(x[1])", "float(x.sum())", "x.mean().item()"]
            return self.pick(*leaves)
        k = self.rng.random()
        x, y = self.float_(d + 1), self.float_(d + 1)
        if k < 0.45:
            return f"({x} {self.pick('+', '-', '*', '/', '+', '*')} {y})"
        if k < 0.55:
            return f"({x} ** {self.pick('2', '0.5', '-1', '3')})"
        if k < 0.65:
            return f"math.{self.pick('sqrt', 'fabs', 'exp', 'log1p', 'atan', 'sin', 'copysign(1.0, ' + y + ') * abs')}({x})"
        if k < 0.75:
            return f"({x} if {self.bool_(d + 1)} else {y})"
        if k < 0.8:
            return f"round({x}, {self.rng.randint(0, 3)})"
        if k < 0.85:
            return f"float({self.str_(d + 1)})" if self.chance(0.3) else f"float({self.int_(d + 1)})"
        if k < 0.9:
            return f"({self.int_(d + 1)} / {self.int_(d + 1)})"
        if k < 0.95 and self.uses_array:
            return self.pick(f"float(np.float64({x}) * x[0])", f"float(np.max(x * {x}))", f"x[{self.int_(d + 1)} % 3].item()")
        return f"max({x}, {y}, key=abs)"

    def str_(self, d: int = 0) -> str:
        if d > 1 or self.chance(0.35):
            return self.pick("s", "s", "c", *STR_LITERALS, "str(a)", "repr(fl)", "repr(L)", "repr(bx)")
        k = self.rng.random()
        x, y = self.str_(d + 1), self.str_(d + 1)
        if k < 0.2:
            return f"({x} + {y})"
        if k < 0.35:
            i, j = self.int_(d + 1), self.int_(d + 1)
            return self.pick(f"{x}[{i}:{j}]", f"{x}[::{self.pick('-1', '2', '-2', j)}]", f"{x}[{i}]", f"{x}[{i}:]")
        if k < 0.5 and d == 0:   # f-strings not nested: 3.11 cannot reuse a quote inside one
            return f'f"{{{self.int_(d + 1)}}}-{{{self.float_(d + 1)}:.{self.rng.randint(0, 4)}f}}-{{{x}!r}}"'
        if k < 0.6:
            return self.pick(f"{x}.upper()", f"{x}.replace('a', {y})", f"{x}.strip()", f"{x}.title()",
                             f"{x}.zfill({self.small()})", f"{x}.split(',')[0]")
        if k < 0.7:
            return self.pick(f"'-'.join(map(str, L))", f"','.join(sorted(D))", f"'|'.join([{x}, {y}])",
                             f"''.join(reversed({x}))")
        if k < 0.78:
            return f"'%s:%d' % ({x}, {self.int_(d + 1)})"
        if k < 0.86:
            return f"({x} * ({self.int_(d + 1)} % 3))"
        if k < 0.93:
            return f"({x} if {self.bool_(d + 1)} else {y})"
        return self.pick(f"str({self.int_(d + 1)})", f"format({self.float_(d + 1)}, '.2e')", f"type(bx).__name__",
                         f"str(kw({self.int_(d + 1)}))", f"chr(65 + {self.int_(d + 1)} % 26)")

    def list_(self, d: int = 0) -> str:
        if d > 1 or self.chance(0.35):
            return self.pick("L", "L", "[]", "[1, 2, 3]", "list(range(a % 6))", "list(gen(b))", "sorted(L)", "list(bx)",
                             "list(D.values())")
        x = self.list_(d + 1)
        y = self.int_(d + 1)
        return self.pick(f"({x} + [{y}])", f"{x}[::-1]", f"[q * {y} for q in {x}]", f"[q for q in {x} if q > {y}]",
                         f"sorted({x}, reverse={self.pick('True', 'False')})", f"[*{x}, *{self.list_(d + 1)}]",
                         f"[q + r for q in {x} for r in range(2)]", f"list(map(abs, {x}))", f"{x}[{y}:{y} + 3]",
                         f"[(n := q) for q in {x}][:2]", f"[len(str(q)) for q in {x}]",
                         f"list(filter(None, {x}))", f"[v for k, v in sorted(D.items()) if k != {self.str_(d + 1)}]",
                         f"[q for q, _ in zip({x}, s)]")

    def bool_(self, d: int = 0) -> str:
        if d > 1 or self.chance(0.3):
            return self.pick("True", "False", "bool(L)", "(a > b)", "(c in 'abc')", "bool(bx)", "(fl < 0.5)",
                             "('k' in D)", "isinstance(bx, Sub)", "(n == 0)")
        k = self.rng.random()
        if k < 0.3:
            ops = ["<", "<=", "==", "!=", ">", ">="]
            if self.chance(0.4):
                return f"({self.int_(d + 1)} {self.pick(*ops)} {self.int_(d + 1)} {self.pick(*ops)} {self.int_(d + 1)})"
            return f"({self.int_(d + 1)} {self.pick(*ops)} {self.int_(d + 1)})"
        if k < 0.45:
            return f"({self.bool_(d + 1)} {self.pick('and', 'or')} {self.bool_(d + 1)})"
        if k < 0.52:
            return f"(not {self.bool_(d + 1)})"
        if k < 0.6:
            return self.pick(f"any(q > {self.int_(d + 1)} for q in L)", f"all(q % 2 for q in L)",
                             f"({self.int_(d + 1)} in L)", f"({self.int_(d + 1)} in bx)")
        if k < 0.7:
            return self.pick(f"(bx == {self.box(d + 1)})", f"({self.box(d + 1)} != bx)", f"(bx < {self.int_(d + 1)})",
                             f"({self.box(d + 1)} in [bx])")
        if k < 0.8:
            return self.pick(f"({self.float_(d + 1)} < {self.float_(d + 1)})", f"math.isnan({self.float_(d + 1)})",
                             f"({self.float_(d + 1)} == {self.int_(d + 1)})")
        if k < 0.9:
            return self.pick(f"{self.str_(d + 1)}.startswith({self.str_(d + 1)})", f"({self.str_(d + 1)} in s)",
                             f"({self.str_(d + 1)} < {self.str_(d + 1)})")
        if self.uses_array:
            return self.pick(f"bool(x[0] > {self.float_(d + 1)})", f"bool((x > 0).any())")
        return f"bool({self.list_(d + 1)})"

    def box(self, d: int = 0) -> str:
        if d > 1 or self.chance(0.4):
            return self.pick("bx", f"Box({self.small()})", f"Sub({self.small()})")
        return self.pick(f"Box({self.int_(d + 1)})", f"Sub({self.int_(d + 1)})", f"(bx + {self.int_(d + 1)})",
                         f"({self.int_(d + 1)} + bx)", f"({self.box(d + 1)} + {self.box(d + 1)})",
                         f"({self.box(d + 1)} if {self.bool_(d + 1)} else bx)")

    def value(self) -> str:
        return self.pick(self.int_(), self.str_(), self.float_(), self.list_(), self.bool_(), self.box(),
                         "(a, s)", "dict(D)", "G_N")

    # ---- statements -----------------------------------------------------------------------------------
    def assign_int(self, p: str) -> list[str]:
        var = self.pick(*INT_VARS, *(LOOP_INTS if self.loop_depth else []))
        value = self.int_()
        if self.loop_depth:
            value = f"({value}) % {self.pick(*CLAMPS)}"
        return [f"{p}{var} = {value}"]

    def stmt(self, p: str, depth: int) -> list[str]:
        """One statement (or a few that go together), as source lines indented by `p`."""
        return [line for text in self._stmt(p, depth) for line in text.split("\n")]

    def _stmt(self, p: str, depth: int) -> list[str]:
        k = self.rng.random() if depth < 3 else self.rng.random() * 0.55
        if k < 0.08:
            return self.assign_int(p)
        if k < 0.13:
            var, op = self.pick(*INT_VARS), self.pick("+=", "-=", "*=", "//=", "%=", "|=", "^=", "&=")
            if self.loop_depth or op == "*=":   # products and sums in loops grow: clamped
                return [f"{p}{var} = ({var} {op[:-1]} {self.int_()}) % {self.pick(*CLAMPS)}"]
            return [f"{p}{var} {op} {self.int_()}"]
        if k < 0.17:
            return [f"{p}s = {self.str_()}[:30]", *([f"{p}c = s[:2]"] if self.chance(0.3) else [])]
        if k < 0.2:
            return [f"{p}fl = {self.float_()}"]
        if k < 0.24:
            return [f"{p}L = {self.list_()}[:8]"]
        if k < 0.3:
            return [self.pick(f"{p}L.append({self.int_()})", f"{p}L.insert({self.int_()}, {self.int_()})",
                              f"{p}L.extend({self.list_()}[:3])", f"{p}L.sort(key=lambda q: (q % 3, -q))",
                              f"{p}L.reverse()", f"{p}L[{self.int_()}] = {self.int_()}",
                              f"{p}L[1:3] = {self.list_()}[:2]", f"{p}del L[{self.int_()}]",
                              f"{p}L.remove({self.int_()})", f"{p}{self.pick(*INT_VARS)} = L.pop({self.pick('', '0', '-1', self.int_())})"),
                    f"{p}del L[12:]"]
        if k < 0.35:
            return [self.pick(f"{p}D[{self.str_()}[:4]] = {self.int_()}", f"{p}D.pop({self.str_()}, None)",
                              f"{p}del D[{self.str_()}]", f"{p}D.setdefault({self.str_()}[:3], {self.int_()})",
                              f"{p}D.update({{{self.str_()}[:2]: {self.int_()}}})", f"{p}G_D[{self.str_()}[:2]] = {self.int_()}",
                              f"{p}D = {{k: v for k, v in D.items() if v != {self.int_()}}}")]
        if k < 0.41:
            return [f"{p}T.append({self.value()})"]
        if k < 0.44:
            return [self.pick(f"{p}bx = {self.box()}", f"{p}bx += {self.int_()}", f"{p}bx.v = {self.int_()} % 50",
                              f"{p}bx.extra = {self.value()}")]
        if k < 0.47:
            return [f"{p}G_N += {self.int_()}", f"{p}G_N %= 1000"]
        if k < 0.5:
            return [f"{p}print({self.value()}, {self.str_()}, sep={self.pick(repr('|'), repr(', '))})"]
        if k < 0.53:
            return [self.pick(f"{p}a, b = b, {self.int_()}", f"{p}n, *rest = L or [0]", f"{p}a, (b, c) = {self.int_()}, ({self.int_()}, s[:1])",
                              f"{p}i, j = divmod({self.int_()}, {self.pick('3', '7', '-4')})")]
        if k < 0.56 and self.uses_array:
            return [self.pick(f"{p}x[{self.int_()} % 3] = {self.float_()}", f"{p}x = x * {self.float_()} + {self.int_()}",
                              f"{p}x += {self.int_()}", f"{p}T.append(x.tolist())")]
        if k < 0.58:
            return [f"{p}assert {self.bool_()}, {self.str_()}"]
        if k < 0.6:
            return [f"{p}raise {self.pick('Oops', 'ValueError', 'KeyError')}({self.value()})"]
        if k < 0.68:
            return self.if_(p, depth)
        if k < 0.76:
            return self.for_(p, depth)
        if k < 0.8:
            return self.while_(p, depth)
        if k < 0.88:
            return self.try_(p, depth)
        if k < 0.92:
            return self.with_(p, depth)
        if k < 0.96:
            return self.nested_def(p, depth)
        return self.generator_use(p)

    def block(self, p: str, depth: int, count: int | None = None) -> list[str]:
        out: list[str] = []
        for _ in range(count or self.rng.randint(1, 3)):
            out += self.stmt(p, depth)
        return out

    def loop_body(self, p: str, depth: int) -> list[str]:
        out = self.block(p, depth + 1)
        k = self.rng.random()
        if k < 0.25:
            out.insert(self.rng.randint(0, len(out)), f"{p}if {self.bool_()}:\n{p}    break")
        elif k < 0.45:
            out.insert(self.rng.randint(0, len(out)), f"{p}if {self.bool_()}:\n{p}    continue")
        return out

    def if_(self, p: str, depth: int) -> list[str]:
        out = [f"{p}if {self.bool_()}:", *self.block(p + "    ", depth + 1)]
        if self.chance(0.3):
            out += [f"{p}elif {self.bool_()}:", *self.block(p + "    ", depth + 1)]
        if self.chance(0.5):
            out += [f"{p}else:", *self.block(p + "    ", depth + 1)]
        return out

    def for_(self, p: str, depth: int) -> list[str]:
        var = self.pick(*LOOP_INTS)
        iterable = self.pick("range(a % 5)", "L", "L[:]", "gen(b)", "bx", "sorted(D.values())", f"range({self.small()}, 4)",
                             "list(reversed(L))")
        self.loop_depth += 1
        header = self.pick(f"for {var} in {iterable}:", f"for {var}, c in zip({iterable}, s):",
                           f"for {var}, j in enumerate({iterable}):" if var == "i" else f"for {var} in {iterable}:",
                           f"for c, {var} in sorted(D.items()):")
        body = self.loop_body(p + "    ", depth)
        if " L" in header or "(L" in header:   # the body may grow the list it walks: bound it
            body.insert(0, f"{p}    if len(L) > 12:\n{p}        break")
        out = [f"{p}{header}", *body]
        self.loop_depth -= 1
        if self.chance(0.25):
            out += [f"{p}else:", *self.block(p + "    ", depth + 1, 1)]
        return out

    def while_(self, p: str, depth: int) -> list[str]:
        self.loop_depth += 1
        counter = f"w{depth}"   # never assigned by the body: the loop ends
        body = self.loop_body(p + "    ", depth)
        self.loop_depth -= 1
        out = [f"{p}{counter} = 0", f"{p}while {counter} < {self.rng.randint(1, 6)} and {self.bool_()}:",
               f"{p}    {counter} += 1", *body]
        if self.chance(0.2):
            out += [f"{p}else:", *self.block(p + "    ", depth + 1, 1)]
        return out

    def try_(self, p: str, depth: int) -> list[str]:
        out = [f"{p}try:", *self.block(p + "    ", depth + 1)]
        handlers = self.rng.randint(0 if self.chance(0.15) else 1, 2)
        for _ in range(handlers):
            out += [f"{p}except {self.pick(*EXCEPTIONS)} as e:",
                    f"{p}    T.append((type(e).__name__, str(e)[:60]))"]
            if self.chance(0.3):
                out += self.block(p + "    ", depth + 1, 1)
            if self.chance(0.1):
                out.append(f"{p}    raise Oops('again') from e")
        if handlers and self.chance(0.2):
            out += [f"{p}else:", *self.block(p + "    ", depth + 1, 1)]
        if not handlers or self.chance(0.25):
            out += [f"{p}finally:", f"{p}    T.append('finally')", *self.block(p + "    ", depth + 1, 1)]
        if not handlers:   # a try/finally alone: catch around it, so the program goes on
            out = [f"{p}try:", *("    " + line for line in out), f"{p}except Exception as e:",
                   f"{p}    T.append(('outer', type(e).__name__))"]
        return out

    def with_(self, p: str, depth: int) -> list[str]:
        return [f"{p}with Ctx({self.str_()}) as c:", *self.block(p + "    ", depth + 1)]

    def nested_def(self, p: str, depth: int) -> list[str]:
        body = self.pick(f"return {self.int_()} + q", f"nonlocal a\n{p}    a = (a + q) % 1000\n{p}    return a",
                         f"T.append(q)\n{p}    return len(T)", f"return [q, *L][{self.int_()}]")
        call = self.pick(f"a = helper({self.int_()})", f"T.append([helper(q) for q in range(3)])",
                         f"b = sum(map(helper, L[:3]))", f"T.append(helper(q=b))")
        return [f"{p}def helper(q):", f"{p}    {body}", f"{p}{call}"]

    def generator_use(self, p: str) -> list[str]:
        """Generators half consumed, thrown into and closed; a dict changed while iterated; a bound method."""
        return [self.pick(f"{p}g = gen({self.int_()})\n{p}T.append(next(g, None))\n{p}T.append(g.throw(Oops('in')) "
                          f"if {self.bool_()} else g.close())",
                          f"{p}for c in D:\n{p}    if {self.bool_()}:\n{p}        D[c + 'x'] = {self.int_()}",
                          f"{p}m = L.append\n{p}m({self.int_()})\n{p}del L[12:]",
                          f"{p}g = gen({self.int_()})\n{p}T.append(next(g, None))\n{p}T.append(g.send({self.int_()}) if "
                          f"{self.bool_()} else list(g))",
                          f"{p}T.append([q for q in gen(a) if q % 2 == 0])",
                          f"{p}T.append(dict(zip(s, gen({self.int_()}))))",
                          f"{p}T.append(sorted({{q % 4 for q in gen(b + 5)}}))")]

    def program(self) -> str:
        body = ["    global G_N", "    T = []", "    n = i = j = 0", "    c = s[:1]", "    fl = a / 3",
                "    D = {'k': a, 'z': b}", "    bx = Box(b % 7)", "    rest = []"]
        for _ in range(self.rng.randint(4, 10)):
            statements = self.stmt("        ", 1)
            if self.chance(self.try_rate):   # a statement that raises there ends nothing
                body += ["    try:", *statements, "    except Exception as e:",
                         "        T.append(('error', type(e).__name__, str(e)[:60]))"]
            else:
                body += [line[4:] for line in statements]
        body.append("    return T, a, b, s, fl, L, D, bx, n")
        return PRELUDE + "\n\ndef f(a, b, s, L, x):\n" + "\n".join(body) + "\n"

    def values(self) -> tuple:
        rng = self.rng
        return (rng.randint(-20, 40), rng.choice([0, 1, 5, -3, 7, 12]), rng.choice(["ab,c", "", "xyz", "a-b", "Q0"]),
                [rng.randint(-5, 9) for _ in range(rng.randint(0, 5))], [round(rng.uniform(-2, 2), 2) for _ in range(3)])

    def generate(self) -> Program:
        source = self.program()
        while not _compiles(source):   # a walrus in a comprehension's iterable, say: draw again
            source = self.program()
        first = self.values()
        return Program(source, self.seed, [first, first if self.chance(0.2) else self.values()])


def _compiles(source: str) -> bool:
    try:
        compile(source, "<generated>", "exec")
    except SyntaxError:
        return False
    return True


def generate(seed: int) -> Program:
    return Generator(seed).generate()
