"""symdyn.trained.fits: each law recovers the constants of data made from it
(known inputs), the wrong law fits such data worse (negative control), and
the reduced-ODE fit recovers beta and tau from a reduced-ODE trajectory."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from trained_helpers import MINILM, SMOL, model  # noqa: E402

from symdyn.trained import fits  # noqa: E402


def test_laws_recover_their_constants_and_the_wrong_law_fits_worse():
    lay = np.arange(31)
    noise = np.random.default_rng(0).normal(0, 0.01, size=31)
    g_exp = 1 - 0.8 * np.exp(-0.2 * lay + noise)
    g_pow = 1 - 0.8 * np.maximum(lay, 1.0) ** -1.5 * np.exp(noise)
    e, p = fits.exponential(g_exp), fits.power(g_pow)
    assert abs(e.values[1] - 0.2) < 4 * e.errors[1] and e.errors[1] < 0.01
    assert abs(p.values[1] - 1.5) < 4 * p.errors[1] and p.errors[1] < 0.05
    assert fits.power(g_exp).rms > 5 * e.rms and fits.exponential(g_pow).rms > 5 * p.rms
    n = fits.linear_norm(3 + 20 * lay + noise)
    assert abs(n.values[1] - 20) < 4 * n.errors[1]
    with pytest.raises(ValueError, match="at least 3 layers"):
        fits.exponential([0.1, 0.2])


def test_reduced_ode_fit_recovers_beta_and_tau():
    import symdyn as sd
    lay = np.arange(13)
    g = sd.solve("pre-ln", n=20, beta=2.0, gamma0=0.1, t=0.5 * lay[1:]).gamma
    f = fits.reduced_ode(np.r_[0.1, g], "pre-ln", 20, beta0=1.0, tau0=0.3)
    np.testing.assert_allclose(f.values, [2.0, 0.5], rtol=1e-3)
    assert f.rms < 1e-6 and f.success and np.all(np.isfinite(f.errors))
    # negative control: the other scheme's ODE does not fit it as well, and its constants
    # are not fixed by these data: a warning, success False
    with pytest.warns(RuntimeWarning, match="covariance is not finite"):
        other = fits.reduced_ode(np.r_[0.1, g], "post-ln", 20)
    assert other.rms > 100 * f.rms and not other.success and "(success False)" in str(other)


def test_a_covariance_that_is_not_finite_warns_and_fails():
    """A flat trace fixes neither beta nor tau (MiniLM's beta = 3e-16 +- inf case)."""
    flat = np.full(8, 0.3) + 1e-9 * np.arange(8)
    with pytest.warns(RuntimeWarning, match=r"reduced ODE \(post-ln\): the covariance"):
        f = fits.reduced_ode(flat, "post-ln", 10)
    assert not f.success and np.isinf(f.errors).any()
    # control: a clean exponential law warns of nothing and succeeds
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = fits.exponential(1 - 0.9 * np.exp(-0.5 * np.arange(8)))
    assert e.success and np.all(np.isfinite(e.errors))
    # the fits are public on sd.trained without an explicit import
    import symdyn as sd
    assert sd.trained.fits is fits and "fits" in sd.trained.__all__


def test_random_weights_keep_shapes_and_change_the_trace():
    m = model(MINILM)
    r = fits.randomized(m, 0)
    assert all(np.shape(b[k]) == np.shape(a[k]) for a, b in zip(m.blocks, r.blocks, strict=True)
               for k in a)
    ids = m.encode("Call me Ishmael.")
    assert abs(r.trace(token_ids=ids).cosine[-1] - m.trace(token_ids=ids).cosine[-1]) > 0.05


def test_fits_are_on_sd_trained_without_an_import():
    import subprocess
    code = ("import symdyn as sd; f = sd.trained.fits.exponential([0.1, 0.5, 0.8, 0.9]); "
            "print(type(f).__name__, f.success)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split() == ["Fit", "True"], out.stderr
    # control: a name sd.trained does not have is an AttributeError there
    bad = subprocess.run([sys.executable, "-c", "import symdyn as sd; sd.trained.fitz"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "AttributeError" in bad.stderr


def test_a_trace_s_scheme_is_the_registry_name_the_fits_take():
    import warnings

    import symdyn as sd
    tr = model(SMOL).trace(text="It was the best of times, it was the worst of times.",
                           skip_first=True)
    assert (tr.scheme, tr.scheme_display, int(tr.traced)) == ("pre-ln", "Pre-RMSNorm", 13)
    assert sd.scheme(tr.scheme).name == "pre-ln"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # a short trace may not fix beta
        f = fits.reduced_ode(tr.cosine, tr.scheme, n=13)
    assert f.law == "reduced ODE (pre-ln)" and f.provenance.scheme == "pre-ln"
    assert np.all(np.isfinite(f.values)) and f.residuals.shape == (31,)
    # control: the display name (what the trace held before) is not a registry name
    with pytest.raises(ValueError, match="Pre-RMSNorm"):
        fits.reduced_ode(tr.cosine, tr.scheme_display, n=13)
