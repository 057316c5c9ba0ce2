"""`import dynamo` stays cheap: the tracer, the IR, the backends and sympy load when something is
first compiled, not at import (each case runs in a fresh interpreter)."""
import subprocess
import sys
import textwrap

HEAVY = ["sympy", "bytecode", "dynamo.fx_ir", "dynamo.backends.numpy_cpu", "dynamo.backends.triton_gpu", "triton",
         "dynamo.convert_frame", "dynamo.symbolic_convert", "dynamo.guards", "dynamo.shapes"]


def run(source: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_dynamo_loads_none_of_the_heavy_modules():
    out = run(f"""
        import sys
        import dynamo
        print(sorted(name for name in {HEAVY!r} if name in sys.modules))
    """)
    assert out == "[]\n"


def test_deferred_names_and_backends_load_on_first_use():
    out = run("""
        import sys
        import numpy as np
        import dynamo
        from dynamo import mark_dynamic

        def f(x):
            return np.sin(x) * 2.0 + 1.0

        compiled = dynamo.compile(f)  # the default backend (tiered: numpy first), imported when the first graph compiles
        assert dynamo.compile(f, backend=dynamo.config.default_backend)._dynamo_callback is compiled._dynamo_callback
        print("dynamo.backends.numpy_cpu" in sys.modules)
        x = np.arange(5.0)
        mark_dynamic(x, 0)
        print(np.array_equal(compiled(x), f(x)), "dynamo.backends.numpy_cpu" in sys.modules)
        print(issubclass(dynamo.DynamicShapeError, dynamo.DynamoError), "numpy" in dynamo.list_backends())
    """)
    assert out == "False\nTrue True\nTrue True\n"


def test_a_program_that_compiles_nothing_loads_neither_the_tracer_nor_numpy(tmp_path):
    # `python -m dynamo run` of a script whose frames are all skipped (module code, the standard
    # library): the callback answers them without the tracer, so the script starts as fast as plain
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        print(json.dumps([1, 2]))
        print(sorted(name for name in {HEAVY + ["numpy"]!r} if name in sys.modules))
    """))
    done = subprocess.run([sys.executable, "-m", "dynamo", "run", str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[1, 2]\n['dynamo.convert_frame']\n"


def test_static_traces_do_not_import_sympy():
    # sympy's import costs more than the rest of dynamo and makes every later gc.collect() of the
    # program slower (its tens of thousands of objects): a trace with static shapes never needs it
    out = run("""
        import sys
        import numpy as np
        import dynamo

        def f(x, rows):
            a = np.clip(x, [0.0, 0.1, 0.2], 0.9)   # a constant list operand
            b = x[[0, 1]] + x[2]                      # integer and list indexes
            return a.sum() + b.sum() + rows[1]

        x = np.linspace(0.0, 1.0, 3)
        compiled = dynamo.compile(f, backend="eager")
        print(compiled(x, [1, 2]) == f(x, [1, 2]), dynamo.explain(f)(x, [1, 2]).graph_count)
        print("sympy" in sys.modules)
    """)
    assert out == "True 1\nFalse\n"


def test_a_captured_loop_whose_variable_is_unread_imports_no_sympy():
    # `for _ in range(steps)` (a time-step loop): its symbol is made only when the body reads the
    # variable, so the loop node needs no sympy; a body that reads it still gets one
    out = run("""
        import sys
        import numpy as np
        import dynamo
        from dynamo.fx_ir import count_loops
        from tests.support import compile_with_counter

        def simulate(pos, vel, steps):
            for _ in range(steps):
                vel = vel - 0.01 * pos
                pos = pos + 0.01 * vel
            return pos, vel

        def walk(path):
            for i in range(1, 100):
                path[i] = path[i - 1] + 1.0
            return path

        pos, vel = np.linspace(0.0, 1.0, 8), np.zeros(8)
        compiled, counter = compile_with_counter(simulate)
        got, want = compiled(pos, vel, 100), simulate(pos, vel, 100)
        print(all(np.array_equal(g, w) for g, w in zip(got, want)), [count_loops(g.graph) for g in counter.graphs])
        print("sympy" in sys.modules)
        compiled, counter = compile_with_counter(walk)
        print(np.array_equal(compiled(np.zeros(100)), walk(np.zeros(100))), [count_loops(g.graph) for g in counter.graphs])
        print("sympy" in sys.modules)
    """)
    assert out == "True [1]\nFalse\nTrue [1]\nTrue\n"


def test_a_loop_body_that_tests_its_variable_imports_no_sympy():
    # `if i % 50 == 0` (print every 50 steps) depends on the iteration: the loop runs in Python, and
    # deciding so needs no sympy (the variable's small form); `if i >= 0` holds for every iteration
    # and the loop is captured; `path[i]` needs the index in the graph: sympy then
    out = run("""
        import sys
        import numpy as np
        import dynamo
        from dynamo.fx_ir import count_loops
        from tests.support import compile_with_counter

        def fit(w, g, steps):
            seen = []
            for i in range(steps):
                w = w - 0.1 * g * w
                if i % 50 == 0:
                    seen.append(float(w.sum()))
            return w, seen

        def clipped(w, steps):
            for i in range(steps):
                if i >= 0 and (2 * i + 1) // 2 < steps and -i <= 0 and (i + 3) // 2 <= 52:
                    w = w * 0.5
            return w

        def walk(path):
            for i in range(1, 100):
                path[i] = path[i - 1] + 1.0
            return path

        w, g = np.linspace(1.0, 2.0, 4), np.full(4, 0.5)
        compiled, counter = compile_with_counter(fit)
        got, want = compiled(w, g, 120), fit(w, g, 120)
        print(np.array_equal(got[0], want[0]) and got[1] == want[1], "sympy" in sys.modules)
        compiled, counter = compile_with_counter(clipped)
        print(np.array_equal(compiled(w, 100), clipped(w, 100)), [count_loops(g.graph) for g in counter.graphs],
              "sympy" in sys.modules)
        compiled, counter = compile_with_counter(walk)
        print(np.array_equal(compiled(np.zeros(100)), walk(np.zeros(100))), [count_loops(g.graph) for g in counter.graphs],
              "sympy" in sys.modules)
    """)
    assert out == "True False\nTrue [1] False\nTrue [1] True\n"
