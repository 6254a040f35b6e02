"""sd.plot's mean-field figures read the result's provenance (issue 36 item 6).

Oracles: the plotted lines are the result's own |c_1(t)| and density; the
linear law is |c_1(0)| e^{rate t}; the title names the call's beta, kappa and
modes. Controls: another kappa gives another title; the paper style still
restores what it set (font size) while it keeps interactive mode as the block
left it (Jupyter's inline backend, resolved inside, turns it on).
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

import symdyn as sd

matplotlib.use("Agg")


def _run(kappa=4.0):
    return sd.mean_field(1.0, np.linspace(0.0, 4.0, 9), [1, 0.01], kappa=kappa, modes=16)


def test_order_and_density_draw_the_result_under_its_provenance():
    r = _run()
    ax = sd.plot.mean_field_order(r, rate=0.25)
    solver, linear = ax.get_lines()
    assert np.array_equal(solver.get_ydata(), np.abs(r.moments[:, 1]))
    assert np.allclose(linear.get_ydata(), 0.01 * np.exp(0.25 * r.t), rtol=1e-12)
    title = ax.figure.get_suptitle().replace("\n", " ")
    for part in (r"$\beta = 1$", r"$\kappa = 4$", "16 modes", "circle"):
        assert part in title
    d = sd.plot.mean_field_density(r, points=64)
    theta = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    assert len(d.get_lines()) == len(r.t)
    assert np.array_equal(d.get_lines()[-1].get_ydata(), r.density(theta)[-1])
    # control: another kappa, another title
    assert r"$\kappa = 8$" in sd.plot.mean_field_title(_run(8.0))
    assert r"$\kappa = 4$" not in sd.plot.mean_field_title(_run(8.0))


def test_a_zonal_law_is_titled_with_its_sphere():
    z = sd.mean_field_zonal(1.0, [0.0, 1.0], [1.0, 0.05], d=3, kappa=6.0, modes=8)
    assert sd.plot.mean_field_title(z).startswith("mean field on $S^{2}$ (zonal)")
    ax = sd.plot.mean_field_density(z, points=11)
    assert ax.get_xlim() == (-1.0, 1.0)
    assert np.array_equal(ax.get_lines()[0].get_ydata(), z.density(np.linspace(-1, 1, 11))[0])


@pytest.mark.parametrize("before", [False, True])
def test_paper_style_keeps_interactive_mode_as_the_block_left_it(before):
    size = matplotlib.rcParams["font.size"]
    matplotlib.interactive(before)
    try:
        with sd.plot.paper_style():
            assert matplotlib.rcParams["font.size"] == sd.plot.PAPER["font.size"]
            matplotlib.interactive(True)          # what the inline backend does on first use
        assert matplotlib.is_interactive()
        # control: the style's own settings are restored
        assert matplotlib.rcParams["font.size"] == size != sd.plot.PAPER["font.size"]
    finally:
        matplotlib.interactive(False)
