"""Loops the C emitter refuses under backend "c": the per-iteration calls of c's compiled body and the
numpy backend's inlined loop are timed in turn and the faster kept; both give plain NumPy's bits."""
from __future__ import annotations

import warnings

import numpy as np

import c_helpers
import dynamo
from c_helpers import bits
from test_c_loops import Recorder

pytestmark = c_helpers.needs_compiler

rng = np.random.default_rng(11)


def self_energies(neigh_idx, dH, G, D, Sigma):
    """NPBench's scattering_self_energies: complex 3x3 products under a branch on the loop indices."""
    for k in range(G.shape[0]):
        for E in range(G.shape[1]):
            for q in range(D.shape[0]):
                for w in range(D.shape[1]):
                    for i in range(D.shape[-2]):
                        for j in range(D.shape[-1]):
                            for a in range(neigh_idx.shape[0]):
                                for b in range(neigh_idx.shape[1]):
                                    if E - w >= 0:
                                        dHG = G[k, E - w, neigh_idx[a, b]] @ dH[a, b, i]
                                        dHD = dH[a, b, j] * D[q, w, a, b, i, j]
                                        Sigma[k, E, a] += dHG @ dHD


def complex_array(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def energies_inputs():
    nkz, ne, nqz, nw, n3d, na, nb, norb = 2, 3, 2, 2, 2, 3, 2, 3
    neigh_idx = rng.integers(0, na, (na, nb)).astype(np.int32)
    return (neigh_idx, complex_array(na, nb, n3d, norb, norb), complex_array(nkz, ne, na, norb, norb),
            complex_array(nqz, nw, na, nb, n3d, n3d), complex_array(nkz, ne, na, norb, norb))


def test_a_refused_complex_nest_runs_both_ways_bitwise_and_keeps_the_faster():
    rec = Recorder()
    compiled = dynamo.compile(self_energies, backend=rec)
    inputs = energies_inputs()
    for _ in range(6):  # two timed calls of each side, then the chosen one
        plain_args = [a.copy() for a in inputs]
        ours = [a.copy() for a in inputs]
        assert bits(compiled(*ours)) == bits(self_energies(*plain_args))
        for p, o in zip(plain_args, ours):
            assert bits(o) == bits(p)
    outer = rec.native_loops()[0]
    assert outer.refused and "complex128" in " ".join(outer.refused.values())
    chooser = outer.python_run
    assert chooser is not None and chooser.calls == 4 and chooser.chosen in ("c", "numpy")
    assert chooser.candidates[1].run is not None  # the numpy backend's loop was made and timed


def log_scaled(x, z, out):
    for i in range(x.shape[0]):
        out[i] = np.log(x[i]) * z[i]
    return out


def test_warnings_of_a_refused_loop_are_plain_numpys_whichever_side_runs():
    x, z = np.array([0.0, 1.0, 2.0]), np.array([1j, 2, 3])
    rec = Recorder()
    compiled = dynamo.compile(log_scaled, backend=rec)
    seen = {}
    for name, fn in (("plain", log_scaled), ("c", compiled)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            results = [fn(x, z, np.zeros(3, complex)) for _ in range(6)]
        seen[name] = ([(str(w.message), w.lineno) for w in caught], [bits(r) for r in results])
    assert seen["c"] == seen["plain"]
    assert len(seen["plain"][0]) == 2  # log's divide by zero and the multiply's invalid value, once each
    loop = rec.native_loops()[0]
    assert loop.refused and loop.python_run.calls == 4


def scaled_into(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0 + 1.0
    return out


def backend_lines(report):
    return [line.strip() for line in str(report).splitlines() if line.strip().startswith("backend:")]


def test_explain_says_how_each_loop_ran_once_it_has_run():
    # explain() prints after the call: a loop that lowered says it ran as C, a refused one why not
    # (it used to say that every loop node "runs as NumPy code", C loop or not)
    where = f"{__file__}:{scaled_into.__code__.co_firstlineno + 1}"
    real = rng.standard_normal(50)
    lines = backend_lines(dynamo.explain(scaled_into, backend="c")(real, np.empty_like(real)))
    assert lines == [f"backend: the loop from {where} runs as one C loop"]
    wide = real.astype(np.longdouble)
    lines = backend_lines(dynamo.explain(scaled_into, backend="c")(wide, np.empty_like(wide)))
    assert lines == [f"backend: the loop from {where} runs as a Python loop over its compiled body: "
                     f"an array of dtype {wide.dtype}"]
