"""symdyn.ode.integrate: the batched DOP853 integrator, against scipy and closed forms."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import DOP853, solve_ivp
from scipy.integrate._ivp import dop853_coefficients as scipy_table
from scipy.special import exp1, expi

import symdyn as sd
import symdyn.reduced.problem as problem_module
import symdyn.reduced.solver as solve_module
from symdyn.ode import control, dop853, methods, rk
from symdyn.ode import integrate as integ

# --------------------------------------------------------------------------
# the coefficient table
# --------------------------------------------------------------------------

def test_table_equals_scipys_entry_by_entry():
    S = scipy_table.N_STAGES
    assert dop853.N_STAGES == S
    for ours, theirs in ((dop853.A, scipy_table.A[:S, :S]), (dop853.B, scipy_table.B),
                         (dop853.C, scipy_table.C[:S]), (dop853.E3, scipy_table.E3),
                         (dop853.E5, scipy_table.E5)):
        assert ours.shape == theirs.shape
        assert np.array_equal(ours, theirs)
    # row sums of A are the nodes (the stages are consistent)
    assert np.allclose(dop853.A.sum(axis=1), dop853.C, rtol=0, atol=1e-14)


def _rotation(t, y, *_):
    """y' = J y (harmonic oscillator): y(t) = (cos t, -sin t) from (1, 0)."""
    return np.stack([y[:, 1], -y[:, 0]], axis=1)


def _fixed_step_error(n_steps, T=2.0):
    y, t = np.array([[1.0, 0.0]]), np.zeros(1)
    h = np.full(1, T / n_steps)
    K = np.empty((dop853.N_STAGES + 1, 1, 2))
    for _ in range(n_steps):
        y = methods.DOP853.step(_rotation, t, y, _rotation(t, y), h, t + h, (),
                                methods.Stages(K)).y_new
        t = t + h
    return np.abs(y[0] - [np.cos(T), -np.sin(T)]).max()


def _observed_order():
    n = np.array([4, 6, 8, 11])
    err = np.array([_fixed_step_error(k) for k in n])
    return -np.polyfit(np.log(n), np.log(err), 1)[0]


def test_observed_order_is_eight():
    assert 7.6 < _observed_order() < 8.6


def test_order_test_sees_a_perturbed_coefficient(monkeypatch):
    A = dop853.A.copy()
    A[8, 5] *= 1 + 1e-6
    monkeypatch.setattr(dop853, "A", A)
    assert _observed_order() < 6


# --------------------------------------------------------------------------
# the error estimate
# --------------------------------------------------------------------------

def _estimate_over_true(h):
    """One step of y' = y cos t (y = exp(sin t)) from t = 0.3: est / true error."""
    def f(t, y, *_):
        return y * np.cos(t)[:, None]
    t, y, hh = np.array([0.3]), np.array([[1.0]]), np.array([h])
    K = np.empty((dop853.N_STAGES + 1, 1, 1))
    y_new = methods.DOP853.step(f, t, y, f(t, y), hh, t + hh, (), methods.Stages(K)).y_new
    true = abs(y_new[0, 0] - np.exp(np.sin(0.3 + h) - np.sin(0.3)))
    return _error_norm(K, hh, np.ones((1, 1)))[0] / true


def _error_norm(K, h, scale):
    """DOP853's error norm of a step from its stages ``K``."""
    sums = tuple(rk.combine_row(getattr(dop853, e), K) for e in dop853.ERRORS)
    return methods.DOP853.error(methods.Step(None, sums, None), h, scale)


def test_error_estimate_tracks_the_true_local_error():
    # from err = 1e-11 to 1e-7 (above rounding): within a factor 10 either way
    ratios = [_estimate_over_true(h) for h in (0.25, 0.35, 0.5, 0.7, 0.9)]
    assert all(0.1 < q < 10 for q in ratios), ratios


def test_error_estimate_test_sees_a_wrong_weight(monkeypatch):
    E5 = dop853.E5.copy()
    E5[0] += 1e-4
    monkeypatch.setattr(dop853, "E5", E5)
    assert max(_estimate_over_true(h) for h in (0.25, 0.35)) > 10


# --------------------------------------------------------------------------
# step for step against scipy's DOP853
# --------------------------------------------------------------------------

def _forced_pendulum(t, y):
    return np.array([y[1], -np.sin(y[0]) + 0.1 * np.cos(t)])


def _evaluation_logs(rtol=1e-8, atol=1e-10, T=10.0):
    """(t, y) of every right-hand-side call, scipy's DOP853 and ours."""
    class SameErrorSums(DOP853):
        # the error estimate cancels ~6 digits when err << 1, so the order of
        # its sums matters; both use ours (checked against scipy's below)
        def _estimate_error_norm(self, K, h, scale):
            return float(_error_norm(K[:, None, :], np.array([abs(h)]), scale[None])[0])

    theirs, ours = [], []

    def f_scipy(t, y):
        theirs.append((t, *y))
        return _forced_pendulum(t, y)

    def f_ours(t, y, phase):
        ours.append((t[0], *y[0]))
        return _forced_pendulum(t[0], y[0])[None]

    ref = SameErrorSums(f_scipy, 0.0, np.array([1.0, 0.0]), T, rtol=rtol, atol=atol)
    while ref.status == "running":
        ref.step()
    sol = integ.integrate(f_ours, [T], [[1.0, 0.0]], rtol=rtol, atol=atol)
    return np.array(theirs), np.array(ours), ref.y, sol.y[0, 0]


def test_one_member_follows_scipy_step_for_step():
    theirs, ours, y_ref, y_end = _evaluation_logs()
    # same evaluations: the same initial step, the same accepted and rejected steps
    assert theirs.shape == ours.shape and len(theirs) > 300
    assert np.any(np.diff(theirs[2::12, 0]) < 0)           # rejections happen
    # the first two steps bit-near; later, rounding differences of 1e-16 in
    # the stages move an err << 1 by up to 1e-8 relative (6 digits cancel)
    # and so each step size by 1e-9
    assert np.allclose(ours[:26], theirs[:26], rtol=1e-15, atol=1e-15)
    assert np.allclose(ours[:, 0], theirs[:, 0], rtol=1e-7, atol=0)
    assert np.allclose(y_end, y_ref, rtol=1e-12, atol=0)


def test_step_for_step_test_sees_a_different_controller(monkeypatch):
    monkeypatch.setattr(control, "DEFAULT", replace(control.DEFAULT, safety=0.91))
    theirs, ours, _, _ = _evaluation_logs()
    assert theirs.shape != ours.shape or not np.allclose(ours[:, 0], theirs[:, 0],
                                                           rtol=1e-7, atol=0)


def test_error_norm_equals_scipys():
    rng = np.random.default_rng(0)
    K, scale, h = rng.normal(size=(13, 3)), rng.uniform(0.5, 2, 3), 0.3
    ref = DOP853(lambda t, y: y, 0.0, np.ones(3), 1.0)._estimate_error_norm(K, h, scale)
    ours = _error_norm(K[:, None, :], np.array([h]), scale[None])[0]
    assert ours == pytest.approx(ref, rel=1e-14)


def test_initial_step_equals_scipys():
    from scipy.integrate._ivp.common import select_initial_step
    y0, rtol, atol = np.array([1.0, 0.0]), 1e-8, 1e-10
    f0 = _forced_pendulum(0.0, y0)
    ref = select_initial_step(_forced_pendulum, 0.0, y0, 10.0, np.inf, f0, 1, 7, rtol, atol)
    ours = methods.initial_step(lambda t, y, phase: _forced_pendulum(t[0], y[0])[None],
                              y0[None], f0[None], (np.zeros(1, int),), rtol, atol, 10.0)
    assert ours[0] == pytest.approx(ref, rel=1e-15)


# --------------------------------------------------------------------------
# step-size control
# --------------------------------------------------------------------------

def test_step_factor_rules():
    err = np.array([0.0, 1e-12, 0.5, 3.0, 1e-6, 0.5, 0.5])
    finite = np.array([True, True, True, True, True, False, True])
    after_rejection = np.array([False, False, False, False, True, False, False])
    predicted = np.array([0, 0, 0, 0, 0, 0, 1e3])
    accept, factor = control.DEFAULT.factor(err, finite, after_rejection, predicted,
                                           methods.DOP853.exponent)
    assert accept.tolist() == [True, True, True, False, True, False, True]
    assert factor[0] == factor[1] == control.DEFAULT.factor_max
    assert factor[2] == pytest.approx(0.9 * 0.5 ** (-1 / 8))
    assert factor[3] == pytest.approx(0.9 * 3.0 ** (-1 / 8))
    assert factor[4] == 1.0                       # no growth right after a rejection
    assert factor[5] == control.DEFAULT.factor_min          # non-finite: shrink 5x
    assert factor[6] == pytest.approx(0.9 * 100.0 ** (-1 / 8))   # the floor


# --------------------------------------------------------------------------
# failure paths
# --------------------------------------------------------------------------

def _blow_up(t, y, *_):
    return y * y                 # y = 1 / (1 - t) from y = 1


def test_blow_up_fails_at_its_singularity_and_spares_the_others():
    sol = integ.integrate(_blow_up, [0.5, 2.0], [[1.0], [0.1]], rtol=1e-8, atol=1e-10)
    assert not sol.success
    assert "1 member(s), first #0 at t = 1" in sol.message and "1e-14" in sol.message
    assert sol.status is integ.Status.STEP_TOO_SMALL
    assert sol.y[0, 0, 0] == pytest.approx(2.0, rel=1e-8)
    assert sol.y[1, 1, 0] == pytest.approx(0.1 / (1 - 0.2), rel=1e-8)   # 1/(10 - t)


def test_the_failure_message_reads_the_controllers_minimum():
    coarse = replace(control.DEFAULT, min_relative_step=1e-9)
    sol = integ.integrate(_blow_up, [0.5, 2.0], [[1.0]], rtol=1e-8, atol=1e-10,
                          controller=coarse)
    assert "below 1e-09 t" in sol.message and "1e-14" not in sol.message
    # it gives up sooner, farther from the singularity at t = 1 (control: 1e-14)
    fine = integ.integrate(_blow_up, [0.5, 2.0], [[1.0]], rtol=1e-8, atol=1e-10)
    assert sol.status is fine.status is integ.Status.STEP_TOO_SMALL
    assert sol.nsteps[0] < fine.nsteps[0]


def test_non_finite_right_hand_side_fails():
    def f(t, y, *_):
        return np.where(t[:, None] > 0.5, np.nan, -y)
    sol = integ.integrate(f, [1.0], [[1.0]], rtol=1e-8, atol=1e-10)
    assert not sol.success and "at t = 0.5" in sol.message


def test_too_many_steps_fail():
    sol = integ.integrate(_rotation, [100.0], [[1.0, 0.0]], rtol=1e-10, atol=1e-12,
                          max_steps=20)
    assert not sol.success and "more than 20 steps" in sol.message
    assert sol.status is integ.Status.MAX_STEPS
    ok = integ.integrate(_rotation, [100.0], [[1.0, 0.0]], rtol=1e-10, atol=1e-12)
    assert ok.success and ok.status is integ.Status.SUCCESS


def test_solve_turns_a_failure_into_arithmetic_error(monkeypatch):
    real = integ.integrate
    monkeypatch.setattr(problem_module, "integrate",
                        lambda *a, **k: real(*a, **{**k, "max_steps": 3}))
    with pytest.raises(ArithmeticError, match="solve: .*more than 3 steps"):
        sd.solve("post-ln", n=[8, 9], beta=1.0, gamma0=0.0, t=[20])    # batched
    with pytest.raises(ArithmeticError, match="solve: .*more than 3 steps"):
        # one member: the scalar path gives up, the batched one reports
        monkeypatch.setattr(solve_module, "integrate_one",
                            lambda *a, **k: (_ for _ in ()).throw(solve_module.GiveUp))
        sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[20])


@pytest.mark.parametrize("bad", [dict(rtol=0.0), dict(rtol=np.nan), dict(rtol=-1e-8),
                                 dict(atol=-1.0), dict(atol=np.inf)])
def test_bad_tolerances_are_refused(bad):
    kw = dict(rtol=1e-8, atol=1e-10) | bad
    with pytest.raises(ValueError, match="rtol|atol"):
        integ.integrate(_rotation, [1.0], [[1.0, 0.0]], **kw)


@pytest.mark.parametrize("t_out", [[1.0, 0.5], [-1.0, 1.0], []])
def test_bad_output_times_are_refused(t_out):
    with pytest.raises(ValueError, match="t_out"):
        integ.integrate(_rotation, t_out, [[1.0, 0.0]], rtol=1e-8, atol=1e-10)


def _van_der_pol(t, y, *_):
    """A nonlinear field: every stage weight reaches the result."""
    return np.stack([y[:, 1], 2.0 * (1 - y[:, 0] ** 2) * y[:, 1] - y[:, 0]], axis=1)


def test_the_fused_and_the_plain_stage_sums_agree_bit_for_bit(monkeypatch):
    """Small batches take every stage's products with its later weights at once
    (``rk.AheadSums``: outer products), large ones one sum at a time
    (``rk.OnDemandSums``): the same products, added in the same order. Control:
    one weight moved by one ulp changes the bits."""
    y0 = np.random.default_rng(4).normal(size=(40, 2))

    def run():
        return integ.integrate(_van_der_pol, [0.5, 3.0], y0, rtol=1e-9, atol=1e-12)
    fused = run()
    monkeypatch.setattr(rk, "FUSED_FLOATS", 0)          # every batch: on-demand sums
    plain = run()
    assert np.array_equal(fused.y, plain.y) and fused.nfev == plain.nfev
    A = dop853.A.copy()
    A[7, 3] = np.nextafter(A[7, 3], 1.0)
    monkeypatch.setattr(dop853, "A", A)
    assert not np.array_equal(run().y, plain.y)


def test_a_member_does_not_depend_on_its_batch():
    y0 = np.array([[1.0, 0.0], [0.3, 2.0], [5.0, -1.0]])
    batch = integ.integrate(_rotation, [1.0, 7.0], y0, rtol=1e-9, atol=1e-12)
    alone = integ.integrate(_rotation, [1.0, 7.0], y0[1:2], rtol=1e-9, atol=1e-12)
    assert np.array_equal(batch.y[1], alone.y[0])


# --------------------------------------------------------------------------
# issue 16: an accidental near-zero error estimate let the next step grow 4x
# --------------------------------------------------------------------------

def _post_ln_log_epsilon(T, n, beta):
    """log(1 - gamma(T)) of Post-LN (softmax) from gamma0 = 0, in closed form.

    With eps = 1 - gamma and delta = n - (n-1) eps the reduced ODE is
    dt/deps = -((n-1) + e^{beta eps}) (1/eps + (n-1)/delta) / (2n), so
    t = F(eps) - F(1) with 2n F = -[(n-1) log eps - (n-1) log delta
    + Ei(beta eps) + e^{beta n/(n-1)} E1(beta delta/(n-1))]; solved for
    log eps by bisection and two Newton steps.
    """
    def F(le):
        eps = np.exp(le)
        delta = n - (n - 1) * eps
        return -((n - 1) * (le - np.log(delta)) + expi(beta * eps)
                 + np.exp(beta * n / (n - 1)) * exp1(beta * delta / (n - 1))) / (2 * n)

    def dF(le):
        eps = np.exp(le)
        return -((n - 1) + np.exp(beta * eps)) * (1 + (n - 1) * eps / (n - (n - 1) * eps)) / (2 * n)

    F0 = F(np.zeros_like(n))
    lo, hi = np.full_like(n, -700.0), np.zeros_like(n)
    for _ in range(60):
        mid = (lo + hi) / 2
        later = F(mid) - F0 > T
        lo, hi = np.where(later, mid, lo), np.where(later, hi, mid)
    x = (lo + hi) / 2
    for _ in range(2):
        x = x - (F(x) - F0 - T) / dF(x)
    return x


ISSUE_MEMBER = dict(n=3.9804911500983042, beta=1.9090909090909092)
# members where scipy's DOP853 (and ours without the floor) slips by > 1e-9
SLIPPING = dict(n=np.array([5.267985499635293, 39.899484836981024]),
                beta=np.array([2.6544983761284615, 4.007612854561032]))


def _post_ln_error(n, beta):
    tr = sd.solve("post-ln", n=n, beta=beta, gamma0=0.0, t=[20.0])
    return np.abs(np.expm1(tr.log_epsilon[..., 0] - _post_ln_log_epsilon(20.0, n, beta)))


def test_closed_form_oracle_agrees_with_mpmath():
    hp = sd.solve("post-ln", **ISSUE_MEMBER, gamma0=0.0, t=[20.0], dps=30)
    le = _post_ln_log_epsilon(20.0, np.array(ISSUE_MEMBER["n"]), np.array(ISSUE_MEMBER["beta"]))
    assert abs(float(hp.log_epsilon[0]) - le) < 1e-13


def test_issue_16_member_and_a_random_grid_within_1e_9():
    assert _post_ln_error(np.array(ISSUE_MEMBER["n"]), np.array(ISSUE_MEMBER["beta"])) < 1e-10
    rng = np.random.default_rng(0)
    n, beta = np.exp(rng.uniform(np.log(2), np.log(1e4), 1000)), rng.uniform(0.1, 20, 1000)
    assert _post_ln_error(np.r_[n, SLIPPING["n"]], np.r_[beta, SLIPPING["beta"]]).max() < 1e-9


def test_without_the_floor_members_slip(monkeypatch):
    # the first member slips (1.5e-8); the second slipped (3e-9) only while the
    # rates read gamma as 1 - exp(u), and lands at 3e-13 since they read it as
    # -expm1(u) (symdyn.reduced.compile's form "gamma")
    monkeypatch.setattr(control, "DEFAULT", replace(control.DEFAULT, estimate_floor=0.0))
    assert _post_ln_error(SLIPPING["n"][:1], SLIPPING["beta"][:1])[0] > 1e-9


def test_scipy_dop853_slips_where_the_floor_holds():
    (f_u, f_r), = sd.stable_system("post-ln").phases("numpy")
    n, beta = SLIPPING["n"][0], SLIPPING["beta"][0]

    def rhs(t, y):
        eps = np.exp(y[0])
        return [f_u(t, eps, y[1], n, beta), f_r(t, eps, y[1], n, beta)]
    u_atol = float(problem_module.u_atol(np.array(1.0), np.array(n), 1e-11))
    ref = solve_ivp(rhs, (0, 20), [0.0, 1.0], method="DOP853",
                    rtol=[problem_module.U_RTOL, 1e-11], atol=[u_atol, 1e-12])
    exact = _post_ln_log_epsilon(20.0, np.array(n), np.array(beta))
    assert abs(np.expm1(ref.y[0, -1] - exact)) > 1e-9
    assert _post_ln_error(np.array(n), np.array(beta)) < 1e-10


# --------------------------------------------------------------------------
# dense output: output times cost no steps
# --------------------------------------------------------------------------

def _dense_against_scipy(T=10.0, rtol=1e-8, atol=1e-10, k=2001):
    """Our outputs at ``k`` times, scipy's DOP853 dense output at the same
    times (the same steps, see the step-for-step test), and our evaluations."""
    times = np.linspace(0.0, T, k)
    sol = integ.integrate(lambda t, y, phase: _forced_pendulum(t[0], y[0])[None],
                          times, [[1.0, 0.0]], rtol=rtol, atol=atol)
    ref = solve_ivp(_forced_pendulum, (0.0, T), [1.0, 0.0], method="DOP853",
                    rtol=rtol, atol=atol, dense_output=True)
    return sol, ref.sol(times).T


def _dense_errors():
    sol, theirs = _dense_against_scipy()
    times = np.linspace(0.0, 10.0, 2001)
    tight = solve_ivp(_forced_pendulum, (0.0, 10.0), [1.0, 0.0], method="DOP853",
                      rtol=1e-13, atol=1e-14, t_eval=times).y.T
    return sol, np.abs(sol.y[0] - tight).max(), np.abs(theirs - tight).max()


def test_dense_output_is_as_close_as_scipys_continuous_extension():
    # ours (Hairer's contd8 by default) against scipy's on the same steps, both
    # against a tight reference: the same interpolant, so the same values to
    # rounding, and as close to the reference
    sol, ours, theirs = _dense_errors()
    assert sol.success
    assert np.abs(sol.y[0] - _dense_against_scipy()[1]).max() < 1e-12
    assert ours < 1.1 * theirs and ours < 1e-7


def test_control_the_order6_opt_in_is_another_interpolant():
    # the opt-in order-6 extension (no evaluation) reads other values
    times = np.linspace(0.0, 10.0, 2001)
    six = integ.integrate(lambda t, y, phase: _forced_pendulum(t[0], y[0])[None], times,
                          [[1.0, 0.0]], rtol=1e-8, atol=1e-10, dense_output="order6")
    assert np.abs(six.y[0] - _dense_against_scipy()[1]).max() > 1e-10


def test_dense_output_test_sees_a_wrong_coefficient(monkeypatch):
    rows = dop853.D.copy()
    rows[2, 7] *= 1 + 1e-3
    monkeypatch.setattr(dop853, "D", rows)
    _, ours, theirs = _dense_errors()
    assert ours > 2 * theirs


def test_output_times_cost_no_steps():
    def run(k):
        return integ.integrate(_rotation, np.linspace(0, 50, k), [[1.0, 0.0], [0.5, 0.5]],
                               rtol=1e-10, atol=1e-12)
    few, many = run(11), run(20_001)
    # the same steps; every step holds an output of 20,001: contd8's 3 more
    # evaluations on each (15/12 of a step), on a few of 11
    assert np.array_equal(few.nsteps, many.nsteps)
    assert few.nfev < many.nfev <= 1.3 * few.nfev
    t = np.linspace(0, 50, 20_001)
    exact = np.stack([np.cos(t), -np.sin(t)], axis=1)
    assert np.abs(many.y[0] - exact).max() < 1e-8
    # outputs on a step boundary and inside it agree with the few-output run
    assert np.allclose(many.y[:, ::2000], few.y, rtol=0, atol=1e-9)


def test_outputs_through_record_arrive_in_time_order():
    seen = []
    integ.integrate(_rotation, np.linspace(0, 20, 301), [[1.0, 0.0], [0.0, 1.0]],
                    rtol=1e-9, atol=1e-12,
                    record=lambda k, members, y: seen.extend(zip(k.tolist(), members.tolist(),
                                                                 strict=True)))
    for m in (0, 1):
        ks = [k for k, mm in seen if mm == m]
        assert ks == list(range(301))


def test_finite_rows_by_sums_agree_with_the_elementwise_test():
    """``integrate._finite_rows`` (one sum of each array, the elementwise test
    only when a sum is not finite) flags exactly the rows with a NaN or an
    inf, and not rows of finite values whose sum overflows (control: the sum
    alone would flag them)."""
    rng = np.random.default_rng(3)
    y, fy, err = rng.normal(size=(7, 5)), rng.normal(size=(7, 5)), rng.random(7)
    assert integ._finite_rows(y, fy, err).all()
    y[1, 2], fy[3, 0], err[5] = np.nan, -np.inf, np.inf
    y[4] = 1e308                                            # finite, its sum overflows
    with np.errstate(over="ignore", invalid="ignore"):
        got = integ._finite_rows(y, fy, err)
        assert not np.isfinite(y[4].sum())                  # control
    want = np.isfinite(y).all(axis=1) & np.isfinite(fy).all(axis=1) & np.isfinite(err)
    assert np.array_equal(got, want) and got[4] and list(np.flatnonzero(~got)) == [1, 3, 5]


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7, 8, 9, 40])
def test_error_norm_row_sums_are_left_to_right_where_short(k):
    """``control._row_sums``: for rows of fewer than 8 the left-to-right sum
    of the one-member path (Python's ``sum``, IEEE additions: any CPU) bit
    for bit; numpy's reduction for longer rows. Control: a reordered sum
    differs on these values."""
    rng = np.random.default_rng(k)
    x = rng.normal(size=(50, k)) * 10.0 ** rng.integers(-8, 9, size=(50, k))
    got = control._row_sums(x)
    if k < 8:
        assert np.array_equal(got, [sum(row.tolist()) for row in x])
    else:
        assert np.array_equal(got, np.add.reduce(x, axis=1))
    if k >= 3:                                              # control
        assert not np.array_equal(got, [sum(row.tolist()[::-1]) for row in x])
