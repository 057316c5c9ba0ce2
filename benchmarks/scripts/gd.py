"""Gradient descent for least squares, printing the loss every 50 steps (the step loop reads its
variable: `if i % 50 == 0`)."""
import numpy as np

def loss(w, X, y):
    r = X @ w - y
    return 0.5 * np.mean(r * r)

def grad(w, X, y):
    return X.T @ (X @ w - y) / len(y)

def fit(X, y, lr=0.1, steps=200):
    w = np.zeros(X.shape[1])
    for i in range(steps):
        w = w - lr * grad(w, X, y)
        if i % 50 == 0:
            print(i, round(float(loss(w, X, y)), 6))
    return w

rng = np.random.default_rng(1)
X = rng.normal(size=(200, 5))
true = np.arange(5.0)
y = X @ true + 0.01 * rng.normal(size=200)
w = fit(X, y)
print(np.round(w, 3))
