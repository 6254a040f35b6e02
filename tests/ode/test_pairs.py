"""A second explicit pair by declaration only: Dormand-Prince 5(4)
(symdyn.ode.dp54) stepped by the one stage loop (symdyn.ode.rk) through
symdyn.ode.methods.ExplicitPair.

Oracles: the published order (local error ~h^6 on y' = -y cos t), its
interpolant meeting the step ends, and scipy's RK45 (the same pair, its own
code) on the same problem at the same tolerances: the same number of steps
within a few, the same accuracy against the closed form. Controls: a
perturbed weight loses the order; DOP853 on the same problem takes other
steps."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from symdyn.ode import dp54, methods, rk
from symdyn.ode.integrate import integrate


def _decay(t, y, *_):
    return -y * np.cos(t)[:, None]


def _exact(t):
    return np.exp(-np.sin(t))


def _local_errors(hs, t0=0.3):
    out = []
    for h in hs:
        t, y, hh = np.array([t0]), np.array([[_exact(t0)]]), np.array([h])
        K = np.empty((methods.DP54.stages, 1, 1))
        y1 = methods.DP54.step(_decay, t, y, _decay(t, y), hh, t + hh, (),
                               methods.Stages(K)).y_new
        out.append(abs(y1[0, 0] - _exact(t0 + h)))
    return np.array(out)


HS = np.array([0.1, 0.07, 0.05, 0.035])     # local errors 2e-11 .. 4e-14 from t = 1


def _slope():
    return np.polyfit(np.log(HS), np.log(_local_errors(HS, t0=1.0)), 1)[0]


def test_declared_table_is_consistent():
    assert np.allclose(dp54.A.sum(axis=1), dp54.C, rtol=0, atol=1e-15)
    assert dp54.B.sum() == pytest.approx(1.0, abs=1e-15)
    assert dp54.E.sum() == pytest.approx(0.0, abs=1e-15)
    # the interpolant ends on the step: b_j(1) = b_j (b_6 = 0: first same as last)
    assert np.allclose(dp54.P.sum(axis=1), np.append(dp54.B, 0.0), rtol=0, atol=1e-14)


def test_dp54_has_local_order_six():
    assert methods.DP54.order == 5 and methods.DP54.exponent == -1 / 5
    assert 5.5 < _slope() < 6.6


def test_control_a_perturbed_weight_loses_the_order(monkeypatch):
    B = dp54.B.copy()
    B[2] *= 1 + 1e-4
    monkeypatch.setattr(dp54, "B", B)
    assert _slope() < 2


def _forced_pendulum(t, y):
    return np.array([y[1], -np.sin(y[0]) + 0.1 * np.cos(t)])


def _ours(method=methods.DP54):
    t = np.linspace(0.0, 10.0, 101)
    return integrate(lambda tt, y, phase: _forced_pendulum(tt[0], y[0])[None], t,
                     [[1.0, 0.0]], rtol=1e-8, atol=1e-10, method=method)


def test_dp54_takes_scipys_rk45_steps_and_accuracy():
    t = np.linspace(0.0, 10.0, 101)
    ours = _ours()
    theirs = solve_ivp(_forced_pendulum, (0.0, 10.0), [1.0, 0.0], method="RK45", rtol=1e-8,
                       atol=1e-10, t_eval=t)
    tight = solve_ivp(_forced_pendulum, (0.0, 10.0), [1.0, 0.0], method="DOP853",
                      rtol=1e-13, atol=1e-14, t_eval=t).y.T
    steps_theirs = (theirs.nfev - 2) / 6        # first-same-as-last: 6 a step
    assert abs(ours.nsteps[0] - steps_theirs) <= 0.05 * steps_theirs
    e_ours, e_theirs = (np.abs(y - tight).max() for y in (ours.y[0], theirs.y.T))
    assert e_ours < 3 * e_theirs and e_theirs < 3 * e_ours
    # read between the steps from the declared interpolant (order 4)
    assert e_ours < 1e-6


def test_control_dop853_takes_other_steps():
    assert _ours(methods.DOP853).nsteps[0] < 0.5 * _ours().nsteps[0]


def test_one_member_on_floats_equals_the_batch():
    from symdyn.ode.scalar import integrate_one
    t = [0.0, 1.0, 4.0, 7.5]

    def f_floats(tt, y, phase):
        return [y[1], -np.sin(y[0]) + 0.1 * float(np.cos(tt))]

    def f_arrays(tt, y, phase):
        return np.stack([y[:, 1], -np.sin(y[:, 0]) + 0.1 * np.cos(tt)], axis=1)
    batch = integrate(f_arrays, t, [[1.0, 0.0]], rtol=1e-8, atol=1e-10, method=methods.DP54)
    h0 = methods.initial_step(f_arrays, np.array([[1.0, 0.0]]),
                              f_arrays(np.zeros(1), np.array([[1.0, 0.0]]), 0), (np.zeros(1),),
                              1e-8, 1e-10, t[-1], methods.DP54.error_order)
    one = integrate_one(f_floats, t, [1.0, 0.0], float(h0[0]), rtol=[1e-8] * 2,
                        atol=[1e-10] * 2, method=methods.DP54)
    assert np.array_equal(one.states, batch.y[0])


def test_the_loop_has_no_pair_of_its_own():
    # DOP853 and DP5(4) share rk.step: one loop for every declared table
    assert methods.DOP853.tab is not methods.DP54.tab
    assert rk.weights(dp54).shape == (dp54.N_STAGES + 1, dp54.N_STAGES + 1)
