"""k-means with a data-dependent stopping rule (no assignment changed, or the centers moved
less than a tolerance), on deterministic data."""
import numpy as np


def make_blobs(seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0]])
    points = [c + rng.normal(scale=0.8, size=(60, 2)) for c in centers]
    return np.concatenate(points)


def assign(x, means):
    d = ((x[:, None, :] - means[None, :, :]) ** 2).sum(axis=2)
    return np.argmin(d, axis=1)


def update(x, labels, k):
    return np.stack([x[labels == j].mean(axis=0) for j in range(k)])


def kmeans(x, k, tol=1e-6, max_iter=100):
    means = x[:k].copy()
    labels = assign(x, means)
    history = []
    for it in range(max_iter):
        new_means = update(x, labels, k)
        shift = np.abs(new_means - means).max()
        means = new_means
        new_labels = assign(x, means)
        changed = int((new_labels != labels).sum())
        labels = new_labels
        history.append(changed)
        print(f"iteration {it}: {changed} points moved, centers shifted {shift:.4f}")
        if changed == 0 and shift < tol:
            break
    inertia = ((x - means[labels]) ** 2).sum()
    return means, labels, inertia, history


def main():
    x = make_blobs()
    means, labels, inertia, history = kmeans(x, 3)
    order = np.argsort(means[:, 0] + 10 * means[:, 1])
    print("centers:", np.round(means[order], 3).tolist())
    print(f"inertia {inertia:.4f} after {len(history)} iterations")
    return means, labels, inertia, history


if __name__ == "__main__":
    RESULT = main()
