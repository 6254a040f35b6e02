"""Every figure the report, the CLI and the plot API make, at one-column and
full width: the saved figure is no wider than the printed width, every text
is >= 7 pt there, titles, legends and axis labels exist, the legend is
outside the data; each check has a control (a figure that fails it)."""

import io
import types

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

import symdyn as sd
from symdyn.output import diagrams, figures, plot
from symdyn.output.style import WIDTHS, paper_style, style
from symdyn.studies.phase_diagram import PhaseDiagram

matplotlib.use("Agg", force=True)
SIX = ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"]


@pytest.fixture(scope="module")
def data():
    t = np.geomspace(1e-3, 200, 60)
    f2 = figures.figure2_data(n=32, t_max=200.0, points=60, schemes_=SIX)
    f3 = figures.figure3_data(t_max=3.0, points=31)
    f4 = figures.figure4_data(d=8, n=4, seeds=2, t_max=2.0, points=5, schemes_=SIX[:4])
    f5 = figures.figure5_data(base=f4)
    sim = sd.simulate("post-ln", sd.init.sphere(6, 3, batch=3, seed=0), beta=1.0,
                      t=np.linspace(0, 3, 11))
    grid = np.linspace(0, 4, 81)
    builtin = {s: sd.solve(s, n=32, beta=1.0, gamma0=0.0, t=grid) for s in SIX[:3]}
    ng = sd.scheme("ngpt", alpha="1 + t/2")
    des = sd.solve(ng, n=32, beta=1.0, gamma0=0.0, t=grid)
    designed = {"affine": (ng, des), "two-piece": (sd.scheme("ngpt", alpha="1 + t/2"), des)}
    beta = np.linspace(0, 9, 4)
    tt = np.concatenate([[0.0], np.geomspace(0.1, 1e3, 9)])
    pd_ = {s: PhaseDiagram(scheme=s, n=16, d=(8, 64), beta=beta, t=tt,
                           linked=np.random.default_rng(0).random((2, 4, 10)),
                           prediction=np.full(4, 6.0), transition=np.full((2, 4), 7.0),
                           distance=np.array([0.1, 0.05]), mismatched=np.zeros(2, int))
           for s in SIX[:2]}
    return dict(t=t, f2=f2, f3=f3, f4=f4, f5=f5, sim=sim, builtin=builtin,
                designed=designed, pd=pd_)


def makers(d, width, tmp):
    def phase(both):
        dg = d["pd"] if both else {"post-ln": d["pd"]["post-ln"]}
        diagrams.plot_phase_diagrams(dg, tmp, "p", "Phase diagram, $n = 16$", width)
        return plt._last
    return {
        "figure2": lambda: figures.plot_figure2(d["f2"], width),
        "figure3": lambda: figures.plot_figure3(d["f3"], width),
        "figure4": lambda: figures.plot_bands([("one head", d["f4"]), ("untied", d["f4"])],
                                              "Kaiming weights", width),
        "figure5": lambda: figures.plot_bands([("none vs normalized", d["f5"])],
                                              "Kaiming weights", width, emphasis="none"),
        "compare": lambda: plot.compare(SIX[:2], n=8, t=d["t"], width=width),
        "simulate": lambda: plot.simulation(d["sim"], scheme="post-ln",
                                            params={"d": 3, "beta": 1.0}, width=width).figure,
        "design": lambda: diagrams.plot_design(d["builtin"], d["designed"], 0.9, 8, width,
                                               title="Designed, 8 layers"),
        "phase": lambda: phase(False),
        "phase_all": lambda: phase(True),
    }


def problems(fig, inches) -> list[str]:
    """What keeps ``fig`` from a page ``inches`` wide (empty: nothing)."""
    out = []
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40, bbox_inches="tight")
    w = plt.imread(io.BytesIO(buf.getvalue())).shape[1] / 40
    if w > inches + 0.1:
        out.append(f"{w:.2f} in wide")
    renderer = fig.canvas.get_renderer()
    small = {t.get_text()[:30] for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip() and t.get_fontsize() < 7}
    if small:
        out.append(f"text below 7 pt: {sorted(small)}")
    if not fig.get_suptitle():
        out.append("no title")
    if not fig.legends or not fig.legends[0].get_texts():
        out.append("no legend")
    data_axes = [a for a in fig.axes if a.get_visible() and a.get_label() != "<colorbar>"]
    for a in data_axes:
        if a.get_legend() is not None:
            out.append("a legend inside the axes")
        xs = [b for b in data_axes if b.get_shared_x_axes().joined(a, b)] or [a]
        ys = [b for b in data_axes if b.get_shared_y_axes().joined(a, b)] or [a]
        if not any(b.get_xlabel() for b in xs) or not any(b.get_ylabel() for b in ys):
            out.append("an axis without a label")
    titles = [a.title.get_window_extent(renderer) for a in data_axes if a.get_title()]
    if any(b.overlaps(c) for i, b in enumerate(titles) for c in titles[i + 1:]):
        out.append("panel titles overlap")
    for leg in fig.legends:
        box = leg.get_window_extent(renderer)
        if any(box.overlaps(a.get_window_extent(renderer)) for a in data_axes):
            out.append("the legend covers data")
    return out


@pytest.mark.parametrize("width", ["column", "full"])
def test_every_figure_fits_its_width(data, width, tmp_path, monkeypatch):
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: setattr(plt, "_last", fig))
    bad = {}
    with paper_style():
        for name, make in makers(data, width, tmp_path).items():
            fig = make()
            found = problems(fig, WIDTHS[width])
            if found:
                bad[name] = found
            close(fig)
    assert bad == {}


def test_controls_fail_the_checks():
    with paper_style():
        fig, ax = plt.subplots(figsize=(10.5, 3))         # the old Figure 2 width
        ax.plot([0, 1], [0, 1], label="x")
        ax.legend()                                       # inside, over the data
        ax.set_title("tiny", fontsize=5)
    found = " | ".join(problems(fig, WIDTHS["full"]))
    for what in ("in wide", "below 7 pt", "no title", "no legend", "legend inside",
                 "without a label"):
        assert what in found
    plt.close(fig)


def test_styles_of_ten_schemes_are_distinct():
    customs = [sd.custom_scheme(f"mine{k}", speed=f"r**{k + 1}", radial="a") for k in range(2)]
    looks = [style(s, marker=True) for s in [*sd.schemes(), *customs]]
    assert len(looks) >= 10
    assert len({x["color"] for x in looks[-2:]} | {x["color"] for x in looks[:-2]}) >= 9
    assert len({(x["linestyle"] if isinstance(x["linestyle"], str) else str(x["linestyle"]),
                 x["marker"]) for x in looks}) == len(looks)
    builtin = {(style(s)["color"], str(style(s)["linestyle"])) for s in sd.schemes()}
    for c in customs:                         # never a built-in's colour, nor its look
        assert style(c)["color"] not in {b[0] for b in builtin}
    assert style(customs[0]) == style(sd.custom_scheme("mine0", speed="r**1", radial="a"))
    # control: two built-ins do share a colour family only through dash and marker
    assert types.SimpleNamespace(**style("pre-ln", marker=True)).marker != \
        style("mix-ln", marker=True)["marker"]
