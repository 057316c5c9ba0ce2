"""Whether the program has taken apart the builtins module (deleted or replaced a builtin, or keyed it
by an object of its own): dynamo's Python code looks builtins up too, so it does not compile then."""
from __future__ import annotations

import builtins

# Bound here, not looked up in builtins at each call: a lookup in a builtins dict that the program
# keys by an object of its own calls that object's __eq__ (CPython's test_iter does it on purpose).
_DICT = builtins.__dict__
_ORIGINAL = tuple(_DICT.items())
_STR = str
_TYPE = type
_GET = dict.get
_MISSING = object()


def changed() -> bool:
    """True when a key of builtins is not a plain str, or a builtin present at import is gone or
    replaced (names the program adds are fine). Runs no code of the program's."""
    for key in _DICT:   # iteration compares nothing: a key of the program's is only looked at
        if _TYPE(key) is not _STR:
            return True
    for name, value in _ORIGINAL:   # plain str keys only now: these lookups run no user code
        if _GET(_DICT, name, _MISSING) is not value:
            return True
    return False
