"""The report's other pictures: clustering phase diagrams and designed schedules.

Drawn from data they are given (:mod:`symdyn.studies.phase_diagram` computes
the diagrams, :func:`symdyn.studies.inverse.compare` the schedules), in the
paper style of :mod:`symdyn.output.style`, at a printed ``width``.

Layer 4, output.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..model.registry import schemes as builtin_names
from .page import figure, finish, save_figure
from .style import label, paper_style, shade, style


def _named(scheme: str) -> str:
    """A diagram's scheme (a name in the sweep's table) in a legend: a
    built-in's label, a custom scheme's own name."""
    return label(scheme) if scheme in builtin_names() else str(scheme)

#: Legend text of the phase diagrams' overlays.
T_STAR = r"equiangular prediction $T_*(\beta)$"
T_HALF = r"simulated $t_{1/2}$ (half the pairs linked)"


def plot_phase_diagrams(diagrams, out, name, title, width="full"):
    """Linked fraction over ``(beta, log t)``, one panel per scheme and ``d``
    (schemes in reading order, ``d`` in columns), with the equiangular curve
    :math:`T_*` (white, black edge) and the simulated :math:`t_{1/2}` (red
    dots); each panel's title gives the mean distance
    :math:`|\\log_{10}(t_{1/2}/T_*)|` in decades ("off"). Writes ``name.png`` and ``.svg``."""
    import matplotlib.patheffects as pe

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = list(diagrams.values())
    nd = len(rows[0].d)
    per_row = max(1, (4 if width != "column" else 2) // nd) if len(rows) > 1 else 1
    nrows = -(-len(rows) // per_row)
    fig, axes = figure(nrows, per_row * nd, width, sharex=True, sharey=True,
                       height=0.9 + 1.55 * nrows)
    for ax in axes.ravel()[len(rows) * nd:]:
        ax.set_visible(False)
    edge = [pe.withStroke(linewidth=2.6, foreground="black")]
    for r, pd_ in enumerate(rows):
        t = pd_.t[pd_.t > 0]
        for c, d in enumerate(pd_.d):
            ax = axes.ravel()[r * nd + c]
            mesh = ax.pcolormesh(pd_.beta, t, pd_.linked[c][:, pd_.t > 0].T,
                                 shading="nearest", vmin=0, vmax=1, cmap="viridis",
                                 rasterized=True)
            ax.plot(pd_.beta, pd_.prediction, color="white", lw=1.4, label=T_STAR,
                    path_effects=edge)
            ax.plot(pd_.beta, pd_.transition[c], "o", color="#D55E00", ms=3.5,
                    mec="white", mew=0.5, label=T_HALF)
            ax.set_yscale("log")
            ax.set_ylim(t.min(), t.max())
            ax.grid(False)
            ax.set_title(f"{_named(pd_.scheme)}, $d = {d}$\n"
                         f"{pd_.distance[c]:.2f} decades off")
            ax.set_xlabel(r"$\beta$")
            ax.set_ylabel("depth $t$")
    for ax in axes.ravel():
        ax.label_outer()
    fig.colorbar(mesh, ax=axes, shrink=0.9 if nrows == 1 else 0.5, aspect=25,
                 label=r"pairs with $\cos \geq$" + f" {rows[0].level:g}")
    finish(fig, title, axes[0, 0], ncol=2)
    return save_figure(fig, out, name)


def file_part(name: str) -> str:
    """A scheme name as part of a file name: characters other than letters,
    digits and ``.+-_`` become ``_`` (a custom scheme may be named ``"a/b"``
    or ``".."``)."""
    safe = re.sub(r"[^A-Za-z0-9.+_-]", "_", str(name))
    return "_" + safe if safe.strip(".") == "" else safe


def phase_figures(diagrams, out, n, seeds, width="full") -> dict:
    """The figures of the phase diagrams of a sweep: the first scheme's
    (``phase_diagram_<scheme>``, the name made safe by :func:`file_part`) and,
    with several schemes, ``phase_diagram_all``; their files by scheme (``"all"``)."""
    first = next(iter(diagrams))
    files = {first: plot_phase_diagrams(
        {first: diagrams[first]}, out, f"phase_diagram_{file_part(first)}",
        f"Clustering phase diagram of {_named(first)}, identity weights, $n = {n}$, "
        f"uniform starts, {seeds} seeds", width)}
    if len(diagrams) > 1:
        files["all"] = plot_phase_diagrams(
            diagrams, out, "phase_diagram_all",
            f"Clustering phase diagrams, identity weights, $n = {n}$, uniform starts, "
            f"{seeds} seeds", width)
    return files


def _same(a, b, atol=0.005) -> bool:
    """Two gamma curves within ``atol`` everywhere: one line on the page
    (half a percent of the axis)."""
    g, h = np.asarray(a.gamma, dtype=float).ravel(), np.asarray(b.gamma, dtype=float).ravel()
    return g.shape == h.shape and bool(np.all(np.abs(g - h) <= atol))


def plot_design(builtin: dict, designed: dict, target: float, layers: int | None = None,
                width="full", title: str | None = None):
    """gamma(t) of the built-ins (``{name: trajectory}``, thin) and of the
    designed schedules (``{label: (scheme, trajectory)}``, thick, each its
    own look; designed curves that coincide are drawn once, their labels
    joined: within 0.005 everywhere), the bound ``target`` (in the legend), and with ``layers`` the
    layer boundaries (ticks and markers on the designed curves)."""
    fig, ax = figure(1, 1, width, height=3.6 if width != "column" else 4.2)
    ax = ax[0, 0]
    t = np.asarray(next(iter(builtin.values())).t, dtype=float)
    for name, tr in builtin.items():
        ax.plot(t, np.asarray(tr.gamma).ravel(), **style(name), lw=0.9, alpha=0.8)
    marks = None
    if layers:
        edges = np.linspace(t[0], t[-1], layers + 1)
        marks = [int(np.argmin(np.abs(t - e))) for e in edges]
        ax.set_xticks(edges, [f"{e:g}" if k % 2 == 0 else "" for k, e in enumerate(edges)])
        ax.grid(True, axis="x", lw=0.5)
    drawn = []
    for lab, (fam, tr) in designed.items():
        twin = next((k for k, (_, other) in drawn if _same(tr, other)), None)
        if twin is not None:                          # the same curve: one line, both names
            line = twin
            line.set_label(line.get_label() + f" = {lab.removeprefix('ngpt ')}")
            continue
        st = style(fam, marker=True)            # a family's scheme colour, shaded per curve
        line, = ax.plot(t, np.asarray(tr.gamma).ravel(), color=shade(st["color"], len(drawn)),
                        linestyle=st["linestyle"], marker=st["marker"], lw=2.0,
                        markevery=marks or st["markevery"], label=f"designed: {lab}",
                        zorder=3)
        drawn.append((line, (fam, tr)))
    ax.axhline(target, color="black", lw=0.8, ls=(0, (4, 2)),
               label=f"bound $\\gamma(L) = {target:g}$")
    ax.set(xlabel="depth $t$" + (f" (ticks: the {layers} layers' ends)" if layers else ""),
           ylabel=r"$\gamma(t)$", xlim=(t[0], t[-1]))
    return finish(fig, title or "Designed nGPT schedules against the built-ins", ax,
                  ncol=3 if width != "column" else 2)


def write_design(builtin: dict, designed: dict, target: float, out, layers: int | None = None,
                 title: str | None = None) -> list[Path]:
    """:func:`plot_design` in the paper style, saved as ``design.png`` and ``.svg`` in ``out``."""
    Path(out).mkdir(parents=True, exist_ok=True)
    with paper_style():
        return save_figure(plot_design(builtin, designed, target, layers, title=title),
                           Path(out), "design")
