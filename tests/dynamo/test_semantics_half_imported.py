"""A frame compiled while numpy.random is half-imported (a signal handler or import hook of the user's
runs during `import numpy.random`): the compiler reads no attribute of the half-imported module."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from semantics_helpers import BACKENDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# numpy imports numpy.random on the first read of np.random (module __getattr__), whose
# `import numpy.random as random` reads np.random again until the import sets it: a RecursionError
# while the import runs. The hook below calls compiled functions right then, from inside the import,
# at the given submodule of numpy.random (early: nothing of it is there yet; late: its generator
# classes exist, np.random does not).
SCRIPT = textwrap.dedent("""
    import importlib.abc, json, sys
    import numpy as np
    import dynamo

    backend, during = sys.argv[1], sys.argv[2]
    assert "numpy.random" not in sys.modules

    def affine(x):
        return x * 2 + 1

    def two_draws(rng, x):
        return rng.random(2) + x, rng.random(2) + x

    compiled_affine = dynamo.compile(affine, backend=backend)
    seen = {}

    class CallsDuringTheImport(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == during and not seen:
                seen["compiled"] = compiled_affine(np.arange(3.0)).tolist()
                seen["plain"] = affine(np.arange(3.0)).tolist()
                generator = getattr(sys.modules.get("numpy.random._generator"), "Generator", None)
                if generator is not None:  # a generator made while numpy.random is half-imported
                    bits = sys.modules["numpy.random._pcg64"].PCG64(7)
                    got = dynamo.compile(two_draws, backend=backend)(generator(bits), 1.0)
                    want = two_draws(generator(sys.modules["numpy.random._pcg64"].PCG64(7)), 1.0)
                    seen["draws"] = [[a.tolist() for a in got], [a.tolist() for a in want]]
            return None

    sys.meta_path.insert(0, CallsDuringTheImport())
    import numpy.random
    rng = dynamo.compile(two_draws, backend=backend)(np.random.default_rng(3), 0.5)
    seen["after"] = [[a.tolist() for a in rng], [a.tolist() for a in two_draws(np.random.default_rng(3), 0.5)]]
    seen["later"] = compiled_affine(np.arange(4.0)).tolist()
    print(json.dumps(seen))
""")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("during", ["numpy.random._pickle", "numpy.random.mtrand"])
def test_a_frame_compiled_during_import_numpy_random(backend, during, tmp_path):
    script = tmp_path / "half_imported.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": ROOT, "DYNAMO_STRICT": "1"}  # an internal error raises
    done = subprocess.run([sys.executable, str(script), backend, during], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["compiled"] == seen["plain"] == [1.0, 3.0, 5.0]
    if during == "numpy.random.mtrand":
        got, want = seen["draws"]
        assert got == want and got[0] != got[1]  # two draws, not one merged
    got, want = seen["after"]
    assert got == want and got[0] != got[1]
    assert seen["later"] == [1.0, 3.0, 5.0, 7.0]
