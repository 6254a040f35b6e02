"""The fits of issue 26 item 3 on 12 corpus sentences, trained weights and ablations.

    .venv/bin/python tests/reference/theory_vs_trained.py   # ~40 s; output: theory_vs_trained.txt
    .venv/bin/python tests/reference/theory_vs_trained.py fig.png   # the figure

Median over texts per layer; SmolLM2 with skip_first (its massive first token).
"""


def main():
    import time

    import numpy as np

    import symdyn.trained as tr
    from symdyn.trained import fits
    texts = list(tr.SENTENCES)
    for name, scheme in (("all-MiniLM-L6-v2", "post-ln"), ("SmolLM2-135M-Instruct", "pre-ln")):
        for label, kw in (("trained", {}), ("no MLP", {"mlp": False}),
                          ("projection norm", {"norm": "projection"}), ("random weights", None)):
            m = tr.load(name, **(kw or {}))
            if kw is None:
                m = fits.randomized(m, 0)
            t0 = time.time()
            t = m.trace(text=texts[:12], skip_first=(scheme == "pre-ln"))
            g, r = np.median(t.cosine, axis=0), np.median(t.norm, axis=0)
            n = int(np.median(t.tokens)) - (scheme == "pre-ln")
            print(f"== {name} {label}: median gamma per layer", np.round(g, 3).tolist())
            print("   median norm", np.round(r, 1).tolist())
            for f in (fits.exponential(g), fits.power(g), fits.linear_norm(r)):
                print("  ", f)
            try:
                print("  ", fits.reduced_ode(g, scheme, n))
            except Exception as e:
                print("   reduced ODE failed:", type(e).__name__, e)
            print("   time", round(time.time() - t0, 1))



def figure(out="theory_vs_trained.png"):
    """Per model: bands (10-90 %) over texts of the mean cosine and norm, trained and ablated."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import symdyn.trained as tr
    from symdyn.trained import fits
    fig, ax = plt.subplots(2, 2, figsize=(10, 7))
    for col, name in enumerate(("all-MiniLM-L6-v2", "SmolLM2-135M-Instruct")):
        skip = name.startswith("Smol")
        for label, kw in (("trained", {}), ("no MLP", {"mlp": False}),
                          ("projection norm", {"norm": "projection"}), ("random weights", None)):
            m = tr.load(name, **(kw or {}))
            m = fits.randomized(m, 0) if kw is None else m
            t = m.trace(text=list(tr.SENTENCES)[:12], skip_first=skip)
            for row, what in enumerate(("cosine", "norm")):
                lo, med, hi = t.band(what)
                ax[row, col].plot(t.layers, med, label=label)
                ax[row, col].fill_between(t.layers, lo, hi, alpha=0.2)
        ax[0, col].set_title(f"{name}{' (first token left out)' if skip else ''}")
        ax[0, col].set_ylabel("mean pairwise cosine")
        ax[1, col].set_ylabel("mean token norm")
        ax[1, col].set_yscale("log")
        ax[1, col].set_xlabel("layer (0: embedding; residual stream, no final norm)")
        ax[0, col].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    return out


if __name__ == "__main__":
    import sys
    figure(sys.argv[1]) if len(sys.argv) > 1 else main()
