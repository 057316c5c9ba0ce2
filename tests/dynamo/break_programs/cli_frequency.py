"""For the CLI test: one break reason that happens three times (a branch on data, compiled for
three shapes), another once (a print)."""
import sys

import numpy as np

from cli_helper import normalize


def step(x):
    y = x * 2
    if y.sum() > 0:          # data-dependent: a break for every shape this is compiled for
        y = y - 1
    return y


def main(argv):
    sizes = [int(a) for a in argv] or [3, 4, 5]
    totals = [float(step(np.ones(n)).sum()) for n in sizes]
    print("totals", totals)
    print("normalized", normalize(np.array(totals)).round(3).tolist())
    if "--fail" in sys.argv:
        raise ValueError("requested failure")
    if "--exit" in sys.argv:
        sys.exit(3)


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if not a.startswith("--")])
