"""tests/csrc prove the C hook with the identity transformation of issue 3: dynamo's callback
answers with the frame's own code (flat signature), guarded on the type of each argument.

The frontend's compile_frame is pinned to that here, so that these tests measure the hook and
not whatever the symbolic interpreter decides (it has its own tests)."""
import pytest

from dynamo.bytecode_compat import flatten_signature
from dynamo.convert_frame import CompiledFrame, ConvertFrame
from dynamo.guards import GuardKind, GuardSet
from dynamo.sources import LocalSource


def identity_compile_frame(self, frame):
    guards = GuardSet()
    for index, (name, value) in enumerate(zip(frame.f_code.co_varnames, frame.f_args)):
        guards.add(LocalSource(index, name), GuardKind.TYPE_IS, type(value))
    return CompiledFrame(guards, flatten_signature(frame.f_code))


@pytest.fixture(autouse=True)
def identity_frontend(monkeypatch):
    monkeypatch.setattr(ConvertFrame, "compile_frame", identity_compile_frame)



@pytest.fixture(autouse=True)
def transformed_code_path(request, monkeypatch):
    """A hit runs the answer's own code object (a new frame), the path these tests prove; the
    in-place path (the original frame run as it is) has its own tests in test_hook_in_place.py."""
    if getattr(request.module, "IN_PLACE_HITS", False):
        return
    monkeypatch.setattr("dynamo.convert_frame.code_to_run", lambda original, compiled: compiled.code)
