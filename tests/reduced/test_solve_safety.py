"""sd.solve refuses bad input by name and blames the real cause of a failure."""

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.model.scheme import Scheme
from symdyn.model.symbols import t

BASE = dict(n=4, beta=1.0, gamma0=0.0, t=[1.0])


@pytest.mark.parametrize("kwargs, culprit", [
    (dict(rtol=None), "rtol"), (dict(rtol="a"), "rtol"), (dict(rtol=float("nan")), "rtol"),
    (dict(atol=-1), "atol"), (dict(t="x"), "t"), (dict(n=[1 + 2j]), "n"),
    (dict(dps=15.5), "dps"), (dict(dps=10**6), r"dps must be an integer in \[15, 80\]"),
])
def test_bad_arguments_are_named(kwargs, culprit):
    with pytest.raises(ValueError, match=culprit):
        sd.solve("pre-ln", **{**BASE, **kwargs})


def test_numpy_scalars_are_accepted():
    a = sd.solve("pre-ln", n=np.int64(8), beta=1.0, gamma0=np.float32(0.5), t=[1.0],
                 rtol=np.float64(1e-9))
    b = sd.solve("pre-ln", n=8, beta=1.0, gamma0=0.5, t=[1.0], rtol=1e-9)
    assert np.array_equal(a.gamma, b.gamma)


@pytest.mark.parametrize("law, when", [(t, "t = 0"), (sp.sin(t), "t = 0"),
                                       (1 - t / 2, "t = 2"), (1 / (2 - t), "t = 2")])
@pytest.mark.parametrize("dps", [None, 20])
def test_speed_law_not_positive_is_named_with_its_time(law, when, dps):
    s = Scheme("x", law, sp.Integer(0), sp.oo)
    with pytest.raises(ValueError, match=rf"speed: the speed law s = .* is .* at {when} "):
        sd.solve(s, **{**BASE, "t": [1.0, 3.0]}, dps=dps)


def test_undefined_alpha_must_be_concrete():
    with pytest.raises(ValueError, match="alpha, speed: .*alpha\\(t\\).*concrete"):
        sd.solve(sd.scheme("ngpt", alpha="alpha(t)"), **BASE)


def test_radial_law_through_zero_names_law_and_time():
    s = sd.custom_scheme("shrink", speed="r", radial="-1")      # r = 1 - t
    with pytest.raises(ValueError, match=r"radial: the radial law dr/dt = -1 .* at t = 1 "):
        sd.solve(s, **{**BASE, "t": [0.5, 3.0]})
    tr = sd.solve(s, **{**BASE, "t": [0.5]})                      # before r = 0: fine
    assert tr.r[0] == pytest.approx(0.5, rel=1e-12)


def test_peri_ln_next_to_the_simplex_at_huge_n_names_the_rounding():
    n = 1e9
    with pytest.raises(ValueError, match="simplex.*rounds below 0 in floats") as info:
        sd.solve("peri-ln", n=n, beta=1.0, gamma0=-1 / (n - 1), t=[1.0])
    assert "beta = 0)" not in str(info.value)


def test_unnormalized_kernel_range_is_stated_and_dps_covers_it():
    with pytest.raises(ArithmeticError, match="unnormalized kernel .* about 30: use dps="):
        sd.solve("post-ln", n=4, beta=50.0, gamma0=0.0, t=[1.0], attention="unnormalized")
    # Inside the stated range, floats agree with mpmath.
    times = [0.01, 0.1, 1.0]
    tr = sd.solve("post-ln", n=4, beta=25.0, gamma0=0.0, t=times, attention="unnormalized")
    mp = sd.solve("post-ln", n=4, beta=25.0, gamma0=0.0, t=times, attention="unnormalized",
                  dps=20)
    ref = np.array([float(x) for x in mp.log_epsilon])
    assert np.abs(tr.log_epsilon / ref - 1).max() < 1e-8
