"""sd.compare: two results on their common output times (issue 48 item 4).

Oracles: the closed form of Post-LN at beta = 0 (``(1 + (n-1) gamma)/(1 -
gamma) = C e^{2t}``) as a result of its own; the reduced ODE for a particle
run from an equiangular start (the same gamma to the solvers' tolerances);
a rerun (bit-identical: every difference 0). Controls: a perturbed closed
form is found and its worst case named where the perturbation is largest; a
loose tolerance differs by far more than a tight one.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import symdyn as sd

T = np.geomspace(0.01, 30, 40)


def _closed(n, t, shift=0.0):
    """Post-LN at beta = 0 from gamma0 = 0: gamma = (q - 1)/(q + n - 1), q = e^{2t}."""
    q = np.exp(2 * t + shift * t / t[-1])
    return SimpleNamespace(t=t, gamma=(q - 1) / (q + n - 1), epsilon=n / (q + n - 1))


def test_the_reduced_ode_is_the_closed_form():
    tr = sd.solve("post-ln", n=8, beta=0.0, gamma0=0.0, t=T)
    c = sd.compare(_closed(8, T), tr)
    assert list(c.worst) == ["gamma", "epsilon"]
    assert c["gamma"] < 1e-10 and c["epsilon"] < 1e-8
    assert "gamma" in repr(c) and "epsilon" in repr(c) and "40 common times" in repr(c)
    # control: a closed form off by 1e-3 in the exponent at the end: the worst
    # epsilon is that, at the last time
    off = sd.compare(_closed(8, T, shift=1e-3), tr)
    assert off["epsilon"] == pytest.approx(1e-3, rel=0.05)
    assert off.worst["epsilon"][1] == T[-1]


def test_particles_against_the_reduced_ode_member_by_member():
    t = np.geomspace(0.01, 6, 30)         # 1 - gamma above 1e-8: within the particles' reach
    X0 = sd.init.equiangular(8, 9, 0.2, batch=3)
    sim = sd.simulate("post-ln", X0, beta=1.0, t=t)
    tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.2, t=t)
    c = sd.compare(sim, tr)
    assert c.differences["gamma"].shape == (3, len(t))
    assert c["gamma"] < 1e-6 and c["epsilon"] < 1e-5
    assert c.skipped == ("r",)          # per token against one r: not compared
    assert c.table.loc["gamma", "kind"] == "absolute"
    # control: another beta for the reduced ODE is seen, far above that
    assert sd.compare(sim, sd.solve("post-ln", n=8, beta=2.0, gamma0=0.2, t=t))["gamma"] > 1e-3


def test_two_tolerances_and_a_rerun():
    tight = sd.solve("pre-ln", n=[8, 32], beta=1.0, gamma0=0.0, t=T)
    loose = sd.solve("pre-ln", n=[8, 32], beta=1.0, gamma0=0.0, t=T, rtol=1e-4, atol=1e-6)
    c = sd.compare(tight, loose)
    assert 1e-9 < c["epsilon"] < 1e-2 and c.worst["epsilon"][2] in ((0,), (1,))
    again = sd.compare(tight, sd.rerun(tight))
    assert all(v == 0 for v, _, _ in again.worst.values())
    assert c["epsilon"] > 1e3 * max(again["epsilon"], 1e-15)       # control


def test_only_common_times_are_compared():
    a = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[1.0, 2.0, 3.0])
    b = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[2.0, 3.0, 4.0])
    c = sd.compare(a, b)
    np.testing.assert_array_equal(c.t, [2.0, 3.0])
    with pytest.raises(ValueError, match="^a, b: no common output times"):
        sd.compare(a, sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[5.0]))


def test_bad_input_names_the_argument():
    a = sd.solve("post-ln", n=[8, 16], beta=1.0, gamma0=0.0, t=[1.0, 2.0])
    b = sd.solve("post-ln", n=[8, 16, 32], beta=1.0, gamma0=0.0, t=[1.0, 2.0])
    with pytest.raises(ValueError, match="^a, b: batch shapes"):
        sd.compare(a, b)
    with pytest.raises(ValueError, match="^b: expected a result"):
        sd.compare(a, 3.0)


def test_values_flagged_as_bounds_are_left_out():
    exact = _closed(8, T)
    merged = SimpleNamespace(t=T, gamma=exact.gamma.copy(), epsilon=exact.epsilon.copy(),
                             bound={"epsilon": np.zeros(len(T), dtype=bool)})
    merged.epsilon[-1] *= 10                        # a merged state's epsilon: a bound
    assert sd.compare(exact, merged).worst["epsilon"][1] == T[-1]     # control: unflagged
    merged.bound["epsilon"][-1] = True
    assert sd.compare(exact, merged)["epsilon"] == 0


def test_a_log_clock_run_is_read_in_t():
    # oracle: the same run in the two clocks (tau = log(1 + t) holds log r and d/dtau)
    t = np.geomspace(0.01, 1e3, 30)
    X0 = sd.init.sphere(8, 3, batch=2, seed=0)
    a = sd.simulate("pre-ln", X0, beta=1.0, t=t)
    b = sd.simulate("pre-ln", X0, beta=1.0, t=np.log1p(t), clock="log")
    c = sd.compare(a, b)
    assert len(c.t) == 30 and c["r"] < 1e-8 and c["speed"] < 1e-8 and c["gamma"] < 1e-9
    # control: the log clock's arrays read as if in t: r and the speeds are far apart
    raw = SimpleNamespace(t=np.expm1(b.t), gamma=b.gamma, r=b.r, speed=b.speed)
    off = sd.compare(a, raw)
    assert off["r"] > 0.1 and off["speed"] > 1e-3
