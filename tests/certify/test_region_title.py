"""The region map's title is not clipped (issue 48, item 2's "the region
plot's title is clipped"): a method naming three kinds of certificate wraps
inside the figure; control: the same title on one line runs past its edges."""

from __future__ import annotations

import matplotlib
import pytest

pytest.importorskip("flint")
matplotlib.use("Agg")

from symdyn.certify.compare import Region  # noqa: E402

BOXES = [((2.0, 8.0), (0.0, 2.0)), ((8.0, 64.0), (0.0, 2.0)), ((2.0, 8.0), (2.0, 4.0))]
HOW = ["pointwise dominance", "monotone bounds of the crossing-time integrands",
       "interval Taylor enclosures of both crossing times"]


def _inside(artist) -> bool:
    fig = artist.figure
    fig.canvas.draw()
    box = artist.get_window_extent(fig.canvas.get_renderer())
    return (box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.width
            and box.y1 <= fig.bbox.height)


def test_a_long_method_wraps_inside_the_figure():
    import matplotlib.pyplot as plt

    region = Region(claim="post-ln before peri-ln", n=(2.0, 64.0), beta=(0.0, 4.0),
                    level="0.99", proven_boxes=BOXES, undecided=[((8.0, 64.0), (2.0, 4.0))],
                    boxes=4, certificates=dict(zip(BOXES, HOW, strict=True)))
    assert len(region.method) > 120
    ax = region.plot()
    assert _inside(ax.title) and _inside(ax.get_legend()) and _inside(ax.xaxis.label)
    assert all(word in ax.title.get_text() for word in ("pointwise", "Taylor", "monotone"))
    # control: the title on one line is wider than the figure
    ax.set_title(f"{region.claim}, level {region.level}\n{region.method}", fontsize=8)
    assert not _inside(ax.title)
    plt.close(ax.figure)
