"""A figure's page layout: its size at a printed width, one legend below the
panels, a title wrapped to the width, paper text sizes on every axes; saving.

Layer 4, output.
"""

from __future__ import annotations

from pathlib import Path

from ..base.checks import naming, shown
from .style import PAPER, paper_style, width


def figure(nrows=1, ncols=1, w="column", height=None, **kwargs):
    """A new figure in the paper style, ``w`` wide (``"column"``, ``"full"``
    or inches), panels about 0.8 as tall as wide unless ``height`` is given."""
    import matplotlib.pyplot as plt

    inches = width(w)
    height = height or min(0.8 * inches / ncols, 2.4) * nrows + 0.9
    with paper_style():
        return plt.subplots(nrows, ncols, figsize=(inches, height), squeeze=False,
                            layout="constrained", **kwargs)


def finish(fig, title: str | None = None, ax=None, ncol=None, note: str | None = None):
    """Paper text sizes on every axes (ticks made later too), one legend
    below the panels from ``ax``'s lines (with ``note`` as its title), and
    ``title`` as the figure's title, wrapped to its width. Returns ``fig``."""
    size = PAPER["font.size"]
    for a in fig.axes:
        a.tick_params(labelsize=size, width=0.6)
        for text in (a.title, a.xaxis.label, a.yaxis.label):
            text.set_fontsize(size)
    inches = fig.get_size_inches()[0]
    with paper_style():
        _label(fig, title, ax, ncol, note, inches)
    return fig


def _label(fig, title, ax, ncol, note, inches):
    """The legend and title of :func:`finish`, made in the paper style."""
    if ax is not None:
        labels = ax.get_legend_handles_labels()[1]
        longest = max((_visible(x) for x in labels), default=1)
        fits = max(1, int(15 * inches / (longest + 5)))   # 5: the handle, the gap
        legend(fig, ax, ncol=min(ncol or (4 if inches > 5 else 2), fits), note=note)
    if title:
        fig.suptitle(wrap(title, inches), fontsize=PAPER["figure.titlesize"])


def _visible(text: str) -> int:
    """Roughly how many characters ``text`` shows (math markup left out)."""
    import re

    text = re.sub(r"\\(left|right)", "", text)
    text = re.sub(r"\\[A-Za-z]+", "x", text)           # a command shows about one glyph
    for mark in ("\\", "$", "{", "}", "^", "_"):
        text = text.replace(mark, "")
    return len(text)


def wrap(text: str, inches: float) -> str:
    r"""``text`` broken at ", " (never inside ``$...$``) into lines that fit
    ``inches`` at 9 pt (about 12 characters per inch).

    Examples
    --------
    >>> print(wrap(r"Kaiming weights, $\beta = \sqrt{d}$, unit-scale starts", 2.0))
    Kaiming weights,
    $\beta = \sqrt{d}$,
    unit-scale starts
    """
    room = int(12 * inches)
    parts, depth, current = [], 0, ""
    for piece in text.split(", "):
        current = f"{current}, {piece}" if current else piece
        depth += piece.count("$")
        if depth % 2 == 0:
            parts.append(current)
            current = ""
    parts += [current] if current else []
    lines = [""]
    for part in parts:
        visible = len(part.replace("\\", "").replace("$", "").replace("{", "").replace("}", ""))
        seen = len(lines[-1].replace("\\", "").replace("$", ""))
        if lines[-1] and seen + visible + 2 > room:
            lines[-1] += ","
            lines.append(part)
        else:
            lines[-1] = f"{lines[-1]}, {part}" if lines[-1] else part
    return "\n".join(lines)


def legend(fig, ax, ncol: int = 1, note: str | None = None, where: str = "lower center",
           **kwargs):
    """One legend for the whole figure, outside the panels (below, or
    ``where="right center"``), from ``ax``'s labelled artists, in at most
    ``ncol`` columns: fewer where it would be wider than the figure."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    made = fig.legend(handles, labels, loc=f"outside {where}", ncol=ncol, title=note,
                      **kwargs)
    renderer = getattr(fig.canvas, "get_renderer", lambda: None)()
    while renderer is not None and ncol > 1 and \
            made.get_window_extent(renderer).width > 0.98 * fig.bbox.width:
        made.remove()                          # wider than the page: fewer columns
        ncol -= 1
        made = fig.legend(handles, labels, loc=f"outside {where}", ncol=ncol, title=note,
                          **kwargs)
    return made


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
    with naming(path):
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def save_figure(fig, out, name: str) -> list[Path]:
    """``name.png`` (300 dpi) and ``name.svg`` in ``out``; closes the figure."""
    import matplotlib.pyplot as plt

    out = Path(out)
    paths = [save(fig, out / f"{name}.png"), save(fig, out / f"{name}.svg")]
    plt.close(fig)
    return paths
