"""The README's demo: compiles real NumPy functions, checks they return exactly what plain NumPy
returns, shows the guards dynamo installed, and times compiled against plain calls side by side.

Run: python3 benchmarks/demo.py   (sets up .venv/ on first use)
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / ".ci"))
from bootstrap import ensure_venv  # noqa: E402


def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def black_scholes_call(S, K, T, r, sigma):
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    cdf = lambda z: 0.5 * (1.0 + np.tanh(0.7978845608 * (z + 0.044715 * z**3)))  # noqa: E731
    return S * cdf(d1) - K * np.exp(-r * T) * cdf(d2)


def trivial(x):
    return x


def workloads(rng):
    return [
        ("kmeans step, 200k points", kmeans_step, (rng.standard_normal((200_000, 2)), rng.standard_normal((8, 2)))),
        ("row softmax, 1024x1024 f32", softmax, (rng.standard_normal((1024, 1024)).astype(np.float32),)),
        ("Black-Scholes, 1M options", black_scholes_call,
         (rng.uniform(50, 150, 1_000_000), rng.uniform(50, 150, 1_000_000), rng.uniform(0.1, 2, 1_000_000), 0.02, 0.3)),
        ("trivial f(x) -> x", trivial, (1.0,)),
    ]


def main() -> None:
    import functools

    import dynamo
    from dynamo.logs import set_logs
    from harness import interleaved_medians

    print_ = functools.partial(print, flush=True)  # keep the order with the log lines on stderr
    rng = np.random.default_rng(0)
    print_(f"dynamo demo: Python {sys.version.split()[0]}, NumPy {np.__version__}, backends {dynamo.list_backends()}\n")
    print_("Guards installed on first call (DYNAMO_LOGS=guards):")
    set_logs("guards")
    rows = []
    for label, fn, args in workloads(rng):
        compiled = dynamo.compile(fn)
        result, expected = compiled(*args), fn(*args)
        same = type(result) is type(expected) and np.array_equal(result, expected)
        calls = 100_000 if fn is trivial else 3
        times = interleaved_medians({"plain": lambda: fn(*args), "compiled": lambda: compiled(*args)}, calls, rounds=7)
        rows.append((label, same, times["plain"], times["compiled"]))
    set_logs("")
    print_(f"\n{'workload':28} {'same result':>11} {'plain':>10} {'compiled':>10} {'speedup':>8}")
    for label, same, plain, compiled_time in rows:
        unit, scale = ("ns", 1e9) if plain < 1e-5 else ("ms", 1e3)
        print_(f"{label:28} {str(same):>11} {plain * scale:8.1f}{unit} {compiled_time * scale:8.1f}{unit} "
              f"{plain / compiled_time:7.2f}x")
    print_("\nWhat dynamo made of Black-Scholes (dynamo.explain):")
    print_(dynamo.explain(black_scholes_call)(*workloads(rng)[2][2]))

    def branchy(x):
        y = np.tanh(x) * 2
        if y.sum() > 0:  # a data-dependent branch: a graph break
            y = y - y.mean()
        return y * y

    print_("\nA data-dependent branch (dynamo.explain):")
    report = dynamo.explain(branchy)(rng.standard_normal(1000))
    print_(report)
    page = HERE / "results" / "demo_explain.html"
    page.parent.mkdir(exist_ok=True)
    page.write_text(report.to_html(title="dynamo explain: the demo's branchy(x)"), encoding="utf-8")
    print_(f"\nThe same report as a page (source coloured by what was compiled, graph pictures): {page}")

if __name__ == "__main__":
    ensure_venv(("test",))
    import numpy as np

    sys.path.insert(0, str(HERE))
    main()
