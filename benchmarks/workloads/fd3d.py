"""Three steps of a 3-D finite-difference wave update on a (204, 204, 26) float64 grid: 13-point Laplacian,
gradient damping scaled by a vertical profile, boundary copies; ~190 ops with shifted slices in one graph."""

import numpy as np

NAME = "3-D finite differences, 204x204x26 f64"
CALLS = 1


def laplacian13(u):
    c = u[2:-2, 2:-2, 2:-2]
    near = (u[1:-3, 2:-2, 2:-2] + u[3:-1, 2:-2, 2:-2] + u[2:-2, 1:-3, 2:-2]
            + u[2:-2, 3:-1, 2:-2] + u[2:-2, 2:-2, 1:-3] + u[2:-2, 2:-2, 3:-1])
    far = (u[:-4, 2:-2, 2:-2] + u[4:, 2:-2, 2:-2] + u[2:-2, :-4, 2:-2]
           + u[2:-2, 4:, 2:-2] + u[2:-2, 2:-2, :-4] + u[2:-2, 2:-2, 4:])
    return -7.5 * c + (4.0 / 3.0) * near - (1.0 / 12.0) * far


def fn(u, v, z):
    dt, dx = 0.1, 1.0
    damping = 0.01 * np.exp(-z / 8.0)  # one value per level: this profile once tipped the plan to axis 2
    for _ in range(3):
        gx = u[3:-1, 2:-2, 2:-2] - u[1:-3, 2:-2, 2:-2]
        gy = u[2:-2, 3:-1, 2:-2] - u[2:-2, 1:-3, 2:-2]
        gz = u[2:-2, 2:-2, 3:-1] - u[2:-2, 2:-2, 1:-3]
        damp = damping[2:-2] * np.sqrt(gx * gx + gy * gy + gz * gz + 1e-12)
        vn = v.copy()
        vn[2:-2, 2:-2, 2:-2] = v[2:-2, 2:-2, 2:-2] + dt / (dx * dx) * laplacian13(u) - dt * damp
        un = u.copy()
        un[2:-2, 2:-2, 2:-2] = u[2:-2, 2:-2, 2:-2] + dt * vn[2:-2, 2:-2, 2:-2]
        un[:, :, :2] = un[:, :, -4:-2]  # periodic in z, reflecting in x and y
        un[:, :, -2:] = un[:, :, 2:4]
        un[:2] = un[2:4]
        un[-2:] = un[-4:-2]
        u, v = un, vn
    return u, v


def inputs(rng, quick):
    shape = (81, 81, 11) if quick else (204, 204, 26)
    return [rng.random(shape), rng.random(shape), np.linspace(0.0, 25.0, shape[2])]


def traffic(args):
    return 3 * 4 * args[0].nbytes  # per step: read u and v, write un and vn
