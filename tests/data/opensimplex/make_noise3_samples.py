"""Writes noise3_samples.txt.gz: OpenSimplex(seed).noise3d(x, y, z) of opensimplex v0.3 at points
covering every region of the honeycomb (random points, negative ones included, Crafter's worldgen
scales and points a rounding step away from region boundaries). One line per point,
"seed x y z value" with floats in hex (float.hex), exact both ways.

    source /work/refsrc/env.sh && /usr/bin/python3 make_noise3_samples.py
"""
import gzip
import os
import random
import sys

sys.path.insert(0, os.environ["OPENSIMPLEX_SRC"])
from opensimplex import OpenSimplex  # noqa: E402


def points(rng):
    for _ in range(150):  # anywhere, negative coordinates included
        yield rng.uniform(-100, 100), rng.uniform(-100, 100), rng.uniform(-100, 100)
    for _ in range(100):  # around the origin, where floors of negatives matter
        yield rng.uniform(-3, 3), rng.uniform(-3, 3), rng.uniform(-3, 3)
    for _ in range(150):  # worldgen: x / size, y / size, an integral z (tunnels scale x or y first)
        size = rng.choice([3, 5, 6, 7, 8, 9, 15])
        x, y = rng.randrange(64), rng.randrange(64)
        if rng.random() < 0.2:
            x, y = (x * 2 / 1, y * 1 / 5) if rng.random() < 0.5 else (x * 1 / 5, y * 2 / 1)
        yield x / size, y / size, float(rng.randrange(9))
    for _ in range(100):  # on and one rounding step off the planes where regions and vertices change
        coords = []
        for _ in range(3):
            v = rng.randrange(-60, 61) / 6
            step = rng.choice([-1, 0, 0, 1])
            coords.append(v if step == 0 else (v + step * abs(v) * 2**-52 if v else step * 2**-1074))
        yield tuple(coords)


def main():
    rng = random.Random(20261122)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "noise3_samples.txt.gz")
    with gzip.open(out, "wt") as f:
        for seed in [0, 1, 12345, 1256191933, 2147483646, -7]:
            noise = OpenSimplex(seed)
            for x, y, z in points(rng):
                f.write(f"{seed} {x.hex()} {y.hex()} {z.hex()} {noise.noise3d(x, y, z).hex()}\n")


if __name__ == "__main__":
    main()
