"""symdyn.trained.fits.Fit (issue 48, item 8): the repr shows the fitted
constants with their meaning and error bars, and a fit the data do not fix
(an error bar at least its value, or a singular covariance) says so in a
boolean field and in its repr; a good fit does not (the control)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from symdyn.trained import fits


def _good():
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # a good fit warns of nothing
        return fits.exponential(1 - 0.9 * np.exp(-0.5 * np.arange(8)))


def test_a_good_fit_shows_its_constants_and_their_meaning():
    f = _good()
    # the known inputs: log(1 - gamma_l) = log(0.9) - 0.5 l
    np.testing.assert_allclose(f.values, [np.log(0.9), 0.5], rtol=1e-12)
    assert not f.failed and f.failure == "" and f.success
    text = repr(f)
    assert text.startswith("<Fit exponential: log(1 - gamma_l) = a - k l, layers 1..7: ")
    assert f"a (log(1 - gamma) at l = 0) = {np.log(0.9):.4g} ± " in text
    assert "k (decay rate per layer) = 0.5 ± " in text
    assert text.endswith("failed = False>") and "FAILED" not in str(f)
    assert f.meaning("k") == "decay rate per layer" and f.equation == fits.LAWS["exponential"][0]


def test_a_constant_the_data_do_not_fix_fails():
    # synthetic bad fit: 1 - gamma has no trend in l, only noise, so the decay rate
    # k is zero within its error bar (sigma_k >= |k|)
    noise = np.random.default_rng(1).normal(0, 0.2, size=31)
    f = fits.exponential(1 - 0.5 * np.exp(noise))
    k, sk = f.values[1], f.errors[1]
    assert np.isfinite(sk) and sk >= abs(k)             # the premise of the control
    assert f.success                                     # the solver and covariance are fine
    assert f.failed
    assert f.failure == f"the standard error of k ({sk:.2g}) is at least its value ({k:.4g})"
    assert f"FAILED: {f.failure}>" in repr(f) and f"; FAILED: {f.failure}" in str(f)
    # control: the same noise on a decay of 0.2 per layer fixes k
    g = fits.exponential(1 - 0.5 * np.exp(-0.2 * np.arange(31) + noise))
    assert g.errors[1] < abs(g.values[1]) and not g.failed


def test_smollm2s_beta_of_075_pm_92_is_a_failure():
    # the numbers the issue reports for SmolLM2's reduced-ODE fit
    f = fits.Fit(law="reduced ODE (pre-ln)", names=("beta", "tau"), values=np.array([0.75, 0.2]),
                 errors=np.array([92.0, 0.01]), residuals=np.zeros(3), layers=np.arange(3))
    assert fits.failure_of(f) == "the standard error of beta (92) is at least its value (0.75)"
    # control: the same values with a small error bar on beta pass
    f.errors = np.array([0.05, 0.01])
    assert fits.failure_of(f) == ""


def test_a_singular_covariance_fails_and_says_so():
    flat = np.full(8, 0.3) + 1e-9 * np.arange(8)       # fixes neither beta nor tau
    with pytest.warns(RuntimeWarning, match="covariance is not finite"):
        f = fits.reduced_ode(flat, "post-ln", 10)
    assert f.failed and not f.success
    assert f.failure.startswith("the covariance is singular (the standard error of beta")
    assert "beta (effective inverse temperature) = " in repr(f)
    assert "tau (ODE time per layer)" in repr(f) and "FAILED: the covariance" in repr(f)


def test_fit_is_keyword_only():
    with pytest.raises(TypeError):
        fits.Fit("exponential", ("a", "k"), np.zeros(2), np.zeros(2), np.zeros(3),
                 np.arange(3))
