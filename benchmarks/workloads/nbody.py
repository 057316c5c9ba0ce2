"""One n-body acceleration step for 2048 bodies: all-pairs (N, N) differences, softened r^-3, matvecs."""
import numpy as np

NAME = "n-body forces, N=2048"
CALLS = 1


def fn(pos, mass):
    dx = pos[:, 0:1].T - pos[:, 0:1]
    dy = pos[:, 1:2].T - pos[:, 1:2]
    dz = pos[:, 2:3].T - pos[:, 2:3]
    inv_r3 = (dx**2 + dy**2 + dz**2 + 0.1**2) ** (-1.5)
    ax = (dx * inv_r3) @ mass
    ay = (dy * inv_r3) @ mass
    az = (dz * inv_r3) @ mass
    return np.hstack((ax, ay, az))


def inputs(rng, quick):
    n = 256 if quick else 2048
    return [rng.standard_normal((n, 3)), rng.random((n, 1))]


def traffic(args):
    return args[0].nbytes * 2 + args[1].nbytes


def numba_version(numba):
    @numba.njit(parallel=True)
    def forces(pos, mass):
        n = pos.shape[0]
        out = np.zeros((n, 3))
        for i in numba.prange(n):
            ax = ay = az = 0.0
            for j in range(n):
                dx, dy, dz = pos[i, 0] - pos[j, 0], pos[i, 1] - pos[j, 1], pos[i, 2] - pos[j, 2]
                inv_r3 = (dx * dx + dy * dy + dz * dz + 0.01) ** -1.5
                ax -= dx * inv_r3 * mass[j, 0]
                ay -= dy * inv_r3 * mass[j, 0]
                az -= dz * inv_r3 * mass[j, 0]
            out[i, 0], out[i, 1], out[i, 2] = ax, ay, az
        return out
    return forces
