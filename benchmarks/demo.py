"""The README's demo: compiles real NumPy functions, checks they return exactly what plain NumPy
returns, shows the guards dynamo installed, and times compiled against plain calls side by side.

Run: python3 benchmarks/demo.py   (sets up .venv/ on first use)
     python benchmarks/demo.py --installed --quick   (the dynamo installed in that Python, small sizes)

--installed uses the Python that runs the script as it is (a virtualenv where the wheel is installed)
instead of the checkout's .venv/; --quick runs small inputs and few timing rounds. The exit status
is 1 when a compiled result differs from plain NumPy's.
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


def workloads(rng, scale=1):
    """(label, function, arguments); `scale` divides the input sizes (--quick)."""
    points, rows, options = 200_000 // scale, 1024 // scale, 1_000_000 // scale
    return [
        (f"kmeans step, {points // 1000}k points", kmeans_step,
         (rng.standard_normal((points, 2)), rng.standard_normal((8, 2)))),
        (f"row softmax, {rows}x{rows} f32", softmax, (rng.standard_normal((rows, rows)).astype(np.float32),)),
        (f"Black-Scholes, {options // 1000}k options", black_scholes_call,
         (rng.uniform(50, 150, options), rng.uniform(50, 150, options), rng.uniform(0.1, 2, options), 0.02, 0.3)),
        ("trivial f(x) -> x", trivial, (1.0,)),
    ]


def main(quick: bool = False) -> int:
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
    scale, rounds = (16, 2) if quick else (1, 7)
    cases = workloads(rng, scale)
    for label, fn, args in cases:
        compiled = dynamo.compile(fn)
        result, expected = compiled(*args), fn(*args)
        same = type(result) is type(expected) and np.array_equal(result, expected)
        calls = (100_000 // scale) if fn is trivial else 3
        times = interleaved_medians({"plain": lambda: fn(*args), "compiled": lambda: compiled(*args)}, calls,
                                    rounds=rounds)
        rows.append((label, same, times["plain"], times["compiled"]))
    set_logs("")
    print_(f"\n{'workload':28} {'same result':>11} {'plain':>10} {'compiled':>10} {'speedup':>8}")
    for label, same, plain, compiled_time in rows:
        unit, scale = ("ns", 1e9) if plain < 1e-5 else ("ms", 1e3)
        print_(f"{label:28} {str(same):>11} {plain * scale:8.1f}{unit} {compiled_time * scale:8.1f}{unit} "
              f"{plain / compiled_time:7.2f}x")
    print_("\nWhat dynamo made of Black-Scholes (dynamo.explain):")
    print_(dynamo.explain(black_scholes_call)(*cases[2][2]))

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
    return 0 if all(same for _, same, _, _ in rows) else 1


if __name__ == "__main__":
    if "--installed" not in sys.argv[1:]:
        ensure_venv(("test",))
    import numpy as np

    sys.path.insert(0, str(HERE))
    sys.exit(main(quick="--quick" in sys.argv[1:]))
