"""symdyn.ode.extrapolation: Gragg-Bulirsch-Stoer in mpmath, against closed forms."""

import mpmath
import pytest

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
