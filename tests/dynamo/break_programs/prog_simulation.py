"""A heat-diffusion and particle simulation that prints its state as it goes, stops on a
data-dependent condition, and keeps a log in a dict."""
import numpy as np

STATS = {"steps": 0, "reports": []}


def laplacian(u):
    out = np.zeros_like(u)
    out[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    return out


def diffuse(u, alpha, steps):
    for step in range(steps):
        u = u + alpha * laplacian(u)
        STATS["steps"] += 1
        if step % 25 == 0:
            total = u.sum()
            print(f"step {step:3d}: heat {total:.6f}, peak {u.max():.4f}")
            STATS["reports"].append(round(float(total), 6))
        if u.max() < 0.05:
            print(f"cooled down at step {step}")
            break
    return u


def particles(n, steps, dt=0.01):
    pos = np.stack([np.cos(np.linspace(0, 2 * np.pi, n)), np.sin(np.linspace(0, 2 * np.pi, n))], axis=1)
    vel = np.zeros_like(pos)
    energy = []
    for step in range(steps):
        r = np.sqrt((pos ** 2).sum(axis=1, keepdims=True))
        acc = -pos / (r ** 3 + 0.1)
        vel = vel + dt * acc
        pos = pos + dt * vel
        e = 0.5 * (vel ** 2).sum() - (1 / (r + 0.1)).sum()
        energy.append(e)
    drift = abs(energy[-1] - energy[0])
    print(f"energy drift {drift:.3e} over {steps} steps")
    return pos, np.array(energy)


def main():
    u = np.zeros((24, 24))
    u[10:14, 10:14] = 1.0
    u = diffuse(u, 0.2, 200)
    pos, energy = particles(16, 40)
    print("final heat", round(float(u.sum()), 6), "steps", STATS["steps"])
    return u, pos, energy, STATS


if __name__ == "__main__":
    RESULT = main()
