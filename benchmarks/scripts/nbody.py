"""Gravitational n-body steps with NumPy broadcasting: a time-step loop whose variable the body
never reads (`for _ in range(steps)`)."""
import numpy as np

def accelerations(pos, mass, soft=0.1):
    dx = pos[None, :, 0] - pos[:, None, 0]
    dy = pos[None, :, 1] - pos[:, None, 1]
    r2 = dx * dx + dy * dy + soft * soft
    inv = r2 ** -1.5
    ax = (dx * inv) @ mass
    ay = (dy * inv) @ mass
    return np.stack([ax, ay], axis=1)

def simulate(n, steps, dt=0.01):
    rng = np.random.default_rng(3)
    pos = rng.normal(size=(n, 2))
    vel = np.zeros((n, 2))
    mass = np.ones(n) / n
    for _ in range(steps):
        vel += accelerations(pos, mass) * dt
        pos += vel * dt
    return pos

print(np.round(simulate(50, 100)[:3], 4))
