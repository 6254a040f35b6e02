"""The noisy layers: cost per layer against the deterministic ones, and (with
``--seeds N``) the statistical tests of tests/test_noise.py over N seeds.

    python benchmarks/noise.py              # ratio noisy / deterministic per layer
    python benchmarks/noise.py --seeds 20   # z-scores of the statistical tests, 20 seeds

The noise is one Gaussian vector per token and layer (drawn in blocks of
layers, a stream per batch member) and one more normalization. The floor is
the deterministic layer plus exactly that, timed alone: the same normals drawn
by ``standard_normal`` into a preallocated buffer in the same blocks, and one
normalization per layer (norms, square root, division, into buffers). Where the
draw alone costs more than half a deterministic layer, no implementation of this
noise reaches 1.5x.
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
    them) and one normalization of the layer's normals, into buffers."""
    M, n, d = X0.shape
    block = min(L, max(1, min(256, noise.BLOCK_FLOATS // (M * n * d))))
    rngs = [np.random.Generator(np.random.SFC64(s))
            for s in np.random.SeedSequence(0).spawn(M)]
    buffer = np.empty((M, block, n, d))
    y, norm = np.empty((M, n, d)), np.empty((M, n, 1))
    t0 = time.perf_counter()
    for k in range(L):
        if k % block == 0:
            for m, rng in enumerate(rngs):
                rng.standard_normal(out=buffer[m, :min(block, L - k)])
        z = buffer[:, k % block]
        np.einsum("mnd,mnd->mn", z, z, out=norm[..., 0])
        np.sqrt(norm, out=norm)
        np.divide(z, norm, out=y)
    return (time.perf_counter() - t0) / L


def _ratio(n, d, M, L, repeats=7, span=False):
    """Best time per layer of each path and of the bare draw, interleaved (a shared
    machine's load hits them alike); ``span``: also the layers in all d coordinates."""
    X0 = sd.init.sphere(n, d, batch=M, seed=0)
    quiet = noisy = draw = full = np.inf
    for _ in range(repeats):
        quiet = min(quiet, _run(X0, L, None))
        noisy = min(noisy, _run(X0, L, 4.0))
        draw = min(draw, _floor(X0, L))
        full = min(full, _run(X0, L, 4.0, kicks=False) if span else np.inf)
    return quiet, noisy, draw, full


def _row(n, d, M, quiet, noisy, draw, note=""):
    floor = quiet + draw
    print(f"{n:5d} {d:5d} {M:5d}  {quiet * 1e6:11.1f} us {noisy * 1e6:7.1f} us  "
          f"{noisy / quiet:5.2f}x  {draw * 1e6:6.1f} us {floor * 1e6:7.1f} us  "
          f"{floor / quiet:8.2f}x  {noisy / floor:10.2f}x{note}")


def speed():
    print("Post-LN layers, per layer: deterministic vs noisy (kappa = 4), best of 7;")
    print("draw: the bare draw of the same normals and one normalization; floor:")
    print("deterministic + draw (what any implementation of this noise costs)")
    print(f"{'n':>5} {'d':>5} {'batch':>5}  {'deterministic':>14} {'noisy':>10}  {'ratio':>6}"
          f"  {'draw':>9} {'floor':>10}  {'floor/det':>9}  {'noisy/floor':>11}")
    for n, d, M, L in CASES:
        _row(n, d, M, *_ratio(n, d, M, L)[:3])
    n, d, M, L = SPAN_CASE
    quiet, noisy, draw, full = _ratio(n, d, M, L, span=True)
    _row(n, d, M, quiet, noisy, draw, "  (deterministic in the span)")
    _row(n, d, M, full, noisy, draw, "  (deterministic in all d coordinates)")
    print(f"n = {n}, d = {d}: with identity weights and d > n the deterministic layers run in "
          f"the tokens' span\n(n-dimensional coordinates); the kicks leave the span, so the "
          f"noisy layers run in all d\ncoordinates and draw d n normals per member: physics, "
          f"not overhead (last row: the\nnoisy run's own layers with the kicks off).")
    print("floor/det > 1.5: the draw alone costs more than half a deterministic layer; "
          "no\nimplementation of this noise reaches 1.5x there.")


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
