"""Compiled functions pickle: by reference where importable, else by value of the code.

The unpickled function keeps its backend and options and compiles on its first call.
"""
import copy
import json
import pickle
import subprocess
import sys
import textwrap

import cloudpickle
import numpy as np
import pytest

import dynamo
import process_workloads as work


def run_in_fresh_process(payload: bytes, script: str) -> str:
    """Runs `script` in a new interpreter with `fn` unpickled from `payload`; returns its stdout."""
    prelude = "import pickle, sys\nimport numpy as np\nimport dynamo\nfn = pickle.loads(sys.stdin.buffer.read())\n"
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], input=payload,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_module_level_compiled_function_pickles_by_reference():
    data = pickle.dumps(work.scaled_tanh)
    assert b"process_workloads" in data and b"co_code" not in data
    assert pickle.loads(data) is work.scaled_tanh


def test_copy_and_deepcopy_give_the_same_function():
    assert copy.copy(work.scaled_tanh) is work.scaled_tanh
    assert copy.deepcopy([work.scaled_tanh])[0] is work.scaled_tanh


def test_compiled_importable_function_keeps_backend_and_options():
    clone = pickle.loads(pickle.dumps(work.softmax_eager))
    assert clone is not work.softmax_eager
    assert clone._dynamo_fn is work.plain_softmax
    callback = clone._dynamo_callback
    assert (callback.backend_name, callback.fullgraph, callback.dynamic) == ("eager", False, True)
    x = np.random.default_rng(0).standard_normal((4, 7))
    np.testing.assert_array_equal(clone(x), work.plain_softmax(x))


def test_lambda_and_closure_travel_by_value_and_compile_in_another_process():
    scale = np.float64(3.0)

    def inner(x):
        return np.sqrt(np.abs(x)) * scale + 1.0

    compiled = dynamo.compile(inner, backend="numpy")
    payload = pickle.dumps(compiled)
    out = run_in_fresh_process(payload, """
        import json
        x = np.linspace(-2, 2, 11)
        report = dynamo.explain(fn)(x)
        print(json.dumps([fn(x).tolist(), report.graph_count, fn._dynamo_callback.backend_name]))
    """)
    x = np.linspace(-2, 2, 11)
    assert json.loads(out) == [inner(x).tolist(), 1, "numpy"]


def test_recursive_function_from_a_script_travels_by_value():
    # a function of __main__ reaches its own compiled wrapper through its globals
    script = textwrap.dedent("""
        import pickle, sys
        import numpy as np
        import dynamo

        @dynamo.compile
        def power_sum(x, n):
            if n == 0:
                return x
            return power_sum(x * x, n - 1) + 1.0

        sys.stdout.buffer.write(pickle.dumps(power_sum))
    """)
    made = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert made.returncode == 0, made.stderr.decode()
    out = run_in_fresh_process(made.stdout, """
        print(fn(np.full(3, 1.5), 2).tolist())
    """)
    expected = (np.full(3, 1.5) ** 2) ** 2 + 1.0 + 1.0
    assert out.strip() == repr(expected.tolist())


def test_methods_and_instances_holding_compiled_functions():
    model = work.Model(np.eye(3) * 2.0)
    clone = pickle.loads(pickle.dumps(model))
    x = np.array([[1.0, -2.0, 3.0]])
    np.testing.assert_array_equal(clone.forward(x), model.forward(x))
    bound = pickle.loads(pickle.dumps(model.forward))
    np.testing.assert_array_equal(bound(x), model.forward(x))


def test_disabled_function_pickles_and_stays_disabled():
    assert pickle.loads(pickle.dumps(work.never_compiled)) is work.never_compiled

    def local(x):
        return x * 2

    clone = pickle.loads(pickle.dumps(dynamo.disable(local)))
    assert clone._dynamo_callback is None and clone(np.arange(3)).tolist() == [0, 2, 4]


def test_cloudpickle_round_trip():
    offset = 0.25
    compiled = dynamo.compile(lambda x: np.cos(x) + offset, backend="eager")
    clone = cloudpickle.loads(cloudpickle.dumps(compiled))
    x = np.arange(5.0)
    np.testing.assert_array_equal(clone(x), np.cos(x) + offset)
    assert clone._dynamo_callback.backend_name == "eager"


def test_unpicklable_global_of_an_unimportable_function_says_what_failed():
    import threading

    lock = threading.Lock()

    def uses_lock(x):
        with lock:
            return x + 1

    with pytest.raises(Exception, match="lock"):
        pickle.dumps(dynamo.compile(uses_lock))
