"""The paper's Figures 2-5, regenerated: data first, pictures second.

``figure2_data`` ... ``figure5_data`` return plain dicts of numpy arrays (what
the tests check); the ``plot_figure*`` functions draw them with
:mod:`symdyn.output.plot` (styles fixed per scheme, paper rc style, one legend per
figure) and return the Figure; ``write_figures`` computes, draws and saves
them (PNG at 300 dpi and SVG) and says, per figure, whether our model shows
what the paper's caption says. The report's other pictures are drawn here
from data they are given: the phase diagrams (:func:`phase_figures`) and the
designed schedules (:func:`plot_design`). Nothing here changes matplotlib's
backend.

Layer 4, output.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..model.registry import entry, scheme, schemes
from ..particles import init, weights
from ..particles.simulation import simulate
from ..reduced.solver import solve
from .claims import PAPER_SIX, caption_checks
from .page import (
    figure,
    finish,
    save_figure,
)
from .plot import bands, coinciding, horizon, trajectory, triptych
from .style import BAND_MIN_RUNS, paper_style, shade, style

__all__ = ["NGPT_SCHEDULES", "figure2_data", "figure3_data", "figure4_data", "figure5_data",
           "plot_figure2", "plot_figure3", "plot_bands", "write_figures"]

#: nGPT's alpha schedules of the paper's Figure 3 (its entry's ``schedules``).
NGPT_SCHEDULES = entry("ngpt").schedules


def figure2_data(n: int = 32, beta: float = 1.0, t_max: float | None = None,
                 points: int = 400, schemes_=None) -> dict:
    """gamma(t), 1 - gamma (precise) and d gamma/dt of every scheme (or of
    ``schemes_``, names or Scheme objects) from an orthogonal start (sd.solve),
    at ``points`` times log-spaced from 1e-3 to ``t_max`` (default: when every
    scheme has 1 - gamma <= 1e-6)."""
    names = list(schemes()) if schemes_ is None else list(schemes_)
    t_max = horizon(names, n, beta, 0.0) if t_max is None else t_max
    t = np.geomspace(1e-3, t_max, points)
    curves = {}
    for name in names:
        tr = solve(name, n=n, beta=beta, gamma0=0.0, t=t)
        curves[name] = {"gamma": tr.gamma, "epsilon": tr.epsilon,
                        "gamma_dot": tr.gamma_dot}
    return {"t": t, "n": n, "beta": beta, "curves": curves}


def figure3_data(n: int = 32, beta: float = 1.0, t_max: float = 6.0,
                 points: int = 301, schedules: dict | None = None) -> dict:
    """nGPT from an orthogonal start under the alpha schedules
    (``{label: alpha}``; default :data:`NGPT_SCHEDULES`)."""
    t = np.linspace(0.0, t_max, points)
    curves = {}
    for label, alpha in (NGPT_SCHEDULES if schedules is None else schedules).items():
        tr = solve(scheme("ngpt", alpha=alpha), n=n, beta=beta, gamma0=0.0, t=t)
        curves[label] = {"alpha": alpha, "gamma": tr.gamma, "epsilon": tr.epsilon,
                         "gamma_dot": tr.gamma_dot}
    return {"t": t, "n": n, "beta": beta, "curves": curves}


def figure4_data(d: int = 512, n: int = 32, heads: int = 1, seeds: int = 8,
                 t_max: float = 10.0, points: int = 41, untied: bool = False,
                 schemes_=None, seed: int = 0) -> dict:
    """Random Kaiming weights, beta = sqrt(d), random starts at unit scale.

    Mean gamma(t) with a 90% band over ``seeds`` (the 5% and 95% quantiles),
    from the particle simulator. Starts: ``init.gaussian(scale=1/sqrt(d))``
    (norms near 1); each seed draws its own start, all share the weights.
    """
    names = list(schemes()) if schemes_ is None else list(schemes_)
    t = np.linspace(0.0, t_max, points)
    layers = int(np.ceil(t_max)) if untied else None
    w = weights.kaiming(d, heads=heads, layers=layers, seed=seed)
    X0 = init.gaussian(n, d, scale=d**-0.5, batch=seeds, seed=seed + 1)
    curves = {}
    for name in names:
        sim = simulate(name, X0, beta=np.sqrt(d), t=t, weights=w, rtol=1e-6, atol=1e-8)
        g = sim.gamma
        curves[name] = {"mean": g.mean(axis=0), "low": np.quantile(g, 0.05, axis=0),
                        "high": np.quantile(g, 0.95, axis=0), "runs": g}
    return {"t": t, "d": d, "n": n, "heads": heads, "seeds": seeds, "untied": untied,
            "beta": float(np.sqrt(d)), "curves": curves}


def figure5_data(base: dict | None = None, **kwargs) -> dict:
    """The pure attention update ("none") beside the normalized schemes.

    With ``base`` (a :func:`figure4_data` result) only "none" is simulated,
    on the same starts, weights and times, and the normalized curves are reused.
    """
    if base is None:
        return figure4_data(schemes_=["none", *schemes()], **kwargs)
    none = figure4_data(d=base["d"], n=base["n"], heads=base["heads"], seeds=base["seeds"],
                        t_max=float(base["t"][-1]), points=len(base["t"]),
                        untied=base["untied"], schemes_=["none"], **kwargs)
    out = dict(base)
    out["curves"] = {"none": none["curves"]["none"], **base["curves"]}
    return out


# --------------------------------------------------------------------------
# pictures
# --------------------------------------------------------------------------

def _curve(t, c):
    return SimpleNamespace(t=t, epsilon=c["epsilon"], gamma_dot=c["gamma_dot"])


def plot_figure2(data, width="full"):
    """The triptych of :func:`symdyn.output.plot.compare` from :func:`figure2_data`
    (``width``: ``"full"``, three panels in a row, or ``"column"``, stacked)."""
    return triptych({name: _curve(data["t"], c) for name, c in data["curves"].items()},
                    width=width,
                    title=rf"Orthogonal symmetric start, $n = {data['n']}$, "
                          rf"$\beta = {data['beta']:g}$, nGPT with $\alpha_t = 1$")


def plot_figure3(data, width="full"):
    """nGPT under the alpha schedules: gamma(t), and 1 - gamma on a log axis."""
    import sympy as sp

    full = width != "column"
    fig, ax = figure(1 if full else 2, 2 if full else 1, width,
                     height=2.9 if full else 4.6)
    ax = ax.ravel()
    for k, c in enumerate(data["curves"].values()):
        s = scheme("ngpt", alpha=c["alpha"])
        st = {**style(s, marker=True),
              "label": rf"$\alpha_t = {sp.latex(dict(s.params)['alpha'])}$"}
        st["color"] = shade(st["color"], k)     # shades of nGPT's orange
        trajectory(_curve(data["t"], c), "gamma", ax=ax[0], **st)
        trajectory(_curve(data["t"], c), "epsilon", ax=ax[1], **st)
    ax[0].set_title("(a) cosine similarity")
    ax[1].set_title(r"(b) $1-\gamma$, the solver's precise value")
    ax[1].set_ylim(max(np.min([c["epsilon"][-1] for c in data["curves"].values()]),
                       1e-300) / 10, 2)
    return finish(fig, rf"nGPT under step-size schedules $\alpha_t$, orthogonal start, "
                       rf"$n = {data['n']}$, $\beta = {data['beta']:g}$", ax[0])


def plot_bands(panels, title: str, width="full", emphasis=None):
    """Mean gamma(t) and its 5-95% quantile band over seeds (from 20 seeds on;
    fewer: each run as a thin line), one panel per
    ``(label, data)`` of :func:`figure4_data` (side by side at ``"full"``
    width, stacked at ``"column"``); ``emphasis``: one scheme drawn thick
    with its band, the others thin (Figure 5's "none"). One legend, below;
    ``title`` gets the sizes of the first panel."""
    k = len(panels)
    full = width != "column"
    fig, axes = figure(1 if full else k, k if full else 1, width, sharey=True,
                       height=(3.4 if k == 1 else 2.9) if full else 2.0 + 2.2 * k)
    axes = axes.ravel()
    for ax, (label, data) in zip(axes, panels, strict=True):
        bands(data, ax=ax, emphasis=emphasis)
        ax.set_title(f"{label}" + (f", {data['seeds']} seeds" if k > 1 else ""))
        ax.set_ylim(-0.05, 1.02)
        if full and ax is not axes[0]:
            ax.set_ylabel("")
    d = panels[0][1]
    return finish(fig, f"{title}, $d = {d['d']}$, $n = {d['n']}$, {d['seeds']} seeds",
                  axes[0], ncol=5 if full else 3)


#: Sizes of Figures 4-5: d, seeds of the main panel, seeds of the extra panels
#: (quick mode draws the main panel only, with few seeds, and says so).
FULL_SIZES = {"d": 512, "seeds": 20, "extra": 20}
QUICK_SIZES = {"d": 64, "seeds": 4, "extra": 0}


def write_figures(out, quick: bool = False, progress=None, schemes_=None) -> dict:
    """Compute and draw Figures 2-5 into ``out``; returns data, files and checks.

    ``schemes_`` (names or Scheme objects, custom ones included) replaces the
    built-ins in Figures 2, 4 and 5; the caption checks then need the
    built-ins they name and are left out when one is missing."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda m: None)
    size = QUICK_SIZES if quick else FULL_SIZES
    d, seeds = size["d"], size["seeds"]
    say("figure 2")
    f2 = figure2_data(schemes_=schemes_)
    say("figure 3")
    f3 = figure3_data()
    say(f"figure 4 (d = {d}, {seeds} seeds)")
    f4 = figure4_data(d=d, seeds=seeds, schemes_=schemes_)
    panels = [("one head", f4)]
    if size["extra"]:
        say("figure 4, four heads")
        panels.append(("four heads", figure4_data(d=d, seeds=size["extra"], heads=4,
                                                  points=21, schemes_=schemes_)))
        say("figure 4, untied")
        panels.append(("untied", figure4_data(d=d, seeds=size["extra"], untied=True,
                                              points=21, schemes_=schemes_)))
    say("figure 5")
    f5 = figure5_data(base=f4)
    spread = "5-95% band" if seeds >= BAND_MIN_RUNS else "each run thin"
    title = (rf"Kaiming weights, $\beta = \sqrt{{d}}$, unit-scale starts, mean and {spread} "
             f"over seeds{', quick mode' if quick else ''}")
    with paper_style():
        files = {
            "figure2": save_figure(plot_figure2(f2), out, "figure2"),
            "figure3": save_figure(plot_figure3(f3), out, "figure3"),
            "figure4": save_figure(plot_bands(panels, title), out, "figure4"),
            "figure5": save_figure(plot_bands([("none (thick, with its band) vs the "
                                                "normalized schemes", f5)], title,
                                               emphasis="none"), out, "figure5"),
        }
    named = {"post-ln", "pre-ln", "peri-ln", "ngpt"}
    checks = (caption_checks(f2, f4 if named <= set(f4["curves"]) else None)
              if set(PAPER_SIX) <= set(f2["curves"]) else {})
    same = coinciding({k: _curve(f2["t"], c) for k, c in f2["curves"].items()}, where=True)
    return {"files": files, "checks": checks, "quick": quick, "coinciding": same,
            "data": {"figure2": f2, "figure3": f3, "figure4": f4, "figure5": f5}}
