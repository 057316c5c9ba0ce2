"""Launches past Triton's JIT dispatch (direct_launch.py): the compiled binary is reused only for arguments
that specialize alike, and any surprise sends the kernel back through the JIT (fake JIT and driver)."""
from types import SimpleNamespace

from dynamo.backends.triton_gpu.direct_launch import DirectLauncher


class Pointer:
    """A device array as the launcher sees it: the JIT gets a typed wrapper, the binary its address."""

    def __init__(self, address):
        self.address = address


class Typed:
    def __init__(self, array):
        self.array = array


def launcher(jit, runtime, warps=8):
    return DirectLauncher(jit, warps, Typed, lambda a: a.address, runtime)


class FakeBinary:
    function = "cu-function"
    packed_metadata = "metadata"

    def __init__(self, log):
        self.log = log

    def run(self, *args):
        self.log.append(("direct", args[0], args[9:]))
        self.hooks = args[6:9]

    def launch_metadata(self, grid, stream, *args):
        return ("metadata", grid, stream)


class FakeJit:
    """`fn[grid](*args, num_warps=w)` as Triton's JIT: launches and returns the binary it compiled."""

    def __init__(self):
        self.log = []
        self.compiles = 0

    def __getitem__(self, grid):
        def launch(*args, num_warps):
            self.log.append(("jit", grid[0], args))
            self.compiles += 1
            return FakeBinary(self.log)
        return launch


class Chain:
    """Triton's HookChain: a launch hook of zero or more calls."""

    def __init__(self, *calls):
        self.calls = list(calls)


def fake_runtime(hook=None):
    driver = SimpleNamespace(get_current_device=lambda: 0, get_current_stream=lambda device: 7)
    knobs = SimpleNamespace(runtime=SimpleNamespace(launch_enter_hook=hook if hook else Chain(),
                                                    launch_exit_hook=Chain()))
    return driver, knobs


def test_the_binary_is_reused_for_arguments_that_specialize_alike():
    jit = FakeJit()
    launch = launcher(jit, fake_runtime())
    launch(4, [Pointer(4096), Pointer(8192)], [1, 32])
    launch(5, [Pointer(4096 + 64), Pointer(16)], [1, 48])  # aligned alike, ints alike: the binary
    assert [entry[0] for entry in jit.log] == ["jit", "direct"]
    assert jit.log[1] == ("direct", 5, (4096 + 64, 16, 1, 48))  # programs, addresses, ints
    assert all(isinstance(p, Typed) for p in jit.log[0][2][:2])  # the JIT gets typed pointers
    launch(5, [Pointer(4096 + 8), Pointer(16)], [1, 48])  # a pointer 8 bytes off: its own compile
    launch(5, [Pointer(4096), Pointer(16)], [2, 48])      # a stride that is no longer 1
    launch(5, [Pointer(4096), Pointer(16)], [1, 1 << 40])  # a 64-bit integer
    assert [entry[0] for entry in jit.log] == ["jit", "direct", "jit", "jit", "jit"]
    assert jit.compiles == 4


def test_a_profilers_launch_hook_gets_what_the_jit_would_pass():
    jit = FakeJit()
    hook = Chain(print)
    launch = launcher(jit, fake_runtime(hook=hook))
    launch(3, [Pointer(0)], [])
    launch(3, [Pointer(0)], [])
    assert [entry[0] for entry in jit.log] == ["jit", "direct"]
    binary = next(iter(launch.compiled.values()))
    assert binary.hooks[0] == ("metadata", (3, 1, 1), 7) and binary.hooks[1] is hook
    quiet = launcher(FakeJit(), fake_runtime())  # Triton's default: empty chains, no metadata
    quiet(3, [Pointer(0)], [])
    quiet(3, [Pointer(0)], [])
    assert next(iter(quiet.compiled.values())).hooks[0] is None


def test_an_unknown_launcher_sends_the_kernel_through_the_jit():
    jit = FakeJit()
    launch = launcher(jit, fake_runtime())

    def other_arity(*args):  # a release whose launcher takes other arguments
        raise TypeError("function takes 12 arguments")
    launch.compiled[((True,), ())] = SimpleNamespace(run=other_arity, function=None, packed_metadata=None)
    launch(1, [Pointer(0)], [])
    launch(1, [Pointer(0)], [])
    assert [entry[0] for entry in jit.log] == ["jit", "jit"] and not launch.direct
