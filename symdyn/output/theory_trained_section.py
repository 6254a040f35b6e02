"""The report's section "Theory against trained transformers" (issue 26).

:func:`trained_result` computes it (the traces, fits and verdicts of
:mod:`~symdyn.output.theory_trained` per model, each figure written into the
report's folder), or records in one sentence why it cannot (the optional extra
or a model file missing); :func:`trained_section` writes its markdown.
Quick mode traces :data:`QUICK_TEXTS` corpus sentences, the full report
:data:`FULL_TEXTS`.

Layer 4, output.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .formatting import markdown_table
from .page import save_figure
from .theory_trained import (
    MODELS,
    TIE,
    draw,
    family,
    missing,
    model_fits,
    traces,
    verdicts,
    winner,
)

QUICK_TEXTS, FULL_TEXTS = 4, 12


def trained_result(folder, quick: bool = False, progress=None, seed: int = 0) -> dict:
    """``{"missing": sentence}`` when the extra or a model is missing, else
    ``{"texts", "seed", "models": {key: {name, kind, traces, fits, verdicts,
    files, seconds}}}``; the figures go to ``folder/theory_vs_trained_KEY.png``."""
    why = missing()
    if why is not None:
        return {"missing": why}
    from ..trained import SENTENCES
    say = progress or (lambda m: None)
    texts = list(SENTENCES)[:QUICK_TEXTS if quick else FULL_TEXTS]
    Path(folder).mkdir(parents=True, exist_ok=True)
    models = {}
    for key, (name, show) in MODELS.items():
        say(f"trained model {name} ({len(texts)} sentences, 4 variants)")
        start = time.perf_counter()
        tr_ = traces(name, texts, seed)
        kind = tr_["trained"].scheme                   # the family: a registry name
        F = model_fits(tr_, kind)
        files = save_figure(draw(name, kind, show, tr_), Path(folder), f"theory_vs_trained_{key}")
        models[key] = {"name": name, "kind": family(kind)["label"], "traces": tr_, "fits": F,
                       "verdicts": verdicts(kind, tr_, F), "files": files,
                       "seconds": time.perf_counter() - start}
    return {"texts": texts, "seed": seed, "models": models}


def _pm(value, error) -> str:
    e = "∞" if not np.isfinite(error) else f"{error:.2g}"
    return f"{value:.3g} ± {e}"


def fit_table(tr_: dict, F: dict) -> str:
    """One row per variant: 1 - gamma at the last layer, each law's constant with
    its standard error and the law's rms residual, the better law."""
    rows = []
    for v, f in F.items():
        g_last = float(np.median(tr_[v].cosine, axis=0)[-1])
        best, ratio = winner(f["exp"], f["power"])
        ode = f["ode"]
        rows.append([v, f"{1 - g_last:.3g}",
                     f"{_pm(f['exp'].values[1], f['exp'].errors[1])} ({f['exp'].rms:.3g})",
                     f"{_pm(f['power'].values[1], f['power'].errors[1])} ({f['power'].rms:.3g})",
                     f"{best} ({ratio:.2f})",
                     f"{_pm(f['norm'].values[1], f['norm'].errors[1])} ({f['norm'].rms:.3g})",
                     f"β = {_pm(ode.values[0], ode.errors[0])}, τ = "
                     f"{_pm(ode.values[1], ode.errors[1])} ({ode.rms:.3g})"])
    return markdown_table(["variant", "1 - γ at the last layer", "exponential: k (rms)",
                           "power: p (rms)", "better law (rms ratio)",
                           "norm: slope s (rms)", "reduced ODE (rms in γ)"], rows)


INTRO = (
    "Two trained models, run as numpy forward passes by `symdyn.trained`, against the "
    "laws: all-MiniLM-L6-v2 (a 6-layer Post-LN encoder) and SmolLM2-135M-Instruct (a "
    "30-layer Pre-RMSNorm decoder; its first token, a massive activation, is left out). "
    "Per model, {k} sentences of the shipped corpus (`symdyn.trained.SENTENCES`), four "
    "variants: the trained weights, no MLP, the norm as the bare projection "
    "$x/|x|\\cdot\\sqrt d$, and random weights of the same shapes (seed {seed}). Fitted "
    "to the medians over the texts (`symdyn.trained.fits`, least squares, standard errors "
    "from the Jacobian, rms residuals in brackets): $\\log(1-\\gamma_l) = a - kl$ "
    "(exponential, the Post-LN law) and $a - p\\log l$ (power, the Pre-LN law) over "
    "layers 1..L; the norm $|x|_l = r_0 + sl$; the family's reduced ODE "
    "$\\gamma_l = \\gamma(\\tau l)$ with $\\beta$ and $\\tau$ fitted (± ∞: not fixed by the "
    "data). A law fits better when its rms residual is below {tie} times the other's.")


def trained_section(result: dict, folder: str) -> str:
    """Markdown of :func:`trained_result`: one sentence when it could not run."""
    if "missing" in result:
        return result["missing"] + "\n"
    lines = [INTRO.format(k=len(result["texts"]), seed=result["seed"], tie=TIE), ""]
    for m in result["models"].values():
        png = next(p for p in m["files"] if str(p).endswith(".png"))
        lines += [f"### {m['name']} ({m['kind']})", "",
                  f"Traced, fitted and drawn in {m['seconds']:.0f} s.", "",
                  fit_table(m["traces"], m["fits"]),
                  f"![{m['name']} against the laws]({folder}/{png.name})", "",
                  "Verdicts, from the fits:", ""]
        lines += [f"- {s}" for s in m["verdicts"]]
        lines.append("")
    return "\n".join(lines)
