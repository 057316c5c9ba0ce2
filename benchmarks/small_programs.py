"""Small ordinary programs (the kind people write first), plain and compiled side by side: steady
time per call, the first call (compiles included), and how often each function was compiled.

A JIT must never make such a program slower: the targets are at least 0.95x plain in steady state
and no function compiled more than twice when only values change between calls.

Run: python3 benchmarks/small_programs.py [--quick] [--backend numpy --backend tiered]   (sets up .venv/)
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / ".ci"))
from bootstrap import ensure_venv  # noqa: E402


# ---- the programs: each `make(np)` returns (the function compiled, a driver calling it once) ------

def game_of_life(np):
    """Conway's game of life on a list of lists of 0/1 ints: every call sees new cell values."""
    def life_step(grid):
        rows, cols = len(grid), len(grid[0])
        new = []
        for i in range(rows):
            row = []
            for j in range(cols):
                alive = 0
                for di in (-1, 0, 1):
                    for dj in (-1, 0, 1):
                        if di or dj:
                            alive += grid[(i + di) % rows][(j + dj) % cols]
                row.append(1 if alive == 3 or (alive == 2 and grid[i][j]) else 0)
            new.append(row)
        return new

    rng = np.random.default_rng(1)
    state = {"grid": rng.integers(0, 2, (24, 24)).tolist()}

    def drive(fn):
        state["grid"] = fn(state["grid"])
        return state["grid"]

    return life_step, drive


def mandelbrot(np):
    """Escape time of each point of a grid, one complex argument per call."""
    def escape(c, max_iter=40):
        z = 0j
        for n in range(max_iter):
            z = z * z + c
            if abs(z) > 2.0:
                return n
        return max_iter

    points = [complex(x, y) for y in np.linspace(-1.2, 1.2, 12) for x in np.linspace(-2.0, 0.6, 16)]

    def drive(fn):
        return [fn(c) for c in points]

    return escape, drive


def gray_scott(np):
    """Reaction-diffusion on a 128x128 grid, arrays updated in place through interior views."""
    def gs_step(U, V, Du, Dv, F, k):
        u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]
        Lu = U[:-2, 1:-1] + U[2:, 1:-1] + U[1:-1, :-2] + U[1:-1, 2:] - 4 * u
        Lv = V[:-2, 1:-1] + V[2:, 1:-1] + V[1:-1, :-2] + V[1:-1, 2:] - 4 * v
        uvv = u * v * v
        u += Du * Lu - uvv + F * (1 - u)
        v += Dv * Lv + uvv - (F + k) * v

    n = 128
    rng = np.random.default_rng(7)  # noise everywhere, as in most demos (no subnormal floats either)
    U, V = 1.0 - 0.02 * rng.random((n, n)), 0.02 * rng.random((n, n))
    U[n // 2 - 8:n // 2 + 8, n // 2 - 8:n // 2 + 8] = 0.5
    V[n // 2 - 8:n // 2 + 8, n // 2 - 8:n // 2 + 8] = 0.25
    start = (U.copy(), V.copy())
    state = {"t": 0}

    def drive(fn):
        state["t"] += 1
        if state["t"] % 200 == 0:  # start over now and then: values stay in range
            U[...], V[...] = start
        F = 0.035 + 0.0001 * (state["t"] % 7)  # a parameter swept by the program
        for _ in range(4):
            fn(U, V, 0.16, 0.08, F, 0.065)
        return U

    return gs_step, drive


GRAY_SCOTT_GLOBALS = """
n = 128
U, V = np.ones((n, n)), np.zeros((n, n))
u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]
Du, Dv, F, k = 0.16, 0.08, 0.035, 0.065


def laplacian(Z):
    return Z[:-2, 1:-1] + Z[2:, 1:-1] + Z[1:-1, :-2] + Z[1:-1, 2:] - 4 * Z[1:-1, 1:-1]


def update(steps):
    global u, v
    for _ in range(steps):
        uvv = u * v * v
        u += Du * laplacian(U) - uvv + F * (1 - u)
        v += Dv * laplacian(V) + uvv - (F + k) * v
"""


def gray_scott_globals(np):
    """Gray-Scott as demos write it: U, V and their interior views u, v are globals written in place."""
    namespace = {"np": np}
    exec(compile(GRAY_SCOTT_GLOBALS, "<gray_scott_globals>", "exec"), namespace)
    U, V = namespace["U"], namespace["V"]
    rng = np.random.default_rng(8)
    U -= 0.02 * rng.random(U.shape)
    V += 0.02 * rng.random(V.shape)
    U[56:72, 56:72], V[56:72, 56:72] = 0.5, 0.25
    start = (U.copy(), V.copy())
    state = {"t": 0}

    def drive(fn):
        state["t"] += 1
        if state["t"] % 50 == 0:  # start over now and then: values stay in range
            U[...], V[...] = start
        fn(4)
        return U

    return namespace["update"], drive


def particles(np):
    """Particles of a small vector class moved by a force field, one step per call."""
    class Vec:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def __add__(self, other):
            return Vec(self.x + other.x, self.y + other.y)

        def __mul__(self, s):
            return Vec(self.x * s, self.y * s)

    class Particle:
        def __init__(self, pos, vel):
            self.pos, self.vel = pos, vel

    def move(p, dt):
        force = Vec(-p.pos.x, -p.pos.y) * 0.5
        p.vel = (p.vel + force * dt) * 0.99
        p.pos = p.pos + p.vel * dt

    rng = np.random.default_rng(2)
    swarm = [Particle(Vec(*rng.standard_normal(2)), Vec(0.0, 0.0)) for _ in range(40)]

    def drive(fn):
        for p in swarm:
            fn(p, 0.01)
        return [(p.pos.x, p.pos.y) for p in swarm]

    return move, drive


def particle_masks(np):
    """A particle system as a class of arrays whose step bounces and respawns particles through
    boolean masks (each masked write a graph break: three graphs per call)."""
    class Particles:
        def __init__(self, n, seed):
            rng = np.random.default_rng(seed)
            self.pos = rng.random((n, 2))
            self.vel = rng.standard_normal((n, 2)) * 0.5
            self.life = rng.random(n) * 2.0

        def step(self, dt):
            self.vel[:, 1] -= 9.8 * dt
            self.pos += self.vel * dt
            out = (self.pos < 0.0) | (self.pos > 1.0)
            self.vel[out] *= -0.8
            np.clip(self.pos, 0.0, 1.0, out=self.pos)
            self.life -= dt
            dead = self.life <= 0.0
            self.pos[dead] = 0.5
            self.vel[dead] = 0.0
            self.life[dead] = 2.0
            return self.pos

    system = Particles(24, 13)

    def drive(fn):
        for _ in range(4):
            fn(system, 0.01)
        return system.pos.copy()

    return Particles.step, drive


def nested_helper(np):
    """A function with a helper defined inside it, called after a graph break (a log line)."""
    sink = io.StringIO()

    def smooth(signal, width):
        def window_mean(x):
            c = np.cumsum(x)
            return (c[width:] - c[:-width]) / width
        print("smoothing", len(signal), file=sink)  # a graph break
        out = window_mean(signal)
        return out[width:] - window_mean(out) * 0.1

    rng = np.random.default_rng(3)
    signal = rng.standard_normal(2000)

    def drive(fn):
        sink.seek(0)
        sink.truncate()
        return fn(signal, 5)

    return smooth, drive


def safe_log_stats(np):
    """Statistics computed before a break and handed on (NumPy float temporaries), errstate."""
    def normalize(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(x)
        mean, std = logs.mean(), logs.std()
        if std > 0:  # a branch on a value: a graph break
            return (logs - mean) / std
        return logs - mean

    rng = np.random.default_rng(4)
    data = [rng.uniform(0.5, 2.0, 256) for _ in range(16)]
    state = {"i": 0}

    def drive(fn):
        state["i"] += 1
        return fn(data[state["i"] % len(data)])

    return normalize, drive


def coarse_grain(np):
    """Block sums with np.add.reduceat over both axes (a bound method made on each access)."""
    def coarse(Z, b):
        i = np.arange(0, Z.shape[0], b)
        j = np.arange(0, Z.shape[1], b)
        return np.add.reduceat(np.add.reduceat(Z, i, axis=0), j, axis=1)

    rng = np.random.default_rng(5)
    Z = rng.standard_normal((96, 96))

    def drive(fn):
        return fn(Z, 4)

    return coarse, drive


def mouse_follow(np):
    """A global settings dict changed by an event handler between frames."""
    settings = {"x": 0.0, "y": 0.0, "gain": 0.2}

    def follow(points):
        target = np.array([settings["x"], settings["y"]])
        return points + (target - points) * settings["gain"]

    rng = np.random.default_rng(6)
    pts = rng.standard_normal((64, 2))
    state = {"t": 0}

    def drive(fn):
        state["t"] += 1
        settings["x"], settings["y"] = np.cos(state["t"] * 0.1), np.sin(state["t"] * 0.1)  # the event
        return fn(pts)

    # `settings` is a global of the compiled function in a real program: put it there
    follow.__globals__["settings"] = settings
    return follow, drive


def local_class(np):
    """A small class defined inside the function (a new class object per call), used after a log line."""
    sink = io.StringIO()

    def normalize_rows(X):
        class Scaler:
            def __init__(self, lo, hi):
                self.lo, self.span = lo, hi - lo

            def apply(self, Y):
                return (Y - self.lo) / self.span

        print("rows", len(X), file=sink)  # a graph break
        scaler = Scaler(X.min(axis=1, keepdims=True), X.max(axis=1, keepdims=True))
        return scaler.apply(X)

    rng = np.random.default_rng(9)
    X = rng.standard_normal((64, 32))

    def drive(fn):
        sink.seek(0)
        sink.truncate()
        return fn(X)

    return normalize_rows, drive


def per_object_keys(np):
    """Objects that each store a lambda of their own (`self.key = lambda ...`), applied in turn."""
    class Channel:
        def __init__(self, gain):
            self.key = lambda v: np.tanh(v * gain)

    def apply_key(channel, x):
        return channel.key(x) - x

    rng = np.random.default_rng(10)
    x = rng.standard_normal(256)
    channels = [Channel(g) for g in (0.5, 1.0, 1.5, 2.0)]
    state = {"i": 0}

    def drive(fn):
        state["i"] += 1
        return fn(channels[state["i"] % len(channels)], x)

    return apply_key, drive


def local_vectors(np):
    """A particle step whose small vector class is defined inside the function (a new class per call)."""
    def step(pos, vel, dt):
        class Vec:
            def __init__(self, x, y):
                self.x, self.y = x, y

            def __add__(self, other):
                return Vec(self.x + other.x, self.y + other.y)

            def __mul__(self, s):
                return Vec(self.x * s, self.y * s)

        p = Vec(pos[:, 0], pos[:, 1]) + Vec(vel[:, 0], vel[:, 1]) * dt
        return np.stack([p.x, p.y], axis=1)

    rng = np.random.default_rng(11)
    state = {"pos": rng.standard_normal((256, 2)), "t": 0}
    vel = rng.standard_normal((256, 2))

    def drive(fn):
        state["t"] += 1
        state["pos"] = fn(state["pos"], vel, 0.01 * (1 + state["t"] % 5))
        return state["pos"]

    return step, drive


def local_records(np):
    """A dataclass and a namedtuple defined inside the function for its intermediate results."""
    import collections
    import dataclasses

    def summarize(x, scale):
        @dataclasses.dataclass
        class Stats:
            mean: float
            spread: float

        Bounds = collections.namedtuple("Bounds", "low high")
        s = Stats(x.mean() * scale, x.std() * scale)
        b = Bounds(x.min(), x.max())
        return (x - s.mean) / s.spread, b.high - b.low

    rng = np.random.default_rng(12)
    data = [rng.standard_normal(512) for _ in range(8)]
    state = {"i": 0}

    def drive(fn):
        state["i"] += 1
        return fn(data[state["i"] % len(data)], 1.0 + 0.1 * (state["i"] % 3))

    return summarize, drive


PROGRAMS = [game_of_life, mandelbrot, gray_scott, gray_scott_globals, particles, particle_masks, nested_helper,
            safe_log_stats, coarse_grain, mouse_follow, local_class, per_object_keys, local_vectors, local_records]


# ---- measuring --------------------------------------------------------------------------------------

def compiles_per_code(callback, start: int, fn) -> Counter:
    """Compiled versions made since `start`, per code object of fn (its resume functions included);
    not the entries that run the original code where a varying dimension is 0 or 1 long (no trace)."""
    from dynamo.exc import Category

    counts: Counter = Counter()
    for code, frame in callback.compiled_frames[start:]:
        if getattr(frame.fallback_reason, "category", None) == Category.SMALL_VARYING_SIZE:
            continue
        if code.co_filename == fn.__code__.co_filename and code.co_qualname.startswith(fn.__code__.co_qualname):
            counts[code] += 1  # (two resume functions at one line share a qualified name)
    return counts


def same(np, a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(np, x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def measure(np, dynamo, make, rounds: int, calls: int, backend: str | None = None) -> dict:
    from dynamo.explain import dropped_versions
    from harness import interleaved_samples, median_ratios

    fn, drive = make(np)
    plain_fn, plain_drive = make(np)  # its own state: both run the same sequence of calls
    dynamo.reset()  # its code objects are those of the program's run under another backend: compiled afresh
    compiled = dynamo.compile(fn, backend=backend)
    callback = compiled._dynamo_callback
    start = len(callback.compiled_frames)
    t0 = time.process_time()
    first = drive(compiled)
    first_seconds = time.process_time() - t0
    t0 = time.process_time()
    expected = plain_drive(plain_fn)
    plain_first = time.process_time() - t0
    agree = same(np, first, expected)
    for _ in range(3):  # a few more calls: the values change, the results must still agree
        agree = agree and same(np, drive(compiled), plain_drive(plain_fn))
    # CPU time of this process (its pool threads included): the machine's other load adds none
    samples = interleaved_samples({"plain": lambda: plain_drive(plain_fn), "compiled": lambda: drive(compiled)},
                                  calls, rounds=rounds, clock=time.process_time)
    counts = compiles_per_code(callback, start, fn)
    given_up = [why for code, why in callback.given_up if code.co_qualname.startswith(fn.__code__.co_qualname)]
    return {
        "name": make.__name__, "backend": backend or dynamo.config.default_backend, "same": agree,
        "plain": statistics.median(samples["plain"]),
        "compiled": statistics.median(samples["compiled"]), "ratio": median_ratios(samples, "plain")["compiled"],
        "first": first_seconds, "plain_first": plain_first,
        "compiles": sum(counts.values()), "max_per_code": max(counts.values(), default=0),
        "given_up": len(given_up), "dropped": sum(1 for line in dropped_versions(callback) if line.startswith(fn.__code__.co_qualname)),
    }


def main() -> None:
    import numpy as np

    import dynamo

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--timed-turns", type=int, default=None,
                        help="dynamo.config.timed_turns (drop compiled versions slower than the original)")
    parser.add_argument("--backend", action="append", default=None,
                        help="a backend to compile with (repeat it: each program under each, side by side)")
    options = parser.parse_args()
    if options.timed_turns is not None:
        dynamo.config.timed_turns = options.timed_turns
    rounds, calls = (3, 2) if options.quick else (15, 5)
    print(f"small programs: Python {sys.version.split()[0]}, NumPy {np.__version__}, "
          f"backends {', '.join(options.backend or [dynamo.config.default_backend])}, "
          f"timed_turns={dynamo.config.timed_turns}\n", flush=True)
    header = (f"{'program':16} {'backend':8} {'same':>5} {'plain':>10} {'compiled':>10} {'speed':>6} "
              f"{'1st plain':>10} {'1st comp.':>10} {'compiles':>8} {'max/fn':>6} {'gave up':>7} {'dropped':>7}")
    print(header)
    rows = []
    for make, backend in [(make, backend) for make in PROGRAMS for backend in options.backend or [None]]:
        row = measure(np, dynamo, make, rounds, calls, backend)
        rows.append(row)
        print(f"{row['name']:16} {row['backend'][:8]:8} {str(row['same']):>5} {row['plain'] * 1e3:8.3f}ms "
              f"{row['compiled'] * 1e3:8.3f}ms {row['ratio']:5.2f}x {row['plain_first'] * 1e3:8.2f}ms "
              f"{row['first'] * 1e3:8.1f}ms {row['compiles']:8d} {row['max_per_code']:6d} {row['given_up']:7d} "
              f"{row['dropped']:7d}", flush=True)
    slow = [f"{r['name']} ({r['backend']})" for r in rows if r["ratio"] < 0.95]
    many = [f"{r['name']} ({r['backend']})" for r in rows if r["max_per_code"] > 2]
    print(f"\nsteady state under 0.95x plain: {', '.join(slow) or 'none'}; "
          f"a function compiled more than twice: {', '.join(many) or 'none'}")
    print("plain, compiled: process CPU time per call, median of the interleaved rounds; speed: median over "
          "rounds of plain / compiled in that round; "
          "max/fn: most versions of one code object (each resume function counted apart); "
          "gave up: frames that stopped recompiling for new values and run their original code; "
          "dropped: compiled versions that timed turns found slower than the original")


if __name__ == "__main__":
    ensure_venv(("test",))
    sys.path.insert(0, str(HERE))
    main()
