"""Conway's game of life on a NumPy grid of 0/1 ints, 100 generations (a short script as people
write them: one function called from a module-level loop)."""
import numpy as np

def step(Z):
    N = (Z[0:-2, 0:-2] + Z[0:-2, 1:-1] + Z[0:-2, 2:] +
         Z[1:-1, 0:-2]                + Z[1:-1, 2:] +
         Z[2:, 0:-2] + Z[2:, 1:-1] + Z[2:, 2:])
    birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
    survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
    Z[...] = 0
    Z[1:-1, 1:-1][birth | survive] = 1
    return Z

rng = np.random.default_rng(0)
Z = rng.integers(0, 2, (64, 64))
for i in range(100):
    Z = step(Z)
print(Z.sum())
