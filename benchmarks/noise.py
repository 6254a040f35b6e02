"""The noisy layers: cost per layer against the deterministic ones, and (with
``--seeds N``) the statistical tests of tests/particles/test_noise.py over N seeds.

    python benchmarks/noise.py              # ratio noisy / deterministic per layer
    python benchmarks/noise.py --seeds 20   # z-scores of the statistical tests, 20 seeds

The noise is one Gaussian vector per token and layer (drawn in blocks of
layers, a stream per batch member) and one more normalization. The floor is
the deterministic layer plus exactly that, timed alone: the same normals drawn
by ``standard_normal`` into a preallocated buffer in the same blocks, and one
normalization per layer (norms, square root, division, into buffers). Where these
two cost more than half a deterministic layer, no implementation of these draws
reaches 1.5x. With d > n (identity weights) the deterministic layers run in the
tokens' span and the noisy ones cannot: that case is also timed against the
noisy run's own layers with the kicks off.
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
from symdyn.particles import noise  # noqa: E402

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


def _run(X0, L, kappa, kicks=True):
    """Seconds per layer; ``kicks=False``: the noisy run with its kicks off (its
    deterministic layers in all d coordinates, never in the span)."""
    h = 0.01
    saved = noise.Noise
    if not kicks:
        noise.Noise = _Unkicked
    try:
        t0 = time.perf_counter()
        sd.simulate("post-ln", X0, 1.0, [0.0, L * h], step=h, kappa=kappa,
                    seed=None if kappa is None else 0)
        return (time.perf_counter() - t0) / L
    finally:
        noise.Noise = saved


class _Unkicked(noise.Noise):
    """No draw, no kick (Post-LN's rule returns a new array: no copy needed)."""

    def kick(self, x, on_sphere=False):
        return x


def _floor(X0, L):
    """Per layer: the bare draw of the run's normals (one ``standard_normal`` per
    member and block, into a preallocated buffer, as symdyn.particles.noise draws
    them), and one normalization of a layer's normals into buffers, timed apart."""
    M, n, d = X0.shape
    block = min(L, max(1, min(256, noise.BLOCK_FLOATS // (M * n * d))))
    rngs = [np.random.Generator(np.random.SFC64(s))
            for s in np.random.SeedSequence(0).spawn(M)]
    buffer = np.empty((M, block, n, d))
    y, norm = np.empty((M, n, d)), np.empty((M, n, 1))
    t0 = time.perf_counter()
    for k in range(0, L, block):
        for rng, part in zip(rngs, buffer, strict=True):
            rng.standard_normal(out=part[:min(block, L - k)])
    t1 = time.perf_counter()
    for k in range(L):
        z = buffer[:, k % block]
        np.einsum("mnd,mnd->mn", z, z, out=norm[..., 0])
        np.sqrt(norm, out=norm)
        np.divide(z, norm, out=y)
    return (t1 - t0) / L, (time.perf_counter() - t1) / L


def bessel_ratio(n, d, M, L, repeats=7, span=False):
    """Best time per layer of each path and of the bare draw, interleaved (a shared
    machine's load hits them alike); ``span``: also the layers in all d coordinates."""
    X0 = sd.init.sphere(n, d, batch=M, seed=0)
    quiet = noisy = draw = unit = full = np.inf
    for _ in range(repeats):
        quiet = min(quiet, _run(X0, L, None))
        noisy = min(noisy, _run(X0, L, 4.0))
        draw, unit = np.minimum((draw, unit), _floor(X0, L))
        full = min(full, _run(X0, L, 4.0, kicks=False) if span else np.inf)
    return quiet, noisy, draw, unit, full


def _row(n, d, M, quiet, noisy, draw, unit, note=""):
    floor = quiet + draw + unit
    print(f"{n:5d} {d:4d} {M:5d} {quiet * 1e6:9.1f} {noisy * 1e6:9.1f} {noisy / quiet:6.2f}x"
          f" {draw * 1e6:7.1f} {unit * 1e6:6.1f} {draw / quiet:9.2f} {floor * 1e6:9.1f}"
          f" {floor / quiet:6.2f}x {noisy / floor:6.2f}x{note}")


def speed():
    print("Post-LN layers, us per layer, best of 7: det(erministic), noisy (kappa = 4);")
    print("draw: the bare draw of the same normals, unit: one normalization of them;")
    print("floor = det + draw + unit, what any implementation of this noise costs")
    print(f"{'n':>5} {'d':>4} {'batch':>5} {'det':>9} {'noisy':>9} {'ratio':>7} {'draw':>7}"
          f" {'unit':>6} {'draw/det':>9} {'floor':>9} {'fl/det':>7} {'noisy/fl':>7}")
    for n, d, M, L in CASES:
        _row(n, d, M, *bessel_ratio(n, d, M, L)[:4])
    n, d, M, L = SPAN_CASE
    quiet, noisy, draw, unit, full = bessel_ratio(n, d, M, L, span=True)
    _row(n, d, M, quiet, noisy, draw, unit, "  det in the span")
    _row(n, d, M, full, noisy, draw, unit, "  det in all d coordinates")
    print(f"n = {n}, d = {d}: with identity weights and d > n the deterministic layers run in "
          f"the tokens' span\n(n-dimensional coordinates); the kicks leave the span, so the "
          f"noisy layers run in all d\ncoordinates and draw d n normals per member: physics, "
          f"not overhead (last row: the\nnoisy run's own layers with the kicks off).")
    print("fl/det > 1.5: the draw and its normalization cost more than half a deterministic "
          "layer;\nno implementation of these draws reaches 1.5x there.")


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
