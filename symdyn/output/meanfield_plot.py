r"""Plots of a mean-field solution (``sd.plot.mean_field_order``, ``sd.plot.mean_field_density``).

Both read the result's provenance for their title (:func:`mean_field_title`):
the sphere, :math:`\beta`, :math:`\kappa` (or no noise), the kernel when it
is not softmax, and the modes kept. Drawn in the paper style like every
``sd.plot`` figure; ``ax`` given: drawn there, the title left to the caller.

Layer 4, output.
"""

from __future__ import annotations

import numpy as np

from .page import figure, finish
from .style import paper_style


def _axes(ax, w):
    if ax is not None:
        return ax.figure, ax, False
    fig, axes = figure(1, 1, w)
    return fig, axes[0, 0], True


def mean_field_title(res, **more) -> str:
    r"""``"mean field on the circle, $\beta = 1$, $\kappa = 4$, 64 modes"``: the
    facts of ``res``'s provenance (a ``MeanField`` or ``ZonalMeanField``);
    ``more``: further ``name=value`` facts (numbers as math)."""
    p = res.provenance
    where = "the circle" if p.d == 2 else f"$S^{{{p.d - 1}}}$ (zonal)"
    facts = [f"mean field on {where}", f"$\\beta = {p.beta:g}$",
             f"$\\kappa = {p.kappa:.4g}$" if p.kappa is not None else "no noise"]
    if p.attention != "softmax":
        facts.append(f"{p.attention} kernel")
    facts.append(f"{dict(p.options)['modes']} modes")
    names = {"beta": r"\beta", "kappa": r"\kappa", "kappa_c": r"\kappa_c"}
    facts += [f"${names.get(k, k)} = {v:.4g}$" if isinstance(v, (int, float)) else f"{k} {v}"
              for k, v in more.items()]
    return ", ".join(facts)


def _first(res) -> np.ndarray:
    """The first moment's modulus: ``|c_1(t)|`` (circle) or ``|m_1(t)|`` (zonal)."""
    return np.abs(res.moments[:, 1])


def mean_field_order(res, ax=None, rate: float | None = None, label: str | None = None,
                     width="column", **kwargs):
    r"""The order parameter :math:`|c_1(t)|` (zonal: :math:`|m_1(t)|`) of ``res``
    on a log axis; with ``rate``, the linear law :math:`|c_1(0)|\,e^{\lambda t}`
    dotted in the same colour. Returns the Axes.

    >>> import numpy as np, symdyn as sd
    >>> r = sd.mean_field(1.0, np.linspace(0, 4, 9), [1, 0.01], kappa=4.0, modes=16)
    >>> ax = sd.plot.mean_field_order(r, rate=0.2)
    >>> print(sd.plot.mean_field_title(r)); ax.get_yscale(), len(ax.get_lines())
    mean field on the circle, $\beta = 1$, $\kappa = 4$, 16 modes
    ('log', 2)
    """
    fig, ax, alone = _axes(ax, width)
    y = _first(res)
    with paper_style():
        line, = ax.semilogy(res.t, y, label=label or "solver", **kwargs)
        if rate is not None:
            ax.semilogy(res.t, y[0] * np.exp(rate * np.asarray(res.t)), ":",
                        color=line.get_color(),
                        label=f"linear: $e^{{{rate:.3g}\\,t}}$")
    ax.set(xlabel="$t$", ylabel=r"$|c_1(t)|$" if res.provenance.d == 2 else r"$|m_1(t)|$")
    if alone:
        finish(fig, mean_field_title(res), ax)
    return ax


def mean_field_density(res, ax=None, points: int = 2000, width="column", **kwargs):
    r"""The density of ``res`` at each output time, one line per time (labelled
    ``t = ...``): :math:`\rho(\theta, t)` on the circle, :math:`f(s, t)`
    against :math:`s = \langle x, e\rangle` for a zonal law. Returns the Axes."""
    fig, ax, alone = _axes(ax, width)
    circle = res.provenance.d == 2
    x = (np.linspace(0, 2 * np.pi, points, endpoint=False) if circle else
         np.linspace(-1, 1, points))
    with paper_style():
        for ti, rho in zip(res.t, res.density(x), strict=True):
            ax.plot(x, rho, label=f"$t = {ti:g}$", **kwargs)
    ax.set(xlabel=r"$\theta$" if circle else r"$s = \langle x, e\rangle$",
           ylabel=r"density $\rho(\theta, t)$" if circle else r"density $f(s, t)$",
           xlim=(x[0], 2 * np.pi if circle else 1))
    if alone:
        finish(fig, mean_field_title(res), ax)
    return ax
