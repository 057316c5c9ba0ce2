"""Compiled functions as Dask tasks: map_blocks on the threaded scheduler and on a local cluster.

The cluster runs two worker processes on the loopback interface and stops with the test.
"""
import numpy as np
import pytest

import dynamo
import process_workloads as work

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


def chunked(shape=(64, 48), chunks=(16, 48)):
    data = np.random.default_rng(11).standard_normal(shape)
    return data, da.from_array(data, chunks=chunks)


def test_map_blocks_with_the_threaded_scheduler():
    data, x = chunked()
    result = da.map_blocks(work.scaled_tanh, x, dtype=x.dtype).compute(scheduler="threads")
    np.testing.assert_array_equal(result, work.scaled_tanh._dynamo_fn(data))
    assert work.graphs_compiled(work.scaled_tanh) >= 1


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=50) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def test_map_blocks_on_a_cluster_of_processes(client):
    data, x = chunked()
    result = x.map_blocks(work.softmax_eager, dtype=x.dtype).compute()
    np.testing.assert_array_equal(result, work.plain_softmax(data))


def test_submit_and_map_of_compiled_functions(client):
    data, _ = chunked()
    counted = client.submit(work.call_and_count, work.scaled_tanh, data).result()
    np.testing.assert_array_equal(counted[0], work.scaled_tanh._dynamo_fn(data))
    assert counted[1] >= 1  # compiled in the worker

    bias = 2.0
    compiled = dynamo.compile(lambda a: np.log1p(np.abs(a)) - bias)  # travels by value
    rows = list(data)
    results = client.gather(client.map(compiled, rows))
    for result, row in zip(results, rows):
        np.testing.assert_array_equal(result, np.log1p(np.abs(row)) - bias)
