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
The notebook ``notebooks/theory_vs_trained.ipynb`` shows the same, on fewer texts; the
traces and the drawing are the library's (``symdyn.output.theory_trained``), which the
report's section "Theory against trained transformers" uses too.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from symdyn.output.theory_trained import MODELS, draw, traces


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
    for key, (name, show) in MODELS.items():
        t0 = time.time()
        tr_ = traces(name, texts)
        report(name, tr_)
        fig = draw(name, tr_["trained"].scheme, show, tr_)
        path = sd.plot.save(fig, Path(args.out) / f"theory_vs_trained_{key}.png", dpi=170)
        print(f"{path} ({path.stat().st_size // 1024} KB, {time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
