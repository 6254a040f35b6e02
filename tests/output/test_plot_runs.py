"""Plots that read a run (issue 48 item 2): log time where the outputs are
log-spaced, the cluster count, the energy at the run's own beta, nothing
clipped.

Oracles: the run's own arrays (``sim.clusters``, ``sim.events``, the
recorded energy) for what is drawn; the renderer's tight boxes for what is
inside the figure. Controls: linear output times keep a linear axis; a beta
other than the run's is refused; a legend pushed out of the figure is caught.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

import symdyn as sd

plt = pytest.importorskip("matplotlib.pyplot")
matplotlib.use("Agg", force=True)      # the test process only: no display here

T = np.r_[0.0, np.geomspace(0.1, 1e5, 40)]


@pytest.fixture(scope="module")
def run():
    return sd.simulate("post-ln", sd.init.sphere(12, 2, batch=3, seed=1), beta=8.0, t=T)


@pytest.mark.parametrize("t, want", [
    (np.geomspace(1e-3, 1e4, 30), True), (np.r_[0.0, np.geomspace(0.1, 10, 5)], True),
    (np.linspace(0, 100, 30), False), (np.geomspace(1, 5, 30), False),       # < a decade
    ([1.0, 10.0], False), (np.r_[np.geomspace(0.1, 1, 10), np.linspace(2, 100, 10)], False)])
def test_log_spaced_outputs_are_recognized(t, want):
    assert sd.plot.log_spaced(t) is want


def test_log_time_where_the_outputs_are_log_spaced(run):
    assert sd.plot.simulation(run).get_xscale() == "log"
    ax = sd.plot.clusters(run)
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] == pytest.approx(T[1])
    # control: linear outputs stay linear, unless asked
    lin = sd.simulate("post-ln", sd.init.sphere(6, 2, batch=1, seed=0), beta=1.0,
                      t=np.linspace(0, 10, 11))
    assert sd.plot.simulation(lin).get_xscale() == "linear"
    assert sd.plot.simulation(lin, log_time=True).get_xscale() == "log"
    assert sd.plot.simulation(run, log_time=False).get_xscale() == "linear"
    with pytest.raises(ValueError, match="^log_time"):
        sd.plot.clusters(run, log_time="yes")
    plt.close("all")


def test_the_cluster_plot_draws_the_counts(run):
    ax = sd.plot.clusters(run)
    lines = ax.get_lines()
    assert len(lines) == 3
    for i, line in enumerate(lines):
        assert np.array_equal(line.get_ydata(), run.clusters[i])
        # each step down is a row of sim.events (merges only here)
        steps = np.count_nonzero(np.diff(line.get_ydata()))
        assert steps == run.events.query("member == @i").drop_duplicates("t_lo").shape[0]
    assert [t.get_text() for t in ax.figure.legends[0].get_texts()] == [
        "member 0", "member 1", "member 2"]
    many = sd.simulate("post-ln", sd.init.sphere(8, 2, batch=8, seed=2), beta=4.0, t=T)
    labels = [t.get_text() for t in sd.plot.clusters(many).figure.legends[0].get_texts()]
    assert labels == ["each of 8 runs", "median of 8 runs"]
    plt.close("all")


def test_the_energy_plot_reads_beta_from_the_run(run):
    lines = sd.plot.energy(run).get_lines()
    want = run.energy * 2 * 8.0 * np.exp(-8.0)
    drawn = [ln.get_ydata() for ln in lines if ln.get_drawstyle() == "steps-post"]
    np.testing.assert_allclose(drawn, want, rtol=1e-12)
    assert np.allclose(lines[0].get_xdata(), np.log1p(T) / 8.0)
    assert len(sd.plot.energy(run, 8.0).get_lines()) == len(lines)      # the same beta: fine
    # control: another beta contradicts the run
    with pytest.raises(ValueError, match="^beta: the run was made at beta = 8"):
        sd.plot.energy(run, 4.0)
    plt.close("all")


def _outside(fig, slack=0.5):
    """The artists of ``fig`` (its own and every axes' children, ticks as
    drawn) whose tight box leaves the figure, by more than ``slack`` pixels."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    artists = [a for a in fig.get_children() if a is not fig.patch]
    for ax in fig.axes:
        artists += ax.get_children()
    out = []
    for a in artists:
        box = a.get_tightbbox(renderer) if a.get_visible() else None
        if box is None or not np.all(np.isfinite(box.extents)):
            continue
        if box.x0 < -slack or box.y0 < -slack or box.x1 > fig.bbox.width + slack or \
                box.y1 > fig.bbox.height + slack:
            out.append(f"{type(a).__name__} {getattr(a, 'get_text', str)()!r} {box.extents}")
    return out


def _figures():
    """One figure per drawing function of sd.plot, as a user makes it."""
    sim = sd.simulate("post-ln", sd.init.sphere(12, 2, batch=3, seed=1), beta=8.0, t=T)
    t = np.geomspace(0.01, 100, 40)
    tr = sd.solve("pre-ln", n=8, beta=1.0, gamma0=0.0, t=t)
    curves = {s: sd.solve(s, n=8, beta=1.0, gamma0=0.0, t=t) for s in ("post-ln", "peri-ln")}
    from symdyn.output.figures import figure4_data
    data = figure4_data(d=8, n=4, seeds=3, t_max=2.0, points=5, schemes_=["post-ln"])
    mf = sd.mean_field(1.0, np.linspace(0, 4, 5), [1, 0.01], kappa=4.0, modes=16)
    return {
        "simulation": lambda: sd.plot.simulation(sim, scheme="post-ln").figure,
        "clusters": lambda: sd.plot.clusters(sim).figure,
        "energy": lambda: sd.plot.energy(sim).figure,
        "trajectory": lambda: sd.plot.trajectory(tr, "epsilon", scheme="pre-ln").figure,
        "triptych": lambda: sd.plot.triptych(curves),
        "triptych column": lambda: sd.plot.triptych(curves, width="column"),
        "compare": lambda: sd.plot.compare(["post-ln", "pre-ln", "peri-ln", "ngpt"], n=8),
        "bands": lambda: sd.plot.bands(data).figure,
        "mean_field_order": lambda: sd.plot.mean_field_order(mf, rate=0.2).figure,
        "mean_field_density": lambda: sd.plot.mean_field_density(mf, points=64).figure,
    }


#: sd.plot's names that draw no figure of their own (helpers, styles, numbers)
HELPERS = {"coinciding", "horizon", "log_spaced", "mean_field_title", "figure", "finish",
           "legend", "save", "wrap", "BAND_MIN_RUNS", "BASELINE", "PAPER", "WIDTHS",
           "label", "paper_style", "style"}


def test_every_plot_function_keeps_every_artist_inside_the_figure():
    figures = _figures()
    assert {k.split()[0] for k in figures} == set(sd.plot.__all__) - HELPERS
    for name, make in figures.items():
        fig = make()
        assert _outside(fig) == [], name
        plt.close(fig)


def test_the_check_sees_a_clipped_legend_and_title():
    # negative control: a legend of one long row, and a title pushed right
    tr = sd.solve("pre-ln", n=8, beta=1.0, gamma0=0.0, t=np.geomspace(0.01, 100, 40))
    ax = sd.plot.trajectory(tr, "epsilon", scheme="pre-ln")
    for k in range(6):
        ax.plot([], [], label=f"a rather long legend entry {k}")
    ax.figure.legend(ncol=6, loc="lower center")
    assert any(line.startswith("Legend") for line in _outside(ax.figure))
    ax2 = sd.plot.trajectory(tr, "gamma")
    ax2.set_title("a title", x=1.3)
    assert any("a title" in line for line in _outside(ax2.figure))
    plt.close("all")
