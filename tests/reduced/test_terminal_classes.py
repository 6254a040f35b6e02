"""The terminal-law classifier: every class, decided by limits, never by default.

``1 - gamma ~ C exp(-Lambda(t))``, ``Lambda = int_0^t lambda``; the class is
the growth of Lambda (``symdyn.reduced.asymptotics.LAWS``, fastest decay first). Each
class has positive and negative cases (several of them were misclassified or
raised before the classifier: nGPT with alpha = 1 + t, t**t, exp(exp(exp(t))),
factorial(t), gamma(t + 1), floor(t) + 1, exp(exp(t)), log(t + 2)), and, for
every class a finite computation reaches, a numeric cross-check: the solver's
log(1 - gamma) over decades of t against the predicted law, with the wrong
class's law as negative control.
"""

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from scipy.special import expi

import symdyn as sd
from symdyn.base import budget
from symdyn.model.expressions import parse
from symdyn.model.guards import exact_exponents
from symdyn.model.symbols import SCHEME_SYMBOLS, C, beta, n, r, t
from symdyn.reduced import asymptotics

LAWS = ("super-exponential", "exponential", "stretched-exponential", "polynomial",
        "slower-than-polynomial", "no-collapse")


def speed(text):
    return sd.custom_scheme("x", speed=text)


def ngpt(alpha):
    return sd.scheme("ngpt", alpha=alpha)


def test_the_classes_are_complete_and_ordered():
    assert asymptotics.LAWS == LAWS               # fastest decay of 1 - gamma first
    assert asymptotics.UNDECIDED == "undecided" and "undecided" not in LAWS


# --- the classes: positive cases (law, exponent, growth, epsilon) ------------------

POSITIVE = [
    # scheme, law, exponent, growth (Lambda ~ growth), epsilon
    (ngpt("1 + t"), "super-exponential", (1, 2), t**2, C * sp.exp(-t * (t + 2))),
    (ngpt("log(t + 2)"), "super-exponential", (2, 1, 1), 2 * t * sp.log(t), None),
    (ngpt("exp(t)"), "super-exponential", None, None, C * sp.exp(-2 * sp.exp(t))),
    (sd.scheme("post-ln"), "exponential", 2, 2 * t, C * sp.exp(-2 * t)),
    (speed("2"), "exponential", 1, t, C * sp.exp(-t)),
    (speed("1/(2 + sin(t))"), "exponential", 4, 4 * t, C * sp.exp(-4 * t)),
    (sd.scheme("sqrt-scaling"), "stretched-exponential", (4, sp.Rational(1, 2)),
     4 * sp.sqrt(t), C * sp.exp(-4 * sp.sqrt(t))),
    (speed("log(t + 2)"), "stretched-exponential", (2, 1, -1), 2 * t / sp.log(t),
     C * sp.exp(-2 * sp.li(t + 2))),
    (speed("(1 + t)/log(t + 2)"), "stretched-exponential", (1, 0, 2), sp.log(t)**2,
     C * sp.exp(-sp.log(t)**2)),
    (sd.scheme("pre-ln"), "polynomial", 2, 2 * sp.log(t), C / t**2),
    (speed("1 + t"), "polynomial", 2, 2 * sp.log(t), C / t**2),
    (speed("floor(t) + 1"), "polynomial", 2, 2 * sp.log(t), None),
    (speed("(1 + t)*log(t + 2)"), "slower-than-polynomial", 2, 2 * sp.log(sp.log(t)),
     C / sp.log(t)**2),
    (speed("(1 + t)*sqrt(log(t + 2))"), "slower-than-polynomial",
     (4, 0, sp.Rational(1, 2)), 4 * sp.sqrt(sp.log(t)), C * sp.exp(-4 * sp.sqrt(sp.log(t)))),
    (speed("t**t"), "no-collapse", None, None, C),
    (speed("exp(exp(exp(t)))"), "no-collapse", None, None, C),
    (speed("factorial(t)"), "no-collapse", None, None, C),
    (speed("gamma(t + 1)"), "no-collapse", None, None, C),
    (speed("exp(exp(t))"), "no-collapse", None, None, C),
    (speed("exp(t)"), "no-collapse", None, None, C),
    (speed("(1 + t)*log(t + 2)**2"), "no-collapse", None, None, C),
]


@pytest.mark.parametrize("scheme, law, exponent, growth, epsilon", POSITIVE,
                         ids=[f"{c[1]}:{c[0].speed}" for c in POSITIVE])
def test_positive_cases(scheme, law, exponent, growth, epsilon):
    term = sd.terminal(scheme)
    assert term.law == law, term.reason
    assert term.exponent == exponent
    assert term.growth == growth
    if epsilon is not None:
        assert term.epsilon == epsilon
    assert term.reason == ""
    if growth is not None and not term.Lambda.has(sp.Integral):
        # growth (found on the integrand) is what it says: Lambda/growth -> 1,
        # checked on the closed form with mpmath (sympy's limit of the polylog
        # of (1 + t)/log(t + 2) at oo is wrong: 0)
        values = {n: 8, beta: 1, asymptotics.r_0: 1}
        ratio = sp.lambdify(t, (term.Lambda / growth).subs(values), "mpmath")
        far, farther = (abs(ratio(mpmath.mpf(10)**k) - 1) for k in (50, 100))
        assert farther <= far and farther < 0.02


def test_floor_is_polynomial_like_its_smooth_twin():
    # Lambda = 2 H_floor(t) + O(1/t): Lambda - 2 log t stays bounded.
    assert sd.terminal(speed("floor(t) + 1")).law == sd.terminal(speed("1 + t")).law


def test_oscillating_rate_within_positive_bounds_is_exponential():
    # lambda = 2 (2 + sin log(t + 1)): Lambda/t oscillates in [4 - sqrt 2, 4 + sqrt 2].
    term = sd.terminal(speed("1/(2 + sin(log(t + 1)))"))
    assert term.law == "exponential"
    assert isinstance(term.exponent, sp.AccumBounds)
    assert term.exponent.min <= 4 - math.sqrt(2) and term.exponent.max >= 4 + math.sqrt(2)
    assert term.growth is None and term.epsilon.has(sp.cos)      # the exact law


# --- the classes: negative cases (the neighbouring class is not claimed) ----------

NEGATIVE = [
    # scheme, a class it must not get, the class it gets
    (ngpt("2"), "super-exponential", "exponential"),
    (ngpt("1 + t"), "exponential", "super-exponential"),
    (speed("1 + t"), "exponential", "polynomial"),
    (speed("2"), "stretched-exponential", "exponential"),
    (speed("1 + t"), "stretched-exponential", "polynomial"),
    (sd.scheme("sqrt-scaling"), "polynomial", "stretched-exponential"),
    (speed("(1 + t)*log(t + 2)"), "polynomial", "slower-than-polynomial"),
    (speed("1 + t"), "slower-than-polynomial", "polynomial"),
    (speed("(1 + t)*log(t + 2)**2"), "slower-than-polynomial", "no-collapse"),
    (speed("(1 + t)*log(t + 2)"), "no-collapse", "slower-than-polynomial"),
    (speed("floor(t) + 1"), "exponential", "polynomial"),
    (speed("t**t"), "exponential", "no-collapse"),
]


@pytest.mark.parametrize("scheme, wrong, law", NEGATIVE,
                         ids=[f"not-{c[1]}:{c[0].speed}" for c in NEGATIVE])
def test_negative_cases(scheme, wrong, law):
    term = sd.terminal(scheme)
    assert term.law != wrong
    assert term.law == law


# --- undecided: with the exact Lambda and the reason -----------------------------

def test_undecided_unknown_schedule():
    term = sd.terminal(ngpt("alpha(t)"))
    assert term.law == "undecided"
    assert "alpha(t)" in term.reason and term.exponent is None and term.growth is None
    assert term.Lambda.has(sp.Integral) and term.epsilon == C * sp.exp(-term.Lambda)


def test_undecided_when_the_class_depends_on_a_parameter():
    # Lambda = 2t + c t**2: super-exponential for c > 0, exponential for c = 0.
    fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})
    term = sd.terminal(fam)
    c = fam.symbols[0]
    assert term.law == "undecided" and "depends on c" in term.reason
    assert sp.expand(term.Lambda - (2 * t + c * t**2)) == 0


def test_undecided_when_sympy_has_no_limit():
    # lambda = 2/(1 + t sin(t)**2) has no limit and no closed integral.
    term = sd.terminal(speed("1 + t*sin(t)**2"))
    assert term.law == "undecided" and "Lambda(t)/t" in term.reason
    assert term.Lambda.has(sp.Integral)


def test_undecided_when_the_time_budget_runs_out(monkeypatch):
    # Every sympy limit and integral spins until its step is stopped.
    def forever(*args, **kwargs):
        while True:
            pass
    monkeypatch.setitem(budget.SECONDS, "derivation", 2.0)
    s = speed("3 + t")
    sd.reduce(s)                                   # the reduction is not at stake
    monkeypatch.setattr(asymptotics.sp, "limit", forever)
    monkeypatch.setattr(asymptotics.sp, "integrate", forever)
    term = sd.terminal(s)
    assert term.law == "undecided" and "ran out of time" in term.reason
    monkeypatch.undo()
    assert sd.terminal(s).law == "polynomial"      # a timed-out answer is not cached


def test_the_enclosing_budget_still_holds_after_the_steps(monkeypatch):
    # The steps re-arm the alarm of an enclosing time_limit: work after
    # sd.terminal inside it is still stopped by the budget.
    monkeypatch.setitem(budget.SECONDS, "derivation", 1.5)
    with pytest.raises(ValueError, match="did not finish"):
        with budget.time_limit("outer work"):
            assert sd.terminal(speed("5 + t")).law == "polynomial"
            while True:
                pass


# --- float exponents are exact at parse time ------------------------------------

def test_float_exponents_become_rationals():
    rr = sp.Symbol("r")
    assert parse(rr**0.5, "speed", SCHEME_SYMBOLS) == sp.sqrt(r)
    assert parse(sp.Symbol("t")**-1.5, "speed", SCHEME_SYMBOLS) == t**sp.Rational(-3, 2)
    assert sd.custom_scheme("x", speed=rr**0.5, radial="a").speed == sp.sqrt(r)
    # no small denominator: stays a float (as text does)
    assert exact_exponents(t**0.3333, "speed").exp == sp.Float(0.3333)
    assert parse("t**0.3333", "speed", SCHEME_SYMBOLS).exp == sp.Float(0.3333)
    term = sd.terminal(sd.custom_scheme("x", speed=rr**0.5, radial="a"))
    assert term.rate == 2 / sp.sqrt(sp.Symbol("r_0", positive=True) + t)
    assert term.law == "stretched-exponential" and term.exponent == (4, sp.Rational(1, 2))


# --- numeric cross-checks: the solver's log(1 - gamma) against the law -----------

def _log_eps(scheme, times):
    tr = sd.solve(scheme, n=8, beta=1.0, gamma0=0.0, t=times)
    return np.asarray(tr.log_epsilon, dtype=float)


def _fit(times, u, shape):
    """Least squares ``u = a - c shape(t)``: (c, max residual / span of u)."""
    A = np.column_stack([np.ones_like(times), -shape(times)])
    coef = np.linalg.lstsq(A, u, rcond=None)[0]
    return coef[1], float(np.abs(u - A @ coef).max() / np.ptp(u))


def _predicted(term):
    """-log(epsilon/C) of the derived law, as a numpy function of t."""
    law = sp.expand_log(-sp.log(term.epsilon / C), force=True).subs({n: 8, beta: 1.0})
    return sp.lambdify(t, law, ["scipy", "numpy"])


SHAPES = {
    "super-exponential": lambda x: x**2,
    "exponential": lambda x: x,
    "stretched-exponential": np.sqrt,
    "polynomial": np.log,
    "slower-than-polynomial": lambda x: np.log(np.log(x)),
}


@pytest.mark.parametrize("scheme, times, wrong", [
    (ngpt("1 + t"), np.geomspace(2, 40, 24), ["exponential", "stretched-exponential"]),
    (speed("2"), np.geomspace(8, 300, 24), ["super-exponential", "stretched-exponential"]),
    (sd.scheme("post-ln"), np.geomspace(5, 300, 24), ["super-exponential", "polynomial"]),
    (sd.scheme("sqrt-scaling"), np.geomspace(20, 1e5, 24), ["exponential", "polynomial"]),
    (speed("1 + t"), np.geomspace(1e3, 1e12, 24), ["stretched-exponential",
                                                    "slower-than-polynomial"]),
    (speed("(1 + t)*log(t + 2)"), np.geomspace(1e10, 1e40, 10), ["polynomial"]),
], ids=["super-exponential", "exponential", "exponential-post-ln", "stretched-sqrt",
        "polynomial", "slower-than-polynomial"])
def test_solver_follows_the_predicted_law(scheme, times, wrong):
    term = sd.terminal(scheme)
    u = _log_eps(scheme, times)
    # log(1 - gamma) = log C - Lambda(t) + O(1 - gamma) + o(1) (the rest of
    # Lambda beyond its leading terms): a fit to 1e-3 of the span of u.
    c, misfit = _fit(times, u, _predicted(term))
    assert c == pytest.approx(1, abs=2e-3) and misfit < 1e-3, (c, misfit)
    # log(1 - gamma) / (-Lambda) -> 1: C is negligible at the end
    assert -u[-1] / _predicted(term)(times[-1]) == pytest.approx(1, abs=0.1)
    for other in wrong:                          # the wrong class's law does not fit
        assert _fit(times, u, SHAPES[other])[1] > 0.1, other


def test_solver_follows_the_t_over_log_t_law():
    # speed log(t + 2): Lambda = 2 li(t + 2) - 2 li(2) ~ 2 t/log t.
    scheme = speed("log(t + 2)")
    term = sd.terminal(scheme)
    assert term.epsilon == C * sp.exp(-2 * sp.li(t + 2))
    times = np.geomspace(10, 1e5, 24)
    u = _log_eps(scheme, times)
    c, misfit = _fit(times, u, lambda x: 2 * expi(np.log(x + 2)))   # li(x) = Ei(log x)
    assert c == pytest.approx(1, abs=2e-3) and misfit < 1e-3, (c, misfit)
    # not exponential: the best c t misses by 3% of the span (1e7 times the
    # law's misfit), and the rate -d log(1 - gamma)/dt falls like 2/log t
    assert _fit(times, u, lambda x: x)[1] > max(2e-2, 1e5 * misfit)
    rate = -np.diff(u) / np.diff(times)
    assert rate[-1] < 0.3 * rate[0]
    assert _fit(times, u, np.sqrt)[1] > 0.1                          # not t**(1/2)
    assert _fit(times, u, np.log)[1] > 0.1                           # not polynomial


def test_solver_follows_the_floor_law():
    # Lambda = 2 (H_k + (t - k)/(k + 1)), k = floor(t): polynomial, like 1 + t.
    # The solver steps through every jump of the speed, so one decade only,
    # where 1 - gamma falls from 0.24 to 0.004: log(1 - gamma) + Lambda
    # settles to log C with an error of the order of 1 - gamma itself.
    times = np.geomspace(3, 30, 20)
    u = _log_eps(speed("floor(t) + 1"), times)
    k = np.floor(times)
    harmonic = np.array([sum(1 / j for j in range(1, int(m) + 1)) for m in k])
    settled = u + 2 * (harmonic + (times - k) / (k + 1))
    assert np.all(np.abs(settled - settled[-1]) <= 1.5 * np.exp(u))
    assert np.all(np.diff(np.abs(settled - settled[-1]))[:-1] < 0)
    for shape in (lambda x: x, np.sqrt):          # not exponential, not stretched
        drift = u + _fit(times, u, shape)[0] * shape(times)
        assert (np.abs(drift - drift[-1]) / np.exp(u)).max() > 20


@pytest.mark.parametrize("law", ["t**t", "factorial(t)", "exp(exp(t))",
                                 "(1 + t)*log(t + 2)**2"])
def test_solver_stops_short_without_collapse(law):
    scheme = speed(law)
    assert sd.terminal(scheme).law == "no-collapse"
    times = np.geomspace(1e3, 1e30, 12) if "log" in law else np.geomspace(20, 1e4, 12)
    u = _log_eps(scheme, times)
    # 1 - gamma settles at a positive value: no polynomial (or slower) decay left
    c_poly = _fit(times, u, np.log)[0]
    c_slow = _fit(times, u, lambda x: np.log(np.log(x)))[0]
    if "log" in law:     # Lambda(oo) - Lambda(t) = 2/log t: still moving, but bounded
        assert abs(u[-1] - u[0]) < 2 / np.log(times[0]) + 1e-6
        assert abs(c_slow) < 0.6                        # a collapse C/log(t)**c needs c >= 2
    else:
        assert abs(u[-1] - u[0]) < 1e-9 and abs(c_poly) < 1e-9 and abs(c_slow) < 1e-9
    assert u[-1] > -10


def test_no_collapse_negative_control():
    # speed (1 + t) log(t + 2) does collapse, like C/log(t)**2: on the same
    # window log(1 - gamma) keeps falling by 2 log(log t2 / log t1).
    times = np.geomspace(1e3, 1e30, 12)
    u = _log_eps(speed("(1 + t)*log(t + 2)"), times)
    drop = 2 * np.log(np.log(times[-1]) / np.log(times[0]))
    assert u[0] - u[-1] == pytest.approx(drop, rel=1e-2)
