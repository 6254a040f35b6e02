"""The noisy layers: cost per layer against the deterministic ones, and (with
``--seeds N``) the statistical tests of tests/test_noise.py over N seeds.

    python benchmarks/noise.py              # ratio noisy / deterministic per layer
    python benchmarks/noise.py --seeds 20   # z-scores of the statistical tests, 20 seeds

The noise is one Gaussian vector per token and layer (drawn in blocks of
layers, a stream per batch member) and one more normalization.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# one BLAS thread: on a shared 2-core machine OpenBLAS's threads fought the other
# processes (Post-LN n = 128, d = 64: 8.3 ms a layer with them, 1.6 ms without)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import symdyn as sd  # noqa: E402

CASES = [  # (n, d, batch, layers); d <= n: both paths in the same coordinates
    (16, 16, 8, 400),
    (32, 16, 8, 300),
    (64, 32, 4, 200),
    (128, 64, 4, 100),
    (256, 3, 8, 60),
]
#: d > n with identity weights: the deterministic path runs in the n-dimensional
#: span of the tokens, the noisy one cannot (the kicks leave the span)
SPAN_CASE = (8, 512, 16, 300)


def _run(X0, L, kappa):
    h = 0.01
    t0 = time.perf_counter()
    sd.simulate("post-ln", X0, 1.0, [0.0, L * h], step=h, kappa=kappa,
                seed=None if kappa is None else 0)
    return (time.perf_counter() - t0) / L


def _ratio(n, d, M, L, repeats=7):
    """Best time per layer of each path, the two interleaved (a shared machine's
    load hits both alike)."""
    X0 = sd.init.sphere(n, d, batch=M, seed=0)
    quiet = noisy = np.inf
    for _ in range(repeats):
        quiet = min(quiet, _run(X0, L, None))
        noisy = min(noisy, _run(X0, L, 4.0))
    return quiet, noisy


def speed():
    print("Post-LN layers, per layer: deterministic vs noisy (kappa = 4), best of 7")
    print(f"{'n':>5} {'d':>5} {'batch':>5}  {'deterministic':>14} {'noisy':>10}  ratio")
    for n, d, M, L in CASES + [SPAN_CASE]:
        quiet, noisy = _ratio(n, d, M, L)
        note = "  (d > n: deterministic in the span)" if (n, d, M, L) == SPAN_CASE else ""
        print(f"{n:5d} {d:5d} {M:5d}  {quiet * 1e6:11.1f} us {noisy * 1e6:7.1f} us  "
              f"{noisy / quiet:.2f}x{note}")


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
