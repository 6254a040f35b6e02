"""The fits of issue 26 item 3 on 12 corpus sentences, trained weights and ablations.

    .venv/bin/python tests/reference/theory_vs_trained.py   # ~40 s; output: theory_vs_trained.txt

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


if __name__ == "__main__":
    main()
