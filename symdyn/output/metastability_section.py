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
   agreement within 3 standard errors;
4. :func:`across_schemes`: every built-in scheme from uniform starts on S^2
   (:mod:`symdyn.studies.metastability_schemes`): metastable plateaus per
   seed and their length in log time, and the last merge against the
   derived two-cluster law started from the measured state; agreement when
   ``|mean log(T_meas/T_pred)| <= 2 (se + bracket half-width)``; the figure
   :func:`schemes_figure` draws the cluster count against log time (median
   and interquartile band over seeds).

:func:`metastability_result` computes them and draws one figure each (quick:
n = 100, five betas, half the merge grids, 2,000 samples, one size and three
seeds across schemes), :func:`metastability_section` writes the markdown,
verdicts included.

Layer 4, output.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..particles.clusters import renyi_centres
from ..studies import metastability as ms
from ..studies import metastability_schemes as mx
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
    runs = mx.study(quick=quick, progress=say)
    out["schemes"] = across_schemes(runs)
    out["files"]["schemes"] = schemes_figure(runs, Path(folder))
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


def across_schemes(runs) -> list[dict]:
    """Per scheme and size: :func:`~symdyn.studies.metastability_schemes.summarize`,
    the same prediction at a wrong beta (1.25 beta: the control, judged
    against the error bar of the law at the run's beta) and each
    seed's :math:`\\log(D_{meas}/D_{pred})`."""
    rows = []
    for r in runs:
        row = mx.summarize(r)
        rows.append({"summary": row, "per_seed": mx.duration_ratios(r).tolist(),
                     "control": mx.summarize(r, beta=1.25 * r.beta, error=row.error)})
    return rows


#: The colours of the sizes in :func:`schemes_figure`, in order of (n, beta).
SIZE_COLOURS = ("C0", "C1", "C2", "C3", "C4", "C5")


def schemes_figure(runs, folder, name: str = "metastability_schemes") -> list[Path]:
    """One panel per scheme: the cluster count against the log time
    ``tau = log(1 + t)`` (log axis, shared), median over seeds (line) and the
    interquartile band, one colour per (n, beta)."""
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r.scheme for r in runs))
    sizes = sorted({(r.n, r.beta) for r in runs})
    cols = 4
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(10, 2.4 * rows + 0.6), sharex=True,
                             sharey=True, layout="constrained", squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    top = max(r.n for r in runs)
    for ax, scheme in zip(axes.flat, names, strict=False):
        for r in (x for x in runs if x.scheme == scheme):
            colour = SIZE_COLOURS[sizes.index((r.n, r.beta)) % len(SIZE_COLOURS)]
            q = mx.count_quartiles(r)
            ax.fill_between(r.tau, q[0], q[2], color=colour, alpha=0.25, lw=0, step="mid")
            ax.plot(r.tau, q[1], color=colour, lw=1.2, drawstyle="steps-mid",
                    label=f"n = {r.n}, β = {r.beta:g}")
        ax.set(xscale="log", yscale="log", title=scheme)
        ax.set_ylim(0.8, top * 1.25)
        ticks = [2**i for i in range(int(np.log2(top)) + 1)]
        ax.set_yticks(ticks, [str(v) for v in ticks])
        ax.minorticks_off()
        ax.grid(alpha=0.3, lw=0.5)
    for ax in axes[-1]:
        ax.set_xlabel("log time τ = log(1 + t)")
    for ax in axes[:, 0]:
        ax.set_ylabel("clusters")
    seeds = len(runs[0].seeds)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=len(sizes), fontsize=8,
               title=f"median and interquartile band over {seeds} seeds (d = {runs[0].d})",
               title_fontsize=8)
    Path(folder).mkdir(parents=True, exist_ok=True)
    return save_figure(fig, Path(folder), name)


def _pm(pair, digits=2) -> str:
    mean, se = pair
    if not np.isfinite(mean):
        return "–"
    return f"{mean:.{digits}f}" + (f" ± {se:.{digits}f}" if np.isfinite(se) else "")


def schemes_table(rows) -> str:
    """The markdown table of :func:`across_schemes` (log10 of the merge times)."""
    ln10 = np.log(10)
    body = []
    for row in rows:
        s, c = row["summary"], row["control"]
        verdict = ("n/a (< 2 merges)" if s.agrees is None else
                   _verdict(s.agrees, "agrees", "disagrees"))
        control = ("–" if c.agrees is None else
                   "detected" if not c.agrees else "**not detected**")
        body.append([s.scheme, "τ" if s.clock == "log" else "t", s.n, f"{s.beta:g}",
                     f"{s.merges}/{s.seeds}",
                     _pm(tuple(x / ln10 for x in s.log_T_pred)),
                     _pm(tuple(x / ln10 for x in s.log_T_meas)),
                     f"{s.log_ratio[0]:+.1e} ± {s.error:.1e}" if s.merges else "–",
                     verdict, control, f"{s.plateaus:.1f}", _pm(s.duration)])
    return markdown_table(["scheme", "clock", "n", "β", "merged", "log10 T predicted",
                           "log10 T measured", "log(D_meas/D_pred)", "verdict",
                           "control 1.25β", "plateaus per seed", "plateau length (log time)"],
                          body)


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
        "Post-LN particle runs (softmax, seeds 0-2)"
        + ("; then every normalization's plateaus and last merge against the derived "
           "merge law (part 4)" if "schemes" in result else "")
        + "; where they disagree, the table says so.",
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
        *(_schemes_part(result, folder, png) if "schemes" in result else []),
        f"Computed in {result['seconds']:.0f} s.", ""])


def _schemes_part(result, folder, png) -> list[str]:
    rows = result["schemes"]
    first = rows[0]["summary"]
    return [
        "**4. Across normalizations** (`symdyn.studies.metastability_schemes`; "
        "docs/metastability.md, section 4): every built-in scheme from n i.i.d. uniform "
        f"tokens on S^2 ({first.seeds} seeds). A plateau is a run of constant cluster "
        "count (2 ≤ count < n) that ends within the run; its length is measured in log "
        "time τ = log(1 + t). The last merge (two clusters into one) against the derived "
        "two-cluster law started from the measured masses, angle and radii at the last "
        "plateau's start: log10 T (T = t_merge - t_start) mean ± se over the seeds that "
        "merged. The law is judged on the merge's duration D in the clock the scheme "
        "runs in (D = T in t for the schemes on the sphere; D = Δτ in log time for those "
        "whose norms grow, which merge at t ~ e^(10^2..10^3), where log T ≈ τ): agreement "
        "when |mean log(D_meas/D_pred)| ≤ 2 (se + bracket half-width); control: the same "
        "prediction at 1.25 β must disagree.", "",
        schemes_table(rows), "",
        f"![cluster count against log time per scheme]({folder}/{png['schemes']})", ""]
