"""Corpus: calls of user functions, methods, properties, super(), dataclasses, static and class
methods, recursion and lambdas; every callee is inlined into the caller's graph."""
import dataclasses
import functools

import warnings
import numpy as np

import dynamo
from support import same_value, assert_matches_python, compile_with_counter, fallbacks, graph_breaks

A = np.arange(6.0).reshape(2, 3)
B = np.linspace(-1.0, 1.0, 6).reshape(2, 3)


def check(fn, *calls, graph=True):
    for args in calls:
        assert_matches_python(fn, *args, expect_graph=graph)


class Struct:
    """Test objects compare by their attributes, so mutated arguments can be compared."""

    def __eq__(self, other):
        return type(self) is type(other) and same_value(vars(self), vars(other))



# ---- argument passing ---------------------------------------------------------------------------

def _affine(x, w, b=0.0, *, clip=None):
    y = x * w + b
    return y if clip is None else np.clip(y, -clip, clip)


def test_positional_keyword_and_default_arguments():
    def f(x):
        return _affine(x, 2.0), _affine(x, 2.0, 1.0), _affine(x, w=3.0, b=-1.0), _affine(b=1.0, w=0.5, x=x)

    check(f, (A,), (B,))


def test_keyword_only_arguments():
    def f(x):
        return _affine(x, 1.0, clip=2.0), _affine(x, 1.0, 0.5, clip=1)

    check(f, (A,), (B,))


def _varargs(*arrays, scale=1.0):
    total = 0
    for a in arrays:
        total = total + a
    return total * scale, len(arrays)


def test_star_args():
    def f(x, y):
        parts = (x, y, x)
        return _varargs(x), _varargs(x, y, scale=2.0), _varargs(*parts), _varargs(*[x, y], *(y,))

    check(f, (A, B), (B, A))


def _kwargs_fn(x, **options):
    out = x
    for name, value in options.items():
        out = out + value if name.startswith("add") else out * value
    return out, sorted(options)


def test_star_star_kwargs():
    def f(x):
        opts = {"add1": 1.0, "mul": 2.0}
        return _kwargs_fn(x), _kwargs_fn(x, add=3.0), _kwargs_fn(x, **opts), _kwargs_fn(x, **opts, mul2=0.5)

    check(f, (A,), (B,))


def _posonly(a, b, /, c=1.0):
    return a * b + c


def test_positional_only_parameters():
    def f(x):
        return _posonly(x, 2.0), _posonly(x, 2.0, c=3.0), _posonly(x, x, 0)

    check(f, (A,), (B,))


def test_mixed_star_call_forms():
    def g(a, b, c=0.0, *rest, d=1.0, **kw):
        return a + b + c + sum(rest) + d + sum(kw.values())

    def f(x):
        args = [x, 1.0]
        kwargs = {"d": 2.0, "e": 3.0}
        return g(*args), g(*args, 5.0, 6.0, 7.0, **kwargs), g(x, *[1.0, 2.0], d=0.0)

    check(f, (A,), (B,))


def test_calling_with_wrong_arguments_raises_like_python():
    def f(x):
        return _affine(x)

    check(f, (A,), graph=False)


def test_nested_calls():
    def inner(v):
        return v * 2

    def middle(v):
        return inner(v) + inner(v + 1)

    def f(x):
        return middle(middle(x))

    check(f, (A,), (B,))


# ---- recursion ----------------------------------------------------------------------------------

def _power(x, n):
    if n == 0:
        return x * 0 + 1
    return x * _power(x, n - 1)


def test_recursion_with_known_depth():
    def f(x):
        return _power(x, 5)

    check(f, (A,), (B,))


def _deep(x, n):
    return x if n == 0 else _deep(x + 1, n - 1)


def test_recursion_past_the_inline_limit_falls_back_correctly():
    def f(x):
        return _deep(x, 200)

    compiled = dynamo.compile(f, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # every depth is a new int: cache limit
        np.testing.assert_array_equal(compiled(A), f(A))
    reasons = graph_breaks(compiled)
    assert reasons and "call too deep to inline" in reasons[0]


def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def test_recursion_on_constants_folds():
    def f(x, n):
        return x * _fib(n)

    check(f, (A, 6), (A, 8))


# ---- lambdas, higher-order functions ------------------------------------------------------------

def test_lambdas_called_directly_and_passed():
    def apply(fn, v):
        return fn(v)

    def f(x):
        sq = lambda v: v * v  # noqa: E731
        return apply(sq, x), apply(lambda v: v - 1, x), (lambda: 3)()

    check(f, (A,), (B,))


def test_function_passed_in_as_argument():
    def f(fn, x):
        return fn(x) + fn(x + 1)

    check(f, (np.sin, A), (np.cos, A), (lambda v: v * 3, B))


def test_functools_partial_of_user_function():
    def f(x):
        g = functools.partial(_affine, w=2.0, b=1.0)
        return g(x)

    check(f, (A,), (B,))


def test_map_and_filter_with_lambdas():
    def f(x):
        squares = list(map(lambda i: i * i, range(4)))
        evens = list(filter(lambda i: i % 2 == 0, squares))
        scaled = list(map(lambda a, b: a * b, [x, x], [1.0, 2.0]))
        return squares, evens, scaled

    check(f, (A,))


def test_sorted_min_max_with_key():
    def f(x, names):
        by_len = sorted(names, key=lambda s: len(s))
        longest = max(names, key=len)
        return x * len(longest), by_len, min(names)

    check(f, (A, ["ccc", "a", "bb"]), (A, ["x", "yyyy"]))


# ---- user objects -------------------------------------------------------------------------------

class Linear(Struct):
    kind = "linear"

    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        return x * self.w + self.b

    @property
    def scale(self):
        return self.w * 2

    @staticmethod
    def activation(v):
        return np.maximum(v, 0)

    @classmethod
    def name(cls):
        return cls.kind + "!"


class Scaled(Linear):
    kind = "scaled"

    def forward(self, x):
        return super().forward(x) * 2

    @property
    def scale(self):
        return super().scale + 1


class Twice(Scaled):
    def forward(self, x):
        return super(Scaled, self).forward(x) + super().forward(x)


def test_method_calls_on_argument_object():
    def f(m, x):
        return m.forward(x), m(x), Linear.forward(m, x)

    check(f, (Linear(2.0, 1.0), A), (Linear(A, B), B))


def test_property_static_and_class_methods():
    def f(m, x):
        return m.activation(x - 2) * m.scale, Linear.activation(x), m.name(), Linear.name()

    check(f, (Linear(2.0, 1.0), A), (Scaled(3.0, 0.0), B))


def test_super_calls_in_methods_and_properties():
    def f(m, x):
        return m.forward(x), m.scale

    check(f, (Scaled(2.0, 1.0), A), (Scaled(A, 0.5), B))


def test_two_argument_super_and_multilevel_inheritance():
    def f(m, x):
        return m.forward(x)

    check(f, (Twice(2.0, 1.0), A), (Twice(0.5, B), B))


def test_bound_method_passed_around():
    def f(m, x):
        fn = m.forward
        return fn(x) + fn(x * 2)

    check(f, (Linear(2.0, 1.0), A))


def test_method_of_compiled_object_compiled_directly():
    m = Linear(2.0, 1.0)
    compiled = dynamo.compile(m.forward, backend="eager")
    np.testing.assert_array_equal(compiled(A), m.forward(A))
    assert fallbacks(compiled) == []


@dataclasses.dataclass
class Config:
    lr: float
    steps: int = 3
    tag: str = "run"


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float

    def norm2(self):
        return self.x * self.x + self.y * self.y


def test_dataclass_fields_and_methods():
    def f(cfg, p, x):
        out = x
        for _ in range(cfg.steps):
            out = out - cfg.lr * out
        return out * p.norm2(), cfg.tag

    check(f, (Config(0.1), Point(1.0, 2.0), A), (Config(0.5, steps=2, tag="b"), Point(0.0, 3.0), B))


def test_object_with_array_attributes_in_loop():
    class Layer(Struct):
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return np.tanh(x @ self.w)

    def f(layers, x):
        for layer in layers:
            x = layer(x)
        return x

    ws = [np.eye(3) * 0.5, np.ones((3, 3)) * 0.1]
    check(f, ([Layer(w) for w in ws], A))


def test_isinstance_and_type_of_objects():
    def f(m, x):
        if isinstance(m, Scaled):
            return x * 2, type(m).__name__
        if isinstance(m, (Linear, int)):
            return x * 3, type(m) is Linear
        return x, None

    check(f, (Scaled(1.0, 0.0), A), (Linear(1.0, 0.0), A), (5, A))


def test_hasattr_and_getattr_with_default():
    def f(m, x):
        w = getattr(m, "w", 1.0)
        extra = getattr(m, "missing", 0.5)
        return x * w + extra, hasattr(m, "b"), hasattr(m, "nope")

    check(f, (Linear(2.0, 1.0), A))


def test_generator_function_is_inlined_lazily():
    def gen(v, n):
        for i in range(n):
            yield v * i
        yield v - 1

    def f(x, log):
        total = 0
        for item in gen(x, 3):
            log.append(len(log))  # interleaves with the generator's body, as in Python
            total = total + item
        g = gen(x, 2)
        first = next(g)
        return total, first, list(g), sum(gen(1.0, 4))

    check(f, (A, []), (B, [7]))


# ---- special methods of user classes --------------------------------------------------------------

class Vec(Struct):
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return self.v + (other.v if isinstance(other, Vec) else other)

    def __radd__(self, other):
        return other + self.v * 10

    def __neg__(self):
        return -self.v

    def __len__(self):
        return 3

    def __iter__(self):
        yield self.v
        yield self.v * 2

    def __contains__(self, key):
        return key == 1

    def __getitem__(self, i):
        return self.v * i

    def __lt__(self, other):
        return False


def test_operators_and_protocols_of_user_objects():
    def f(p, q, x):
        return p + q, 1 + p, p + 2.0, -p, len(p), list(p), 1 in p, 2 in p, p[3], p < q, q > p, bool(p)

    check(f, (Vec(A), Vec(B), A), (Vec(2.0), Vec(B), B))


def test_equality_of_user_objects_without_eq_is_identity():
    class Plain:  # no __eq__: == is identity (so the checker's copies cannot be compared)
        pass

    def f(a, b, x):
        return a == a, a == b, a != b, a == 1, a != None, x  # noqa: E711

    compiled = dynamo.compile(f, backend="eager")
    p, q = Plain(), Plain()
    assert compiled(p, q, A)[:5] == f(p, q, A)[:5] == (True, False, True, False, True)
    assert fallbacks(compiled) == []


def test_mutual_recursion():
    def even(n):
        return True if n == 0 else odd(n - 1)

    def odd(n):
        return False if n == 0 else even(n - 1)

    def f(x, n):
        return x * even(n), odd(n)

    check(f, (A, 6), (A, 7))


def test_import_inside_function():
    def f(x):
        import math
        import numpy as np2
        from math import sqrt
        from numpy import linalg
        return np2.sqrt(abs(x)) + math.pi + sqrt(4.0) + linalg.norm(x)

    check(f, (A,), (B,))


def test_modules_imported_inside_a_function_are_rebuilt_after_a_graph_break():
    """`import numpy as np` inside the function, then a break (np.where's size depends on the data):
    the resume function gets the modules; the whole frame ran as written before (numpy-benchmarks'
    grouping)."""
    def f(values):
        import math
        import numpy as np2
        from numpy import linalg
        diff = np2.concatenate(([1], np2.diff(values)))
        idx = np2.concatenate((np2.where(diff)[0], [len(values)]))
        return values[idx[:-1]] * math.pi, np2.diff(idx), linalg.norm(values * 1.0)

    rng = np.random.default_rng(3)
    compiled = dynamo.compile(f, backend="numpy")
    for n in (50, 50, 80):
        values = np.sort(rng.integers(0, 9, n)).astype(np.uint32)
        assert same_value(compiled(values.copy()), f(values.copy()))
    assert fallbacks(compiled) == []
    assert len(graph_breaks(compiled)) >= 1


def test_sorted_is_stable_with_key_and_reverse():
    def f(x, items):
        return x, sorted(items, key=lambda t: t[0], reverse=True), sorted(items, key=lambda t: -t[0])

    check(f, (A, [(1, "a"), (2, "b"), (1, "c"), (2, "d")]))


def test_keyword_only_calls_and_dict_unpacking_into_calls():
    def f(x):
        def g(a, *, b, c=3, **rest):
            return a + b + c + len(rest)
        return g(x, b=1), g(x, b=2, c=4, d=5), g(**{"a": x, "b": 0})

    check(f, (A,))


def test_repeated_keyword_in_call_raises_like_python():
    def f(x):
        def g(**kw):
            return kw
        return g(**{"a": 1}, **{"a": 2})

    check(f, (A,), graph=False)


def test_compiled_function_with_star_args_and_keyword_only():
    def f(x, *args, k=1, **kw):
        return x * k + len(args) + len(kw)

    compiled = dynamo.compile(f, backend="eager")
    np.testing.assert_array_equal(compiled(A, 1, 2, k=3, z=4), f(A, 1, 2, k=3, z=4))
    np.testing.assert_array_equal(compiled(A), f(A))
    assert fallbacks(compiled) == []


def test_closure_returned_by_inner_function_then_called():
    def f(x):
        def outer(y):
            def inner(z):
                return z + y
            return inner
        return outer(1)(x), outer(2)(x)

    check(f, (A,))


def test_functools_reduce_and_itertools():
    import itertools
    import operator

    def f(x, items):
        return (functools.reduce(operator.add, items), functools.reduce(lambda a, b: a * b, items, x),
                list(itertools.chain(items, [x], "ab")), list(itertools.product(items, [0, 1])),
                list(itertools.product("ab", repeat=2)), list(itertools.combinations(items, 2)),
                list(itertools.permutations(items, 2)), list(zip(itertools.count(5, 2), items)),
                list(zip(itertools.repeat(x), items)), list(itertools.islice(items, 1, None, 2)),
                list(itertools.islice(itertools.count(), 3)))

    check(f, (A, [1, 2, 3]), (A, [4.0]), (B, [1, 2, 3, 4, 5]))


# ---- objects created inside the compiled function --------------------------------------------------

class Pair(Struct):
    def __init__(self, x, y=1.0):
        self.x = x
        self.y = y

    def norm(self):
        return self.x * self.x + self.y


@dataclasses.dataclass
class Bag:
    a: float
    items: list = dataclasses.field(default_factory=list)


class Base(Struct):
    def __init__(self):
        super().__init__()
        self.k = 1


class Child(Base):
    def __init__(self, v):
        super().__init__()
        self.v = v


def test_objects_created_in_the_function_are_used_and_returned():
    def f(x):
        p = Pair(x, 2.0)
        q = Pair(x)
        q.y = p.norm()
        return p.norm(), p.x is x, q

    check(f, (A,), (B,))


def test_dataclasses_created_and_compared_in_the_function():
    def f(x):
        bag = Bag(1.0)
        bag.items.append(x)
        point = Point(2.0, 1.0)
        return bag == Bag(1.0, [x]), point.norm2(), Point(1.0, 2.0) == Point(1.0, 2.0), bag.items[0] is x

    check(f, (A,), (B,))


def test_inheritance_and_super_init_of_created_objects():
    def f(x):
        c = Child(x)
        return c.k, c.v * 2, isinstance(c, Base), type(c).__name__, c.__class__ is Child

    check(f, (A,))


def test_created_object_stored_into_argument_list_then_changed():
    def f(lst, x):
        p = Pair(x)
        lst.append(p)
        p.y = 5.0
        return len(lst)

    check(f, ([], A), ([Pair(1.0)], B))


def test_assigning_a_frozen_dataclass_raises_like_python():
    def f(x):
        point = Point(1.0, 2.0)
        point.x = x
        return point

    check(f, (A,), graph=False)


_W = np.ones(3)


def _with_array_defaults(x, w=_W, *, b=np.zeros(3)):  # noqa: B008
    return x * w + b


def test_array_default_arguments_and_star_generator():
    def f(x):
        def total(*parts):
            return sum(parts)
        return _with_array_defaults(x) + _with_array_defaults(x, 2.0), total(*(i for i in range(4))) + x

    check(f, (np.arange(3.0),))


def test_generators_with_return_and_closures():
    def f(x):
        def scaled(n):
            for i in range(n):
                yield times(i)
            return "ignored"

        def times(i):
            return x * i
        return sum(scaled(3)), list(scaled(2))

    check(f, (A,), (B,))


def test_generator_send_yield_from_and_try_fall_back_correctly():
    def send(x):
        def g():
            v = yield 1
            yield v
        it = g()
        next(it)
        return it.send(5), x

    def delegate(x):
        def g():
            yield from [1, 2]
        return list(g()), x

    def guarded(x):
        def g():
            try:
                yield 1
            finally:
                pass
        return list(g()), x

    for fn in (send, delegate, guarded):
        check(fn, (A,), graph=False)


def test_recursive_function_building_lists():
    def f(x, n):
        def build(k):
            return [] if k == 0 else build(k - 1) + [k * x]
        return build(n)

    check(f, (A, 3), (A, 0))


def test_global_assigned_in_nested_function():
    def f(x):
        def set_global():
            global _NESTED_GLOBAL
            _NESTED_GLOBAL = 5
        set_global()
        return x + _NESTED_GLOBAL

    globals()["_NESTED_GLOBAL"] = 0
    compiled = dynamo.compile(f, backend="eager")
    np.testing.assert_array_equal(compiled(A), A + 5)
    assert _NESTED_GLOBAL == 5 and fallbacks(compiled) == []  # noqa: F821


class _CallableObject:
    def __call__(self):
        return 1


def test_callable_asks_the_type_for_a_call_slot():
    def f(d, items, obj, fn, instance, array):
        return (callable(d), callable(items), callable(obj), callable(fn), callable(len), callable(dict),
                callable(instance), callable(_CallableObject), callable(array), callable(np.sum), callable(np.float64(1)))

    args = ({1: 2}, [1], object(), f, _CallableObject(), np.ones(2))
    compiled, _ = compile_with_counter(f)
    assert compiled(*args) == f(*args) == (False, False, False, True, True, True, True, True, False, True, False)
