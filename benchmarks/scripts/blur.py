"""A box blur by shifted slices and a gradient magnitude, on images of three sizes (array sizes
that change between calls)."""
import numpy as np

def box_blur(img, k):
    out = np.zeros_like(img)
    h, w = img.shape
    for dy in range(-k, k + 1):
        for dx in range(-k, k + 1):
            out[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] += \
                img[max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)]
    return out / (2 * k + 1) ** 2

def edges(img):
    gx = img[1:-1, 2:] - img[1:-1, :-2]
    gy = img[2:, 1:-1] - img[:-2, 1:-1]
    return np.hypot(gx, gy)

rng = np.random.default_rng(4)
for size in (64, 96, 128):
    img = rng.random((size, size))
    b = box_blur(img, 2)
    print(size, round(float(edges(b).mean()), 6))
