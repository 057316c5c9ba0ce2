"""Iterative solvers with tolerance loops: Jacobi and conjugate gradient on a Poisson system."""
import numpy as np


def poisson_matrix(n):
    a = np.zeros((n, n))
    np.fill_diagonal(a, 4.0)
    idx = np.arange(n - 1)
    a[idx, idx + 1] = -1.0
    a[idx + 1, idx] = -1.0
    return a


def jacobi(a, b, tol=1e-8, max_iter=5000):
    d = np.diag(a)
    r = a - np.diagflat(d)
    x = np.zeros_like(b)
    for it in range(max_iter):
        x_new = (b - r @ x) / d
        err = np.linalg.norm(x_new - x, ord=np.inf)
        x = x_new
        if err < tol:
            return x, it + 1
    raise RuntimeError("jacobi did not converge")


def conjugate_gradient(a, b, tol=1e-10):
    x = np.zeros_like(b)
    r = b - a @ x
    p = r.copy()
    rs = r @ r
    steps = 0
    while np.sqrt(rs) > tol:
        ap = a @ p
        alpha = rs / (p @ ap)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
        steps += 1
        if steps % 10 == 0:
            print(f"  cg step {steps}: residual {np.sqrt(rs):.3e}")
    return x, steps


def main():
    n = 40
    a = poisson_matrix(n)
    b = np.sin(np.linspace(0, np.pi, n))
    xj, nj = jacobi(a, b)
    print(f"jacobi: {nj} iterations, residual {np.linalg.norm(a @ xj - b):.2e}")
    xc, nc = conjugate_gradient(a, b)
    print(f"cg: {nc} iterations, residual {np.linalg.norm(a @ xc - b):.2e}")
    print("agree:", bool(np.allclose(xj, xc, atol=1e-6)))
    return xj, xc, nj, nc


if __name__ == "__main__":
    RESULT = main()
