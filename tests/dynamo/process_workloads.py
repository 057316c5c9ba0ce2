"""Compiled functions that the process, pickling and Dask tests send to other processes.

Module level, so that a spawned worker can import them by name as a user's module would be.
"""
import numpy as np

import dynamo


@dynamo.compile
def scaled_tanh(x):
    return np.tanh(x * 0.5) * 2.0 + 1.0


def plain_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


softmax_eager = dynamo.compile(plain_softmax, backend="eager", dynamic=True)


class Model:
    """A class holding a compiled method and state, pickled with its instances."""

    def __init__(self, weight):
        self.weight = weight

    @dynamo.compile
    def forward(self, x):
        return np.maximum(x @ self.weight, 0.0)


@dynamo.disable
def never_compiled(x):
    return x + 1


def graphs_compiled(compiled):
    """Frames with a graph that `compiled`'s callback has compiled in this process."""
    return sum(1 for _, frame in compiled._dynamo_callback.compiled_frames if frame.graphs)


def call_and_count(compiled, x):
    """compiled(x) and how many frames with graphs its callback compiled in this process."""
    return compiled(x), graphs_compiled(compiled)
