"""symdyn.ode.extrapolation: Gragg-Bulirsch-Stoer in mpmath, against closed forms."""

import mpmath
import pytest

from symdyn.ode import extrapolation
from symdyn.ode.extrapolation import integrate_mp


def _rotation(t, y, phase):
    return [y[1], -y[0]]


def _error(dps):
    """Largest error of (cos t, -sin t) at t = 1, 5 from the solve at ``dps``."""
    states = integrate_mp(_rotation, [0, 1, 5], [1, 0], dps)
    with mpmath.workdps(dps + 20):
        return max(abs(y[0] - mpmath.cos(t)) + abs(y[1] + mpmath.sin(t))
                   for t, y in zip((1, 5), states[1:], strict=True))


def test_harmonic_oscillator_to_the_requested_digits():
    assert _error(30) < mpmath.mpf(10) ** -28


def test_the_check_sees_fewer_digits():
    assert _error(12) > mpmath.mpf(10) ** -28


def test_breakpoint_switches_the_law():
    # y' = 1 before t = 1, y' = -y after: y(3) = 2 e^{-2}
    def f(t, y, phase):
        return [mpmath.mpf(1)] if phase == 0 else [-y[0]]
    (y1,), (y3,) = integrate_mp(f, [1, 3], [1], 25, breakpoints=[1])
    with mpmath.workdps(40):
        assert abs(y1 - 2) < mpmath.mpf(10) ** -24
        assert abs(y3 - 2 * mpmath.exp(-2)) < mpmath.mpf(10) ** -24


def test_non_finite_right_hand_side_raises():
    def f(t, y, phase):
        return [mpmath.nan if t > 0.5 else y[0]]
    with pytest.raises(ArithmeticError, match="did not converge at t = 0.5"):
        integrate_mp(f, [1], [1], 15)


def test_too_many_steps_raise():
    with pytest.raises(ArithmeticError, match="more than 3 extrapolation steps"):
        integrate_mp(_rotation, [100], [1, 0], 15, max_steps=3)


def test_breakpoint_check_sees_a_missing_breakpoint():
    def f(t, y, phase):
        return [mpmath.mpf(1)] if phase == 0 else [-y[0]]
    (y3,) = integrate_mp(f, [3], [1], 25)[0]
    assert abs(y3 - 2 * mpmath.exp(-2)) > 1


def _logistic_error(dps):
    """Error of y' = y (1 - y), y(0) = 1/2 at t = 10 against 1 / (1 + e^-10)."""
    (y,), = integrate_mp(lambda t, y, phase: [y[0] * (1 - y[0])], [10], [mpmath.mpf(1) / 2], dps)
    with mpmath.workdps(dps + 20):
        return abs(y - 1 / (1 + mpmath.exp(-10)))


def test_a_nonlinear_law_to_sixty_digits():
    assert _logistic_error(60) < mpmath.mpf(10) ** -58
    assert _logistic_error(40) > mpmath.mpf(10) ** -58          # control: fewer digits


def _counting_rotation(calls):
    """:func:`_rotation` that notes the time of each evaluation in ``calls``."""
    def f(t, y, phase=0):
        calls.append(t)
        return _rotation(t, y, phase)
    return f


def _counted_rotation(dps):
    calls = []
    integrate_mp(_counting_rotation(calls), [20], [1, 0], dps)
    return len(calls)


def test_rows_cost_what_the_work_count_says():
    # A step that converges in no row evaluates f A_j = 1 + j (j + 1) times.
    calls = []
    f = _counting_rotation(calls)
    for rows in (2, 5, 9):
        calls.clear()
        with mpmath.workdps(40):
            y0 = [mpmath.mpf(1), mpmath.mpf(0)]
            y_new, errors = extrapolation.step(f, 0, y0, f(0, y0), mpmath.mpf(3),
                                               mpmath.mpf(10) ** -60, rows)
        assert y_new is None and sorted(errors) == list(range(2, rows + 1))
        assert len(calls) == extrapolation.work(rows)


def test_the_order_follows_the_least_work_per_unit_time(monkeypatch):
    # The rotation to t = 20 at 60 digits: 20,039 evaluations, in rows up to
    # 19 (31,920 with the step-halving control of symdyn 0.5); bounded by 25,000.
    assert _counted_rotation(60) < 25_000
    # control: the same strategy aiming no higher than row 8 costs more (28,742)
    choose = extrapolation.next_aim
    monkeypatch.setattr(extrapolation, "next_aim",
                        lambda H, tol, errors, converged, most:
                        choose(H, tol, errors, converged, 8))
    assert _counted_rotation(60) > 25_000
