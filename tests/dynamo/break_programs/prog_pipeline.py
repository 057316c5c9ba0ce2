"""A data pipeline: a generator of batches, per-batch statistics in dicts and f-strings, a
running normalization with closures, and a summary sorted by a key function."""
import numpy as np


def batches(data, size):
    for start in range(0, len(data), size):
        yield start // size, data[start:start + size]


def make_normalizer():
    count = 0
    mean = None

    def update(batch):
        nonlocal count, mean
        n = len(batch)
        m = batch.mean(axis=0)
        mean = m if mean is None else (mean * count + m * n) / (count + n)
        count += n
        return batch - mean

    return update


def main():
    data = np.cos(np.arange(300.0)).reshape(100, 3) * np.array([1.0, 10.0, 100.0])
    normalize = make_normalizer()
    stats = []
    for index, batch in batches(data, 16):
        centered = normalize(batch)
        spread = centered.std(axis=0)
        entry = {"batch": index, "max": float(np.abs(centered).max()), "spread": spread}
        stats.append(entry)
        print(f"batch {index:2d}: rows {len(batch):2d}, max {entry['max']:9.4f}")
    worst = sorted(stats, key=lambda e: -e["max"])[:3]
    print("worst batches:", [e["batch"] for e in worst])
    return stats


if __name__ == "__main__":
    RESULT = main()
