"""The report's section "Metastability" (issue 38): three predictions beside the particles.

Each prediction is :mod:`symdyn.studies.metastability`'s (docs/metastability.md
derives them), measured as ``benchmarks/metastability.py`` measures it:

1. :func:`modes`: the clusters first formed from a uniform start on the circle
   (:func:`~symdyn.studies.metastability.first_clusters`) against the fastest
   mean-field mode ``k*(beta)``; agreement when ``|mean - k*| <= 2 se + 1/2``
   (counts are integers);
2. :func:`merges`: the slope of ``log T`` (first merge of ``k`` point
   clusters) in beta, least squares per seed over the bracket midpoints,
   against :func:`~symdyn.studies.metastability.predicted_slope`; error bar
   the seeds' std plus the largest slope change the bracket's half-width
   makes (``sum |w_i| h``, ``w`` the least-squares weights); agreement within
   2 error bars;
3. :func:`renyi`: strong Rényi centres of ``n`` i.i.d. uniform tokens on the
   circle, sampled, against ``(1 - (1 - p)^n)/p``, ``p = delta/pi``;
   agreement within 3 standard errors.

:func:`metastability_result` computes them and draws one figure each (quick:
n = 100, five betas, half the merge grids, 2,000 samples),
:func:`metastability_section` writes the markdown, verdicts included.

Layer 4, output.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..particles.clusters import renyi_centres
from ..studies import metastability as ms
from .formatting import markdown_table
from .page import save_figure

#: (k, beta grid) of the merge-time fits, on the circle and on S^2
MERGE_GRIDS = ((2, np.arange(4.0, 21.0, 2.0)), (3, np.arange(3.0, 12.5, 1.0)))
RENYI_N, RENYI_DELTA = (4, 16, 64, 256, 1024), 0.5
SEEDS = (0, 1, 2)


def modes(betas, n, seeds=SEEDS) -> list[dict]:
    """Per beta: k*, sqrt(2 beta) and the seeds' counts of the first plateau."""
    rows = []
    for b in betas:
        got = ms.first_clusters(b, n=n, seeds=seeds)
        mean, se = got.mean(), got.std(ddof=1) / np.sqrt(len(got))
        k = ms.fastest_mode(b)
        rows.append({"beta": b, "k": k, "estimate": np.sqrt(2 * b), "counts": got.tolist(),
                     "mean": mean, "se": se, "agrees": abs(mean - k) <= 2 * se + 0.5})
    return rows


def merges(k, d, betas, seeds=SEEDS, times=400) -> dict:
    """The slope of log T (first merge) in beta, its error bar and the prediction."""
    betas = np.asarray(betas, dtype=float)
    lo, hi = ms.first_merge_times(k, betas, d=d, seeds=seeds, times=times)
    logT = np.log(np.sqrt(lo * hi))
    slopes = np.array([np.polyfit(betas, logT[:, j], 1)[0] for j in range(len(seeds))])
    w = (betas - betas.mean()) / ((betas - betas.mean()) ** 2).sum()
    err = slopes.std(ddof=1) + np.abs(w).sum() * np.log(hi / lo).max() / 2
    pred = ms.predicted_slope(k, betas)
    return {"k": k, "d": d, "betas": betas, "logT": logT.mean(1), "slope": slopes.mean(),
            "err": err, "pred": pred, "agrees": abs(slopes.mean() - pred) <= 2 * err}


def renyi(ns=RENYI_N, delta=RENYI_DELTA, samples=20_000, seed=0) -> list[dict]:
    """Sampled mean +- se of the strong Rényi centres against the formula, per n."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in ns:
        s = min(samples, 2 * 10**8 // n**2)                 # n^2 work a sample
        phi = rng.uniform(0, 2 * np.pi, size=(s, n))
        c = renyi_centres(np.stack([np.cos(phi), np.sin(phi)], -1), delta).sum(-1)
        mean, se = c.mean(), c.std(ddof=1) / np.sqrt(s)
        f = ms.expected_renyi_centres(n, delta)
        rows.append({"n": n, "samples": s, "mean": mean, "se": se, "formula": f,
                     "z": (mean - f) / se, "agrees": abs(mean - f) <= 3 * se})
    return rows


def metastability_result(folder, quick: bool = False, progress=None) -> dict:
    """The three measurements and their figures (``folder/metastability_*.png``)."""
    say = progress or (lambda message: None)
    t0 = time.perf_counter()
    n = 100 if quick else 400
    betas = (4.0, 8.0, 16.0, 32.0, 64.0) + (() if quick else (100.0,))
    say(f"metastability: clusters of a uniform start (n = {n})")
    out = {"n": n, "modes": modes(betas, n), "merges": []}
    say("metastability: first merge times")
    for k, grid in MERGE_GRIDS:
        for d in (2, 3):
            out["merges"].append(merges(k, d, grid[::2] if quick else grid,
                                        times=200 if quick else 400))
    say("metastability: Rényi centres")
    out["renyi"] = renyi(samples=2000 if quick else 20_000)
    out["files"] = figures(out, Path(folder))
    out["seconds"] = time.perf_counter() - t0
    return out


def figures(r, folder) -> dict:
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    fig, ax = plt.subplots(figsize=(4.2, 3.2), layout="constrained")
    b = np.array([m["beta"] for m in r["modes"]])
    bs = np.geomspace(b.min(), b.max(), 200)
    ax.plot(bs, [ms.fastest_mode(x) for x in bs], "k-", drawstyle="steps-post",
            label="k*(β), mean field")
    ax.errorbar(b, [m["mean"] for m in r["modes"]], yerr=[2 * m["se"] for m in r["modes"]],
                fmt="o", label=f"first plateau, n = {r['n']} (2 se)")
    ax.set(xscale="log", xlabel="β", ylabel="clusters",
           title="Clusters from a uniform start (circle)")
    ax.set_xticks(b, [f"{x:g}" for x in b])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend(fontsize=7)
    files["modes"] = save_figure(fig, folder, "metastability_modes")
    fig, ax = plt.subplots(figsize=(4.2, 3.2), layout="constrained")
    for m in r["merges"]:            # S^1 dots, S^2 crosses (they nearly coincide)
        line = ax.plot(m["betas"], m["logT"], "o" if m["d"] == 2 else "x", ms=5,
                       mfc="none" if m["d"] == 2 else None,
                       label=f"k={m['k']}, S^{m['d'] - 1}: {m['slope']:.2f}±{m['err']:.2f}")
        x0, y0 = m["betas"].mean(), m["logT"].mean()       # the fit's centroid
        ax.plot(m["betas"], y0 + m["pred"] * (m["betas"] - x0), "-", lw=0.8,
                color=line[0].get_color())
    ax.set(xlabel="β", ylabel="log T (first merge)",
           title="First merge (lines: predicted slope)")
    ax.legend(fontsize=6)
    files["merges"] = save_figure(fig, folder, "metastability_merges")
    fig, ax = plt.subplots(figsize=(4.2, 3.2), layout="constrained")
    n = np.array([x["n"] for x in r["renyi"]])
    ax.errorbar(n, [x["mean"] for x in r["renyi"]], yerr=[2 * x["se"] for x in r["renyi"]],
                fmt="o", label="sampled (2 se)")
    nn = np.geomspace(n.min(), n.max(), 100).astype(int)
    ax.plot(nn, [ms.expected_renyi_centres(int(x), RENYI_DELTA) for x in nn], "k-",
            label="(1-(1-p)^n)/p, p = δ/π")
    ax.set(xscale="log", xlabel="n", ylabel="strong Rényi centres",
           title=f"Rényi centres on the circle, δ = {RENYI_DELTA:g}")
    ax.legend(fontsize=7)
    files["renyi"] = save_figure(fig, folder, "metastability_renyi")
    return files


def _verdict(ok, yes, no) -> str:
    return yes if ok else f"**{no}**"


def metastability_section(result: dict, folder: str) -> str:
    """Markdown of :func:`metastability_result`, each prediction with its verdict."""
    png = {k: next(p for p in v if str(p).endswith(".png")).name
           for k, v in result["files"].items()}
    mode_rows = [[f"{m['beta']:g}", m["k"], f"{m['estimate']:.2f}",
                  f"{m['mean']:.2f} ± {m['se']:.2f}", str(m["counts"]),
                  _verdict(m["agrees"], "agrees", f"{m['mean'] - m['k']:+.1f} off")]
                 for m in result["modes"]]
    merge_rows = [[m["k"], f"S^{m['d'] - 1}", f"{m['betas'][0]:g}..{m['betas'][-1]:g}",
                   f"{m['slope']:.3f} ± {m['err']:.3f}", f"{m['pred']:.3f}",
                   _verdict(m["agrees"], "agrees", "disagrees")] for m in result["merges"]]
    renyi_rows = [[x["n"], x["samples"], f"{x['mean']:.3f} ± {x['se']:.3f}",
                   f"{x['formula']:.3f}", f"{x['z']:+.1f}",
                   _verdict(x["agrees"], "agrees", "disagrees")] for x in result["renyi"]]
    return "\n".join([
        "Tokens gather into a few clusters fast and stay there for a time exponential in "
        "β before the clusters merge (arXiv:2410.06833). Three predictions "
        "(docs/metastability.md derives them; `symdyn.studies.metastability`) beside "
        "Post-LN particle runs (softmax, seeds 0-2); where they disagree, the table says so.",
        "", f"**1. Clusters from a uniform start** on the circle (n = {result['n']}): the "
        "count of the first plateau (every cluster at least 1% of the tokens) against "
        "the fastest mean-field mode k*(β) = argmax_k k² I_k(β)/(β I_0(β)); agreement: "
        "within 2 se + 1/2.", "",
        markdown_table(["β", "k*", "√(2β)", "measured", "seeds", "verdict"], mode_rows),
        f"![clusters against k*]({folder}/{png['modes']})", "",
        "**2. First merge** of k point clusters (4 tokens each, k = 2 at angle π/2, "
        "k = 3 equally spaced): the slope of log T in β against the predicted one "
        "(two clusters: the merge integral; three: the saddle's rate, both tending to "
        "1 - cos of the closest angle); agreement: within 2 error bars.", "",
        markdown_table(["k", "sphere", "β", "slope", "predicted", "verdict"], merge_rows),
        f"![first merge times]({folder}/{png['merges']})", "",
        f"**3. Strong Rényi centres** of n i.i.d. uniform tokens on the circle "
        f"(δ = {RENYI_DELTA:g}, geodesic distance, strict inequality) against "
        "(1 - (1 - p)^n)/p, p = δ/π; agreement: within 3 se.", "",
        markdown_table(["n", "samples", "sampled", "formula", "z", "verdict"], renyi_rows),
        f"![Rényi centres]({folder}/{png['renyi']})", "",
        f"Computed in {result['seconds']:.0f} s.", ""])
