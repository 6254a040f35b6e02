"""The paper style: figure widths, fonts, and one look per scheme.

:data:`WIDTHS`: a one-column figure is 3.25 in wide, a full-width one 6.75 in;
figures are drawn at their printed size, so the 8-9 pt of :data:`PAPER` are
8-9 pt on the page. Text and math share one family (DejaVu Sans, mathtext
``dejavusans``).

Each scheme has one look in every figure, colour + dash + marker
(:func:`style`), keyed by its registry name. The built-ins take colour,
dash, label and marker from their entry (``Scheme.style``, Okabe-Ito
colours); a built-in away from its defaults (DeepNorm with ``N = 6``, nGPT
with a schedule) keeps its entry's colour and takes the next free dash and
marker of :data:`VARIANTS`, in the order the session first draws them,
and its legend names the parameters that differ (``DeepNorm ($N = 6$)``).
The unnormalized baseline is :data:`BASELINE`. A custom scheme gets the
next free slot of :data:`CUSTOM`: a colour no built-in uses, its own dash
and marker, never a built-in's look.

Layer 4, output.
"""

from __future__ import annotations

from contextlib import contextmanager

import sympy as sp

from ..base.checks import shown
from ..model.baseline import NONE, resolve
from ..model.entry import Style
from ..model.registry import SchemeLike, entry, parameter_text, parameter_values
from ..model.registry import scheme as get_scheme
from ..model.registry import schemes as builtin_names
from ..model.scheme import Scheme

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

#: Dashes and markers of a built-in's variants (away from its defaults), in
#: order: dashes no built-in uses, so a variant never looks like a default.
VARIANTS = (((0, (4, 1.5, 1, 1.5, 1, 1.5)), "<"), ((0, (1, 2.5)), ">"), ((0, (9, 2)), "d"),
            ((0, (2, 2, 6, 2)), "h"), ((0, (5, 3)), "p"), ((0, (10, 1.5, 1.5, 1.5)), "8"))
_VARIANT_SLOTS: dict[str, int] = {}

#: The fewest runs whose quantile band a plot draws; fewer are drawn as lines.
BAND_MIN_RUNS = 20


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

    # Interactive mode is kept as the block left it: a backend first resolved
    # inside (Jupyter's inline one) turns it on, and the context's restoring it
    # off would hide every later figure of the notebook.
    live = matplotlib.is_interactive()
    try:
        with matplotlib.rc_context(PAPER):
            try:
                yield
            finally:
                live = matplotlib.is_interactive()
    finally:
        matplotlib.interactive(live)


def label(scheme: SchemeLike) -> str:
    """How a scheme is named in a legend: its entry's label (the paper's
    names), with any parameter that is a law of ``t`` shown as math
    (nGPT's :math:`\\alpha_t = 1 + t`), never raw sympy text, and the number
    parameters away from their defaults by their symbols (``DeepNorm ($N = 6$)``).

    Examples
    --------
    >>> import symdyn as sd
    >>> print(label(sd.scheme("ngpt", alpha="1 + t")), "|", label("none"))
    nGPT, $\\alpha_t = t + 1$ | none (pure attention)
    >>> print(label(sd.scheme("mix-ln", t_switch=5)))
    Mix-LN ($t_{\\mathrm{switch}} = 5$)
    """
    s = resolve(scheme)
    if s == NONE:
        return BASELINE.label
    if s.style is None or s.name not in builtin_names():     # custom, or renamed
        return s.name
    laws = _laws(s)
    numbers = [f"${parameter_text(p, v, 'latex')}$" for p, v in parameter_values(s)]
    name = s.style.label + (f" ({', '.join(numbers)})" if numbers else "")
    if laws:
        return ", ".join([name, *laws])
    return s.name if s.free and not numbers else name


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
    if s == NONE:
        color, dash, mark, slot = BASELINE.color, BASELINE.dash, None, -1
    elif fixed is not None:                     # a built-in: its entry's colour
        slot = list(builtin_names()).index(s.name)
        color, dash, mark = fixed.color, fixed.dash, fixed.marker
        if s != get_scheme(s.name):             # away from its defaults: a variant
            key = f"{s.name}|{s.speed}|{s.radial}|{s.temperature}|{s.params}|{s.free}"
            k = _VARIANT_SLOTS.setdefault(key, len(_VARIANT_SLOTS))
            dash, mark = VARIANTS[k % len(VARIANTS)]
            slot += 3 * (k + 1)
        elif mark is None:
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


def shade(color: str, k: int) -> str:
    """The ``k``-th shade of ``color`` (``k = 0``: itself; then darker and
    lighter in turn): for figures that draw many variants of one scheme in
    its colour family (Figure 3's schedules, designed families)."""
    if k == 0:
        return color
    rgb = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    step = (0.35, 0.45, 0.6, 0.7)[(k - 1) % 4]
    toward = 0.0 if k % 2 else 1.0                          # odd: darker; even: lighter
    mixed = [(1 - step) * c + step * toward for c in rgb]
    return "#" + "".join(f"{round(255 * c):02X}" for c in mixed)


def _fixed(s: Scheme) -> Style | None:
    """The style of the baseline, or of a built-in's entry (at any parameters); else None."""
    if s == NONE:
        return BASELINE
    if s.style is None or s.name not in builtin_names():     # custom, or renamed
        return None
    return s.style
