"""The mean field at large dimension d (issue 45 item 5, issue 46):
``critical_kappa(1, 10**17)`` was 1.0 (``d/2 - 1 == d/2`` in floats) and
``critical_kappa(0, 10**7)`` ran a sympy limit at that d for minutes.

Oracle: mpmath quadrature at 40 digits of the Funk-Hecke integrals
``int e^{beta t} P_k(t) (1-t^2)^{(d-3)/2} dt``, k = 0, 1, in ``s = t sqrt(d)``
and folded onto ``s >= 0`` (``cosh`` and ``sinh`` parts: no cancellation), the
weight as ``exp((d-3)/2 log1p(-s^2/d))``: nothing of the Bessel form the
library derives. Controls: the leading term ``d`` alone and the neighbouring
dimension ``d + 2`` fail the same check (it resolves ``beta^2/d`` at
``d = 1e6``); a zonal run against a wrong rate."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy

from symdyn.meanfield import critical_kappa, growth_rate, kuramoto_order, mean_field_zonal

DPS = 40
LARGE = [10**6, 10**17, 10**100, 10**300]


def _funk_hecke(beta, d):
    """``(C, S, W)``: int_0^{sqrt d} {cosh(beta t), t sinh(beta t), 1} g ds,
    ``t = s/sqrt(d)``, ``g = (1 - s^2/d)^((d-3)/2)``; ``a_0 = C/W``, ``a_1 = S/W``."""
    with mpmath.workdps(DPS):
        dd, b = mpmath.mpf(d), mpmath.mpf(beta)
        root = mpmath.sqrt(dd)
        top = min(root, mpmath.mpf(60))                 # beyond 60: below e^-1800

        def g(s):
            return mpmath.exp((dd - 3) / 2 * mpmath.log1p(-s ** 2 / dd))
        pts = [mpmath.mpf(p) for p in (0, 1, 2, 4, 8, 16, 32) if p < top] + [top]
        C = mpmath.quad(lambda s: mpmath.cosh(b * s / root) * g(s), pts)
        # t sinh(beta t) = (beta/d) s^2 0F1(; 3/2; (beta t)^2/4), the integrand of size 1
        # (mpmath's quad stops on an absolute error: an integrand of size 1/d is not resolved)
        S = b / dd * mpmath.quad(lambda s: s ** 2 * mpmath.hyp0f1(1.5, (b * s / root) ** 2 / 4)
                                 * g(s), pts)
        W = mpmath.quad(g, pts)
        return C, S, W


def _kappa_oracle(beta, d, attention):
    C, S, W = _funk_hecke(beta, d)
    with mpmath.workdps(DPS):
        return beta * (C if attention == "softmax" else W) / S


@pytest.mark.parametrize("attention", ["softmax", "unnormalized"])
@pytest.mark.parametrize("d", LARGE, ids=lambda d: f"1e{len(str(d)) - 1}")
def test_critical_kappa_at_large_d_against_quadrature(d, attention):
    for beta in (0.5, 3.0):
        oracle = _kappa_oracle(beta, d, attention)
        assert critical_kappa(beta, d, attention) == pytest.approx(float(oracle), rel=1e-13)
    assert critical_kappa(1.0, d) > 0.99 * d                   # was 1.0 at d = 1e17


def test_control_the_check_resolves_the_correction_beyond_d():
    # softmax: kappa_c = d + beta I_{d/2+1}/I_{d/2} ~ d + beta^2/d: 1e-4 at d = 1e6, beta = 10
    d = 10**6
    oracle = float(_kappa_oracle(10.0, d, "softmax"))
    assert critical_kappa(10.0, d) == pytest.approx(oracle, rel=1e-13)
    assert float(d) != pytest.approx(oracle, rel=1e-13)        # the leading term alone fails
    neighbour = float(_kappa_oracle(10.0, d + 2, "softmax"))
    assert critical_kappa(10.0, d) != pytest.approx(neighbour, rel=1e-13)


@pytest.mark.parametrize("d", LARGE, ids=lambda d: f"1e{len(str(d)) - 1}")
def test_growth_rate_at_large_d_against_quadrature(d):
    C, S, W = _funk_hecke(1.0, d)
    kappa = 2.0 * d
    with mpmath.workdps(DPS):
        soft = (d - 1) * (S / C - 1 / mpmath.mpf(kappa))        # k(k+d-2)(a_1/(beta a_0) - 1/kappa)
        plain = (d - 1) * (S / W - 1 / mpmath.mpf(kappa))       # k(k+d-2)(a_1/beta - 1/kappa)
    assert growth_rate(1, 1.0, kappa, d=d) == pytest.approx(float(soft), rel=1e-12)
    assert growth_rate(1, 1.0, kappa, d=d, attention="unnormalized") == pytest.approx(
        float(plain), rel=1e-12)
    assert abs(float(soft) - 0.5) < 1e-5                       # about 1 - d/kappa


@pytest.mark.parametrize("d", [2, 3, 10**7, 10**300], ids=str)
def test_beta_zero_is_the_closed_form_without_a_limit_at_d(d, monkeypatch):
    calls = []
    real = sympy.limit

    def spy(expr, *args, **kw):                 # a limit with a huge number in it hangs
        calls.append(max((abs(int(x)) for x in expr.atoms(sympy.Integer)), default=0))
        return real(expr, *args, **kw)
    monkeypatch.setattr(sympy, "limit", spy)
    for attention in ("softmax", "unnormalized"):
        assert critical_kappa(0.0, d, attention) == float(d)   # the noisy Kuramoto value
        assert critical_kappa(1e-9, d, attention) == pytest.approx(float(d), rel=1e-9)
        assert growth_rate(1, 0.0, None, d=d, attention=attention) == pytest.approx(
            float(mpmath.mpf(d - 1) / d), rel=1e-15)
        assert growth_rate(2, 0.0, None, d=d, attention=attention) == 0.0
    assert critical_kappa(0.0, d, symbolic=True) == d
    assert all(c < 10**4 for c in calls)


def test_control_the_spy_sees_a_limit_at_d():
    calls = []
    real = sympy.limit
    sympy.limit = lambda expr, *a, **kw: calls.append(expr) or real(expr, *a, **kw)
    try:
        sympy.limit(sympy.Symbol("x") * 10**7, sympy.Symbol("x"), 0)
    finally:
        sympy.limit = real
    assert max(int(x) for x in calls[0].atoms(sympy.Integer)) >= 10**4


@pytest.mark.parametrize("call", [
    lambda: critical_kappa(1.0, 10**301), lambda: critical_kappa(0.0, 10**301),
    lambda: growth_rate(1, 1.0, 2.0, d=10**301), lambda: kuramoto_order(3.0, 10**301),
    lambda: critical_kappa(1.0, 1), lambda: critical_kappa(1.0, 3.5),
    lambda: mean_field_zonal(1.0, [0, 1], np.array([1, .1]), 10**301),
])
def test_a_dimension_out_of_range_is_a_value_error_naming_d(call):
    with pytest.raises(ValueError, match=r"\bd\b"):
        call()


def test_zonal_tables_beyond_floats_are_refused_naming_d_and_the_modes_that_fit():
    with pytest.raises(ValueError, match=r"^d: .*1e487.*modes = 18"):
        mean_field_zonal(1.0, [0, 1], np.array([1, .1]), 10**9)       # issue 46's case
    with pytest.raises(ValueError, match=r"^d: .*Gauss-Jacobi.*modes = 43"):
        mean_field_zonal(1.0, [0, 1], np.array([1, 1e-9]), 10**5)     # nodes fail at 64
    # the modes named fit: they run, at the derived rate; one more is refused
    kappa = 2e5
    r = mean_field_zonal(1.0, [0.0, 1.0], [1.0, 1e-8], d=10**5, kappa=kappa, modes=43)
    assert r.moments[1, 1] / r.moments[0, 1] == pytest.approx(
        np.exp(growth_rate(1, 1.0, kappa, d=10**5)), rel=1e-5)
    with pytest.raises(ValueError, match="modes = 43"):
        mean_field_zonal(1.0, [0, 1], np.array([1, 1e-8]), 10**5, modes=44)


@pytest.mark.parametrize("d", [10**4, 10**6])
def test_zonal_at_large_d_grows_at_the_derived_rate(d):
    # small first moment (the density 1 + d m_1 t stays positive): linear growth
    kappa = 2.0 * d
    r = mean_field_zonal(1.0, [0.0, 1.0], [1.0, 1e-3 / d], d=d, kappa=kappa, modes=4)
    ratio = r.moments[1, 1] / r.moments[0, 1]
    assert ratio == pytest.approx(np.exp(growth_rate(1, 1.0, kappa, d=d)), rel=1e-5)
    # control: the rate at half the noise is far off
    assert abs(ratio / np.exp(growth_rate(1, 1.0, 2 * kappa, d=d)) - 1) > 0.1


def _mean_cosine(s, d):
    """``A_d(s) = int t e^{st} w / int e^{st} w``, ``w = (1-t^2)^{(d-3)/2}``, by mpmath
    quadrature at 30 digits around the peak of ``e^{st} w`` (log-concave, width
    ``1/sqrt(d)``), the exponent shifted by its maximum."""
    with mpmath.workdps(30):
        s, dd = mpmath.mpf(s), mpmath.mpf(d)
        peak = (-(dd - 3) + mpmath.sqrt((dd - 3) ** 2 + 4 * s ** 2)) / (2 * s)

        def phi(t):
            return s * t + (dd - 3) / 2 * mpmath.log1p(-t ** 2)
        top = phi(peak)
        h = 1 / mpmath.sqrt(dd)
        pts = [-1] + [peak + j * h for j in range(-30, 31) if -1 < peak + j * h < 1] + [1]
        num = mpmath.quad(lambda t: t * mpmath.exp(phi(t) - top), pts)
        return num / mpmath.quad(lambda t: mpmath.exp(phi(t) - top), pts)


@pytest.mark.parametrize("c", [1.5, 3.0])
def test_kuramoto_order_at_d_1e4_solves_its_self_consistency(c):
    d = 10**4
    kappa = c * d
    r = kuramoto_order(kappa, d)
    assert abs(_mean_cosine(kappa * r, d) - r) < 1e-12
    wrong = r * (1 + 1e-4)                             # control: a nearby r is not a root
    assert abs(_mean_cosine(kappa * wrong, d) - wrong) > 1e-8


def test_kuramoto_order_beyond_its_series_is_refused_naming_d():
    with pytest.raises(ValueError, match=r"^d: .*d ~ 1e4"):
        kuramoto_order(3e5, 10**5)


def test_the_series_form_is_the_bessel_form():
    # series_form rewrites I_nu as its 0F1 series and cancels Gamma(d/2): the same function
    from symdyn.meanfield import stability as st
    pairs = [(st.critical_law(a).subs(st.K, 1), None) for a in ("softmax", "unnormalized")]
    pairs += [(st.kernel_eigenvalue(), k) for k in (0, 1, 4)]
    for expr, k in pairs:
        expr = expr if k is None else expr.subs(st.K, k)
        bessel = sympy.lambdify((st.D, st.B), expr, "mpmath")
        series = sympy.lambdify((st.D, st.B), st.series_form(expr), "mpmath")
        for d in (2, 3, 7, 50):
            for beta in (0.3, 5.0, 80.0):
                with mpmath.workdps(30):
                    a, b = bessel(d, mpmath.mpf(beta)), series(d, mpmath.mpf(beta))
                    assert abs(a / b - 1) < 1e-25, (expr, d, beta)
    # control: a series with the order off by one is another function
    shifted = sympy.lambdify((st.D, st.B), st.series_form(st.kernel_eigenvalue().subs(st.K, 2)),
                             "mpmath")
    one = sympy.lambdify((st.D, st.B), st.kernel_eigenvalue().subs(st.K, 1), "mpmath")
    assert abs(shifted(7, mpmath.mpf(5)) / one(7, mpmath.mpf(5)) - 1) > 0.1
