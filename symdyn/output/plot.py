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
__all__ = ["bands", "clusters", "coinciding", "compare", "energy", "horizon", "simulation",
           "trajectory", "log_spaced",
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


def log_spaced(t) -> bool:
    """Are the output times ``t`` log-spaced: at least three positive ones (a
    leading 0 aside) spanning a decade or more, whose ratios
    :math:`t_{k+1}/t_k` are roughly constant (their logarithms within a
    factor 2 of each other)?

    >>> log_spaced([0, 0.01, 0.1, 1, 10]), log_spaced(range(0, 100, 10))
    (True, False)
    """
    t = np.asarray(t, dtype=float).ravel()
    t = t[1:] if t.size and t[0] == 0 else t
    if t.size < 3 or not np.all(t > 0) or not np.all(np.isfinite(t)):
        return False
    steps = np.diff(np.log(t))
    return bool(np.all(steps > 0) and t[-1] >= 10 * t[0] and steps.max() <= 2 * steps.min())


def _time_axis(ax, t, log_time, clock="t"):
    """A log time axis where ``log_time`` asks for it (``None``: where ``t``
    is :func:`log_spaced`), limited to the positive times; its label."""
    if log_time is not None and not isinstance(log_time, bool):
        raise ValueError(f"log_time: expected True, False or None, got {shown(log_time)}")
    t = np.asarray(t, dtype=float)
    use = log_spaced(t) if log_time is None else log_time
    if use and clock != "log":
        positive = t[t > 0]
        if positive.size:
            ax.set_xscale("log")
            ax.set_xlim(positive.min(), positive.max())
    ax.set_xlabel(r"$\tau = \log(1 + t)$" if clock == "log" else "depth $t$")
    return use


@_styled
def trajectory(tr, kind: str = "gamma", ax=None, scheme: SchemeLike | None = None,
               log_time: bool | None = None, **kwargs):
    """One panel of a :class:`~symdyn.reduced.solve_result.Trajectory` (every batch member).

    ``kind``: ``"gamma"`` (:math:`\\gamma(t)`), ``"epsilon"`` (:math:`1-\\gamma`,
    log scale, from ``tr.epsilon``), ``"gamma_dot"`` (:math:`\\dot\\gamma(t)`),
    or ``"phase"`` (:math:`\\dot\\gamma` against :math:`1-\\gamma`, log-log:
    a terminal law is a straight line there). ``scheme`` gives the style
    (with its marker); ``kwargs`` go to ``ax.plot``. The time axis is
    logarithmic for log-spaced output times (:func:`log_spaced`) or with
    ``log_time=True``. Returns the Axes.

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
    if kind == "phase":
        ax.set_xlabel(r"$1-\gamma$")
    else:
        _time_axis(ax, t, log_time)
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


def coinciding(curves: dict, level: float = 1e-6, share: float = 0.8,
               where: bool = False) -> list:
    r"""Groups of schemes whose phase curves (:math:`\dot\gamma` against
    :math:`1-\gamma`, ``{scheme: trajectory}``) lie within 1% of the panel's
    log height of each other from the cluster's end (:math:`1-\gamma =`
    ``level / 100``) up over at least ``share`` of their common range: one
    line on the page there.

    ``where=True``: ``(group, upto)`` pairs, ``upto`` the :math:`1-\gamma`
    below which the group is one line (``None``: over the whole common
    range; above ``upto`` at least two of them are told apart, as Pre-LN's
    and Peri-LN's :math:`\dot\gamma(0)`, 4x apart, are).

    Examples
    --------
    >>> import numpy as np
    >>> import symdyn as sd
    >>> t = np.geomspace(0.001, 1000, 200)
    >>> curves = {s: sd.solve(s, n=32, beta=1.0, gamma0=0.0, t=t)
    ...           for s in ("post-ln", "ngpt", "pre-ln", "mix-ln")}
    >>> coinciding(curves)
    [['post-ln', 'ngpt'], ['pre-ln', 'mix-ln']]
    >>> [(g, None if e is None else f"{e:.0e}") for g, e in coinciding(curves, where=True)]
    [(['post-ln', 'ngpt'], '3e-01'), (['pre-ln', 'mix-ln'], None)]
    """
    floor = level / 100

    def logs(tr):
        e, g = (np.asarray(v, dtype=float).reshape(-1)[: len(tr.t)] for v in
                (tr.epsilon, tr.gamma_dot))
        keep = (e >= floor) & (g > 0) & (e < 1)
        order = np.argsort(e[keep])
        return np.log(e[keep])[order], np.log(g[keep])[order]

    data = {k: logs(tr) for k, tr in curves.items() if np.size(logs(tr)[0]) > 1}
    if not data:
        return []
    ys = np.concatenate([y for _, y in data.values()])
    tol = 0.01 * (ys.max() - ys.min())

    def upto(a, b):
        """The fraction of the common range, from the cluster's end, on which
        ``a`` and ``b`` are one line, and the largest log(1 - gamma) of it."""
        (x, y), (x0, y0) = data[a], data[b]
        lo, hi = max(x.min(), x0.min()), min(x.max(), x0.max())
        if not hi > lo:
            return 0.0, lo
        grid = np.linspace(lo, hi, 200)
        apart = np.abs(np.interp(grid, x, y) - np.interp(grid, x0, y0)) > tol
        k = int(np.argmax(apart)) if apart.any() else len(grid)
        return k / len(grid), (None if k == len(grid) else grid[max(k - 1, 0)])

    groups: list[list] = []
    for k in data:
        for g in groups:
            if upto(k, g[0])[0] >= share:
                g.append(k)
                break
        else:
            groups.append([k])
    groups = [g for g in groups if len(g) > 1]
    if not where:
        return groups
    out = []
    for g in groups:
        ends = [upto(a, b)[1] for i, a in enumerate(g) for b in g[i + 1:]]
        out.append((g, None if all(e is None for e in ends)
                    else float(np.exp(min(e for e in ends if e is not None)))))
    return out


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
    same = coinciding(curves, level, where=True)
    wide = fig.get_size_inches()[0] > 5
    note = ("one line in (c):" + (" " if wide else "\n") + (";  " if wide else "\n").join(
        ("" if e is None else f"for $1-\\gamma < {_power(e)}$, ") +
        " = ".join(label(s) for s in g) for g, e in same)) if same else None
    return finish(fig, title, axes[0], ncol=4 if wide else 2, note=note)


def _power(x: float) -> str:
    """``x`` in LaTeX as a power of ten to one digit: ``2\\times 10^{-1}``."""
    m, e = f"{x:.0e}".split("e")
    return (f"{m}\\times " if m != "1" else "") + f"10^{{{int(e)}}}"


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
               params: dict | None = None, width="column", log_time: bool | None = None):
    """:math:`\\gamma(t)` of a :class:`~symdyn.particles.result.Simulation`: the mean over
    its batch ("mean of 4 runs") and, with several members, a quantile band
    from 20 runs on (:data:`~symdyn.output.style.BAND_MIN_RUNS`), each run as
    a thin line below that; one legend, and a
    title with the scheme, ``n``, the members and ``params`` (``{"d": 64,
    "beta": 1.0, ...}``, what the run was given). Output times are marked
    when there are fewer than 40. The time axis is logarithmic for
    log-spaced output times (:func:`log_spaced`) or with ``log_time=True``
    (``False``: linear).

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
    _time_axis(ax, sim.t, log_time, getattr(sim, "clock", "t"))
    ax.set_ylabel(r"$\gamma(t)$ (mean over pairs)")
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


def run_beta(sim, beta=None) -> np.ndarray:
    """The run's beta (one per member, or one for all) from its provenance;
    ``beta`` given: checked against it (a ``ValueError`` where they differ),
    or used where the run recorded none."""
    p = getattr(sim, "provenance", None)
    recorded = None if p is None or p.beta is None else np.atleast_1d(
        np.asarray(p.beta, dtype=float))
    if beta is None:
        if recorded is None:
            raise ValueError("beta: this run records no beta (no provenance); pass beta=")
        return recorded
    given = np.atleast_1d(np.asarray(beta, dtype=float))
    try:
        same = recorded is None or np.allclose(given, recorded, rtol=1e-12, atol=0)
    except ValueError:                       # shapes that do not broadcast
        same = False
    if not same:
        raise ValueError(f"beta: the run was made at beta = {_short_list(recorded)}, "
                         f"got beta = {_short_list(given)}; leave beta out to read the run's")
    return given


def _short_list(b) -> str:
    return f"{b[0]:g}" if b.size == 1 else "[" + ", ".join(f"{x:g}" for x in b[:4]) + \
        (", ...]" if b.size > 4 else "]")


@_styled
def energy(sim, beta=None, ax=None, width="column"):
    """The energy staircase of a :class:`~symdyn.particles.result.Simulation`:
    the normalized interaction energy :math:`2\\beta e^{-\\beta} E_\\beta =
    \\frac{1}{n^2}\\sum_{ij} e^{-\\beta(1-\\langle x_i, x_j\\rangle)}` (1 at one
    cluster, :math:`\\approx 1/k` at k equal clusters far apart) against the
    rescaled time :math:`s = \\log(1+t)/\\beta`, one line per member. Two
    clusters at angle :math:`\\theta` merge near :math:`s = 1 - \\cos\\theta`
    (docs/metastability.md), so at large beta the plateaus keep their place
    in ``s``. ``beta``: read from the run's provenance; given, it must be
    the run's (a ``ValueError`` otherwise; needed only for a run without
    provenance). ``beta > 0``. The energy from ``sim.energy`` where the run
    recorded it, else from ``sim.X`` (``save_x=True``).

    >>> import numpy as np, symdyn as sd
    >>> sim = sd.simulate("post-ln", sd.init.sphere(8, 2, batch=2, seed=0), beta=4.0,
    ...                   t=np.geomspace(0.1, 1e4, 20))
    >>> ax = sd.plot.energy(sim)
    >>> round(float(ax.get_lines()[0].get_ydata()[-1]), 6)        # one cluster
    1.0
    """
    from ..particles.clusters import energy as interaction
    b = run_beta(sim, beta)
    if not np.all(b > 0):
        raise ValueError(f"beta: the energy staircase needs beta > 0, got {_short_list(b)}")
    fig, ax = _axes(ax, width)
    E = getattr(sim, "energy", None)
    if E is None:
        if sim.X is None:
            raise ValueError("sim: the energy needs sim.X (simulate with save_x=True)")
        X = sim.X if sim.X.ndim == 4 else sim.X[None]
        E = interaction(X, b[:, None] if b.size > 1 else b[0], normalized=True)
    else:
        E = np.atleast_2d(E) * 2 * b[:, None] * np.exp(-b[:, None])
    E = np.atleast_2d(E)
    t = np.expm1(sim.t) if getattr(sim, "clock", "t") == "log" else np.asarray(sim.t)
    s = np.log1p(t)[None, :] / np.broadcast_to(b, (len(E),))[:, None]
    several = b.size > 1 and not np.all(b == b[0])          # else beta is in the title
    for i, (x, y) in enumerate(zip(s, E, strict=True)):
        name = f"member {i}" + (f", $\\beta = {b[i % b.size]:g}$" if several else "")
        ax.plot(x, y, drawstyle="steps-post", lw=1, label=name if len(E) > 1 else None)
    for k in range(1, 6):
        ax.axhline(1 / k, color="0.6", lw=0.5, ls=":", zorder=0)
        ax.annotate(f"1/{k}" if k > 1 else "1", (1.0, 1 / k),
                    xycoords=("axes fraction", "data"),
                    xytext=(2, 0), textcoords="offset points", fontsize=6,
                    color="0.4", va="center", ha="left", annotation_clip=False,
                    in_layout=True)
    ax.set(xlabel=r"rescaled time $\log(1+t)/\beta$",
           ylabel=r"$2\beta e^{-\beta} E_\beta$", ylim=(0, 1.05))
    if fig.axes[0] is ax and len(fig.axes) == 1:
        finish(fig, _run_title(sim, len(E)), ax if 1 < len(E) <= 6 else None,
               ncol=min(len(E), 3))
    return ax


def _run_title(sim, runs) -> str:
    """A run's title (:func:`title_facts`), the scheme named where the
    registry knows it."""
    p = getattr(sim, "provenance", None)
    scheme = p.scheme if p is not None and p.scheme in builtin_names() else None
    return ", ".join(title_facts(sim, scheme, style(scheme) if scheme else {}, runs))


@_styled
def clusters(sim, ax=None, log_time: bool | None = None, width="column"):
    """The number of clusters of a :class:`~symdyn.particles.result.Simulation`
    (``sim.clusters``: components of the graph ``cos >= cluster_threshold``)
    against time, a staircase per member: each step down is a merge (the
    rows of ``sim.events``), each flat stretch a plateau (``sim.plateaus``).
    Up to 6 members each in its colour and named; more: every member a thin
    grey line and their median in black. The time axis is logarithmic for
    log-spaced output times (:func:`log_spaced`) or with ``log_time=True``.

    >>> import numpy as np, symdyn as sd
    >>> sim = sd.simulate("post-ln", sd.init.sphere(10, 2, batch=2, seed=0), beta=6.0,
    ...                   t=np.r_[0, np.geomspace(0.1, 1e5, 30)])
    >>> ax = sd.plot.clusters(sim)
    >>> ax.get_xscale(), [int(line.get_ydata()[-1]) for line in ax.get_lines()]
    ('log', [1, 1])
    """
    fig, ax = _axes(ax, width)
    t = np.asarray(sim.t, dtype=float)
    counts = np.asarray(sim.clusters).reshape(-1, len(t))
    many = len(counts) > 6
    for i, c in enumerate(counts):
        if many:
            ax.plot(t, c, drawstyle="steps-post", color="0.6", lw=0.5, alpha=0.6,
                    label=f"each of {len(counts)} runs" if i == 0 else None)
        else:
            ax.plot(t, c, drawstyle="steps-post", lw=1,
                    label=f"member {i}" if len(counts) > 1 else None)
    if many:
        ax.plot(t, np.median(counts, axis=0), drawstyle="steps-post", color="k", lw=1.2,
                label=f"median of {len(counts)} runs")
    _time_axis(ax, t, log_time, getattr(sim, "clock", "t"))
    top = int(counts.max()) if counts.size else 1
    ax.set(ylabel=f"clusters (cos $\\geq$ {sim.cluster_threshold:g})",
           ylim=(0, top + max(1, top // 10)))
    from matplotlib.ticker import MaxNLocator
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if fig.axes[0] is ax and len(fig.axes) == 1:
        finish(fig, _run_title(sim, len(counts)), ax if len(counts) > 1 else None,
               ncol=min(len(counts), 3) if not many else 2)
    return ax
