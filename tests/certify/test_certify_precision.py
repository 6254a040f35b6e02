"""Certificates that carry information (issue 45, item 4): Post-LN's crossing
time of 0.99 from gamma0 = 0 at n = 8 lies beyond the float range at
beta = 720 (3.4e309) and beta = 1e6 (1.5e434288). The enclosures are checked
against an independent oracle, mpmath's tanh-sinh quadrature of
``T = int_0^level dgamma / gamma_dot`` at 60 digits with the ``gamma_dot`` of
``sd.reduce`` (no Arb, no quadrature form); a perturbed oracle (the speed off
by 1e-12) is the negative control. The working precision is raised until
the relative width meets its target, or ``Uncertified`` names what to raise;
no enclosure holds a negative time."""

from __future__ import annotations

import dataclasses

import mpmath
import pytest
import sympy as sp

pytest.importorskip("flint")

import symdyn as sd  # noqa: E402
import symdyn.certify as C  # noqa: E402
from symdyn.certify import crossing as crossing_module  # noqa: E402
from symdyn.certify.forms import forms  # noqa: E402
from symdyn.model import symbols as S  # noqa: E402

DPS = 60
CASES = [(720, "e+309"), (10**6, "e+434288")]


def _gamma_dot():
    return sp.lambdify((S.gamma, S.n, S.beta), sd.reduce("post-ln").gamma_dot, "mpmath")


def _oracle_time(level, beta, n=8, factor=1):
    """``(T, error)``: int_0^level dgamma/(factor gamma_dot) by mpmath at 60
    digits, on pieces [0, 1/beta, 3/beta, 7/beta, ...] (gamma_dot changes on the
    scale 1/beta near 0, where the time is spent)."""
    gdot = _gamma_dot()
    with mpmath.workdps(DPS):
        top = mpmath.mpf(level)
        points, h = [mpmath.mpf(0)], mpmath.mpf(1) / beta
        while points[-1] + h < top:
            points.append(points[-1] + h)
            h *= 2
        points.append(top)
        return mpmath.quad(lambda g: 1 / (factor * gdot(g, n, beta)), points, error=True)


@pytest.fixture(scope="module")
def large():
    return {beta: C.crossing_time("post-ln", "0.99", n=8, beta=beta) for beta, _ in CASES}


@pytest.mark.parametrize("beta, exponent", CASES)
def test_the_enclosure_beyond_the_float_range_holds_the_quadrature(beta, exponent, large):
    T = large[beta]
    truth, err = _oracle_time(mpmath.mpf(99) / 100, beta)
    assert err < truth * mpmath.mpf(10) ** -45                 # the oracle is resolved
    with mpmath.workdps(DPS):
        assert abs(truth - T.center) <= T.radius + err
        assert T.lo <= truth <= T.hi and T.lo > 0               # no negative time
    assert T.relative_width <= 1e-15                            # the default target
    assert exponent in str(T) and str(T).startswith("[" + mpmath.nstr(truth, 12)[:12])
    with pytest.raises(OverflowError, match="center"):
        _ = T.mid                                               # not inf in its place
    assert T.rad >= float(T.radius) if beta == 720 else T.rad == float("inf")


@pytest.mark.parametrize("beta, _", CASES)
def test_control_a_speed_off_by_1e_12_is_outside_the_enclosure(beta, _, large):
    T = large[beta]
    wrong, err = _oracle_time(mpmath.mpf(99) / 100, beta, factor=1 + mpmath.mpf(10) ** -12)
    with mpmath.workdps(DPS):
        assert abs(wrong - T.center) > T.radius + err


@pytest.mark.parametrize("beta", [720, 10**6])
def test_gamma_beyond_the_float_range_inverts_the_quadrature(beta):
    g = C.gamma("post-ln", 1, n=8, beta=beta)                   # 4.1e-313, 6.6e-434295
    assert g.lo > 0 and g.relative_width <= 1e-15
    gdot = _gamma_dot()
    with mpmath.workdps(DPS):
        time = [mpmath.quad(lambda x: 1 / gdot(x, 8, beta), [0, end]) for end in (g.lo, g.hi)]
        assert time[0] <= 1 + mpmath.mpf(10) ** -40 and time[1] >= 1 - mpmath.mpf(10) ** -40
        # control: a gamma 1e-10 higher is reached later than t = 1
        late = mpmath.quad(lambda x: 1 / gdot(x, 8, beta), [0, g.hi * (1 + mpmath.mpf(10) ** -10)])
        assert late > 1 + mpmath.mpf(10) ** -12


def test_the_cli_prints_the_exponent(capsys):
    from symdyn.cli import main
    assert main(["certify", "post-ln", "--level", "0.99", "--n", "8", "--beta", "720"]) == 0
    out = capsys.readouterr().out
    truth, _ = _oracle_time(mpmath.mpf(99) / 100, 720)
    assert out.startswith("T* in [3.389228166518") and "e+309" in out
    with mpmath.workdps(DPS):
        lo, hi = (mpmath.mpf(out.split(f"{k} = ")[1].split()[0]) for k in ("lo", "hi"))
        assert lo <= truth <= hi and (hi - lo) / truth < 1e-15


def test_the_precision_is_raised_until_the_target_is_met():
    with pytest.raises(C.Uncertified, match=r"max_prec=.*rel_width="):
        C.crossing_time("post-ln", "0.99", n=8, beta=1, rel_width=1e-60, max_prec=128)
    T = C.crossing_time("post-ln", "0.99", n=8, beta=1, rel_width=1e-60, max_prec=256)
    assert T.relative_width <= 1e-60 and T.prec == 256 and "256 bits" in T.method
    assert C.crossing_time("post-ln", "0.99", n=8, beta=1).prec == 128    # met at once


def _broken(scheme, rate):
    return tuple(dataclasses.replace(p, rate=rate) for p in forms(scheme))


def test_an_arithmetic_failure_is_uncertified_not_a_value_error(monkeypatch):
    def fails(*args, **kw):
        raise ValueError("math domain error")
    monkeypatch.setattr(crossing_module, "forms", lambda s, attention="softmax":
                        _broken(s, fails))
    with pytest.raises(C.Uncertified, match="math domain error.*max_prec=") as info:
        C.crossing_time("post-ln", "0.99", n=8, beta=1, max_prec=256)
    assert not isinstance(info.value, ValueError)


def test_a_ball_holding_negative_times_is_cut_at_zero(monkeypatch):
    # a rate known only to +/- 1e10: the quadrature's ball holds negative "times"
    from flint import arb
    monkeypatch.setattr(crossing_module, "forms", lambda s, attention="softmax":
                        _broken(s, lambda g, *a, **kw: g * 0 + arb(0, 1e10)))
    ball, _ = crossing_module.bound("post-ln", "0.99", n=8, beta=1)
    assert ball.lower() == 0 and ball.upper() > 1e10            # cut, not dropped
    with pytest.raises(C.Uncertified, match="relative width"):  # and no information
        C.crossing_time("post-ln", "0.99", n=8, beta=1, max_prec=128)


@pytest.mark.parametrize("kw, word", [
    ({"rel_width": 0}, "rel_width"), ({"rel_width": 2}, "rel_width"),
    ({"rel_width": "x"}, "rel_width"), ({"max_prec": 64}, "max_prec"),
    ({"max_prec": 8192}, "max_prec"), ({"prec": 10**6}, "prec"), ({"prec": "x"}, "prec"),
])
def test_bad_precision_settings_name_the_argument(kw, word):
    with pytest.raises(ValueError, match=word):
        C.crossing_time("post-ln", "0.99", n=8, beta=1, **kw)


def test_a_box_input_has_no_default_target():
    T = C.crossing_time("post-ln", "0.99", n=(8, 9), beta=1)
    assert T.relative_width > 1e-15 and T.prec == 128
    with pytest.raises(C.Uncertified, match="rel_width"):
        C.crossing_time("post-ln", "0.99", n=(8, 9), beta=1, rel_width=1e-15, max_prec=256)


@pytest.mark.parametrize("more_bits, bits", [(False, 128), (True, 256)])
def test_a_failure_more_bits_cannot_fix_stops_the_escalation(monkeypatch, more_bits, bits):
    def fails(*args, **kw):
        raise C.Uncertified("a step limit", more_bits=more_bits)
    monkeypatch.setattr(crossing_module, "forms", lambda s, attention="softmax":
                        _broken(s, fails))
    with pytest.raises(C.Uncertified, match=f"at {bits} bits: a step limit") as info:
        C.crossing_time("post-ln", "0.99", n=8, beta=1, max_prec=256)
    assert ("does not help" in str(info.value)) == (not more_bits)


def test_the_cli_says_not_certified_with_exit_1(capsys):
    """No certificate within the allowed precision is neither bad input (2) nor
    a bug (3): exit 1 and the message naming what to raise. Control: the
    same command with a bad --n is bad input."""
    from symdyn.cli import main
    assert main(["certify", "pre-ln", "--level", "0.99", "--n", "8", "--beta", "720"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("symdyn: not certified:") and "max_prec=" in err
    assert main(["certify", "pre-ln", "--level", "0.99", "--n", "-8", "--beta", "1"]) == 2
