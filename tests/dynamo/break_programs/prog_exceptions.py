"""Exceptions for control flow: a Cholesky factorization that retries with more jitter on
LinAlgError, a validator that raises and is caught, early exit from nested loops with a custom
exception, and StopIteration from a hand-driven iterator."""
import numpy as np


class Found(Exception):
    def __init__(self, where):
        super().__init__(where)
        self.where = where


def robust_cholesky(a, jitter=1e-10):
    attempts = 0
    while True:
        try:
            l = np.linalg.cholesky(a + jitter * np.eye(a.shape[0]))
            return l, attempts
        except np.linalg.LinAlgError:
            attempts += 1
            jitter *= 100
            print(f"  cholesky failed, jitter -> {jitter:.0e}")
            if attempts > 10:
                raise


def validate(x):
    if not np.isfinite(x).all():
        raise ValueError("non-finite input")
    if x.min() < 0:
        raise ValueError(f"negative entry {x.min():.2f}")
    return np.sqrt(x)


def find_first_large(grid, threshold):
    try:
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                if grid[i, j] > threshold:
                    raise Found((i, j))
    except Found as found:
        return found.where
    return None


def drain(values):
    it = iter(values)
    total = 0.0
    while True:
        try:
            v = next(it)
        except StopIteration:
            break
        total += v * 2
    return total


def main():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(5, 2))
    gram = v @ v.T                      # rank 2: needs jitter
    l, attempts = robust_cholesky(gram)
    print(f"cholesky after {attempts} retries, error {np.abs(l @ l.T - gram).max():.1e}")
    results = []
    for x in (np.array([1.0, 4.0]), np.array([1.0, -2.0]), np.array([np.nan, 1.0])):
        try:
            results.append(validate(x))
        except ValueError as error:
            print("invalid:", error)
            results.append(None)
    where = find_first_large(np.arange(20.0).reshape(4, 5), 12.5)
    print("first large at", where)
    print("drained", drain(np.arange(5.0)))
    return l, results, where


if __name__ == "__main__":
    RESULT = main()
