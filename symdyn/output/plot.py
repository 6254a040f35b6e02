"""Plots you can compose: data in, matplotlib ``Axes``/``Figure`` out.

Every function takes the data (a :class:`~symdyn.reduced.solver.Trajectory`, a
:class:`~symdyn.particles.simulation.Simulation`, or the dicts of :mod:`symdyn.output.figures`)
and an optional ``ax``; it draws, returns what it drew on, and writes
nothing. :func:`save` writes a figure (PNG, SVG or PDF by suffix, 300 dpi).
matplotlib is imported when a function runs, and its backend is never
changed, so plots show inline in Jupyter.

Each scheme has one style, the same in every figure: :func:`style` takes a
built-in's colour, dash and label from its entry (``Scheme.style``), and
gives custom schemes a colour and dash from a stable hash of their name and
laws (never a built-in's colour). :data:`PAPER` is the rc style
for paper output (``with paper_style(): ...``).

Near the cluster the plots use :math:`\\varepsilon = 1-\\gamma` from the
solver's precise ``epsilon`` on log axes, not ``1 - gamma`` in floats (which
stops at 1e-16).

Layer 4, output.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import sympy as sp

from ..base.checks import shown
from ..model.registry import Scheme, SchemeLike, Style, entry
from ..model.registry import scheme as get_scheme
from ..model.registry import schemes as builtin_names
from ..particles.simulation import NONE, resolve

#: The unnormalized baseline (:data:`symdyn.particles.simulation.NONE`):
#: black and dotted; the built-ins take their entry's style (``Scheme.style``).
BASELINE = Style("#000000", (0, (1, 1)), "none (pure attention)")
_CUSTOM_COLOURS = ("#882255", "#44AA99", "#999933", "#332288", "#AA4499", "#117733",
                   "#661100", "#6699CC", "#888888", "#DDCC77")
_CUSTOM_DASHES = ("-", (0, (5, 2)), (0, (1, 1.2)), (0, (4, 1, 1, 1)), (0, (8, 2, 2, 2)))

#: rc parameters for paper figures (``matplotlib.rc_context(PAPER)``).
PAPER = {
    "font.size": 9, "axes.labelsize": 9, "axes.titlesize": 9, "legend.fontsize": 8,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "lines.linewidth": 1.6,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.alpha": 0.25, "grid.linewidth": 0.6, "legend.frameon": False,
    "savefig.dpi": 300, "savefig.bbox": "tight", "figure.dpi": 110,
    "mathtext.fontset": "cm",
}


@contextmanager
def paper_style():
    """``with paper_style(): ...``: :data:`PAPER` for the figures made inside.

    Examples
    --------
    >>> import matplotlib
    >>> import symdyn as sd
    >>> with sd.plot.paper_style():
    ...     float(matplotlib.rcParams["savefig.dpi"])
    300.0
    """
    import matplotlib

    with matplotlib.rc_context(PAPER):
        yield


def label(scheme: SchemeLike) -> str:
    """How a scheme is named in a legend: its entry's label (the paper's
    names), with any parameter that is a law of ``t`` shown as math
    (nGPT's :math:`\\alpha_t = 1 + t`), never raw sympy text.

    Examples
    --------
    >>> import symdyn as sd
    >>> print(label(sd.scheme("ngpt", alpha="1 + t")), "|", label("none"))
    nGPT, $\\alpha_t = t + 1$ | none (pure attention)
    """
    s = resolve(scheme)
    if s == NONE:
        return BASELINE.label
    if s.style is None or s.name not in builtin_names():     # custom, or renamed
        return s.name
    laws = _laws(s)
    if laws:
        return ", ".join([s.style.label, *laws])
    return s.name if s.free else s.style.label


def _laws(s: Scheme) -> list[str]:
    """A built-in's parameters that are laws of ``t`` (its entry says which),
    away from their defaults, as math: ``$\\alpha_t = t + 1$``."""
    declared, defaults = entry(s.name).parameters, dict(get_scheme(s.name).params)
    laws = {p.name for p in declared if p.kind == "law"}
    out = []
    for name, value in s.params:
        if name in laws and value != defaults.get(name):
            symbol = sp.latex(sp.Symbol(name))
            symbol = f"{symbol}(t)" if "_" in symbol else f"{symbol}_t"
            out.append(f"${symbol} = {sp.latex(value)}$")
    return out


def style(scheme: SchemeLike) -> dict:
    """``{"color", "linestyle", "label"}`` of a scheme, the same in every figure.

    A built-in at its defaults takes its entry's style (``Scheme.style``) and
    ``"none"`` :data:`BASELINE`; any other scheme (a custom one, or nGPT with
    a schedule) gets a colour and dash from a hash of its name and laws,
    stable across sessions, its colour unused by the built-ins.

    Examples
    --------
    >>> from symdyn.output.plot import style
    >>> style("pre-ln")["color"], style("pre-ln") == style("pre-ln")
    ('#D55E00', True)
    """
    s = resolve(scheme)
    fixed = _fixed(s)
    if fixed is not None:
        color, dash = fixed.color, fixed.dash
    else:
        h = int(hashlib.sha256(f"{s.name}|{s.speed}|{s.radial}".encode()).hexdigest(), 16)
        color = _free_colour(h)
        dash = _CUSTOM_DASHES[(h // len(_CUSTOM_COLOURS)) % len(_CUSTOM_DASHES)]
    return {"color": color, "linestyle": dash, "label": label(s)}


def _fixed(s: Scheme) -> Style | None:
    """The style of the baseline, or of a built-in at its defaults; else None."""
    if s == NONE:
        return BASELINE
    if s.style is None or s.name not in builtin_names():     # custom, or renamed
        return None
    return s.style if s == get_scheme(s.name) else None


def _free_colour(h: int) -> str:
    """The palette's colour for hash ``h``: the next one no built-in uses."""
    taken = {BASELINE.color} | {entry(name).style.color for name in builtin_names()}
    k = h % len(_CUSTOM_COLOURS)
    for step in range(len(_CUSTOM_COLOURS)):
        colour = _CUSTOM_COLOURS[(k + step) % len(_CUSTOM_COLOURS)]
        if colour not in taken:
            return colour
    return _CUSTOM_COLOURS[k]


def _axes(ax, ncols=1, width=3.4):
    import matplotlib.pyplot as plt

    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(1, ncols, figsize=(width * ncols, 2.8), layout="constrained")
    return fig, ax


def trajectory(tr, kind: str = "gamma", ax=None, scheme: SchemeLike | None = None,
               **kwargs):
    """One panel of a :class:`~symdyn.reduced.solver.Trajectory` (every batch member).

    ``kind``: ``"gamma"`` (:math:`\\gamma(t)`), ``"epsilon"`` (:math:`1-\\gamma`,
    log scale, from ``tr.epsilon``), ``"gamma_dot"`` (:math:`\\dot\\gamma(t)`),
    or ``"phase"`` (:math:`\\dot\\gamma` against :math:`1-\\gamma`, log-log:
    a terminal law is a straight line there). ``scheme`` gives the style;
    ``kwargs`` go to ``ax.plot``. Returns the Axes.

    Examples
    --------
    >>> import symdyn as sd
    >>> tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[1.0, 10.0, 100.0])
    >>> ax = sd.plot.trajectory(tr, "epsilon", scheme="post-ln")
    >>> ax.get_yscale(), float(ax.get_lines()[0].get_ydata()[-1]) < 1e-80
    ('log', True)
    """
    fig, ax = _axes(ax)
    opts = {**(style(scheme) if scheme is not None else {}), **kwargs}
    t = np.asarray(tr.t, dtype=float)
    eps = np.asarray(tr.epsilon, dtype=float).reshape(-1, len(t))
    gd = np.asarray(tr.gamma_dot, dtype=float).reshape(-1, len(t))
    xy = {"gamma": (t, 1 - eps), "epsilon": (t, eps), "gamma_dot": (t, gd),
          "phase": (eps, gd)}
    if kind not in xy:
        raise ValueError(f"kind: expected one of {', '.join(xy)}, got {shown(kind)}")
    x, y = xy[kind]
    for i in range(len(y)):
        xi = x[i] if x.ndim == 2 else x
        ax.plot(xi, y[i], **(opts if i == 0 else {**opts, "label": None}))
    labels = {"gamma": r"$\gamma(t)$", "epsilon": r"$1-\gamma(t)$",
              "gamma_dot": r"$\dot\gamma(t)$", "phase": r"$\dot\gamma$"}
    ax.set_ylabel(labels[kind])
    ax.set_xlabel(r"$1-\gamma$" if kind == "phase" else "depth $t$")
    if kind in ("epsilon", "phase"):
        ax.set_yscale("log")
    if kind == "phase":
        ax.set_xscale("log")
        ax.invert_xaxis()            # time runs left to right, toward the cluster
    return ax


def horizon(schemes, n, beta, gamma0, level=1e-6, cap=1e4):
    """A time by which every scheme's 1 - gamma is below ``level`` (or ``cap``)."""
    from ..reduced.solver import solve

    grid = np.geomspace(0.1, cap, 41)
    last = 1.0
    for s in schemes:
        eps = solve(s, n=n, beta=beta, gamma0=gamma0, t=grid).epsilon
        k = np.flatnonzero(eps <= level)
        last = max(last, grid[k[0]] if k.size else cap)
    return float(last)


def compare(schemes=None, n: float = 32, beta: float = 1.0, gamma0: float = 0.0, t=None,
            axes=None, level: float = 1e-6):
    """The Figure 2 triptych for any list of schemes, built-in or invented,
    solved with :func:`symdyn.solve` (see :func:`triptych`).

    ``t`` defaults to 400 log-spaced times from 1e-3 to the time by which
    every curve reaches ``1 - gamma = level`` (at most 1e4). Returns the Figure.

    Examples
    --------
    >>> import symdyn as sd
    >>> mine = sd.custom_scheme("mine", speed="sqrt(r)", radial="a")
    >>> fig = sd.plot.compare(["post-ln", "pre-ln", mine], n=8)
    >>> [ax.get_xscale() for ax in fig.axes]
    ['log', 'log', 'log']
    """
    from ..reduced.solver import solve

    names = builtin_names() if schemes is None else list(schemes)
    if not names:
        raise ValueError("schemes: expected at least one scheme")
    if t is None:
        t = np.geomspace(1e-3, horizon(names, n, beta, gamma0, level), 400)
    curves = {s: solve(s, n=n, beta=beta, gamma0=gamma0, t=t) for s in names}
    return triptych(curves, axes=axes, level=level,
                    title=rf"$n = {n:g}$, $\beta = {beta:g}$, $\gamma_0 = {gamma0:g}$")


def triptych(curves: dict, axes=None, level: float = 1e-6, title: str | None = None):
    r"""Three panels from ``{scheme: trajectory}`` (anything with ``t``,
    ``epsilon``, ``gamma_dot``): (a) :math:`1-\gamma(t)` and (b)
    :math:`\dot\gamma(t)` in log time, (c) the phase plot :math:`\dot\gamma`
    against :math:`1-\gamma` (log-log, where each terminal law is a line).
    The axes stop at ``level / 100``; one legend, outside. Returns the Figure.

    Examples
    --------
    >>> import numpy as np
    >>> import symdyn as sd
    >>> t = np.geomspace(0.01, 100, 50)
    >>> fig = sd.plot.triptych({s: sd.solve(s, n=8, beta=1.0, gamma0=0.0, t=t)
    ...                         for s in ("post-ln", "peri-ln")})
    >>> len(fig.axes), len(fig.legends)
    (3, 1)
    """
    if axes is None:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.0), layout="constrained")
    fig = axes[0].figure
    t = None
    for s, tr in curves.items():
        t = np.asarray(tr.t, dtype=float)
        for ax, kind in zip(axes, ("epsilon", "gamma_dot", "phase"), strict=True):
            trajectory(tr, kind, ax=ax, scheme=s)
    for ax in axes[:2]:
        ax.set_xscale("log")
        ax.set_xlim(t[t > 0][0], t[-1])
    floor = level / 100             # below it the exponential schemes leave the picture
    axes[0].set_ylim(floor, 1.5)
    axes[2].set_xlim(1.5, floor)
    shown = [y for line in axes[2].get_lines()
             for x, y in zip(*line.get_data(), strict=True) if x >= floor and y > 0]
    if shown:
        axes[2].set_ylim(max(min(shown), 1e-300) / 2, 2 * max(shown))
    titles = ("(a) distance to the cluster", "(b) speed of the cosine", "(c) phase plot")
    for ax, name in zip(axes, titles, strict=True):
        ax.set_title(name)
    legend(fig, axes[0])
    if title:
        fig.suptitle(title)
    return fig


def legend(fig, ax, **kwargs):
    """One legend for the whole figure, outside the panels (right)."""
    handles, labels = ax.get_legend_handles_labels()
    return fig.legend(handles, labels, loc="outside right center", **kwargs)


def bands(data: dict, ax=None, quantiles=(0.05, 0.95)):
    """Mean :math:`\\gamma(t)` and a quantile band over the seeds per scheme,
    from a :func:`symdyn.output.figures.figure4_data` dict (its ``runs``).

    Examples
    --------
    >>> import symdyn as sd
    >>> from symdyn.output.figures import figure4_data
    >>> data = figure4_data(d=8, n=4, seeds=3, t_max=2.0, points=5, schemes_=["post-ln"])
    >>> ax = sd.plot.bands(data)
    >>> len(ax.get_lines()), len(ax.collections)             # the mean, the band
    (1, 1)
    """
    fig, ax = _axes(ax)
    t = data["t"]
    for name, c in data["curves"].items():
        st = style(name)
        runs = np.asarray(c["runs"])
        ax.plot(t, runs.mean(axis=0), color=st["color"], linestyle=st["linestyle"],
                label=st["label"])
        lo, hi = np.quantile(runs, quantiles, axis=0)
        ax.fill_between(t, lo, hi, color=st["color"], alpha=0.15, linewidth=0)
    ax.set(xlabel="depth $t$", ylabel=r"$\gamma(t)$")
    return ax


def simulation(sim, ax=None, scheme: SchemeLike | None = None, quantiles=(0.05, 0.95)):
    """:math:`\\gamma(t)` of a :class:`~symdyn.particles.simulation.Simulation`: the mean over
    its batch and, with several members, a quantile band.

    Examples
    --------
    >>> import symdyn as sd
    >>> sim = sd.simulate("post-ln", sd.init.sphere(6, 3, batch=4, seed=0), beta=1.0,
    ...                   t=[0.0, 1.0, 2.0])
    >>> ax = sd.plot.simulation(sim, scheme="post-ln")
    >>> ax.get_lines()[0].get_color()
    '#0072B2'
    """
    fig, ax = _axes(ax)
    st = style(scheme) if scheme is not None else {}
    g = np.asarray(sim.gamma, dtype=float).reshape(-1, len(sim.t))
    line, = ax.plot(sim.t, g.mean(axis=0), **st)
    if len(g) > 1:
        lo, hi = np.quantile(g, quantiles, axis=0)
        ax.fill_between(sim.t, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set(xlabel="depth $t$", ylabel=r"$\gamma(t)$")
    return ax


def save(fig, path, dpi: int = 300) -> Path:
    """Write ``fig`` to ``path`` (``.png``, ``.svg`` or ``.pdf``), tight, at ``dpi``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import symdyn as sd
    >>> fig = sd.plot.compare(["post-ln"], n=8)
    >>> path = sd.plot.save(fig, pathlib.Path(tempfile.mkdtemp()) / "post-ln.pdf")
    >>> path.suffix, path.stat().st_size > 1000
    ('.pdf', True)
    """
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ValueError(f"path: expected a .png, .svg or .pdf file name, "
                         f"got {shown(str(path), 200)}")
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path
