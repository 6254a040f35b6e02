"""The driver (symdyn.ode.integrate) and its methods (symdyn.ode.methods).

Oracles: closed-form solutions, orders of convergence measured on problems
with exact solutions, scipy's solve_ivp (events). Each check has a negative
control: a perturbed coefficient, a crude root finder, a changed tolerance.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from symdyn.ode import control, dop853, events, methods, rosenbrock
from symdyn.ode.events import Event
from symdyn.ode.integrate import integrate


def _decay(t, y, *_):
    """y' = -y cos t: y = exp(-sin t)."""
    return -y * np.cos(t)[:, None]


def _exact(t):
    return np.exp(-np.sin(t))


# --------------------------------------------------------------------------
# the method objects: order and error estimate
# --------------------------------------------------------------------------

def _local_errors(method, hs, t0=0.3):
    """One step of each size from the exact state: |y1 - y(t0 + h)|."""
    out = []
    for h in hs:
        t, y, hh = np.array([t0]), np.array([[_exact(t0)]]), np.array([h])
        fy = _decay(t, y)
        if method is methods.DOP853:
            K = np.empty((dop853.N_STAGES + 1, 1, 1))
            y1 = method.step(_decay, t, y, fy, hh, t + hh, (), methods.Stages(K)).y_new
        else:
            J = -np.cos(t)[:, None, None]
            ft = (y * np.sin(t)[:, None])
            y1 = method.step(_decay, t, y, fy, hh, t + hh, (), (J, ft)).y_new
        out.append(abs(y1[0, 0] - _exact(t0 + h)))
    return np.array(out)


def _slope(method, hs):
    return np.polyfit(np.log(hs), np.log(_local_errors(method, hs)), 1)[0]


def test_dop853_object_has_local_order_nine():
    assert methods.DOP853.order == 8 and methods.DOP853.exponent == -1 / 8
    assert 8.5 < _slope(methods.DOP853, np.array([0.4, 0.3, 0.2, 0.15])) < 9.6


def test_order_sees_a_wrong_dop853_weight(monkeypatch):
    B = dop853.B.copy()
    B[6] *= 1 + 1e-4
    monkeypatch.setattr(dop853, "B", B)
    assert _slope(methods.DOP853, np.array([0.4, 0.3, 0.2, 0.15])) < 2


def test_ros34pw2_object_has_local_order_four():
    assert methods.ROS34PW2.order == 3 and methods.ROS34PW2.exponent == -1 / 3
    assert 3.6 < _slope(methods.ROS34PW2, np.array([0.08, 0.04, 0.02, 0.01])) < 4.5


def test_order_sees_a_wrong_ros34pw2_weight(monkeypatch):
    B = rosenbrock.B.copy()
    B[2] += 1e-3
    monkeypatch.setattr(rosenbrock, "B", B)
    assert _slope(methods.ROS34PW2, np.array([0.08, 0.04, 0.02, 0.01])) < 2


def _estimate(h, E5=None):
    t, y, hh = np.array([0.3]), np.array([[_exact(0.3)]]), np.array([h])
    K = np.empty((dop853.N_STAGES + 1, 1, 1))
    done = methods.DOP853.step(_decay, t, y, _decay(t, y), hh, t + hh, (), methods.Stages(K))
    return methods.DOP853.error(done, hh, np.ones((1, 1)))[0]


def test_error_estimate_shrinks_as_h_to_the_eighth():
    """Hairer's combined estimate behaves as h**8 (the controller's exponent)."""
    hs = np.array([0.2, 0.1, 0.05])
    slope = np.polyfit(np.log(hs), np.log([_estimate(h) for h in hs]), 1)[0]
    assert 7.5 < slope < 8.6


def test_error_estimate_sees_a_wrong_e5(monkeypatch):
    E5 = dop853.E5.copy()
    E5[0] += 1e-3            # no longer sums to 0: an O(h) estimate
    monkeypatch.setattr(dop853, "E5", E5)
    hs = np.array([0.2, 0.1, 0.05])
    slope = np.polyfit(np.log(hs), np.log([_estimate(h) for h in hs]), 1)[0]
    assert slope < 3


# --------------------------------------------------------------------------
# the controller: step rejection
# --------------------------------------------------------------------------

def test_a_step_above_the_tolerance_is_rejected_and_shrinks():
    err = np.array([3.0, 0.5, 1e-12, 1e-6, np.nan])
    finite = np.array([True, True, True, True, False])
    after = np.array([False, False, False, True, False])
    accept, factor = control.DEFAULT.factor(err, finite, after, np.zeros(5),
                                           methods.DOP853.exponent)
    assert accept.tolist() == [False, True, True, True, False]
    assert factor[0] == pytest.approx(0.9 * 3.0 ** (-1 / 8))          # shrinks
    assert factor[1] == pytest.approx(0.9 * 0.5 ** (-1 / 8))          # grows
    assert factor[2] == control.DEFAULT.factor_max                            # at most 10x
    assert factor[3] == 1.0                     # no growth right after a rejection
    assert factor[4] == control.DEFAULT.factor_min      # non-finite: 5x smaller


def test_rejections_near_an_undeclared_kink_keep_the_tolerance():
    """|y|' = sign: a kink at t = 0.5 the driver is not told of costs rejected
    steps, not accuracy; declared as a breakpoint it costs neither."""
    def by_time(t, y, phase):
        return np.where(t < 0.5, 1.0, -1.0)[:, None] + 0 * y

    def by_phase(t, y, phase):          # the law of the phase the step is in
        return np.where(phase == 0, 1.0, -1.0)[:, None] + 0 * y

    free = integrate(by_time, [1.0], [[0.0]], rtol=1e-10, atol=1e-10)
    told = integrate(by_phase, [1.0], [[0.0]], rtol=1e-10, atol=1e-10, breakpoints=[0.5])
    assert abs(free.y[0, 0, 0]) < 1e-9 and abs(told.y[0, 0, 0]) < 1e-15
    assert free.nsteps[0] > 3 * told.nsteps[0]           # the rejected attempts
    assert told.nsteps[0] <= 12            # the growth of the first step, no rejection


# --------------------------------------------------------------------------
# dense output
# --------------------------------------------------------------------------

def _dense_error():
    t_out = np.linspace(0.0, 6.0, 241)
    sol = integrate(_decay, t_out, [[1.0]], rtol=1e-10, atol=1e-12)
    return np.abs(sol.y[0, :, 0] - _exact(t_out)).max(), sol.nsteps[0]


def test_dense_output_between_steps_keeps_the_tolerance():
    err, steps = _dense_error()
    assert err < 5e-9 and steps < 60          # 241 outputs, far fewer steps


def test_dense_output_sees_a_wrong_coefficient(monkeypatch):
    rows = dop853.D.copy()
    rows[0, 0] += 1e-2
    monkeypatch.setattr(dop853, "D", rows)
    assert _dense_error()[0] > 1e-6


# --------------------------------------------------------------------------
# events
# --------------------------------------------------------------------------

def _growth(t, y, phase, k):
    """y' = k y: y = exp(k t) reaches 2 at ln(2)/k."""
    return k[:, None] * y


def _doubled(t, y, k):
    return y[:, 0] - 2.0


def test_a_terminal_event_stops_each_member_at_its_own_root():
    k = np.array([0.5, 1.0, 3.0, 0.01])
    t_out = np.array([0.1, 1.0, 3.0])
    sol = integrate(_growth, t_out, np.ones((4, 1)), (k,), rtol=1e-11, atol=1e-12,
                    events=Event(_doubled, terminal=True))
    exact = np.log(2) / k
    # the root of the interpolant to the last bit; t to the solution's accuracy
    assert np.allclose(sol.t_events[:3, 0], exact[:3], rtol=1e-10, atol=0)
    assert np.isnan(sol.t_events[3, 0])                      # not by t = 3
    assert np.allclose(sol.y_events[:3, 0, 0], 2.0, rtol=1e-15, atol=0)
    after = t_out[None, :] > exact[:, None]
    assert np.isnan(sol.y[after]).all()                      # stopped: no later output
    assert np.allclose(sol.y[~after, 0], np.exp(np.outer(k, t_out))[~after], rtol=1e-10)


def test_events_agree_with_solve_ivp():
    def g(t, y, *_):
        return y[:, 0] - 0.6

    sol = integrate(_decay, [20.0], [[1.0]], rtol=1e-12, atol=1e-14,
                    events=Event(g, terminal=False, direction=-1))
    ref = solve_ivp(lambda t, y: -y * np.cos(t), (0, 20), [1.0], method="DOP853",
                    rtol=1e-13, atol=1e-14, events=lambda t, y: y[0] - 0.6)
    falling = np.arcsin(-np.log(0.6))                        # first time sin t = 0.51
    assert sol.t_events[0, 0] == pytest.approx(falling, rel=1e-11)
    assert sol.t_events[0, 0] == pytest.approx(ref.t_events[0][0], rel=1e-10)
    assert sol.y[0, -1, 0] == pytest.approx(_exact(20.0), rel=1e-10)   # not terminal


def test_direction_filters_crossings():
    def g(t, y, *_):
        return y[:, 0] - 0.6

    sol = integrate(_decay, [20.0], [[1.0]], rtol=1e-12, atol=1e-14,
                    events=[Event(g, terminal=False, direction=+1),
                            Event(g, terminal=False, direction=-1)])
    rising = np.pi - np.arcsin(-np.log(0.6))
    assert sol.t_events[0, 0] == pytest.approx(rising, rel=1e-11)
    assert sol.t_events[0, 1] < sol.t_events[0, 0]


def test_event_location_sees_a_crude_root_finder(monkeypatch):
    monkeypatch.setattr(events, "BISECTIONS", 3)
    k = np.array([1.0])
    sol = integrate(_growth, [3.0], np.ones((1, 1)), (k,), rtol=1e-11, atol=1e-12,
                    events=Event(_doubled))
    assert abs(sol.t_events[0, 0] - np.log(2)) > 1e-6


@pytest.mark.parametrize("bad, culprit", [
    (lambda: dict(events=[3]), "Event.g"),
    (lambda: dict(events=Event(_doubled, direction=2)), "direction"),
    (lambda: dict(events=Event(_doubled), stiff=True), "events"),
    (lambda: dict(max_steps=0), "max_steps")])
def test_bad_driver_arguments_are_refused(bad, culprit):
    with pytest.raises(ValueError, match=culprit):
        integrate(_growth, [1.0], np.ones((1, 1)), (np.ones(1),), rtol=1e-8, atol=1e-8,
                  **bad())


# --------------------------------------------------------------------------
# a batch of members with independent steps; a batch of one
# --------------------------------------------------------------------------

def _oscillators(t, y, phase, w):
    return np.stack([y[:, 1], -(w ** 2) * y[:, 0]], axis=1)


def _batch(w, rtol=1e-10):
    return integrate(_oscillators, [1.0, 5.0], np.tile([1.0, 0.0], (len(w), 1)), (w,),
                     rtol=rtol, atol=1e-12)


def test_members_keep_their_own_steps_and_accuracy():
    w = np.array([0.1, 1.0, 30.0])
    sol = _batch(w)
    assert sol.nsteps[0] < sol.nsteps[1] < sol.nsteps[2]          # own step sizes
    exact = np.cos(np.outer(w, [1.0, 5.0]))
    assert np.allclose(sol.y[:, :, 0], exact, rtol=0, atol=1e-8)


def test_a_batch_of_one_equals_its_member_in_the_batch():
    w = np.array([0.1, 1.0, 30.0, 2.5])
    batch = _batch(w)
    for i in range(len(w)):
        alone = _batch(w[i:i + 1])
        assert np.array_equal(alone.y[0], batch.y[i])           # bit for bit
        assert alone.nsteps[0] == batch.nsteps[i]


def test_control_the_equality_sees_a_different_member():
    """The bitwise comparison is not vacuous: another tolerance, other bits."""
    w = np.array([1.0])
    assert not np.array_equal(_batch(w).y, _batch(w, rtol=1.01e-10).y)


# --------------------------------------------------------------------------
# the generic hooks: record, project, refresh (what the particles plug into)
# --------------------------------------------------------------------------

def _rotation(t, y, phase, w):
    return w[:, None] * np.stack([y[:, 1], -y[:, 0]], axis=1)


def test_record_receives_what_the_driver_would_store():
    w, t_out = np.array([1.0, 2.0, 0.5]), np.linspace(0.0, 4.0, 9)
    y0 = np.tile([1.0, 0.0], (3, 1))
    stored = integrate(_rotation, t_out, y0, (w,), rtol=1e-10, atol=1e-12)
    got = np.full_like(stored.y, np.nan)

    def record(k, members, rows):
        got[members, k] = rows

    sol = integrate(_rotation, t_out, y0, (w,), rtol=1e-10, atol=1e-12, record=record)
    assert sol.y is None and np.array_equal(got, stored.y)


def test_project_keeps_the_states_on_the_circle():
    def onto_circle(y):
        return y / np.linalg.norm(y, axis=1, keepdims=True)

    w, t_out = np.array([1.0, 3.0]), np.linspace(0.0, 30.0, 7)
    sol = integrate(_rotation, t_out, np.tile([1.0, 0.0], (2, 1)), (w,), rtol=1e-6,
                    atol=1e-9, project=onto_circle)
    assert np.allclose(np.linalg.norm(sol.y, axis=2), 1.0, rtol=0, atol=4e-16)
    assert np.allclose(sol.y[:, :, 0], np.cos(np.outer(w, t_out)), atol=1e-4)
    free = integrate(_rotation, t_out, np.tile([1.0, 0.0], (2, 1)), (w,), rtol=1e-6,
                     atol=1e-9)                                          # control
    assert np.abs(np.linalg.norm(free.y, axis=2) - 1).max() > 1e-8


def test_refresh_replaces_a_state_and_the_run_continues_from_it():
    """y' = -y; the hook halves member 0's state once, at the time it is called:
    after that, y = exp(-t) / 2 (member 1, never changed, stays exp(-t))."""
    calls = []

    def refresh(members, rows):
        changed = np.zeros(len(members), dtype=bool)
        if not calls and 0 in members:
            i = int(np.flatnonzero(members == 0)[0])
            rows[i] /= 2
            changed[i] = True
            calls.append(i)
        return changed, np.ones(len(members), dtype=int)

    def decay(t, y, phase):
        return -y

    t_out = np.array([5.0, 10.0])
    sol = integrate(decay, t_out, np.ones((2, 1)), rtol=1e-11, atol=1e-14, refresh=refresh)
    assert calls
    assert np.allclose(sol.y[0, :, 0], np.exp(-t_out) / 2, rtol=1e-9)
    assert np.allclose(sol.y[1, :, 0], np.exp(-t_out), rtol=1e-9)
