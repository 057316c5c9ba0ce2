"""Opcode coverage of the symbolic interpreter per Python version: every opcode CPython emits
for an ordinary function has a handler, except an explicit list of deliberate give-ups."""
import dis
import sys

import numpy as np

from dynamo import bytecode_compat
from dynamo.translator.core import supported_opcodes
from support import assert_matches_python

# Opcodes deliberately left without a handler: a frame using them gives up (graph-break work):
# exception handling, with blocks, async code, `yield from`.
_EXCEPTIONS = {"PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "CHECK_EG_MATCH", "RERAISE"}
_WITH = {"WITH_EXCEPT_START"}  # BEFORE_WITH: captured for np.errstate, a graph break otherwise
_ASYNC = {"GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "END_ASYNC_FOR", "BEFORE_ASYNC_WITH"}
_YIELD_FROM = {"SEND", "GET_YIELD_FROM_ITER"}
EXPECTED_UNSUPPORTED = {
    (3, 11): _EXCEPTIONS | _WITH | _ASYNC | _YIELD_FROM | {"PREP_RERAISE_STAR", "ASYNC_GEN_WRAP"},
    (3, 12): _EXCEPTIONS | _WITH | _ASYNC | _YIELD_FROM | {"CALL_INTRINSIC_2", "CLEANUP_THROW", "END_SEND"},
    (3, 13): _EXCEPTIONS | _WITH | _ASYNC | _YIELD_FROM | {"CALL_INTRINSIC_2", "CLEANUP_THROW", "END_SEND"},
}


def test_unsupported_opcodes_are_exactly_the_deliberate_ones():
    missing = bytecode_compat.function_opcodes() - supported_opcodes()
    assert missing == EXPECTED_UNSUPPORTED[sys.version_info[:2]]


def test_supported_opcodes_are_real_opcodes_of_this_python():
    assert supported_opcodes() <= set(dis.opmap)
    assert {"BINARY_OP", "CALL", "FOR_ITER", "LOAD_FAST", "RETURN_VALUE"} <= supported_opcodes()


def _kitchen_sink(x, items, d, *rest, scale=2.0, **options):
    import math

    a, *b = items
    total = sum(v * scale for v in b) + math.floor(1.5)
    seen = {k for k in d if k}
    table = {k: v for k, v in d.items() if k in seen}
    out = [x * i for i in range(len(items)) if i % 2 == 0]
    match items:
        case [first, *_] if first is not None:
            total += first
        case _:
            pass
    y = x
    y += total
    del a
    flag = not (len(rest) > 0 and options) or "k" in options
    msg = f"{len(out)}:{scale!r}:{total:.1f}"
    return y, out, table, flag, msg, (lambda v=1: v + len(rest))()


def test_opcodes_of_one_function_span_the_families():
    x = np.arange(4.0)
    assert_matches_python(_kitchen_sink, x, [1.0, 2.0, 3.0], {"a": 1, "": 2}, 5, k=1, expect_graph=True)
    assert_matches_python(_kitchen_sink, x, [None], {}, expect_graph=True)
    used = {i.opname for i in dis.get_instructions(_kitchen_sink)}
    # RERAISE sits in the exception handlers of 3.12+ inlined comprehensions, never reached
    assert used <= supported_opcodes() | {"CACHE", "EXTENDED_ARG", "RERAISE"}
