"""Particles near collapse: relative precision in the cluster's frame, or a flag.

A continuous run with identity weights integrates each member in its own
frame (``theta_k = c + e^ell u_k``, symdyn.particles.continuous), so ``epsilon``
follows the reduced ODE (the oracle) to 1e-6 relative down to 1e-100; a run
that stores unit vectors (general weights, float32, layers) flags every
``epsilon`` below its resolution floor, with the truth under the floor.
"""

import numpy as np
import pytest

import symdyn as sd
from symdyn.particles.field import FRAME_FLOOR

N = 8
X0 = sd.init.equiangular(N, N, 0.0, seed=1)
EYE = np.eye(N)[None, None]
GENERAL = sd.weights.Weights(EYE, EYE, EYE)      # identity, but the path of general weights


def truth(scheme, times, clock="t", beta=1.0):
    """The reduced ODE from the equiangular start (float, tight tolerances;
    checked against dps=50 in test_the_float_oracle_agrees_with_dps_50)."""
    t = np.expm1(times) if clock == "log" else np.asarray(times)
    return sd.solve(scheme, n=N, beta=beta, gamma0=0.0, t=t, rtol=1e-13, atol=1e-300).epsilon


def resolved(sim, exact, rel=1e-6):
    """Every unflagged epsilon within ``rel`` of the truth, and every flagged
    one a bound that holds it (``0 <= truth <= epsilon + spread``)."""
    flagged = sim.bound["epsilon"]
    with np.errstate(invalid="ignore", divide="ignore"):    # a truth that underflowed
        good = np.abs(sim.epsilon / exact - 1) <= rel
    held = exact <= sim.epsilon + sim.spread
    return bool(np.all(np.where(flagged, held, good)))


def test_post_ln_beta_0_follows_its_closed_form_to_1e_100():
    # beta = 0: (1 + (n - 1) gamma) / (1 - gamma) = e^{2t}, i.e.
    # epsilon = n / (e^{2t} + n - 1) (gamma0 = 0)
    t = np.array([0.0, 5.0, 20.0, 40.0, 60.0, 80.0, 100.0, 117.0])
    sim = sd.simulate("post-ln", X0, beta=0.0, t=t)
    exact = N / (np.exp(2 * t) + N - 1)
    assert exact[-1] < 1e-100 and not sim.bound["epsilon"].any()
    assert np.abs(sim.epsilon / exact - 1).max() < 1e-6
    # control: the stored unit vectors (the path of general weights) stall
    old = sd.simulate("post-ln", X0, beta=0.0, t=t, weights=GENERAL)
    assert np.abs(old.epsilon / exact - 1).max() > 1e6


@pytest.mark.parametrize("scheme, end", [("post-ln", 117.0), ("ngpt", 117.0),
                                         ("deepnorm", 260.0)])
def test_on_sphere_schemes_follow_the_reduced_ode_to_1e_100(scheme, end):
    t = np.concatenate([np.linspace(0.0, end, 9)])
    sim = sd.simulate(scheme, X0, beta=1.0, t=t)
    exact = truth(scheme, t)
    assert exact[-1] < 1e-100
    assert not sim.bound["epsilon"].any() and (sim.floor <= FRAME_FLOOR).all()
    assert np.abs(sim.epsilon / exact - 1).max() < 1e-6


@pytest.mark.parametrize("scheme", ["pre-ln", "peri-ln", "mix-ln", "ln-scaling"])
def test_the_log_clock_follows_the_reduced_ode_to_1e_100(scheme):
    tau = np.array([0.0, 5.0, 20.0, 50.0, 100.0, 120.0, 235.0])
    sim = sd.simulate(scheme, X0, beta=1.0, t=tau, clock="log")
    exact = truth(scheme, tau, "log")
    keep = exact > 1e-250                   # the reduced ODE's own floats end there
    assert exact[keep][-1] < 1e-100
    assert not sim.bound["epsilon"].any()
    assert np.abs(sim.epsilon[keep] / exact[keep] - 1).max() < 1e-6


def test_the_issue_s_examples():
    # Post-LN t = 40, 60, 100 (was 1.7e-23, 2.4e-23, 1.3e-21 with bound False);
    # Pre-LN in the log clock, tau = 50, 100 (was 7e-26, 1.7e-27)
    sim = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 40.0, 60.0, 100.0])
    assert resolved(sim, truth("post-ln", sim.t)) and not sim.bound["epsilon"].any()
    assert sim.epsilon[-1] == pytest.approx(1.6973765219e-86, rel=1e-6)
    log = sd.simulate("pre-ln", X0, beta=1.0, t=[0.0, 50.0, 100.0], clock="log")
    assert resolved(log, truth("pre-ln", log.t, "log")) and not log.bound["epsilon"].any()
    assert log.epsilon[-1] == pytest.approx(2.1217206524e-87, rel=1e-6)


def test_the_float_oracle_agrees_with_dps_50():
    t = [40.0, 60.0, 100.0, 116.0]
    mp = sd.solve("post-ln", n=N, beta=1.0, gamma0=0.0, t=t, dps=50)
    exact = np.array([float(x) for x in mp.epsilon])
    assert np.abs(truth("post-ln", t) / exact - 1).max() < 1e-9
    sim = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, *t])
    assert np.abs(sim.epsilon[1:] / exact - 1).max() < 1e-6


def test_unit_vectors_flag_what_they_do_not_resolve():
    # the path of general weights stores unit vectors: epsilon stalls near
    # 1e-23 where the truth falls to 1e-86; those values are flagged, and the
    # floor holds the truth
    t = np.array([0.0, 10.0, 20.0, 40.0, 60.0, 100.0])
    exact = truth("post-ln", t)
    sim = sd.simulate("post-ln", X0, beta=1.0, t=t, weights=GENERAL)
    assert np.abs(sim.epsilon[-3:] / exact[-3:] - 1).min() > 1e6      # noise, not truth
    assert sim.bound["epsilon"][-3:].all() and not sim.bound["epsilon"][:2].any()
    assert (sim.floor == pytest.approx(1e-14)) and resolved(sim, exact)
    # control: a floor too fine for the noise leaves the stalled values unflagged
    coarse = dict(sim.bound, epsilon=sim.epsilon < 1e-30)
    fake = type(sim)(**{**{f: getattr(sim, f) for f in sim.__dataclass_fields__},
                        "bound": coarse, "spread": np.zeros_like(sim.spread)})
    assert not resolved(fake, exact)


@pytest.mark.parametrize("case", ["float32", "layers"])
def test_runs_without_a_frame_flag_below_their_floor(case):
    t = np.array([0.0, 10.0, 40.0, 100.0])
    kw = ({"dtype": np.float32} if case == "float32" else {"step": 0.05})
    sim = sd.simulate("post-ln", X0, beta=1.0, t=t, **kw)
    exact = truth("post-ln", t)
    if case == "layers":            # the layers' own truth: Euler, O(h) from the ODE
        exact = np.where(exact < sim.floor, exact, sim.epsilon)
    assert sim.bound["epsilon"][-1] and resolved(sim, exact, rel=1e-3)
    assert (exact[sim.bound["epsilon"]] <= sim.floor[sim.bound["epsilon"]]).all()


def test_a_collapse_below_the_frame_floor_merges_as_a_bound():
    # Post-LN's epsilon reaches 1e-280 near t = 320: the tokens merge into one
    # and epsilon is a bound that holds the truth; without merging, epsilon
    # underflows and is flagged by the floor
    t = np.array([0.0, 100.0, 300.0, 340.0, 400.0])
    exact = 8 * np.exp(-2 * t) / (1 + 7 * np.exp(-2 * t))      # beta = 0, closed form
    merged = sd.simulate("post-ln", X0, beta=0.0, t=t)
    assert merged.merged == N - 1
    assert not merged.bound["epsilon"][:3].any() and merged.bound["epsilon"][3:].all()
    assert resolved(merged, exact) and (merged.spread[3:] <= FRAME_FLOOR * 1.01).all()
    plain = sd.simulate("post-ln", X0, beta=0.0, t=t, merge=0.0)
    assert plain.merged == 0 and plain.bound["epsilon"][3:].all() and resolved(plain, exact)


def test_random_starts_agree_with_stored_unit_vectors_while_they_resolve():
    # away from collapse both formulations integrate the same flow
    X = sd.init.sphere(6, 4, batch=3, seed=5)
    t = [0.0, 0.5, 2.0, 5.0]
    frame = sd.simulate("post-ln", X, beta=2.0, t=t, save_x=True)
    eye = np.eye(4)[None, None]
    plain = sd.simulate("post-ln", X, beta=2.0, t=t, save_x=True,
                        weights=sd.weights.Weights(eye, eye, eye))
    assert np.abs(frame.X - plain.X).max() < 1e-8
    assert np.abs(frame.epsilon / plain.epsilon - 1).max() < 1e-8
    # control: a perturbed start differs visibly
    nudged = X.copy()
    nudged[:, 0, 0] += 1e-6
    other = sd.simulate("post-ln", nudged, beta=2.0, t=t)
    assert np.abs(other.epsilon / plain.epsilon - 1).max() > 1e-8


def test_the_table_states_what_epsilon_resolves():
    from symdyn.output.formatting import simulation_csv

    def table(sim):
        lines = simulation_csv(sim).splitlines()
        notes = dict(x[2:].split(": ", 1) for x in lines if x.startswith("# "))
        rows = [x.split(",") for x in lines if not x.startswith("#")]
        return notes, rows[0], rows[1:]

    t = [0.0, 10.0, 100.0]
    notes, head, rows = table(sd.simulate("post-ln", X0, beta=1.0, t=t))
    assert notes["epsilon"].endswith("down to 1e-280") and head[-1] == "clusters"
    assert float(rows[-1][2]) == pytest.approx(float(truth("post-ln", t)[-1]), rel=1e-6)
    # unit vectors: the last value is noise, its row bounds it; the resolved row is empty
    sim = sd.simulate("post-ln", X0, beta=1.0, t=t, weights=GENERAL)
    notes, head, rows = table(sim)
    assert "down to 1e-14" in notes["epsilon"] and "1 of 3 times" in notes["epsilon"]
    assert head[-1] == "epsilon_bound" and rows[1][-1] == "" and rows[0][-1] == ""
    assert float(rows[-1][-1]) >= 1e-14 > float(truth("post-ln", t)[-1])


def test_a_pole_of_the_speed_law_merges_as_a_bound(monkeypatch):
    # s = |t - t0| (refused by simulate's check, bypassed here): the velocity
    # diverges at t0 and epsilon ~ (t - t0)^2 falls faster than the frame's
    # scale can follow; past a pace of 1e6 e-folds per e-fold of t the tokens
    # merge and the values after are bounds that hold the reduced ODE's value
    from symdyn.particles import simulation
    monkeypatch.setattr(simulation, "check_speed", lambda *a, **k: None)
    s = sd.custom_scheme("notch", speed="Abs(t - 1.2345)")
    t = [0.0, 1.0, 1.2, 1.2345 - 1e-4, 3.0]
    sim = sd.simulate(s, X0, beta=1.0, t=t)
    assert sim.merged == N - 1 and sim.bound["epsilon"].tolist() == [False] * 4 + [True]
    exact = truth(s, t[:4])
    assert np.abs(sim.epsilon[:4] / exact - 1).max() < 1e-6
    assert sim.epsilon[-1] + sim.spread[-1] < 1e-10           # collapsed at the pole
    # control: with the rule off the integration cannot step through the pole
    from symdyn.particles import continuous
    monkeypatch.setattr(continuous, "FRAME_FAST", np.inf)
    with pytest.raises(ArithmeticError, match="step size"):
        sd.simulate(s, X0, beta=1.0, t=t)
