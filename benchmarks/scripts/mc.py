"""Monte Carlo estimate of pi for three sample counts (an int argument that changes between calls)
and a random walk drawn one step at a time."""
import numpy as np

def estimate_pi(n, rng):
    x = rng.random(n)
    y = rng.random(n)
    return 4.0 * np.count_nonzero(x * x + y * y <= 1.0) / n

def walk(steps, rng):
    pos = 0
    path = np.empty(steps)
    for i in range(steps):
        pos += 1 if rng.random() < 0.5 else -1
        path[i] = pos
    return path

rng = np.random.default_rng(2)
for n in (1000, 10000, 100000):
    print(n, estimate_pi(n, rng))
p = walk(2000, rng)
print(p.min(), p.max())
