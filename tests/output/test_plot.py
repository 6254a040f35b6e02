"""symdyn.output.plot: data in, Axes/Figure out; one style per scheme; no backend change."""

import pathlib

import matplotlib
import numpy as np
import pytest

import symdyn as sd
from symdyn.output.page import save
from symdyn.output.plot import trajectory
from symdyn.output.style import style

plt = pytest.importorskip("matplotlib.pyplot")

matplotlib.use("Agg", force=True)      # the test process only: no display here


def test_line_data_are_the_solver_values():
    tr = sd.solve("pre-ln", n=8, beta=1.0, gamma0=0.0, t=np.geomspace(0.01, 1e3, 50))
    ax = trajectory(tr, "epsilon", scheme="pre-ln")
    x, y = ax.get_lines()[0].get_data()
    assert np.array_equal(x, tr.t) and np.array_equal(y, tr.epsilon)   # precise, not 1 - gamma
    assert ax.get_yscale() == "log" and y[-1] < 1e-5
    ax = trajectory(tr, "phase", scheme="pre-ln")
    x, y = ax.get_lines()[0].get_data()
    assert np.array_equal(x, tr.epsilon) and np.array_equal(y, tr.gamma_dot)
    with pytest.raises(ValueError, match="kind"):
        trajectory(tr, "speed")


def test_post_ln_epsilon_is_drawn_far_below_float_rounding():
    tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[10.0, 100.0])
    y = trajectory(tr, "epsilon").get_lines()[0].get_data()[1]
    assert 0 < y[-1] < 1e-80                  # 1 - gamma in floats would be 0 here


def test_a_scheme_has_one_style_in_every_figure():
    fig = sd.plot.compare(["post-ln", "pre-ln", "mix-ln"], n=8)
    fig2 = sd.plot.compare(["mix-ln", "pre-ln"], n=16)
    def styles(f):
        return {line.get_label(): (line.get_color(), line.get_linestyle())
                for line in f.axes[0].get_lines()}
    a, b = styles(fig), styles(fig2)
    assert a["Pre-LN"] == b["Pre-LN"] and a["Mix-LN"] == b["Mix-LN"]
    # Pre-LN and Mix-LN (equal after t = 1) differ in colour and dash
    assert a["Pre-LN"][0] != a["Mix-LN"][0]
    assert style("pre-ln")["linestyle"] != style("mix-ln")["linestyle"]
    assert len(fig.legends) == 1 and not fig.axes[0].get_legend()   # one legend, outside


def test_custom_schemes_get_stable_distinct_styles():
    mine = sd.custom_scheme("mine", speed="sqrt(r)", radial="a")
    again = sd.custom_scheme("mine", speed="sqrt(r)", radial="a")
    other = sd.custom_scheme("mine", speed="r**2", radial="a")
    assert style(mine) == style(again)
    builtin = {style(n)["color"] for n in sd.schemes()}
    assert style(mine)["color"] not in builtin
    assert (style(mine)["color"], style(mine)["linestyle"]) != (
        style(other)["color"], style(other)["linestyle"]) or style(mine) != style(other)
    ng = sd.scheme("ngpt", alpha="1 + t")
    assert style(ng)["label"] == r"nGPT, $\alpha_t = t + 1$"     # math, not sympy text
    assert "**" not in style(sd.scheme("ngpt", alpha="sqrt(1 + t)**3"))["label"]


def test_compare_accepts_invented_schemes_and_axes():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3)
    mine = sd.custom_scheme("mine", speed="sqrt(r)", radial="a")
    out = sd.plot.compare([mine, "ngpt"], n=8, axes=axes, t=np.geomspace(0.01, 50, 60))
    assert out is fig and len(axes[0].get_lines()) == 2
    with pytest.raises(ValueError, match="schemes"):
        sd.plot.compare([], n=8)


def test_save_writes_three_formats(tmp_path):
    fig = sd.plot.compare(["post-ln"], n=8, t=np.geomspace(0.01, 20, 30))
    for suffix in ("png", "svg", "pdf"):
        path = save(fig, tmp_path / f"f.{suffix}")
        assert path.stat().st_size > 1000
    with pytest.raises(ValueError, match="path"):
        save(fig, tmp_path / "f.jpg")


def test_no_library_code_changes_the_backend():
    root = pathlib.Path(sd.__file__).parent
    offenders = [p.name for p in root.glob("*.py") if "matplotlib.use(" in p.read_text()]
    assert offenders == []
    notebooks = pathlib.Path(__file__).parents[2] / "notebooks"
    assert [p.name for p in notebooks.glob("*.ipynb")
            if "matplotlib.use(" in p.read_text()] == []


def test_built_in_styles_come_from_their_entries():
    import dataclasses

    from symdyn.model.registry import entry

    for name in sd.schemes():                 # whatever the registry holds, new ones too
        want = entry(name).style
        assert style(name) == {"color": want.color, "linestyle": want.dash, "label": want.label}
    assert style("none") == {"color": "#000000", "linestyle": (0, (1, 1)),
                             "label": "none (pure attention)"}
    # control: the same laws under another name are not the entry's: hashed, own colour
    renamed = dataclasses.replace(sd.scheme("post-ln"), name="mine")
    assert style(renamed)["label"] == "mine"
    assert style(renamed)["color"] not in {entry(n).style.color for n in sd.schemes()}


def test_a_law_parameter_of_any_entry_is_shown_as_math(monkeypatch):
    import sympy as sp

    from symdyn.model import registry
    from symdyn.model.entry import Entry, Parameter, Style
    from symdyn.model.expressions import parse
    from symdyn.model.scheme import Scheme

    def build(kappa="1"):
        k = parse(kappa, "kappa", {"t": sd.symbols.t}, functions_of_t=True)
        return Scheme("damped", sd.symbols.A_norm * k, sp.Integer(0), sp.oo, (("kappa", k),))

    monkeypatch.setitem(registry.BUILTINS, "damped", Entry(
        "damped", build, Style("#123456", "-", "Damped"), "", 99,
        (Parameter("kappa", "1", kind="law"),)))
    assert style("damped") == {"color": "#123456", "linestyle": "-", "label": "Damped"}
    schedule = style(sd.scheme("damped", kappa="1 + t"))
    assert schedule["label"] == r"Damped, $\kappa_t = t + 1$"
    assert schedule["color"] == "#123456"               # keyed by the registry name
    assert schedule["linestyle"] != "-"                 # a schedule is not the default



def test_styles_are_keyed_by_registry_name_and_legends_name_the_parameters():
    from symdyn.model.registry import entry

    green = entry("deepnorm").style
    st = style(sd.scheme("deepnorm", layers=100))
    assert st["color"] == green.color and st["label"] == "DeepNorm ($N = 100$)"
    assert st["linestyle"] != green.dash                      # a variant, not the default
    assert style(sd.scheme("deepnorm", layers=12)) == style("deepnorm")   # the default
    # control: a custom scheme with DeepNorm's laws is not DeepNorm
    assert style(sd.custom_scheme("deepnorm-like", speed="2"))["color"] != green.color
    schemes = [sd.scheme("deepnorm", layers=6), sd.scheme("deepnorm", layers=1000),
               sd.scheme("mix-ln", t_switch=0.5), sd.scheme("mix-ln", t_switch=5)]
    fig = sd.plot.compare(schemes, n=8, t=np.geomspace(1e-3, 100, 60))
    texts = [x.get_text() for x in fig.legends[0].get_texts()]
    assert texts == ["DeepNorm ($N = 6$)", "DeepNorm ($N = 1000$)",
                     r"Mix-LN ($t_{\mathrm{switch}} = 0.5$)",
                     r"Mix-LN ($t_{\mathrm{switch}} = 5$)"]
    looks = {(style(s)["linestyle"], style(s, marker=True)["marker"]) for s in schemes}
    assert len(looks) == 4                                    # four lines, four looks
    plt.close(fig)


def test_a_batch_line_says_mean_of_k_runs_and_bands_need_20_runs():
    few = sd.simulate("post-ln", sd.init.sphere(6, 3, batch=4, seed=0), beta=1.0,
                      t=[0.0, 1.0, 2.0])
    ax = sd.plot.simulation(few, scheme="post-ln")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[0] == "Post-LN, mean of 4 runs"
    assert len(ax.collections) == 0 and len(ax.get_lines()) == 1 + 4   # each run a line
    plt.close(ax.figure)
    many = sd.simulate("post-ln", sd.init.sphere(6, 3, batch=20, seed=0), beta=1.0,
                       t=[0.0, 1.0, 2.0])
    ax = sd.plot.simulation(many, scheme="post-ln")
    # control: at 20 runs the band is drawn, and its 5% and 95% quantiles are those of the runs
    assert len(ax.collections) == 1 and len(ax.get_lines()) == 1
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    g = np.asarray(many.gamma)
    assert np.isclose(band.min(), np.quantile(g, 0.05, axis=0).min())
    assert ax.get_lines()[0].get_label() == "Post-LN, mean of 20 runs"
    plt.close(ax.figure)
