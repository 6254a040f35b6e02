"""sd.crossing_time: the first time gamma reaches a level, in floats (issue 48 item 4).

Oracles: the closed form of Post-LN at beta = 0, ``(1 + (n-1) rho)/(1 - rho)
= C e^{2t}``, and sd.certify.crossing_time's ball-arithmetic enclosure. Each
with a negative control: a perturbed closed form, and a loose solve, miss by
far more than the stated tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd


def _closed_form_post_ln(level, n, gamma0):
    """Post-LN at beta = 0: q(t) = (1 + (n-1) gamma)/(1 - gamma) = q(0) e^{2t}."""
    q = lambda g: (1 + (n - 1) * g) / (1 - g)        # noqa: E731
    return 0.5 * np.log(q(level) / q(gamma0))


def test_post_ln_beta_0_is_the_closed_form_batched():
    n = np.array([2.0, 8.0, 64.0, 1000.0])[:, None]
    gamma0 = np.array([0.0, 0.5, -0.0005])
    T = sd.crossing_time("post-ln", 0.999, n=n, beta=0.0, gamma0=gamma0)
    want = _closed_form_post_ln(0.999, n, gamma0)
    assert T.shape == (4, 3)
    np.testing.assert_allclose(T, want, rtol=1e-9)
    # controls: the law with n in place of n - 1, and the rate 2 (1 + 1e-7), fail
    # the same tolerance at every n
    wrong = 0.5 * np.log((1 + n * 0.999) / 0.001 / ((1 + n * gamma0) / (1 - gamma0)))
    assert not np.any(np.isclose(T, wrong, rtol=1e-9, atol=0)[:, [0, 2]])
    assert not np.any(np.isclose(T, want / (1 + 1e-7), rtol=1e-9, atol=0))


def test_a_scalar_call_returns_a_number_and_levels_out_of_reach_are_inf():
    T = sd.crossing_time("post-ln", 0.9, n=8, beta=0.0)
    assert isinstance(T, float) and T == pytest.approx(_closed_form_post_ln(0.9, 8, 0.0),
                                                       rel=1e-9)
    late = sd.crossing_time("post-ln", 1 - 1e-12, n=8, beta=0.0, t_max=5.0)
    assert late == np.inf
    # control: with room enough the same level is reached
    assert sd.crossing_time("post-ln", 1 - 1e-12, n=8, beta=0.0, t_max=50.0) < 50


@pytest.mark.parametrize("scheme, level, n, beta", [
    ("post-ln", "0.99", 8, 1), ("pre-ln", "0.99", 32, 1), ("peri-ln", "0.999", 16, 2),
    ("ngpt", "0.9", 8, 4)])
def test_agrees_with_the_certified_enclosure(scheme, level, n, beta):
    pytest.importorskip("flint")
    enc = sd.certify.crossing_time(scheme, level, n=n, beta=beta)
    T = sd.crossing_time(scheme, float(level), n=n, beta=beta)
    mid = float(enc.center)
    # the enclosure lies inside the float's stated error bar T (1 +- 1e-9)
    assert T * (1 - 1e-9) <= float(enc.lo) <= float(enc.hi) <= T * (1 + 1e-9)
    # control: a loose solve misses the enclosure by more than the stated tolerance
    loose = sd.crossing_time(scheme, float(level), n=n, beta=beta, rtol=1e-4, atol=1e-6)
    assert abs(loose - mid) > 1e-9 * mid


def test_the_paper_claims_read_the_same_function():
    from symdyn.output.claims import reach_times
    T = reach_times(["post-ln", "ngpt"], n=32, beta=1.0, level=0.99)
    assert T["post-ln"] == sd.crossing_time("post-ln", 0.99, n=32, beta=1.0)
    assert T["ngpt"] == sd.crossing_time("ngpt", 0.99, n=32, beta=1.0)


@pytest.mark.parametrize("kwargs, name", [
    ({"level": 1.0}, "level"), ({"level": 0.2, "gamma0": 0.5}, "level"),
    ({"level": float("nan")}, "level"), ({"level": 0.9, "t_max": 0.0}, "t_max"),
    ({"level": 0.9, "n": 1.0}, "n"), ({"level": 0.9, "rtol": 2.0}, "rtol"),
    ({"level": 0.9, "attention": "hard"}, "attention"),
    ({"level": 0.9, "scheme": 3}, "scheme")])
def test_bad_input_names_the_argument(kwargs, name):
    args = {"scheme": "post-ln", "n": 8, "beta": 1.0, **kwargs}
    scheme, level = args.pop("scheme"), args.pop("level")
    with pytest.raises(ValueError, match=f"^{name}"):
        sd.crossing_time(scheme, level, **args)
