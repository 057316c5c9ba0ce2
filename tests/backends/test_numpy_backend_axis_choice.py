"""The block axis of 3-D stencils: the outermost contiguous axis, or straight code when blocks would scatter."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from numpy_backend_helpers import same

import dynamo
from dynamo.backends.numpy_cpu import Machine, NumpyBackend
from dynamo.backends.numpy_cpu.contiguity import MIN_RUN

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workloads import fd3d  # noqa: E402

# this machine's figures when the issue was filed: 2 MiB L2, 2 cores; real gates on
MACHINE = Machine(cache_bytes=2 << 20, cores=2, min_kernel_bytes=128 * 1024, min_block_elements=16384,
                  thread_work=4_000_000, min_run=MIN_RUN)


def _plans(shape):
    plans = []

    def backend(gm, example_inputs):
        compiled = NumpyBackend(MACHINE, strict=True)(gm, example_inputs)
        plans.append(compiled.plan)
        return compiled

    rng = np.random.default_rng(3)
    args = [rng.random(shape), rng.random(shape), np.linspace(0.0, 25.0, shape[2])]
    compiled = dynamo.compile(fd3d.fn, backend=backend)
    assert same(compiled(*args), fd3d.fn(*args))  # bitwise
    assert len(plans) == 1
    return plans[0]


@pytest.mark.parametrize("shape", [(204, 204, 26), (81, 81, 11)])
def test_fd3d_blocks_along_the_first_axis(shape) -> None:
    plan = _plans(shape)
    assert plan.kernels, plan.describe()
    extent = shape[0] - 4
    for kernel in plan.kernels:
        # every member blocks along its first axis (the last axis with its profile won before: 26 blocks of 1)
        assert set(kernel.axis.values()) == {0} and kernel.extent == extent, plan.describe()
    big = plan.blocking[plan.kernels[0].name]
    assert (big.block, big.blocks) == {(204, 204, 26): (4, 50), (81, 81, 11): (31, 3)}[shape], plan.describe()


def test_scattered_blocks_run_straight() -> None:
    # only the last axis links these values (a transpose-free reduction over the first two axes keeps
    # them off axes 0 and 1): blocks along it would be runs of one element, so no kernel is formed
    def f(x, w):
        return ((x * w + 1.0) * x - w).max(axis=(0, 1))

    plans = []

    def backend(gm, example_inputs):
        compiled = NumpyBackend(MACHINE, strict=True)(gm, example_inputs)
        plans.append(compiled.plan)
        return compiled

    rng = np.random.default_rng(4)
    x, w = rng.random((204, 204, 26)), rng.random(26)
    assert same(dynamo.compile(f, backend=backend)(x, w), f(x, w))
    for kernel in plans[0].kernels:
        assert set(kernel.axis.values()) != {2}, plans[0].describe()
