"""glibc's malloc keeps freed memory for reuse once something compiles (config.keep_freed_memory):
a 20 MiB block freed and asked for again is the same heap block, not a new mapping each time."""
import os
import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

PROGRAM = textwrap.dedent("""
    import ctypes
    import dynamo

    dynamo.compile(lambda x: x + 1)(1)  # the first compile tunes the allocator (or not)
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    first = libc.malloc(20 << 20)
    libc.free(first)
    second = libc.malloc(20 << 20)
    libc.free(second)
    print(first == second)
""")


def reused(setting: str) -> bool:
    env = dict(os.environ, DYNAMO_KEEP_FREED_MEMORY=setting)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip() == "True"


def test_a_freed_block_is_reused_after_the_first_compile():
    assert reused("1")


def test_the_setting_off_leaves_the_allocator_alone():
    # glibc's own policy: a first 20 MiB block is a mapping of its own, given back when freed
    assert not reused("0")
