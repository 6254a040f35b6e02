"""How results look in Jupyter and in papers: LaTeX as the paper writes it.

:func:`latex` prints symdyn's symbols the paper's way (:math:`|A_k|`,
:math:`a_k`, :math:`\\gamma`, :math:`\\beta`); the ``_repr_latex_`` and
``_repr_html_`` methods of the result classes call the functions here, which
know nothing of those classes but their attributes. A trajectory shows as a
small table with an inline SVG sparkline of :math:`\\gamma(t)` (no
matplotlib needed).

Layer 1, model.
"""

from __future__ import annotations

import html

import numpy as np
import sympy as sp

#: How the model's symbols are typeset, by name (the others keep sympy's names).
SYMBOL_NAMES = {"A_norm": r"\lvert A_k\rvert", "a": "a_k"}


def latex(expr) -> str:
    """``expr`` in LaTeX with the paper's symbols (no surrounding ``$``).

    Examples
    --------
    >>> import symdyn as sd
    >>> from symdyn.model.display import latex
    >>> print(latex(sd.scheme("peri-ln").speed))
    \\lvert A_k\\rvert r
    """
    if isinstance(expr, str):
        return r"\text{" + expr.replace("_", r"\_") + "}"
    names = {x: SYMBOL_NAMES[x.name] for x in getattr(expr, "free_symbols", ())
             if x.name in SYMBOL_NAMES}
    return sp.latex(expr, symbol_names=names)


def formula_table(title: str, rows) -> str:
    """A LaTeX ``array`` of (label, formula) rows (both math) under a title,
    for ``_repr_latex_``."""
    body = r" \\ ".join(rf"{label} & {formula}" for label, formula in rows)
    title = title.replace("_", r"\_")
    return (rf"$\begin{{array}}{{ll}} \multicolumn{{2}}{{l}}{{\textbf{{{title}}}}} \\ "
            rf"{body} \end{{array}}$")


def sparkline(t, y, width: int = 160, height: int = 32) -> str:
    """An inline SVG polyline of ``y(t)`` (finite points), scaled to the box."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(t) & np.isfinite(y)
    if ok.sum() < 2:
        return ""
    t, y = t[ok], y[ok]
    tx = (t - t.min()) / max(np.ptp(t), 1e-300) * (width - 2) + 1
    span = np.ptp(y)
    ty = height - 1 - ((y - y.min()) / span * (height - 2) if span > 0 else 0 * y + height / 2)
    points = " ".join(f"{x:.1f},{v:.1f}" for x, v in zip(tx, ty, strict=True))
    return (f'<svg width="{width}" height="{height}" role="img" aria-label="sparkline">'
            f'<polyline fill="none" stroke="#0072B2" stroke-width="1.5" points="{points}"/>'
            f"</svg>")


def summary_html(title: str, rows, t=None, y=None, what: str = "gamma") -> str:
    """A small HTML table of (label, value) rows, with a sparkline of ``y(t)``."""
    cells = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                    f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                    for k, v in rows)
    spark = ""
    if t is not None and y is not None and np.size(t) > 1:
        curve = np.asarray(y, dtype=float).reshape(-1, np.size(t))[0]
        spark = (f"<tr><th style='text-align:left'>{html.escape(what)}(t)</th>"
                 f"<td>{sparkline(t, curve)}</td></tr>")
    return (f"<table><caption style='text-align:left'><b>{html.escape(title)}</b></caption>"
            f"{cells}{spark}</table>")


def summary_text(title: str, rows, t=None, y=None, what: str = "gamma",
                 samples: int = 6, epsilon=None) -> str:
    """What ``print`` shows of a result: the (label, value) rows of its HTML
    summary as aligned text, then ``y(t)`` of the first member at ``samples``
    times (the first, the last and evenly spaced ones between), beside
    ``epsilon`` (:math:`1 - \\gamma` at its relative precision) if given."""
    rows = [(str(k), " ".join(str(v).split())) for k, v in rows]
    width = max((len(k) for k, _ in rows), default=0)
    lines = [title, *(f"  {k:<{width}}  {v}" for k, v in rows)]
    if t is not None and y is not None and np.size(t) > 0:
        t = np.asarray(t, dtype=float)
        curve = np.asarray(y, dtype=float).reshape(-1, t.size)[0]
        pick = np.unique(np.linspace(0, t.size - 1, min(samples, t.size)).round().astype(int))
        first = "" if np.size(y) == t.size else " (first member)"
        eps = None if epsilon is None else np.asarray(epsilon, dtype=float).reshape(
            -1, t.size)[0]
        lines.append(f"  {'t':>12}  {what + first:<22}" + ("" if eps is None else
                                                           "  epsilon = 1 - gamma"))
        lines += [f"  {t[i]:>12.6g}  {curve[i]:<22.10g}" + (
            "" if eps is None else f"  {eps[i]:.10e}") for i in pick]
    return "\n".join(lines)


def formula_text(title: str, rows) -> str:
    """(label, sympy expression) rows as aligned plain text (``print`` of a derivation)."""
    rows = [(k, "None" if v is None else sp.sstr(v) if isinstance(v, sp.Basic) else str(v))
            for k, v in rows]
    width = max((len(k) for k, _ in rows), default=0)
    return "\n".join([title, *(f"  {k:<{width}}  {v}" for k, v in rows)])


def trajectory_rows(tr) -> list:
    """What a :class:`~symdyn.reduced.solve_result.Trajectory` shows: shape, times, ranges."""
    g = np.asarray(tr.gamma, dtype=float)
    eps = np.asarray(tr.epsilon, dtype=float)
    rows = [("batch shape", g.shape[:-1] or "()"),
            ("t", f"{len(tr.t)} times in [{tr.t[0]:g}, {tr.t[-1]:g}]"),
            ("gamma at the last time", _span(g[..., -1])),
            ("1 - gamma at the last time", _span(eps[..., -1], "{:.3e}"))]
    rows += [(k, _span(v)) for k, v in getattr(tr, "params", {}).items()]
    if getattr(tr, "sensitivities", None):
        rows.append(("sensitivities", ", ".join(tr.sensitivities)))
    rows.append(("solver", tr.message))
    return rows


def simulation_rows(sim) -> list:
    g = np.asarray(sim.gamma, dtype=float)
    return [("batch shape", g.shape[:-1] or "()"),
            ("t", f"{len(sim.t)} times in [{sim.t[0]:g}, {sim.t[-1]:g}]"),
            ("gamma at the last time", _span(g[..., -1])),
            ("clusters at the last time", _span(np.asarray(sim.clusters)[..., -1], "{:g}"))]


def _span(x, fmt: str = "{:.6g}") -> str:
    x = np.asarray(x, dtype=float)
    if x.size == 1:
        return fmt.format(float(x.ravel()[0]))
    return f"{fmt.format(float(x.min()))} .. {fmt.format(float(x.max()))}"
