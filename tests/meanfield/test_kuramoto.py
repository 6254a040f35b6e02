"""sd.kuramoto_order: the noisy Kuramoto self-consistency r = I_{d/2}(kappa r)/I_{d/2-1}(kappa r).

Oracles independent of the implementation (scipy's scaled Bessel functions
and brentq): the mean of <x, e> under the von Mises-Fisher law by quadrature
of its defining integral (no Bessel function), a root found on it; mpmath's
Bessel functions at 30 digits with its own root finder; the pitchfork series
near kappa_c = d and the large-kappa expansion. Controls: the quadrature
oracle rejects a neighbouring formula (the Bessel orders shifted by one) and
the root of a neighbouring kappa.
"""

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize

import symdyn as sd
from symdyn.meanfield import kuramoto_order


def vmf_mean(s, d):
    """E<x, e> under rho(x) ~ exp(s <x, e>) on S^{d-1}: the ratio of two
    integrals with weight (1 - t^2)^{(d-3)/2}, by quadrature."""
    a = (d - 3) / 2
    num = integrate.quad(lambda t: t * np.exp(s * (t - 1)), -1, 1, weight="alg", wvar=(a, a),
                         epsabs=0, epsrel=1e-13)[0]
    den = integrate.quad(lambda t: np.exp(s * (t - 1)), -1, 1, weight="alg", wvar=(a, a),
                         epsabs=0, epsrel=1e-13)[0]
    return num / den


def quadrature_root(kappa, d):
    return optimize.brentq(lambda r: vmf_mean(kappa * r, d) - r, 1e-3, 1 - 1e-9, xtol=1e-14)


CASES = [(2, 2.5), (2, 4.0), (2, 10.0), (3, 3.5), (3, 6.0), (4, 5.0), (7, 20.0)]


@pytest.mark.parametrize("d,kappa", CASES)
def test_root_of_the_integral_form(d, kappa):
    r = kuramoto_order(kappa, d)
    assert abs(vmf_mean(kappa * r, d) - r) < 1e-11
    assert abs(r - quadrature_root(kappa, d)) < 1e-9


def test_the_oracle_rejects_shifted_bessel_orders_and_a_neighbouring_kappa():
    # Negative controls: I_{d/2+1}/I_{d/2} (orders off by one) and I_{d/2-1}/I_{d/2-2}
    # solve a different equation; the root at 0.99 kappa misses by far more than 1e-9.
    for d, kappa in CASES:
        if d < 3:
            continue
        for nu in (d / 2, d / 2 - 2):
            def shifted(r, nu=nu, kappa=kappa):
                return float(mpmath.besseli(nu + 1, kappa * r) / mpmath.besseli(nu, kappa * r)) - r
            wrong = (optimize.brentq(shifted, 1e-6, 1 - 1e-12) if kappa > 2 * (nu + 1)
                     else 0.0)
            assert abs(wrong - quadrature_root(kappa, d)) > 1e-3
        assert abs(kuramoto_order(0.99 * kappa, d) - quadrature_root(kappa, d)) > 1e-3


@pytest.mark.parametrize("d,kappa", [*CASES, (3, 3.0001), (512, 600.0), (512, 513.0)])
def test_against_mpmath_at_30_digits(d, kappa):
    with mpmath.workdps(30):
        k = mpmath.mpf(kappa)
        g = lambda r: mpmath.besseli(mpmath.mpf(d) / 2, k * r) / mpmath.besseli(  # noqa: E731
            mpmath.mpf(d) / 2 - 1, k * r) - r
        start = kuramoto_order(kappa, d)
        exact = mpmath.findroot(g, (start * 0.9, min(1, start * 1.1)), solver="anderson")
    assert abs(kuramoto_order(kappa, d) / float(exact) - 1) < 1e-12


def test_pitchfork_series_near_the_threshold():
    # r^2 = d (d+2) (kappa - d)/kappa^3 (1 + O(kappa - d)): the relative error shrinks
    # linearly in kappa - d, down to r ~ 1e-7
    for d in (2, 3, 5):
        errs = []
        for eps in (1e-2, 1e-3, 1e-4, 1e-12):
            kappa = d * (1 + eps)
            series = np.sqrt(d * (d + 2) * (kappa - d) / kappa ** 3)
            errs.append(abs(kuramoto_order(kappa, d) / series - 1))
        assert 5 < errs[0] / errs[1] < 20 and 5 < errs[1] / errs[2] < 20
        assert errs[3] < 1e-7


def test_large_kappa_and_the_uniform_side():
    for d in (2, 3, 8):
        for kappa in (1e3, 1e6):
            assert abs((1 - kuramoto_order(kappa, d)) * 2 * kappa / (d - 1) - 1) < 5 / kappa
        assert kuramoto_order(1e12, d) == pytest.approx(1 - (d - 1) / 2e12, abs=1e-15)
        assert kuramoto_order(1e300, d) == 1.0
        below = kuramoto_order(np.array([[0.1, d / 2], [d * (1 - 1e-12), float(d)]]), d)
        assert below.shape == (2, 2) and not below.any()
        assert kuramoto_order(d * (1 + 1e-12), d) > 0


def test_the_left_side_increases():
    # the step of the module's argument: s A_{d+2}(s) = s/A_d(s) - d rises from 0
    # like s^2/(d+2) (A_d(s)/s decreases, Amos 1974); the identity itself by quadrature
    from symdyn.meanfield.kuramoto import bessel_ratio
    s = np.geomspace(1e-6, 1e6, 400)
    for d in (2, 3, 4, 9, 64):
        T = np.array([x * bessel_ratio(x, d + 2) for x in s])
        assert np.all(np.diff(T) > 0)
        assert T[0] == pytest.approx(s[0] ** 2 / (d + 2), rel=1e-9)
    for d, x in ((2, 0.3), (3, 2.0), (7, 15.0)):
        assert x / vmf_mean(x, d) - d == pytest.approx(x * bessel_ratio(x, d + 2), rel=1e-11)


def test_exported_and_refuses_bad_arguments():
    assert sd.kuramoto_order is kuramoto_order
    assert sd.critical_kappa(0.0, 3) == 3.0       # the threshold it switches on
    for bad in (0.0, -1.0, float("nan"), -float("inf"), "4", [1.0, -2.0]):   # +inf: no noise
        with pytest.raises(ValueError, match="kappa"):
            kuramoto_order(bad, 2)
    for bad in (1, 2.0, True, None):
        with pytest.raises(ValueError, match="d must be an integer >= 2"):
            kuramoto_order(4.0, bad)
