"""Which frames enable() compiles: the user's files and what runs in their globals, not what the
standard library and site-packages run or generate (namedtuple, dataclasses, exec'd strings); with
config.defer_resume_compiles, the rest of a frame after a graph break from its second call on."""
import collections
import dataclasses
import sys

import numpy as np
import pytest

import dynamo
from dynamo import _C
from dynamo.convert_frame import ConvertFrame


@pytest.fixture
def compiled(monkeypatch):
    """The names of the frames the callback compiled, in order."""
    names = []
    original = ConvertFrame.compile_frame

    def spy(self, frame):
        names.append(frame.f_code.co_qualname)
        return original(self, frame)

    monkeypatch.setattr(ConvertFrame, "compile_frame", spy)
    return names


Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Particle:
    position: float
    velocity: float


def test_namedtuple_new_called_from_python_is_not_compiled(compiled):
    with dynamo.enable(backend="eager"):
        points = []
        for i in range(12):
            points.append(Point(i, 2.5 * i))  # a __new__ frame per call, new values each time
    assert points == [(i, 2.5 * i) for i in range(12)]
    assert "Point.__new__" not in compiled  # collections' code, run in a namespace of its own
    assert _C.is_skipped(Point.__new__.__code__)
    assert _C.cache_entries(Point.__new__.__code__) == []


def test_dataclass_init_of_the_users_class_is_compiled(compiled):
    with dynamo.enable(backend="eager"):
        particle = Particle(1.0, 2.0)
        assert compiled == []  # generated code runs as it is on its first call
        second = Particle(3.0, 4.0)
    assert (particle, second) == (Particle(1.0, 2.0), Particle(3.0, 4.0))
    assert [name.rsplit(".", 1)[-1] for name in compiled] == ["__init__"]  # generated, in this module's globals


def test_a_dataclass_defined_in_a_function_compiles_no_generated_code(compiled):
    """dataclasses exec a new __create_fn__ (and new methods) for each class a call defines: code
    that runs once is not worth compiling (it cost one compile per call)."""
    def make(gain):
        @dataclasses.dataclass
        class Settings:
            gain: float

        return Settings(gain)

    with dynamo.enable(backend="eager"):
        made = [make(float(i)) for i in range(5)]
    assert [m.gain for m in made] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert not [name for name in compiled if "__create_fn__" in name or name.endswith("__init__")], compiled


def test_dataclass_init_of_a_library_class_is_not_compiled(compiled, tmp_path, monkeypatch):
    (tmp_path / "generated_lib_mod.py").write_text(
        "import dataclasses\n\n@dataclasses.dataclass\nclass Config:\n    size: int\n    scale: float = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "generated_lib_mod", raising=False)
    import generated_lib_mod

    with dynamo.config.patch(skip_dirs=(str(tmp_path),)):
        with dynamo.enable(backend="eager"):
            configs = []
            for n in range(10):  # (a comprehension would be a frame of its own on 3.11)
                configs.append(generated_lib_mod.Config(n, 0.5 * n))
    assert [(c.size, c.scale) for c in configs] == [(n, 0.5 * n) for n in range(10)]
    assert compiled == []
    assert _C.is_skipped(generated_lib_mod.Config.__init__.__code__)


SOURCE = "def scaled(x, k):\n    y = x * k\n    print(y)\n    return y + 1\n"


def exec_in_own_namespace():
    namespace = {}
    exec(SOURCE, namespace)  # noqa: S102 (what a library's code generator does)
    return namespace["scaled"]


def test_exec_in_a_namespace_of_its_own_runs_as_python_under_enable(compiled, capsys):
    scaled = exec_in_own_namespace()
    with dynamo.enable(backend="eager"):
        assert scaled(2, 3) == 7
    assert capsys.readouterr().out == "6\n"
    assert compiled == []


def test_compile_generated_code_opts_in(compiled, capsys):
    scaled = exec_in_own_namespace()
    with dynamo.config.patch(compile_generated_code=True), dynamo.enable(backend="eager"):
        assert scaled(2, 3) == 7
    assert capsys.readouterr().out == "6\n"
    assert compiled[0] == "scaled" and compiled[1] == "scaled.<resume at line 3>"


def test_generated_function_passed_to_compile_is_compiled_with_its_resume_functions(compiled, capsys):
    scaled = exec_in_own_namespace()
    assert dynamo.compile(scaled, backend="eager")(2, 3) == 7
    assert capsys.readouterr().out == "6\n"
    assert compiled[0] == "scaled" and compiled[1] == "scaled.<resume at line 3>" and len(compiled) == 2


def test_exec_in_the_users_globals_is_compiled(compiled):
    namespace = globals()
    exec("def tripled_here(x):\n    return 3 * x\n", namespace)  # noqa: S102
    try:
        with dynamo.enable(backend="eager"):
            assert namespace["tripled_here"](4) == 12
            assert namespace["tripled_here"](5) == 15  # compiled from its second call
    finally:
        del namespace["tripled_here"]
    assert compiled == ["tripled_here"]


def test_compile_dirs_compiles_a_skipped_directory(compiled, tmp_path, monkeypatch):
    package = tmp_path / "numeric_lib"
    package.mkdir()
    (package / "__init__.py").write_text("def helper(x):\n    return x * 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "numeric_lib", raising=False)
    import numeric_lib

    with dynamo.config.patch(skip_dirs=(str(tmp_path),), compile_dirs=(str(package),)):
        with dynamo.enable(backend="eager"):
            assert numeric_lib.helper(2) == 6
    assert compiled == ["helper"]


def stepped(x):
    y = x * 2.0
    print(y.sum())  # a graph break: the rest is a resume function
    return y + 1.0


def stepped_asked_for(x):  # the same, passed to dynamo.compile (it stays requested for the session)
    y = x * 2.0
    print(y.sum())
    return y + 1.0


def resume_name(fn):
    return f"{fn.__name__}.<resume at line {fn.__code__.co_firstlineno + 2}>"


@pytest.mark.parametrize("defer", [False, True])
def test_a_resume_function_is_compiled_from_its_second_call_when_deferred(compiled, capsys, defer):
    """A frame that runs once (a test body) never repays compiling what follows its graph breaks:
    deferred, that rest runs as Python at its first call; a frame called again compiles it then."""
    x = np.arange(4.0)
    callback = dynamo.enable(backend="eager").callback
    both = ["stepped", resume_name(stepped)]
    with dynamo.config.patch(defer_resume_compiles=defer), dynamo.enable(backend="eager"):
        results = [stepped(x)]
        after_one = list(compiled)
        results += [stepped(x), stepped(x)]
    assert after_one == (["stepped"] if defer else both)
    assert compiled == both
    assert callback.deferred_resumes == defer
    for result in results:
        np.testing.assert_array_equal(result, x * 2.0 + 1.0)
    assert capsys.readouterr().out == "12.0\n" * 3


def test_a_function_passed_to_compile_compiles_its_resume_functions_at_once(compiled, capsys):
    with dynamo.config.patch(defer_resume_compiles=True):
        result = dynamo.compile(stepped_asked_for, backend="eager")(np.arange(4.0))
    np.testing.assert_array_equal(result, np.arange(4.0) * 2.0 + 1.0)
    assert capsys.readouterr().out == "12.0\n"
    assert compiled == ["stepped_asked_for", resume_name(stepped_asked_for)]
