"""The noisy layers: cost per layer against the deterministic ones, and (with
``--seeds N``) the statistical tests of tests/test_noise.py over N seeds.

    python benchmarks/noise.py              # ratio noisy / deterministic per layer
    python benchmarks/noise.py --seeds 20   # z-scores of the statistical tests, 20 seeds

The noise is one Gaussian vector per token and layer (drawn in blocks of
layers, a stream per batch member) and one more normalization.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import symdyn as sd

CASES = [  # (n, d, batch, layers)
    (32, 16, 8, 400),
    (128, 64, 4, 200),
    (256, 3, 8, 100),
    (8, 512, 16, 400),
]


def _per_layer(n, d, M, L, kappa, repeats=5):
    X0 = sd.init.sphere(n, d, batch=M, seed=0)
    h = 0.01
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        sd.simulate("post-ln", X0, 1.0, [0.0, L * h], step=h, kappa=kappa,
                    seed=None if kappa is None else 0)
        best = min(best, time.perf_counter() - t0)
    return best / L


def speed():
    print(f"{'n':>5} {'d':>5} {'batch':>5}  {'deterministic':>14} {'noisy':>10}  ratio")
    for n, d, M, L in CASES:
        quiet = _per_layer(n, d, M, L, None)
        noisy = _per_layer(n, d, M, L, 4.0)
        print(f"{n:5d} {d:5d} {M:5d}  {quiet * 1e6:11.1f} us {noisy * 1e6:7.1f} us  "
              f"{noisy / quiet:.2f}x")


def seeds(count, only=("bm", "kuramoto", "strong")):
    """z-scores (difference / standard error) of the statistical tests for seeds
    0..count-1; a test fails where |z| >= 4 (its control where |z| <= 4)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_noise as tn

    rows = []
    for seed in range(count):
        z = {}
        for h in ((0.25, 0.125) if "bm" in only else ()):
            mean, se = tn.bm_cosine(h, 2.0, 1.0, seed)
            z[f"bm h={h}"] = (mean - tn.one_step_mean(h, 2.0) ** round(1 / h)) / se
            z[f"bm h={h} control"] = (mean - np.exp(-1.0)) / se
        for d, kappa in (((2, 4.0), (3, 6.0)) if "kuramoto" in only else ()):
            mean, se = tn.kuramoto_run(d, kappa, seed)
            z[f"kuramoto d={d}"] = (mean - tn.kuramoto_r(kappa, d)) / se
            z[f"kuramoto d={d} control"] = (mean - tn.kuramoto_r(0.8 * kappa, d)) / se
        if "strong" in only:
            hs = (1 / 16, 1 / 64, 1 / 256)
            err = [tn._rebuilt_angle_error(h, 2.0, 1.0, seed) for h in hs]
            z["strong slope"] = (float(np.polyfit(np.log(hs), np.log(err), 1)[0]),)
        rows.append(z)
        print(seed, {k: (round(v, 2) if isinstance(v, float) else v) for k, v in z.items()},
              flush=True)
    for key in rows[0]:
        vals = [r[key] for r in rows]
        if isinstance(vals[0], tuple):
            print(f"{key}: min {np.min(vals):.3f}, max {np.max(vals):.3f} (test: 0.4..0.6)")
        elif key.endswith("control"):
            print(f"{key}: |z| min {np.min(np.abs(vals)):.2f} (test: > 4)")
        else:
            print(f"{key}: |z| min {np.min(np.abs(vals)):.2f}, max {np.max(np.abs(vals)):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=0,
                        help="run the statistical tests over this many seeds")
    parser.add_argument("--only", nargs="+", default=["bm", "kuramoto", "strong"],
                        choices=["bm", "kuramoto", "strong"], help="with --seeds")
    args = parser.parse_args()
    if args.seeds:
        seeds(args.seeds, args.only)
    else:
        speed()
