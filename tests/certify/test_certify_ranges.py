"""Certificates over ranges (issue 49, item 4): box enclosures whose width
follows the box, Mix-LN over ranges, gamma(t) for every scheme, certified
merge times. Oracles: float crossing times sampled densely over the box,
point certificates at the box's corners, sd.solve(..., dps=50), sd.merge_time
in floats, mpmath quadratures at 40 digits and a closed form; each with a
negative control that must fail."""

from __future__ import annotations

import itertools

import mpmath
import numpy as np
import pytest
import sympy as sp

pytest.importorskip("flint")

from flint import arb  # noqa: E402

import symdyn as sd  # noqa: E402
import symdyn.certify as C  # noqa: E402
from symdyn.certify import crossing as crossing_module  # noqa: E402
from symdyn.certify import ranges  # noqa: E402
from symdyn.certify.affine import Affine  # noqa: E402
from symdyn.certify.arith import working  # noqa: E402
from symdyn.certify.boxes import time_over_box  # noqa: E402
from symdyn.certify.interval import Interval  # noqa: E402
from symdyn.certify.printer import compile_ball  # noqa: E402
from symdyn.reduced.merge import merge_integrand, merge_time, theta  # noqa: E402
from symdyn.reduced.solve_crossing import crossing_time as float_crossing  # noqa: E402

BOX = {"n": (8, 9), "beta": (1, 1.25)}


def _sampled(scheme, level, k=7):
    """Float crossing times on a k x k grid of BOX (the true range's oracle)."""
    ns, bs = np.linspace(*BOX["n"], k), np.linspace(*BOX["beta"], k)
    return np.array([float(float_crossing(scheme, n=a, beta=b, level=level, rtol=1e-11,
                                          atol=1e-12)) for a, b in itertools.product(ns, bs)])


@pytest.fixture(scope="module")
def pre_ln():
    return C.crossing_time("pre-ln", "0.99", **BOX), _sampled("pre-ln", 0.99)


def test_the_pre_ln_box_is_within_ten_percent_of_the_true_range(pre_ln):
    T, floats = pre_ln
    lo, hi = floats.min(), floats.max()
    assert 12.97 < lo < 12.99 and 14.25 < hi < 14.27            # the numbers
    assert T.lo <= lo + 1e-9 and hi - 1e-9 <= T.hi               # holds every sample
    assert T.lo > 0
    assert (T.hi - T.lo) - (hi - lo) <= 0.1 * (hi - lo)         # the target
    assert "n decreasing, beta increasing" in T.method


def test_the_box_ends_are_the_corner_point_certificates(pre_ln):
    T, _ = pre_ln
    low = C.crossing_time("pre-ln", "0.99", n=9, beta=1)       # n decreasing, beta increasing
    high = C.crossing_time("pre-ln", "0.99", n=8, beta="1.25")
    assert abs(T.lo - low.lo) < 1e-8 and abs(T.hi - high.hi) < 1e-8
    assert T.lo <= low.lo and high.hi <= T.hi


@pytest.mark.parametrize("fake", ["flipped", "flat"])
def test_control_wrong_derivatives_do_not_certify_the_box(monkeypatch, fake):
    # negative controls: derivatives of the wrong sign send the mean-value form to the
    # wrong corners (its bounds cross: refused); derivatives claimed 0 (T constant)
    # give the centre's value alone, which misses the sampled range
    real = ranges.affine_gradient

    def wrong(*args, **kw):
        grad = real(*args, **kw)
        return tuple(-g for g in grad) if fake == "flipped" else tuple(arb(0) for _ in grad)
    monkeypatch.setattr(ranges, "affine_gradient", wrong)
    with working(148):
        prob = crossing_module.Certification("pre-ln", "0.99", (8, 9), (1, "1.25"), 0, 1,
                                             "softmax", {})
        u1 = -(1 - prob.level).log()
        if fake == "flipped":
            with pytest.raises(C.Uncertified, match="cross"):
                crossing_module.box_enclosure(prob, u1, 148, depth=0)
            return
        T = Interval(crossing_module.box_enclosure(prob, u1, 148, depth=0).time)
    floats = _sampled("pre-ln", 0.99, k=3)
    assert not (float(T.lo) <= floats.min() and floats.max() <= float(T.hi))


def test_the_region_box_function_gets_the_tight_enclosure(pre_ln):
    _, floats = pre_ln
    with working(53):
        prob = crossing_module.Certification("pre-ln", "0.99", (8, 9), (1, 1.25), 0, 1,
                                             "softmax", {})
        ball = time_over_box(prob, -(1 - prob.level).log())
        first = ranges.Interval(ball)
    lo, hi = floats.min(), floats.max()
    assert float(first.lo) <= lo + 1e-9 and hi - 1e-9 <= float(first.hi)
    assert float(first.hi - first.lo) - (hi - lo) <= 0.1 * (hi - lo)


@pytest.mark.parametrize("scheme", ["post-ln", "peri-ln", "deepnorm", "sqrt-scaling"])
def test_other_schemes_over_the_box_hold_the_samples_and_stay_tight(scheme):
    T = C.crossing_time(scheme, "0.99", **BOX)
    floats = _sampled(scheme, 0.99, k=5)
    lo, hi = floats.min(), floats.max()
    assert T.lo <= lo + 1e-9 and hi - 1e-9 <= T.hi
    assert (T.hi - T.lo) - (hi - lo) <= 0.1 * (hi - lo)


def test_mix_ln_over_a_thin_range_certifies():
    # issue: "interval Newton did not contract" for n = (8, 8.001)
    T = C.crossing_time("mix-ln", "0.99", n=(8, "8.001"), beta=1)
    ends = [float(float_crossing("mix-ln", n=x, beta=1.0, level=0.99, rtol=1e-12,
                                 atol=1e-13)) for x in (8.0, 8.0005, 8.001)]
    assert all(T.lo - 1e-9 * x <= x <= T.hi + 1e-9 * x for x in ends)   # the floats' tolerance
    assert T.hi - T.lo < 1e-3                                 # the range's own spread: 1.6e-4


def test_mix_ln_by_balls_through_the_switch_certifies_by_epsilon_inflation():
    # the ball path (no mean-value form): interval Newton at the switch from an
    # inflated box; control: without inflation the first box does not contract
    with working(148):
        prob = crossing_module.Certification("mix-ln", "0.99", (8, "8.001"), 1, 0, 1,
                                             "softmax", {})
        T, methods = crossing_module.by_phases(prob, -(1 - prob.level).log(), 148)
    x = float(float_crossing("mix-ln", n=8.0005, beta=1.0, level=0.99, rtol=1e-12,
                             atol=1e-13))
    assert T.lower() - 1e-8 <= x <= T.upper() + 1e-8 and any("switch" in m for m in methods)
    with working(148):
        ph = prob.phases[0]
        F = prob.rate(ph, prob.r0)
        u0 = arb(0)
        S_end = ph.S_at(arb(1), prob.n, prob.beta)
        v = crossing_module.solve_for(F, u0, S_end, u0 + S_end / F(u0), 148)
        m = arb(v.mid())
        X = arb(m, float(m) * 2.0 ** -40)                     # the first, uninflated box
        N = m - (crossing_module.quadrature(F, u0, m, 148) - S_end) / F(X)
        assert not X.contains(N) and v.contains(m)


def test_mix_ln_over_the_box_holds_dense_samples():
    T = C.crossing_time("mix-ln", "0.99", **BOX)
    floats = _sampled("mix-ln", 0.99, k=7)
    assert T.lo <= floats.min() + 1e-8 and floats.max() - 1e-8 <= T.hi
    assert T.hi - T.lo < 2 * (floats.max() - floats.min())
    # control: the samples of another level are not held
    other = _sampled("mix-ln", 0.995, k=3)
    assert not (T.lo <= other.min() and other.max() <= T.hi)


def test_affine_arithmetic_holds_samples_and_its_excess_is_second_order():
    # oracle: dense samples of the function; affine excess over the sampled range
    # shrinks ~16x when the box shrinks 4x (second order), interval excess ~4x
    n_, b_ = sp.symbols("n beta", positive=True)
    g = sp.Rational(9, 10)
    expr = ((n_ - 1) * sp.exp(b_ * g) + sp.exp(b_)) / (g * n_ - g + 1)
    f = sp.lambdify((n_, b_), expr)
    fb = compile_ball(expr, [n_, b_])

    def excess(scale):
        n1, b1 = 8 + scale, 1 + 0.25 * scale
        with working(64):
            A = fb(Affine.symbol(arb(8), arb(n1), 0, 2), Affine.symbol(arb(1), arb(b1), 1, 2))
            box = fb(Interval(arb(8), arb(n1)), Interval(arb(1), arb(b1)))
            rng = A.range()
            bare = Affine(A.c, A.a).range()            # control: without its error term
        samples = [f(a, b) for a in np.linspace(8, n1, 21) for b in np.linspace(1, b1, 21)]
        lo, hi = min(samples), max(samples)
        assert float(rng.lo) <= lo and hi <= float(rng.hi)
        assert not (float(bare.lo) <= lo and hi <= float(bare.hi))
        return float(rng.hi - rng.lo) - (hi - lo), float(box.hi - box.lo) - (hi - lo)
    (aff1, int1), (aff4, int4) = excess(1.0), excess(0.25)
    assert aff1 < int1 and aff4 < aff1 / 8 and int4 > int1 / 8


GAMMA_T = 2          # past Mix-LN's switch at t = 1


@pytest.mark.parametrize("scheme", sd.schemes())
def test_gamma_for_every_scheme_holds_the_mpmath_path(scheme):
    g = C.gamma(scheme, GAMMA_T, n=8, beta=1)
    hp = sd.solve(scheme, n=8, beta=1.0, gamma0=0.0, t=[GAMMA_T], dps=50).gamma[0]
    with mpmath.workdps(50):
        assert g.lo <= hp <= g.hi
    assert g.relative_width <= 1e-15


def test_control_a_wrong_field_in_t_excludes_the_mpmath_path(monkeypatch):
    real = ranges.time_field

    def scaled(phase, params):
        f = real(phase, params)
        return lambda *a, **kw: [v * (1 + arb(10) ** -9) for v in f(*a, **kw)]
    monkeypatch.setattr(ranges, "time_field", scaled)
    g = C.gamma("pre-ln", GAMMA_T, n=8, beta=1)
    hp = sd.solve("pre-ln", n=8, beta=1.0, gamma0=0.0, t=[GAMMA_T], dps=50).gamma[0]
    with mpmath.workdps(50):
        assert not g.lo <= hp <= g.hi


def _mp_merge(scheme, beta, theta0, n, level, factor=1):
    """The merge time at 40 digits: mpmath's quadrature of sd's derived
    sin(theta) / rho_dot(cos(theta)) (the rate divided by ``factor``)."""
    expr = merge_integrand(scheme)
    free = {s.name: s for s in expr.free_symbols}
    expr = expr.subs({free["beta"]: beta, free["n"]: n, free["m"]: sp.Rational(n, 2)})
    f = sp.lambdify(theta, expr, "mpmath")
    with mpmath.workdps(40):
        return mpmath.quad(lambda x: f(x) / factor, [mpmath.acos(mpmath.mpf(level)),
                                                     mpmath.mpf(theta0)])


@pytest.mark.parametrize("scheme", ["post-ln", "ngpt", "deepnorm"])
def test_merge_times_hold_the_quadrature_and_the_floats(scheme):
    level = 0.999
    T = C.merge_time(scheme, beta=1, theta0=1.0, n=8, level=level)
    assert T.relative_width <= 1e-15 and "acb.integral" in T.method
    exact = _mp_merge(scheme, 1, 1.0, 8, level)
    with mpmath.workdps(40):
        assert abs(exact - T.center) <= T.radius + mpmath.mpf(10) ** -30
    f = merge_time(scheme, beta=1.0, theta0=1.0, n=8, level=level)
    assert abs(f - T.mid) <= T.rad + 1e-10 * f
    # control: a rate off by 1e-12 is outside the enclosure
    wrong = _mp_merge(scheme, 1, 1.0, 8, level, factor=1 + mpmath.mpf(10) ** -12)
    with mpmath.workdps(40):
        assert abs(wrong - T.center) > T.radius


def test_merge_time_with_unequal_masses_holds_the_floats():
    T = C.merge_time("post-ln", beta=2, theta0=2.0, n=10, m=3)
    f = merge_time("post-ln", beta=2.0, theta0=2.0, n=10, m=3)
    assert abs(f - T.mid) <= T.rad + 1e-10 * f
    assert abs(merge_time("post-ln", beta=2.0, theta0=2.0, n=10, m=5) - T.mid) > 1e-6


def test_sqrt_scaling_merge_time_is_post_ln_s_in_its_clock():
    # sqrt-scaling's law is Post-LN's over sqrt(1 + t): 2 (sqrt(1 + T) - 1) = T_Post-LN
    T = C.merge_time("sqrt-scaling", beta=1, theta0=1.0, n=8, rel_width=1e-12)
    with mpmath.workdps(40):
        post = _mp_merge("post-ln", 1, 1.0, 8, 0.999)
        exact = (1 + post / 2) ** 2 - 1
        assert abs(exact - T.center) <= T.radius + mpmath.mpf(10) ** -30
        assert abs(post - T.center) > 1                       # control: not Post-LN's time


def test_radial_merge_time_holds_the_floats():
    T = C.merge_time("pre-ln", beta=1, theta0=1.0, n=8, rel_width=1e-8)
    f = merge_time("pre-ln", beta=1.0, theta0=1.0, n=8)
    assert abs(f - T.mid) <= T.rad + 1e-9 * f
    assert "Taylor" in T.method


@pytest.mark.parametrize("kw, word", [({"theta0": 4}, "theta0"), ({"m": 9}, "m"),
                                      ({"n": 1}, "n"), ({"beta": -1}, "beta"),
                                      ({"level": 1}, "level")])
def test_merge_time_bad_input_names_the_argument(kw, word):
    args = {"beta": 1, "theta0": 1.0, "n": 8, **kw}
    with pytest.raises(ValueError, match=word):
        C.merge_time("post-ln", **args)


def test_the_problem_names_its_parameters():
    prob = crossing_module.Certification("post-ln", "0.9", 8, 1, 0, 1, "softmax", {})
    assert not hasattr(prob, "args") and len(prob.theta) == 2
