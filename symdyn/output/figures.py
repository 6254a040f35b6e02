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

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..model.registry import entry, scheme, schemes
from ..particles import init, weights
from ..particles.simulation import simulate
from ..reduced.solver import solve
from .claims import PAPER_SIX, Claim, caption_checks  # noqa: F401 (re-exported)
from .plot import bands, horizon, legend, paper_style, save, style, trajectory, triptych

__all__ = ["NGPT_SCHEDULES", "caption_checks", "figure2_data", "figure3_data",
           "figure4_data", "figure5_data", "plot_figure2", "plot_figure3", "plot_bands",
           "plot_design", "write_design", "write_figures", "phase_figures", "plot_phase_diagrams"]

#: nGPT's alpha schedules of the paper's Figure 3 (its entry's ``schedules``).
NGPT_SCHEDULES = entry("ngpt").extra["schedules"]


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

def save_figure(fig, out: Path, name: str) -> list[Path]:
    """``name.png`` (300 dpi) and ``name.svg`` in ``out``; closes the figure."""
    import matplotlib.pyplot as plt

    paths = [save(fig, out / f"{name}.png"), save(fig, out / f"{name}.svg")]
    plt.close(fig)
    return paths


def _curve(t, c):
    return SimpleNamespace(t=t, epsilon=c["epsilon"], gamma_dot=c["gamma_dot"])


def plot_figure2(data):
    """The triptych of :func:`symdyn.output.plot.compare` from :func:`figure2_data`."""
    return triptych({name: _curve(data["t"], c) for name, c in data["curves"].items()},
                    title=rf"orthogonal symmetric start, $n = {data['n']}$, "
                          rf"$\beta = {data['beta']:g}$, nGPT with $\alpha_t = 1$")


def plot_figure3(data):
    """nGPT under the alpha schedules: gamma(t), and 1 - gamma on a log axis."""
    import matplotlib.pyplot as plt
    import sympy as sp

    fig, ax = plt.subplots(1, 2, figsize=(7.5, 2.9), layout="constrained")
    for c in data["curves"].values():
        s = scheme("ngpt", alpha=c["alpha"])
        st = {**style(s), "label": rf"$\alpha_t = {sp.latex(dict(s.params)['alpha'])}$"}
        trajectory(_curve(data["t"], c), "gamma", ax=ax[0], **st)
        trajectory(_curve(data["t"], c), "epsilon", ax=ax[1], **st)
    ax[0].set_title("(a) cosine similarity")
    ax[1].set_title(r"(b) $1-\gamma$ (the solver's precise value)")
    ax[1].set_ylim(max(np.min([c["epsilon"][-1] for c in data["curves"].values()]),
                       1e-300) / 10, 2)
    legend(fig, ax[0])
    fig.suptitle(rf"nGPT, orthogonal start, $n = {data['n']}$, $\beta = {data['beta']:g}$")
    return fig


def plot_bands(panels, title: str):
    """Mean gamma(t) and its 5-95% quantile band over seeds, one panel per
    ``(label, data)`` of :func:`figure4_data`; one legend."""
    import matplotlib.pyplot as plt

    width = 5.0 if len(panels) == 1 else 3.6 * len(panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.0), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, (label, data) in zip(axes[0], panels, strict=True):
        bands(data, ax=ax)
        ax.set_title(f"{label}: $d = {data['d']}$, $n = {data['n']}$, {data['heads']} "
                     f"head{'s' if data['heads'] > 1 else ''}, "
                     f"{'untied' if data['untied'] else 'tied'}, {data['seeds']} seeds",
                     fontsize=8)
        ax.set_ylim(-0.05, 1.02)
    for ax in axes[0, 1:]:
        ax.set_ylabel("")
    legend(fig, axes[0, 0])
    fig.suptitle(title)
    return fig


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
    title = (rf"Kaiming weights, $\beta = \sqrt{{d}}$, unit-scale starts; mean and 5-95% "
             f"band over seeds{' (quick mode)' if quick else ''}")
    with paper_style():
        files = {
            "figure2": save_figure(plot_figure2(f2), out, "figure2"),
            "figure3": save_figure(plot_figure3(f3), out, "figure3"),
            "figure4": save_figure(plot_bands(panels, title), out, "figure4"),
            "figure5": save_figure(plot_bands([("none vs normalized", f5)], title),
                                   out, "figure5"),
        }
    named = {"post-ln", "pre-ln", "peri-ln", "ngpt"}
    checks = (caption_checks(f2, f4 if named <= set(f4["curves"]) else None)
              if set(PAPER_SIX) <= set(f2["curves"]) else {})
    return {"files": files, "checks": checks, "quick": quick,
            "data": {"figure2": f2, "figure3": f3, "figure4": f4, "figure5": f5}}


# --------------------------------------------------------------------------
# the clustering phase diagram (symdyn.studies.phase_diagram computes it)
# --------------------------------------------------------------------------

def plot_phase_diagrams(diagrams, out, name, title):
    """One row per scheme, one column per ``d``: linked fraction over
    ``(beta, log t)``, the equiangular curve :math:`T_*` (white) and the
    empirical :math:`t_{1/2}` (dots). Writes ``name.png`` and ``name.svg``."""
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = list(diagrams.values())
    cols = len(rows[0].d)
    fig, axes = plt.subplots(len(rows), cols, figsize=(3.4 * cols, 2.8 * len(rows)),
                             squeeze=False, sharex=True, sharey=True,
                             layout="constrained")
    for r, pd_ in enumerate(rows):
        t = pd_.t[pd_.t > 0]
        for c, d in enumerate(pd_.d):
            ax = axes[r, c]
            mesh = ax.pcolormesh(pd_.beta, t, pd_.linked[c][:, pd_.t > 0].T, shading="nearest",
                                 vmin=0, vmax=1, cmap="viridis")
            ax.plot(pd_.beta, pd_.prediction, color="white", lw=1.6, label="equiangular $T_*$")
            ax.plot(pd_.beta, pd_.transition[c], "o", color="tab:red", ms=3,
                    label="$t_{1/2}$ (simulated)")
            ax.set_yscale("log")
            ax.set_ylim(t.min(), t.max())
            ax.set_title(f"{pd_.scheme}, d = {d}: {pd_.distance[c]:.3f} dec", fontsize=9)
            if c == 0:
                ax.set_ylabel("t")
            if r == len(rows) - 1:
                ax.set_xlabel(r"$\beta$")
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.colorbar(mesh, ax=axes, shrink=0.8 if len(rows) == 1 else 0.25,
                 label=f"fraction of pairs with cos >= {rows[0].level:g}")
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, out, name)


def file_part(name: str) -> str:
    """A scheme name as part of a file name: characters other than letters,
    digits and ``.+-_`` become ``_`` (a custom scheme may be named ``"a/b"``
    or ``".."``)."""
    safe = re.sub(r"[^A-Za-z0-9.+_-]", "_", str(name))
    return "_" + safe if safe.strip(".") == "" else safe


def phase_figures(diagrams, out, n, seeds) -> dict:
    """The figures of the phase diagrams of a sweep: the first scheme's
    (``phase_diagram_<scheme>``, the name made safe by :func:`file_part`) and,
    with several schemes, ``phase_diagram_all``; their files by scheme (``"all"``)."""
    first = next(iter(diagrams))
    files = {first: plot_phase_diagrams(
        {first: diagrams[first]}, out, f"phase_diagram_{file_part(first)}",
        f"{first}, identity weights, n = {n}, uniform starts, {seeds} seeds: "
        f"clustering phase diagram and the equiangular prediction")}
    if len(diagrams) > 1:
        files["all"] = plot_phase_diagrams(
            diagrams, out, "phase_diagram_all",
            f"Every scheme, identity weights, n = {n}, {seeds} seeds")
    return files


# --------------------------------------------------------------------------
# designed schedules (symdyn.studies.inverse.compare finds them)
# --------------------------------------------------------------------------

def plot_design(builtin: dict, designed: dict, target: float):
    """gamma(t) of the built-ins (``{name: trajectory}``) and of the designed
    schedules (``{label: (scheme, trajectory)}``, thin lines;
    :func:`symdyn.studies.inverse.compare` finds them), with the bound
    ``target`` (grey)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2), layout="constrained")
    for name, tr in builtin.items():
        trajectory(tr, "gamma", ax=ax, scheme=name)
    for label, (fam, tr) in designed.items():
        trajectory(tr, "gamma", ax=ax, **{**style(fam), "label": f"designed: {label}"}, lw=1.1)
    ax.axhline(target, color="grey", lw=0.7)
    legend(fig, ax)
    return fig


def write_design(builtin: dict, designed: dict, target: float, out) -> list[Path]:
    """:func:`plot_design` in the paper style, saved as ``design.png`` and ``.svg`` in ``out``."""
    with paper_style():
        return save_figure(plot_design(builtin, designed, target), Path(out), "design")
