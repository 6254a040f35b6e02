"""symdyn.output.explore: the static snapshot shows with or without ipywidgets,
the sliders redraw when it is there, and the notebooks use them."""

import sys
from pathlib import Path

import matplotlib
import nbformat
import pytest

from symdyn.output import explore as ex

matplotlib.use("Agg", force=True)
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
#: the notebooks whose parameters matter and that have sliders (theory_vs_trained's
#: parameters, the corpus sentences and a seed, rerun two models: no cheap widget)
WITH_WIDGETS = ["compare_schemes", "invent_a_scheme", "ngpt_alpha_schedule",
                "design_a_schedule", "random_weights", "long_context", "long_horizons",
                "causal_clusters", "mean_field", "sweeps_phase_diagram", "metastability"]


def draw(ax, k, kind):
    ax.plot([0, 1], [0, k], label=kind)


CONTROLS = {"k": (1, 3, 1, 2), "kind": ["a", "b"]}


def drawn(fig) -> list[int]:
    """The number of lines in each panel of a snapshot."""
    return [len(a.get_lines()) for a in fig.axes]


@pytest.fixture
def shown(monkeypatch):
    out = []
    monkeypatch.setattr(ex, "_show", out.append)
    return out


def test_the_snapshot_shows_without_ipywidgets(monkeypatch, shown, capsys):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)      # import ipywidgets fails
    assert ex.widgets(CONTROLS) is None
    ex.explore(draw, title="test", **CONTROLS)
    [fig] = shown
    assert drawn(fig) == [1, 1, 1]
    assert [a.get_title() for a in fig.axes] == ["k = 1", "k = 2", "k = 3"]
    assert "kind = a" in fig._suptitle.get_text()
    assert ex.NO_WIDGETS in capsys.readouterr().out


def test_the_snapshot_and_live_sliders_with_ipywidgets(shown, capsys):
    ipywidgets = pytest.importorskip("ipywidgets")
    calls = []

    def recorded(ax, k, kind):
        calls.append((k, kind))
        draw(ax, k, kind)

    ex.explore(recorded, strip="kind", **CONTROLS)
    fig, live = shown
    assert drawn(fig) == [1, 1]                          # the menu's two options
    assert isinstance(live, ipywidgets.interactive)
    slider, menu = live.children[:2]
    assert isinstance(slider, ipywidgets.IntSlider) and (slider.min, slider.max) == (1, 3)
    assert isinstance(menu, ipywidgets.Dropdown) and menu.value == "a"
    assert slider.style.description_width == "initial"       # 'kappa_over_kc' in full
    slider.value = 3                                     # a change redraws
    assert calls[-1] == (3, "a")
    assert ex.NO_WIDGETS not in capsys.readouterr().out
    floats = ex.widgets({"x": (0.0, 1.0, 0.1, 0.5)})["x"]
    assert isinstance(floats, ipywidgets.FloatSlider)


def test_a_snapshot_that_draws_nothing_is_seen_and_bad_controls_are_refused():
    # negative controls: the check above fails on empty panels, and a control
    # outside its range or a strip that is no control is an error, not a guess
    fig = ex.snapshot(lambda ax, k, kind: None, CONTROLS)
    assert drawn(fig) != [1, 1, 1]
    with pytest.raises(ValueError, match="low <= value"):
        ex.explore(draw, k=(1, 3, 1, 5), kind=["a"])
    with pytest.raises(ValueError, match="not one of the controls"):
        ex.snapshot(draw, CONTROLS, strip="beta")
    with pytest.raises(ValueError, match="no controls"):
        ex.snapshot(draw, {})


def has_widget(book) -> bool:
    return any(c.cell_type == "code" and ("symdyn.output.explore" in c.source
                                          or "ipywidgets" in c.source) for c in book.cells)


@pytest.mark.parametrize("name", WITH_WIDGETS)
def test_the_notebooks_whose_parameters_matter_have_a_widget(name):
    assert has_widget(nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4))


def test_a_notebook_without_a_widget_is_seen():
    book = nbformat.read(NOTEBOOKS / "mean_field.ipynb", as_version=4)
    book.cells = [c for c in book.cells if "explore" not in c.source]
    assert not has_widget(book)
