"""Plots you can compose: data in, matplotlib ``Axes``/``Figure`` out.

Every function takes the data (a :class:`~symdyn.reduced.solve_result.Trajectory`, a
:class:`~symdyn.particles.result.Simulation`, or the dicts of :mod:`symdyn.output.figures`)
and an optional ``ax``; it draws, returns what it drew on, and writes
nothing. :func:`save` writes a figure (PNG, SVG or PDF by suffix, 300 dpi).
matplotlib is imported when a function runs, and its backend is never
changed, so plots show inline in Jupyter.

Each scheme has one look (colour, dash, marker) in every figure, and the
figures are drawn at a paper's printed widths with 8-9 pt text: both live in
:mod:`symdyn.output.style` (:func:`style`, :func:`paper_style`, ``width=``
``"column"`` (3.25 in) or ``"full"`` (6.75 in)); a figure made here is drawn in
that style. Legends sit outside the data, below the panels.

Near the cluster the plots use :math:`\\varepsilon = 1-\\gamma` from the
solver's precise ``epsilon`` on log axes, not ``1 - gamma`` in floats (which
stops at 1e-16).

Layer 4, output.
"""

from __future__ import annotations

import numpy as np

from ..base.checks import shown
from ..model.baseline import resolve as resolve_scheme
from ..model.registry import SchemeLike, parameter_text, parameter_values
from ..model.registry import schemes as builtin_names
from .meanfield_plot import mean_field_density, mean_field_order, mean_field_title
from .page import figure, finish, legend, save, wrap
from .style import BAND_MIN_RUNS, BASELINE, PAPER, WIDTHS, label, paper_style, style

#: sd.plot: the plots, and the page's and the style's helpers a user composes them with
__all__ = ["bands", "coinciding", "compare", "energy", "horizon", "simulation", "trajectory",
           "triptych", "mean_field_density", "mean_field_order", "mean_field_title",
           "figure", "finish", "legend", "save", "wrap", "BAND_MIN_RUNS",
           "BASELINE", "PAPER", "WIDTHS", "label", "paper_style", "style"]


def _styled(draw):
    """Run a drawing function in the paper style (line widths, marker sizes)."""
    import functools

    @functools.wraps(draw)
    def styled(*args, **kwargs):
        with paper_style():
            return draw(*args, **kwargs)
    return styled


def _axes(ax, w="column"):
    if ax is not None:
        return ax.figure, ax
    fig, axes = figure(1, 1, w)
    return fig, axes[0, 0]


@_styled
def trajectory(tr, kind: str = "gamma", ax=None, scheme: SchemeLike | None = None,
               **kwargs):
    """One panel of a :class:`~symdyn.reduced.solve_result.Trajectory` (every batch member).

    ``kind``: ``"gamma"`` (:math:`\\gamma(t)`), ``"epsilon"`` (:math:`1-\\gamma`,
    log scale, from ``tr.epsilon``), ``"gamma_dot"`` (:math:`\\dot\\gamma(t)`),
    or ``"phase"`` (:math:`\\dot\\gamma` against :math:`1-\\gamma`, log-log:
    a terminal law is a straight line there). ``scheme`` gives the style
    (with its marker); ``kwargs`` go to ``ax.plot``. Returns the Axes.

    Examples
    --------
    >>> import symdyn as sd
    >>> tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[1.0, 10.0, 100.0])
    >>> ax = sd.plot.trajectory(tr, "epsilon", scheme="post-ln")
    >>> ax.get_yscale(), float(ax.get_lines()[0].get_ydata()[-1]) < 1e-80
    ('log', True)
    """
    fig, ax = _axes(ax)
    opts = {**(style(scheme, marker=True) if scheme is not None else {}), **kwargs}
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
            axes=None, level: float = 1e-6, width="full"):
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

    if isinstance(schemes, str) or hasattr(schemes, "speed"):
        schemes = [schemes]                       # one scheme, not its characters
    names = builtin_names() if schemes is None else list(schemes)
    if not names:
        raise ValueError("schemes: expected at least one scheme")
    if t is None:
        t = np.geomspace(1e-3, horizon(names, n, beta, gamma0, level), 400)
    curves = {s: solve(s, n=n, beta=beta, gamma0=gamma0, t=t) for s in names}
    return triptych(curves, axes=axes, level=level, width=width,
                    title=rf"$n = {n:g}$, $\beta = {beta:g}$, $\gamma_0 = {gamma0:g}$")


def coinciding(curves: dict, level: float = 1e-6, share: float = 0.8) -> list[list]:
    r"""Groups of schemes whose phase curves (:math:`\dot\gamma` against
    :math:`1-\gamma`, ``{scheme: trajectory}``) lie within 1% of the panel's
    log height of each other over ``share`` of their common range (down to
    :math:`1-\gamma =` ``level / 100``): one line on the page.

    Examples
    --------
    >>> import numpy as np
    >>> import symdyn as sd
    >>> t = np.geomspace(0.001, 1000, 200)
    >>> coinciding({s: sd.solve(s, n=32, beta=1.0, gamma0=0.0, t=t)
    ...             for s in ("post-ln", "ngpt", "pre-ln", "mix-ln")})
    [['post-ln', 'ngpt'], ['pre-ln', 'mix-ln']]
    """
    floor = level / 100

    def logs(tr):
        e, g = (np.asarray(v, dtype=float).reshape(-1)[: len(tr.t)] for v in
                (tr.epsilon, tr.gamma_dot))
        keep = (e >= floor) & (g > 0) & (e < 1)
        return np.log(e[keep])[::-1], np.log(g[keep])[::-1]

    data = {k: logs(tr) for k, tr in curves.items() if np.size(logs(tr)[0]) > 1}
    if not data:
        return []
    ys = np.concatenate([y for _, y in data.values()])
    tol = 0.01 * (ys.max() - ys.min())
    groups: list[list] = []
    for k, (x, y) in data.items():
        for g in groups:
            x0, y0 = data[g[0]]
            lo, hi = max(x.min(), x0.min()), min(x.max(), x0.max())
            grid = np.linspace(lo, hi, 100)
            close = np.abs(np.interp(grid, x, y) - np.interp(grid, x0, y0)) <= tol
            if hi > lo and close.mean() >= share:
                g.append(k)
                break
        else:
            groups.append([k])
    return [g for g in groups if len(g) > 1]


@_styled
def triptych(curves: dict, axes=None, level: float = 1e-6, title: str | None = None,
             width="full"):
    r"""Three panels from ``{scheme: trajectory}`` (anything with ``t``,
    ``epsilon``, ``gamma_dot``): (a) :math:`1-\gamma(t)` and (b)
    :math:`\dot\gamma(t)` in log time, log scale, (c) the phase plot
    :math:`\dot\gamma` against :math:`1-\gamma` (log-log, where each terminal
    law is a line). The axes stop at ``level / 100``. One legend, below;
    curves that coincide in (c) are named in its title. ``width``:
    ``"full"`` (three panels in a row) or ``"column"`` (stacked). Returns
    the Figure.

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
        full = width != "column"
        fig, grid = figure(1 if full else 3, 3 if full else 1, width,
                           height=2.5 if full else 6.6)
        axes = grid.ravel()
    fig = axes[0].figure
    floor = level / 100             # below it the exponential schemes leave the picture
    t = None
    for s, tr in curves.items():
        t = np.asarray(tr.t, dtype=float)
        for ax, kind in zip(axes, ("epsilon", "gamma_dot", "phase"), strict=True):
            trajectory(tr, kind, ax=ax, scheme=s)
    for ax in axes[:2]:
        ax.set_xscale("log")
        ax.set_xlim(t[t > 0][0], t[-1])
    axes[1].set_yscale("log")
    axes[0].set_ylim(floor, 1.5)
    axes[2].set_xlim(1.5, floor)
    shown_ = [y for line in axes[2].get_lines()
              for x, y in zip(*line.get_data(), strict=True) if x >= floor and y > 0]
    if shown_:
        low = max(min(shown_), 1e-300) / 2
        axes[1].set_ylim(low, 2 * max(shown_))
        axes[2].set_ylim(low, 2 * max(shown_))
    titles = ("(a) distance to the cluster", "(b) speed of the cosine", "(c) phase plot")
    for ax, name in zip(axes, titles, strict=True):
        ax.set_title(name)
    same = coinciding(curves, level)
    note = ("one line in (c): " + "; ".join(" = ".join(label(s) for s in g) for g in same)
            if same else None)
    return finish(fig, title, axes[0], ncol=4 if fig.get_size_inches()[0] > 5 else 2,
                  note=note)


@_styled
def bands(data: dict, ax=None, quantiles=(0.05, 0.95), emphasis=None):
    """Mean :math:`\\gamma(t)` over the seeds per scheme ("mean of 20 runs") and a
    quantile band (from 20 runs on; fewer: each run as a thin line), from a
    :func:`symdyn.output.figures.figure4_data` dict (its ``runs``).
    With ``emphasis`` (a scheme in the data) only that scheme has a band,
    drawn thick on top; the others are thin lines.

    Examples
    --------
    >>> import symdyn as sd
    >>> from symdyn.output.figures import figure4_data
    >>> data = figure4_data(d=8, n=4, seeds=3, t_max=2.0, points=5, schemes_=["post-ln"])
    >>> ax = sd.plot.bands(data)
    >>> len(ax.get_lines()), len(ax.collections)   # the mean, 3 runs (no band), the key
    (5, 0)
    >>> ax.get_lines()[-1].get_label()
    'mean of 3 runs, thin: runs'
    """
    fig, ax = _axes(ax)
    if emphasis is not None and emphasis not in data["curves"]:
        raise ValueError(f"emphasis: expected one of the data's schemes, got {shown(emphasis)}")
    t = data["t"]
    counts = set()
    for name, c in data["curves"].items():
        st = style(name, marker=True)
        runs = np.asarray(c["runs"])
        main = emphasis is None or name == emphasis
        lw = 2.2 if emphasis is not None and main else 1.0 if not main else None
        ax.plot(t, runs.mean(axis=0), **st, lw=lw, zorder=4 if name == emphasis else 2)
        if main:
            counts.add(len(runs))
            _spread(ax, t, runs, st["color"], quantiles,
                    alpha=0.25 if emphasis is not None else 0.12, named=False)
    if counts:             # one legend entry says what the lines and bands are
        k = max(counts)
        spread = ("" if k < 2 else f", {quantiles[0]:.0%}-{quantiles[1]:.0%}"
                  if k >= BAND_MIN_RUNS else ", thin: runs")
        ax.plot([], [], color="none", label=f"mean of {k} runs{spread}"
                if len(counts) == 1 else f"means{spread}")
    ax.set(xlabel="depth $t$", ylabel=r"$\gamma(t)$")
    return ax


def _mean_label(name: str, runs: int) -> str:
    """A batch's line in a legend: what it is the mean of."""
    return name if runs < 2 else f"{name}, mean of {runs} runs"


def _spread(ax, t, runs, color, quantiles, alpha, named=True):
    """The spread of ``runs`` (one per row) about their mean: a quantile band
    from :data:`~symdyn.output.style.BAND_MIN_RUNS` runs on (fewer cannot
    place a 5% quantile), else every run as a thin line."""
    if len(runs) < 2:
        return
    if len(runs) >= BAND_MIN_RUNS:
        lo, hi = np.quantile(runs, quantiles, axis=0)
        ax.fill_between(t, lo, hi, color=color, alpha=alpha, linewidth=0,
                        label=f"{quantiles[0]:.0%}-{quantiles[1]:.0%} of {len(runs)} runs"
                        if named else None)
        return
    for i, g in enumerate(runs):
        ax.plot(t, g, color=color, lw=0.5, alpha=0.45, zorder=1,
                label=f"the {len(runs)} runs" if named and i == 0 else None)


@_styled
def simulation(sim, ax=None, scheme: SchemeLike | None = None, quantiles=(0.05, 0.95),
               params: dict | None = None, width="column"):
    """:math:`\\gamma(t)` of a :class:`~symdyn.particles.result.Simulation`: the mean over
    its batch ("mean of 4 runs") and, with several members, a quantile band
    from 20 runs on (:data:`~symdyn.output.style.BAND_MIN_RUNS`), each run as
    a thin line below that; one legend, and a
    title with the scheme, ``n``, the members and ``params`` (``{"d": 64,
    "beta": 1.0, ...}``, what the run was given). Output times are marked
    when there are fewer than 40.

    Examples
    --------
    >>> import symdyn as sd
    >>> sim = sd.simulate("post-ln", sd.init.sphere(6, 3, batch=4, seed=0), beta=1.0,
    ...                   t=[0.0, 1.0, 2.0])
    >>> ax = sd.plot.simulation(sim, scheme="post-ln", params={"d": 3, "beta": 1.0})
    >>> print(ax.get_lines()[0].get_color(), ax.figure.get_suptitle())
    #0072B2 Post-LN, $n = 6$, 4 runs, $d = 3$, $\\beta = 1$
    """
    fig, ax = _axes(ax, width)
    st = style(scheme) if scheme is not None else {"label": "mean"}
    g = np.asarray(sim.gamma, dtype=float).reshape(-1, len(sim.t))
    few = len(sim.t) < 40
    line, = ax.plot(sim.t, g.mean(axis=0), **{**st, "label": _mean_label(st["label"], len(g))},
                    **({"marker": "o"} if few else {}))
    _spread(ax, sim.t, g, line.get_color(), quantiles, alpha=0.2)
    clock = getattr(sim, "clock", "t")
    ax.set(xlabel=r"$\tau = \log(1 + t)$" if clock == "log" else "depth $t$",
           ylabel=r"$\gamma(t)$ (mean over pairs)")
    if fig.axes[0] is ax and len(fig.axes) == 1:
        finish(fig, ", ".join(title_facts(sim, scheme, st, len(g), params)), ax)
    return ax


def title_facts(sim, scheme, st, runs, params=None) -> list[str]:
    """What a simulation's title says, from its provenance
    (:meth:`~symdyn.base.provenance.Provenance.changes`): the scheme with its
    number parameters (DeepNorm's ``N`` even at its default), ``n``, the runs,
    ``d``, ``beta``, the start and its seeds, then everything away from a
    default (mask, ``kappa``, the noise's seed, the step and the layers it
    makes, attention, weights, ablations); ``params`` add to or replace them."""

    p = getattr(sim, "provenance", None)
    name = st["label"] if scheme is not None else "simulation"
    if scheme is not None and not parameter_values(resolve_scheme(scheme)):
        shown_ = [f"${parameter_text(q, v, 'latex')}$"
                  for q, v in parameter_values(resolve_scheme(scheme), every=True)]
        name += f" ({', '.join(shown_)})" if shown_ else ""
    given = {} if p is None else {"d": p.d, "beta": p.beta}
    if p is not None and p.start is not None:
        given["init"] = p.start + (f" (seed{'s' if runs > 1 else ''} {_seeds(p.start_seed)})"
                                   if p.start_seed is not None else "")
    given.update(params or {})
    names = {"beta": r"\beta", "gamma0": r"\gamma_0", "kappa": r"\kappa"}
    facts = [name, f"$n = {np.shape(sim.r)[-2]}$", f"{runs} run{'s' if runs > 1 else ''}"]
    for k, v in [*given.items(), *([] if p is None else p.changes()[len(p.params):])]:
        if k == "noise_seed":
            facts.append(f"noise seed {v}" if len(str(v)) < 12 else    # drawn: its entropy
                         f"noise seed {str(v)[:8]}... (drawn)")
        elif k == "step":
            facts.append(f"$h = {v:g}$ ({round(float(sim.t[-1]) / v):,} layers)")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            facts.append(f"${names.get(k, k)} = {v:g}$")
        elif v is not None and not isinstance(v, list):
            facts.append(f"{k} {v}")
    return facts


def _seeds(seeds) -> str:
    seeds = seeds if isinstance(seeds, list) else [seeds]
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(x) for x in seeds)


@_styled
def energy(sim, beta, ax=None, width="column"):
    """The energy staircase of a :class:`~symdyn.particles.result.Simulation`:
    the normalized interaction energy :math:`2\\beta e^{-\\beta} E_\\beta =
    \\frac{1}{n^2}\\sum_{ij} e^{-\\beta(1-\\langle x_i, x_j\\rangle)}` (1 at one
    cluster, :math:`\\approx 1/k` at k equal clusters) against the rescaled time
    :math:`s = \\log(1+t)/\\beta`, one line per member. Two clusters at angle
    :math:`\\theta` merge near :math:`s = 1 - \\cos\\theta` (docs/metastability.md),
    so at large beta the plateaus keep their place in ``s``. ``beta``: the run's
    (a number or one per member); from ``sim.energy`` where the run recorded it,
    else from ``sim.X`` (``save_x=True``).
    """
    from ..particles.clusters import energy as interaction
    fig, ax = _axes(ax, width)
    b = np.atleast_1d(np.asarray(beta, dtype=float))
    E = getattr(sim, "energy", None)
    if E is None:
        if sim.X is None:
            raise ValueError("sim: the energy needs sim.X (simulate with save_x=True)")
        X = sim.X if sim.X.ndim == 4 else sim.X[None]
        E = interaction(X, b[:, None] if b.size > 1 else b[0], normalized=True)
    else:
        E = np.atleast_2d(E) * 2 * b[:, None] * np.exp(-b[:, None])
    E = np.atleast_2d(E)
    s = np.log1p(sim.t)[None, :] / np.broadcast_to(b, (len(E),))[:, None]
    for i, (x, y) in enumerate(zip(s, E, strict=True)):
        name = f"member {i}, beta = {b[i % b.size]:g}"
        ax.plot(x, y, drawstyle="steps-post", lw=1, label=name if len(E) > 1 else None)
    for k in range(1, 6):
        ax.axhline(1 / k, color="0.6", lw=0.5, ls=":", zorder=0)
        ax.annotate(f"1/{k}", (1.0, 1 / k), xycoords=("axes fraction", "data"), fontsize=6,
                    color="0.4", va="center", ha="left")
    ax.set(xlabel=r"rescaled time $\log(1+t)/\beta$",
           ylabel=r"$2\beta e^{-\beta} E_\beta$", ylim=(0, 1.05))
    if 1 < len(E) <= 6:
        legend(fig, ax, ncol=min(len(E), 3))
    return ax
