"""The paper style: figure widths, fonts, and one look per scheme.

:data:`WIDTHS`: a one-column figure is 3.25 in wide, a full-width one 6.75 in;
figures are drawn at their printed size, so the 8-9 pt of :data:`PAPER` are
8-9 pt on the page. Text and math share one family (DejaVu Sans, mathtext
``dejavusans``).

Each scheme has one look in every figure, colour + dash + marker
(:func:`style`). The built-ins take colour, dash and label from their entry
(``Scheme.style``, Okabe-Ito colours) and marker from their entry; the
unnormalized baseline is :data:`BASELINE`. Any other scheme (a custom one, a
built-in with a schedule) gets the next free slot of :data:`CUSTOM`, in the
order the session first draws them: a colour no built-in uses, its own dash
and marker, never a built-in's look.

Layer 4, output.
"""

from __future__ import annotations

from contextlib import contextmanager

import sympy as sp

from ..base.checks import shown
from ..model.baseline import NONE, resolve
from ..model.registry import Scheme, SchemeLike, Style, entry
from ..model.registry import scheme as get_scheme
from ..model.registry import schemes as builtin_names

#: Printed widths in inches: one column, and the full text width.
WIDTHS = {"column": 3.25, "full": 6.75}

#: rc parameters for paper figures (``with paper_style(): ...``).
PAPER = {
    "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans"],
    "mathtext.fontset": "dejavusans",
    "font.size": 8, "axes.labelsize": 8, "axes.titlesize": 8, "legend.fontsize": 8,
    "legend.title_fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8,
    "figure.titlesize": 9, "lines.linewidth": 1.3, "lines.markersize": 3.5,
    "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.alpha": 0.25, "grid.linewidth": 0.5, "legend.frameon": False,
    "legend.handlelength": 2.8, "savefig.dpi": 300, "savefig.bbox": "tight",
    "figure.dpi": 110, "figure.constrained_layout.use": False,
}

#: The unnormalized baseline (:data:`symdyn.model.baseline.NONE`).
BASELINE = Style("#000000", (0, (1, 1)), "none (pure attention)")

#: Markers for a built-in whose entry names none.
_SPARE_MARKERS = ("<", ">", "d", "p", "h", "8", "H", "1")

#: Slots of the other schemes, in order: (colour, dash, marker). Paul Tol's
#: muted colours that no built-in uses, dashes no built-in uses.
CUSTOM = (("#332288", (0, (4, 1, 1, 1, 1, 1, 1, 1)), "h"),
          ("#44AA99", (0, (10, 3)), "p"),
          ("#999933", (0, (3, 3)), "<"),
          ("#AA4499", (0, (1, 2)), ">"),
          ("#661100", (0, (5, 1, 1, 1, 1, 1)), "d"),
          ("#6699CC", (0, (12, 2, 2, 2)), "8"),
          ("#888888", (0, (2, 1, 2, 4)), "H"),
          ("#DDAA33", (0, (7, 1.5, 1, 1.5, 1, 1.5)), "1"))
_SLOTS: dict[str, int] = {}


def width(w) -> float:
    """A width in inches from ``"column"``, ``"full"`` or a number in [1, 20]."""
    if isinstance(w, str) and w in WIDTHS:
        return WIDTHS[w]
    if isinstance(w, (int, float)) and not isinstance(w, bool) and 1 <= w <= 20:
        return float(w)
    raise ValueError(f"width: expected 'column', 'full' or inches in [1, 20], got {shown(w)}")


@contextmanager
def paper_style():
    """``with paper_style(): ...``: :data:`PAPER` for the figures made inside.

    Examples
    --------
    >>> import matplotlib
    >>> import symdyn as sd
    >>> with sd.plot.paper_style():
    ...     float(matplotlib.rcParams["savefig.dpi"]), matplotlib.rcParams["mathtext.fontset"]
    (300.0, 'dejavusans')
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


def style(scheme: SchemeLike, marker: bool = False) -> dict:
    """``{"color", "linestyle", "label"}`` of a scheme, the same in every
    figure; with ``marker``, also ``marker`` and ``markevery`` (markers
    spaced along the curve, each scheme's offset differently, so curves
    drawn on top of each other still show every marker).

    Examples
    --------
    >>> from symdyn.output.plot import style
    >>> style("pre-ln")["color"], style("pre-ln", marker=True)["marker"]
    ('#D55E00', 's')
    """
    s = resolve(scheme)
    fixed = _fixed(s)
    if fixed is not None:
        color, dash = fixed.color, fixed.dash
        slot = -1 if s == NONE else list(builtin_names()).index(s.name)
        mark = fixed.marker
        if mark is None and s != NONE:
            mark = _SPARE_MARKERS[slot % len(_SPARE_MARKERS)]
    else:
        key = f"{s.name}|{s.speed}|{s.radial}|{s.temperature}|{s.params}"
        slot = _SLOTS.setdefault(key, len(_SLOTS))
        color, dash, mark = CUSTOM[slot % len(CUSTOM)]
        slot += len(builtin_names())
    out = {"color": color, "linestyle": dash, "label": label(s)}
    if marker and mark is not None:
        out.update(marker=mark, markevery=(0.02 + 0.029 * (slot % 7), 0.2))
    return out


def _fixed(s: Scheme) -> Style | None:
    """The style of the baseline, or of a built-in at its defaults; else None."""
    if s == NONE:
        return BASELINE
    if s.style is None or s.name not in builtin_names():     # custom, or renamed
        return None
    return s.style if s == get_scheme(s.name) else None
