"""DOP853's continuous extension from its own stages (symdyn.ode.dense) and
the rooted trees it is derived from (symdyn.ode.trees).

Oracles: the number of rooted trees (OEIS A000081), Butcher's density
and symmetry of the trees of order 4, DOP853's weights meeting the
conditions of order 8; the extension's weights read back through the
driver's interpolation meet the conditions of order 6; a decaying mode
:math:`e^{z\\theta}` read off one step, against the step's own error and
against scipy's DOP853 dense output (Hairer's ``contd8``, three more
evaluations). Controls: a perturbed row, and ``contd8`` past the stability
limit.
"""

import numpy as np
import pytest
from scipy.integrate import DOP853 as ScipyDOP853

from symdyn.ode import dense, dop853, methods, trees


def test_tree_counts_are_oeis_a000081():
    assert [len(trees.trees(p)) for p in range(1, 9)] == [1, 1, 2, 4, 9, 20, 48, 115]


def test_density_and_symmetry_of_the_order_four_trees():
    # Butcher's table: [[[t]]] gamma 24 sigma 1; [[t, t]] 12, 2; [t, [t]] 8, 1;
    # [t, t, t] 4, 6 (Hairer, Norsett & Wanner I, Table II.2.1)
    leaf = ()
    found = {(trees.density(t), trees.symmetry(t)) for t in trees.trees(4)}
    assert found == {(24, 1), (12, 2), (8, 1), (4, 6)}
    assert trees.size(((leaf,), leaf)) == 4
    with pytest.raises(ValueError, match="order"):
        trees.trees(0)


def test_dop853_weights_meet_the_order_conditions_to_eight():
    # the 8th-order weights meet the conditions of all 200 trees of order <= 8:
    # the tree machinery reads a known method right ...
    A, b = dense.stage_matrix(), np.append(dop853.B, 0.0)
    worst = max(abs(trees.elementary_weights(t, A) @ b - 1 / trees.density(t))
                for p in range(1, 9) for t in trees.trees(p))
    assert worst < 1e-14
    # ... and its embedded 5th-order estimate fails a condition of order 6
    low = np.append(dop853.B, 0.0) - dop853.E5
    assert max(abs(trees.elementary_weights(t, A) @ low - 1 / trees.density(t))
               for t in trees.trees(6)) > 1e-4


def _decay(t, y, *_):
    """y' = -y cos t: y = exp(-sin t)."""
    return -y * np.cos(t)[:, None]


def _exact(t):
    return np.exp(-np.sin(t))


def _weights(theta):
    """b_j(theta) read back through the driver's own path: the extension of a
    step of h = 1 whose stages are the unit vectors (component j holds k_j)."""
    K = np.eye(dense.STAGES)[:, None, :]               # (stages, 1 member, 13 comps)
    y, y1 = np.zeros((1, dense.STAGES)), np.append(dop853.B, 0.0)[None]
    F = methods.free_coefficients(y, np.ones(1), y1, K)
    return methods.DOP853.interpolate(F, y, np.array([theta]))[0]


def _worst_condition(order):
    A = dense.stage_matrix()
    return max(abs(trees.elementary_weights(t, A) @ _weights(x) - x ** order
                   / trees.density(t)) for x in (0.2, 0.5, 0.9) for t in trees.trees(order))


def test_extension_meets_the_conditions_of_order_six_not_seven():
    assert dense.ORDER == 6
    assert max(_worst_condition(p) for p in range(1, 7)) < 1e-11
    assert _worst_condition(7) > 1e-5


def test_control_a_perturbed_row_fails(monkeypatch):
    rows = dense.ROWS.copy()
    rows[2, 6] += 1e-2
    monkeypatch.setattr(dense, "ROWS", rows)
    assert _worst_condition(3) > 1e-5


def test_extension_ends_on_the_step():
    hs = np.array([0.5])
    t, y = np.array([0.3]), np.array([[_exact(0.3)]])
    K = np.empty((dop853.N_STAGES + 1, 1, 1))
    y1 = methods.DOP853.step(_decay, t, y, _decay(t, y), hs, t + hs, (), methods.Stages(K)).y_new
    F = methods.free_coefficients(y, hs, y1, K)
    assert methods.DOP853.interpolate(F, y, np.array([1.0]))[0, 0] == pytest.approx(
        y1[0, 0], abs=1e-15)
    assert methods.DOP853.interpolate(F, y, np.array([0.0]))[0, 0] == y[0, 0]


def _mode(z, theta):
    """y' = z y over one step h = 1: the extension at ``theta`` and y1."""
    y = np.ones((1, 1))
    K = np.empty((dop853.N_STAGES + 1, 1, 1))
    one = np.ones(1)

    def f(t, y, *_):
        return z * y
    y1 = methods.DOP853.step(f, 0 * one, y, f(0, y), one, one, (), methods.Stages(K)).y_new
    F = methods.free_coefficients(y, one, y1, K)
    return np.array([methods.DOP853.interpolate(F, y, np.array([x]))[0, 0]
                     for x in theta]), y1[0, 0]


def _contd8(z, theta):
    s = ScipyDOP853(lambda t, y: z * y, 0.0, np.array([1.0]), 1.0, first_step=1.0,
                    rtol=1e9, atol=1e9)
    s.step()
    return s.dense_output()(theta)[0]


@pytest.mark.parametrize("z", [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0])
def test_a_decaying_mode_is_read_no_worse_than_by_contd8(z):
    # a stiff component read off one step, up to and past DOP853's stability
    # limit (about -6.5): never further from e^(z theta) than Hairer's extension
    # (scipy's dense output, 3 more evaluations), and from z = -4 on within
    # twice the step's own error at theta = 1 (measured 1.5-2.0x)
    theta = np.linspace(0.0, 1.0, 101)
    u, y1 = _mode(z, theta)
    ours = np.abs(u - np.exp(z * theta)).max()
    assert ours <= np.abs(_contd8(z, theta) - np.exp(z * theta)).max()
    if z <= -4:
        assert ours <= 2 * abs(y1 - np.exp(z))


@pytest.mark.parametrize("z", [-5.0, -6.0])
def test_control_contd8_amplifies_the_mode(z):
    # Hairer's extension (scipy's DOP853 dense output) on the same step is off
    # by 10-20x the step's error there (why symdyn read such steps off
    # sub-steps before)
    theta = np.linspace(0.0, 1.0, 101)
    _, y1 = _mode(z, theta)
    assert np.abs(_contd8(z, theta) - np.exp(z * theta)).max() > 10 * abs(y1 - np.exp(z))
