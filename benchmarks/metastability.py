"""Metastability: three predictions beside the particle simulator's measurements
(docs/metastability.md derives them; symdyn.studies.metastability computes them).

Run: ``python benchmarks/metastability.py [--quick] [--n N] [--figure PREFIX]``.

1. Clusters first formed from a uniform start on the circle (d = 2, Post-LN,
   softmax) against the fastest mean-field mode k*(beta). n = 2,000 tokens
   (``--n``; about 2 CPU minutes a run, 35 for the 18 runs; at n = 400 the
   count lies about one below k*), seeds 0-2, beta in {4, 8, 16, 32,
   64, 100}, DOP853 at rtol 1e-6, to t = 100; measured = the count at the
   first output time after the count's peak at which every cluster holds at
   least 1% of the tokens. Mean +- standard error of the 3 seeds.
1b. (``--s2``: this part alone) The same on S^2 (d = 3, n = 400, seeds
   0-2, beta in {4, 8, 16, 32, 64}): the fastest degree l*(beta) of the
   zonal rates, and per seed the local maxima of the start's degree-l*
   pattern sum_i P_l*(<x, x_i>) (what the linearization amplifies; on the
   circle the same pattern has exactly k* maxima, on S^2 the count depends on
   the start) against the count measured as in 1.
2. First merge time of k point clusters (m = 4 tokens each, jitter 1e-3,
   seeds 0-2) on the circle and on S^2, k = 2 at angle pi/2 and k = 3
   equally spaced: the slope of log T in beta (least squares over the seeds'
   bracket midpoints, geometric output grid of 400 times over 14 decades,
   so log T is bracketed to +-0.04) against the slope of the predicted
   log T on the same betas, and the asymptote 1 - cos(theta). Error bar: the
   std of the per-seed slopes, plus the slope shift of the +-0.04 bracket.
4. (``--schemes``: this part alone) Metastability across normalizations
   (symdyn.studies.metastability_schemes; docs/metastability.md, section 4):
   every built-in scheme from n uniform tokens on S^2 at (n, beta) in
   {16, 32} x {3, 4}, seeds 0-7 (``--quick``: n = 16, beta = 4, seeds 0-2):
   per scheme and size the predicted and measured last merge time (log10 T,
   mean +- se over the seeds that merged), log(D_meas/D_pred) +- its error
   bar (D the duration in the scheme's clock), the verdict, the control (the
   prediction at 1.25 beta), the metastable plateaus per seed and their mean
   length in log time; ``--figure PREFIX`` writes PREFIX_schemes.png.
3. Strong Rényi centres of n i.i.d. uniform tokens on the circle, delta =
   4 / sqrt(64) = 0.5 (the paper's delta = 4 beta^-1/2 at beta = 64): mean
   over min(20,000, 2e8 / n^2) samples (seed 0) +- standard error against
   (1 - (1-p)^n)/p.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from symdyn.particles.clusters import renyi_centres
from symdyn.studies import metastability as ms


def modes(betas, n, seeds):
    rows = []
    for b in betas:
        t0 = time.perf_counter()
        got = ms.first_clusters(b, n=n, seeds=seeds)
        rows.append((b, ms.fastest_mode(b), np.sqrt(2 * b), got, time.perf_counter() - t0))
        print(f"  beta {b:6.1f}  k* {rows[-1][1]:3d}  sqrt(2 beta) {rows[-1][2]:5.2f}  "
              f"measured {got.mean():5.2f} +- {got.std(ddof=1) / np.sqrt(len(got)):4.2f} "
              f"{got.tolist()}  "
              f"({rows[-1][4]:.0f} s)", flush=True)
    return rows


def sphere_modes(betas, n, seeds):
    """Part 1b: l*(beta) and the start's pattern maxima against the measured count."""
    for b in betas:
        t0 = time.perf_counter()
        degree = ms.fastest_degree(b)
        pred = np.array([ms.pattern_maxima(x, degree) for x in ms.uniform_sphere(n, seeds)])
        got = ms.first_clusters(b, n=n, seeds=seeds, d=3)
        print(f"  beta {b:6.1f}  l* {degree:3d}  pattern maxima {pred.tolist()}  measured "
              f"{got.tolist()}  measured / predicted {np.mean(got / pred):.2f}  "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)


def merges(k, d, betas, seeds=(0, 1, 2)):
    lo, hi = ms.first_merge_times(k, betas, d=d, seeds=seeds)
    logT = np.log(np.sqrt(lo * hi))
    slopes = np.array([np.polyfit(betas, logT[:, j], 1)[0] for j in range(len(seeds))])
    half = np.log(hi / lo).max() / 2                       # bracket half-width in log T
    # the largest slope change a +-half error per point can make: sum |w_i| half
    w = (betas - betas.mean()) / ((betas - betas.mean()) ** 2).sum()
    err = slopes.std(ddof=1) + np.abs(w).sum() * half
    pred = ms.predicted_slope(k, betas)
    gap = 1 - np.cos(np.pi / 2 if k == 2 else 2 * np.pi / 3)
    print(f"  k = {k}, S^{d - 1}: slope {slopes.mean():.3f} +- {err:.3f}  predicted "
          f"{pred:.3f} (beta {betas[0]:g}..{betas[-1]:g}; asymptote 1 - cos = {gap:.3f})"
          f"  log T {np.round(logT.mean(1), 2).tolist()}", flush=True)
    return betas, logT, pred, slopes.mean(), err


def renyi(ns, delta=0.5, samples=20_000):
    rng = np.random.default_rng(0)
    rows = []
    for n in ns:
        samples = min(samples, 2 * 10**8 // n**2)        # n^2 work a sample
        phi = rng.uniform(0, 2 * np.pi, size=(samples, n))
        c = renyi_centres(np.stack([np.cos(phi), np.sin(phi)], -1), delta).sum(-1)
        rows.append((n, c.mean(), c.std(ddof=1) / np.sqrt(samples),
                     ms.expected_renyi_centres(n, delta)))
        print(f"  n {n:5d}  sampled {rows[-1][1]:7.3f} +- {rows[-1][2]:.3f}  "
              f"formula {rows[-1][3]:7.3f}  ({(rows[-1][1] - rows[-1][3]) / rows[-1][2]:+.1f} se)",
              flush=True)
    return rows


def figures(prefix, mode_rows, merge_rows, renyi_rows):
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from symdyn import plot
    fig, axes = plt.subplots(1, 3, figsize=(9.5, 3.0))
    b = np.array([r[0] for r in mode_rows])
    bs = np.linspace(b.min(), b.max(), 200)
    axes[0].plot(bs, [ms.fastest_mode(x) for x in bs], "k-", drawstyle="steps-post",
                 label="k*(beta), mean field")
    got = [r[3] for r in mode_rows]
    axes[0].errorbar(b, [g.mean() for g in got],
                     yerr=[g.std(ddof=1) / np.sqrt(len(g)) for g in got], fmt="o",
                     label="first plateau, particles")
    axes[0].set(xscale="log", xlabel="beta", ylabel="clusters", title="1. uniform start")
    axes[0].set_xticks(b, [f"{x:g}" for x in b])
    axes[0].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].legend(fontsize=7)
    for (k, d), (betas, logT, pred, slope, err) in merge_rows.items():
        line = axes[1].plot(betas, logT.mean(1), "o", label=f"k={k}, S^{d - 1}: "
                            f"{slope:.2f}+-{err:.2f} (pred. {pred:.2f})")
        if d == 2:       # k = 3: log(1/lambda_3) shifted by log log(g/eps0), fitted
            f = ((lambda x: np.log(ms.two_cluster_merge_time(x, np.pi / 2))) if k == 2
                 else (lambda x: -np.log(ms.three_cluster_rate(x))))
            pred_line = np.array([f(x) for x in betas])
            shift = 0.0 if k == 2 else (logT.mean(1) - pred_line).mean()
            axes[1].plot(betas, pred_line + shift, "-", color=line[0].get_color(),
                         label="merge integral" if k == 2 else
                         f"log(1/lambda_3) + {shift:.2f} (fitted offset)")
    axes[1].set(xlabel="beta", ylabel="log T (first merge)", title="2. first merge")
    axes[1].legend(fontsize=6)
    n = np.array([r[0] for r in renyi_rows])
    axes[2].errorbar(n, [r[1] for r in renyi_rows], yerr=[2 * r[2] for r in renyi_rows],
                     fmt="o", label="sampled (2 se)")
    nn = np.geomspace(n.min(), n.max(), 100)
    axes[2].plot(nn, [ms.expected_renyi_centres(int(x), 0.5) for x in nn], "k-",
                 label="(1-(1-p)^n)/p")
    axes[2].set(xscale="log", xlabel="n", ylabel="strong Rényi centres",
                title="3. Rényi centres, delta=0.5")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    plot.save(fig, prefix + "_predictions.png")
    print(f"wrote {prefix}_predictions.png")


def across_schemes(quick, prefix):
    """Part 4: the table of symdyn.output.metastability_section, printed."""
    from pathlib import Path

    from symdyn.output import metastability_section as section
    from symdyn.studies import metastability_schemes as mx
    t0 = time.perf_counter()
    runs = mx.study(quick=quick, progress=lambda m: print("  " + m, flush=True))
    rows = section.across_schemes(runs)
    print(section.schemes_table(rows))
    for row in rows:
        s = row["summary"]
        print(f"  {s.scheme:12s} n {s.n:3d} beta {s.beta:g}: log(T_meas/T_pred) = "
              f"{s.log_T_ratio[0]:+.2e} +- {s.log_T_ratio[1]:.2e} (se); per seed "
              f"log(D_meas/D_pred) = {' '.join(f'{x:+.1e}' for x in row['per_seed'])}; "
              f"unmerged seeds {s.seeds - s.merges}")
    print(f"({time.perf_counter() - t0:.0f} s)")
    if prefix:
        path = Path(prefix + "_schemes.png")
        section.schemes_figure(runs, path.parent, path.stem)
        print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 200, three betas")
    ap.add_argument("--figure", default=None, help="write PREFIX_predictions.png")
    ap.add_argument("--s2", action="store_true", help="part 1b (S^2) alone")
    ap.add_argument("--schemes", action="store_true",
                    help="part 4 alone: metastability across normalizations")
    ap.add_argument("--n", type=int, default=None,
                    help="tokens of part 1 (default 2,000; 200 with --quick)")
    a = ap.parse_args()
    if a.schemes:
        print("4. metastability across normalizations: the last merge against the law")
        across_schemes(a.quick, a.figure)
        return
    if a.s2:
        print("1b. S^2: fastest degree l*(beta), the start's pattern maxima, measured")
        sphere_modes([4.0, 8.0, 16.0, 32.0, 64.0], 400, (0, 1, 2))
        return
    betas = [4.0, 16.0, 64.0] if a.quick else [4.0, 8.0, 16.0, 32.0, 64.0, 100.0]
    n = a.n or (200 if a.quick else 2000)
    print(f"1. clusters first formed vs fastest mode k*(beta) (n = {n}, seeds 0-2)")
    mode_rows = modes(betas, n, (0, 1, 2))
    print("2. first merge time: slope of log T in beta")
    merge_rows = {}
    for k, grid in ((2, np.arange(4.0, 21.0, 2.0)), (3, np.arange(3.0, 12.5, 1.0))):
        for d in (2, 3):
            merge_rows[k, d] = merges(k, d, grid[::2] if a.quick else grid)
    print("3. strong Rényi centres on the circle, delta = 0.5")
    renyi_rows = renyi([4, 16, 64, 256, 1024], samples=2000 if a.quick else 20_000)
    if a.figure:
        figures(a.figure, mode_rows, merge_rows, renyi_rows)


if __name__ == "__main__":
    main()
