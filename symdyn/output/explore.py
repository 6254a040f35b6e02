"""Sliders for a notebook, with a static snapshot for readers without a kernel.

:func:`explore` takes a function ``draw(ax, **values)`` that draws one panel
(cheaply: it runs on every change of a slider) and the controls, each
``name=(low, high, step, value)`` for a slider or ``name=[option, ...]`` for a
menu (the first option is the start). It shows

1. a static snapshot: a strip of panels, one control at three values (the
   others at their start), a PNG in the executed notebook and so on the docs
   site, where no kernel runs;
2. the live sliders (``ipywidgets.interactive``), which redraw one panel.

ipywidgets is imported only here, when :func:`explore` runs, and only if it
is installed (``pip install 'symdyn[notebook]'``): without it the snapshot
stands alone and one line says how to get the sliders. Nothing else in
symdyn depends on it.

Layer 4, output.
"""

from __future__ import annotations

from ..base.checks import shown
from .page import figure, finish
from .style import paper_style

#: What a reader without ipywidgets is told (printed under the snapshot).
NO_WIDGETS = ("sliders need ipywidgets (pip install 'symdyn[notebook]'); "
              "the strip above is a static snapshot")


def start(control):
    """The value a control starts at: a slider's fourth entry, a menu's first."""
    if isinstance(control, list) and control:
        return control[0]
    if isinstance(control, tuple) and len(control) == 4:
        low, high, _, value = control
        if low <= value <= high:
            return value
    raise ValueError(f"explore: a control is (low, high, step, value) with low <= value "
                     f"<= high, or a non-empty list of options; got {shown(control)}")


def strip_values(control) -> list:
    """Three values of one control for the snapshot: a slider's low end,
    start and high end; a menu's first three options."""
    if isinstance(control, list):
        return control[:3]
    low, high, _, value = control
    return list(dict.fromkeys([low, value, high]))


def _label(name, value) -> str:
    return f"{name} = {value:g}" if isinstance(value, (int, float)) else f"{name} = {value}"


def snapshot(draw, controls: dict, strip: str | None = None, values=None, title=None):
    """The static strip: ``draw`` at :func:`strip_values` of the control
    ``strip`` (default: the first), the other controls at their start, one
    panel each, full width. Returns the figure (not shown, not closed)."""
    if not controls:
        raise ValueError("explore: no controls given")
    strip = strip or next(iter(controls))
    if strip not in controls:
        raise ValueError(f"explore: strip={strip!r} is not one of the controls {list(controls)}")
    values = list(values) if values is not None else strip_values(controls[strip])
    base = {k: start(c) for k, c in controls.items()}
    fig, axes = figure(1, len(values), "full", height=2.5)
    with paper_style():
        for ax, v in zip(axes[0], values, strict=True):
            draw(ax, **{**base, strip: v})
            if not ax.get_title():
                ax.set_title(_label(strip, v))
    others = ", ".join(_label(k, v) for k, v in base.items() if k != strip)
    note = f"snapshot at {others}" if others else "snapshot"
    return finish(fig, f"{title}: {note}" if title else note, ax=axes[0, 0])


def widgets(controls: dict):
    """The ipywidgets controls (``IntSlider`` when low, high and step are
    integers, else ``FloatSlider``; ``Dropdown`` for a list), or None when
    ipywidgets is not installed."""
    try:
        import ipywidgets
    except ImportError:
        return None
    out = {}
    label = {"description_width": "initial"}           # the whole name, not 'kappa_ove...'
    for name, c in controls.items():
        value = start(c)
        if isinstance(c, list):
            out[name] = ipywidgets.Dropdown(options=c, value=value, description=name, style=label)
            continue
        low, high, step, _ = c
        kind = (ipywidgets.IntSlider if all(isinstance(x, int) for x in (low, high, step, value))
                else ipywidgets.FloatSlider)
        out[name] = kind(value=value, min=low, max=high, step=step, description=name,
                         continuous_update=False, style=label)
    return out


def live(draw, controls: dict, title=None):
    """The interactive widget that redraws one panel on each change, or None
    without ipywidgets."""
    made = widgets(controls)
    if made is None:
        return None
    import ipywidgets

    def one(**values):
        import matplotlib.pyplot as plt

        fig, axes = figure(1, 1, "column", height=2.9)
        with paper_style():
            draw(axes[0, 0], **values)
            if not axes[0, 0].get_title():
                axes[0, 0].set_title(", ".join(_label(k, v) for k, v in values.items()))
        finish(fig, title, ax=axes[0, 0])
        plt.show()

    return ipywidgets.interactive(one, **made)


def explore(draw, strip: str | None = None, values=None, title: str | None = None, **controls):
    """Show the static snapshot, then the sliders (or one line saying how to
    get them). ``draw(ax, **values)`` draws one panel; ``controls`` are
    ``name=(low, high, step, value)`` or ``name=[options]``; ``strip`` names
    the control the snapshot varies (default: the first) and ``values`` its
    values there (default: :func:`strip_values`). Returns None (a cell that
    ends with it shows nothing twice).

    Examples
    --------
    >>> def draw(ax, k):
    ...     ax.plot([0, 1], [0, k], label="line")
    >>> fig = snapshot(draw, {"k": (1, 3, 1, 2)})
    >>> [a.get_title() for a in fig.axes]
    ['k = 1', 'k = 2', 'k = 3']
    """
    fig = snapshot(draw, controls, strip, values, title)
    _show(fig)
    widget = live(draw, controls, title)
    if widget is None:
        print(NO_WIDGETS)
    else:
        _show(widget)


def _show(obj) -> None:
    """Display in IPython (a figure is then closed: it shows once); outside
    IPython, nothing."""
    import matplotlib.pyplot as plt

    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(obj)
    if hasattr(obj, "savefig"):
        plt.close(obj)
