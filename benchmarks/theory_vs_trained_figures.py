"""The docs' figures of issue 26: one per trained model, the theory against the trace.

    .venv/bin/python benchmarks/theory_vs_trained_figures.py          # both, ~20 s
    .venv/bin/python benchmarks/theory_vs_trained_figures.py --texts 4 --out /tmp

Writes ``docs/theory_vs_trained_minilm.png`` and ``docs/theory_vs_trained_smollm2.png``
(full width, paper style). Per model, over the first ``--texts`` corpus sentences
(``symdyn.trained.SENTENCES``), for the trained weights and the three ablations
(no MLP; LayerNorm as the bare projection; random weights of the same shapes):
(a) the mean pairwise cosine gamma per layer, median and 10-90 % band over texts;
(b) 1 - gamma of the medians on a log axis (faint: not fitted) with the exponential (Post-LN) and
power (Pre-LN) law fitted over layers 1..L for two of the variants;
(c) the mean token norm, with the linear growth fitted for the Pre-LN model.
SmolLM2 leaves its first token out (its massive activation). Prints the fits.
The notebook ``notebooks/theory_vs_trained.ipynb`` shows the same, on fewer texts.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

MODELS = {
    "minilm": ("all-MiniLM-L6-v2", "Post-LN", ("trained", "random weights")),
    "smollm2": ("SmolLM2-135M-Instruct", "Pre-RMSNorm", ("trained", "no MLP")),
}
#: variant -> keyword arguments of load (None: fits.randomized of the trained model)
VARIANTS = {"trained": {}, "no MLP": {"mlp": False}, "projection norm": {"norm": "projection"},
            "random weights": None}
#: one look per variant: colour (Okabe-Ito), dash, marker
LOOKS = {"trained": ("#000000", "-", "o"), "no MLP": ("#0072B2", (0, (5, 2)), "s"),
         "projection norm": ("#009E73", (0, (1, 1.5)), "^"),
         "random weights": ("#D55E00", (0, (6, 2, 1, 2)), "D")}


def traces(name: str, texts: list[str], seed: int = 0) -> dict:
    """variant -> batched LayerTrace of ``texts``."""
    import symdyn.trained as tr
    from symdyn.trained import fits
    skip = name.startswith("Smol")
    out = {}
    for label, kw in VARIANTS.items():
        m = tr.load(name, **(kw or {}))
        m = fits.randomized(m, seed) if kw is None else m
        out[label] = m.trace(text=texts, skip_first=skip)
    return out


def draw(name: str, kind: str, show_fits, tr_: dict, w="full"):
    """The three panels of one model; returns the figure."""
    import symdyn as sd
    from symdyn.trained import fits
    fig, ax = sd.plot.figure(1, 3, w=w, height=2.55)
    a, b, c = ax[0]
    layers = next(iter(tr_.values())).layers
    for label, t in tr_.items():
        col, dash, mk = LOOKS[label]
        for panel, what in ((a, "cosine"), (c, "norm")):
            lo, med, hi = t.band(what)
            panel.plot(layers, med, color=col, ls=dash, marker=mk,
                       markevery=max(1, len(layers) // 8), label=label if panel is a else None)
            panel.fill_between(layers, lo, hi, color=col, alpha=0.15, lw=0)
        g = np.median(t.cosine, axis=0)
        b.plot(layers[1:], 1 - g[1:], color=col, ls="none", marker=mk, ms=2.5,
               alpha=1 if label in show_fits else 0.35)
        if label in show_fits:
            e, p = fits.exponential(g), fits.power(g)
            b.plot(e.layers, np.exp(e.values[0] - e.values[1] * e.layers), color=col, ls="--", lw=1)
            b.plot(p.layers, np.exp(p.values[0] - p.values[1] * np.log(p.layers)), color=col,
                   ls=":", lw=1.4)
    if kind != "Post-LN":
        t = tr_["trained"]
        f = fits.linear_norm(np.median(t.norm, axis=0))
        line = f.values[0] + f.values[1] * f.layers
        keep = line > 10                                # the log axis: where the fit is positive
        c.plot(f.layers[keep], line[keep], color="#777777", lw=0.9, ls="--")
    # proxies for the fitted laws' line styles
    a.plot([], [], color="#555555", ls="--", lw=1, label=r"fit $e^{a-kl}$ (Post-LN law)")
    a.plot([], [], color="#555555", ls=":", lw=1.4, label=r"fit $e^{a}l^{-p}$ (Pre-LN law)")
    if kind != "Post-LN":
        a.plot([], [], color="#777777", ls="--", lw=0.9, label=r"fit $r_0+sl$ (trained norm)")
    a.set_ylabel(r"mean pairwise cosine $\gamma_l$")
    b.set_ylabel(r"$1-\gamma_l$ (median)")
    c.set_ylabel(r"token norm $|x|_l$")
    b.set_yscale("log")
    if kind != "Post-LN":                               # Pre-LN norms span decades
        c.set_yscale("log")
    a.set_title("(a) cosine, 10-90 % band")
    b.set_title(f"(b) fits: {', '.join(show_fits)}")
    c.set_title("(c) norm, 10-90 % band")
    for panel in (a, b, c):
        panel.set_xlabel("layer $l$ (0: embedding)")
    t = tr_["trained"]
    skip = ", first token left out" if t.skip_first else ""
    sd.plot.finish(fig, ax=a, ncol=4, title=(
        f"{name} ({kind}), {len(t.tokens)} corpus sentences, "
        f"{int(np.min(t.tokens))}-{int(np.max(t.tokens))} tokens{skip}, "
        "residual stream without final norm"))
    return fig


def report(name: str, tr_: dict) -> None:
    from symdyn.trained import fits
    for label, t in tr_.items():
        g, r = np.median(t.cosine, axis=0), np.median(t.norm, axis=0)
        print(f"== {name} {label}")
        for f in (fits.exponential(g), fits.power(g), fits.linear_norm(r)):
            print("  ", f)


def main(argv=None):
    import matplotlib
    matplotlib.use("Agg")
    import symdyn as sd
    import symdyn.trained as tr
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=12, help="corpus sentences (default 12)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs"))
    args = ap.parse_args(argv)
    texts = list(tr.SENTENCES)[:args.texts]
    for key, (name, kind, show) in MODELS.items():
        t0 = time.time()
        tr_ = traces(name, texts)
        report(name, tr_)
        fig = draw(name, kind, show, tr_)
        path = sd.plot.save(fig, Path(args.out) / f"theory_vs_trained_{key}.png", dpi=170)
        print(f"{path} ({path.stat().st_size // 1024} KB, {time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
