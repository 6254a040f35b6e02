"""symdyn.trained.fits: each law recovers the constants of data made from it
(known inputs), the wrong law fits such data worse (negative control), and
the reduced-ODE fit recovers beta and tau from a reduced-ODE trajectory."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from trained_helpers import MINILM, model  # noqa: E402

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
    assert f.rms < 1e-6
    # negative control: the other scheme's ODE does not fit it as well
    assert fits.reduced_ode(np.r_[0.1, g], "post-ln", 20).rms > 100 * f.rms


def test_random_weights_keep_shapes_and_change_the_trace():
    m = model(MINILM)
    r = fits.randomized(m, 0)
    assert all(np.shape(b[k]) == np.shape(a[k]) for a, b in zip(m.blocks, r.blocks, strict=True)
               for k in a)
    ids = m.encode("Call me Ishmael.")
    assert abs(r.trace(token_ids=ids).cosine[-1] - m.trace(token_ids=ids).cosine[-1]) > 0.05
