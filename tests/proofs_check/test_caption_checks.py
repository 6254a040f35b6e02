"""The report's caption verdicts against direct computations, each with a control.

Oracle for Figure 2: the n-particle field evaluated directly with numpy
(tests/direct.py: the scheme's laws only, no symbolic reduction) from the
orthogonal start, integrated by scipy's solve_ivp with an event on the mean
cosine. Oracle for Figure 4: the same starts and weights simulated again at
only the two times a claim reads (other steps), means taken here.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import symdyn as sd
from symdyn.output.claims import PAPER_SIX, Claim, caption_checks, reach_times, verdict
from symdyn.output.figures import figure4_data
from symdyn.output.plot import horizon
from symdyn.studies.curves import first_reach
from tests.direct import laws, mean_cosine

N = 32


def _direct(name, level=0.99, depth=1.0):
    """(first t with mean cosine = level, mean cosine at depth) by solve_ivp."""
    s = sd.scheme(name)
    assert s.temperature == 1                       # attention at beta itself
    speed, radial = laws(s)                         # tests/direct.py, lambdified once

    def rhs(t, y):                                  # tests/direct.field, laws cached
        theta, r = y[:N * N].reshape(N, N), y[N * N:]
        w = np.exp(theta @ theta.T)
        A = (w @ theta) / w.sum(axis=1, keepdims=True)
        a = np.einsum("kd,kd->k", A, theta)
        norm = np.linalg.norm(A, axis=1)
        sp_ = np.broadcast_to(speed(t, r, a, norm, N, 1.0), (N,))
        rho = np.broadcast_to(radial(t, r, a, norm, N, 1.0), (N,))
        return np.concatenate([((A - a[:, None] * theta) / sp_[:, None]).ravel(), rho])

    def event(t, y):
        return mean_cosine(y[:N * N].reshape(N, N)) - level
    event.terminal, event.direction = True, 1
    y0 = np.concatenate([np.eye(N).ravel(), np.ones(N)])
    sol = solve_ivp(rhs, (0, 100), y0, method="DOP853", rtol=1e-11, atol=1e-12,
                    events=event, dense_output=True)
    return float(sol.t_events[0][0]), mean_cosine(sol.sol(depth)[:N * N].reshape(N, N))


@pytest.fixture(scope="module")
def oracle():
    return {name: _direct(name) for name in PAPER_SIX}


def _ranked_last(T):
    return set(sorted(T, key=T.get)[-2:])


def test_figure2_verdicts_match_the_direct_particle_system(oracle):
    checks = caption_checks({"n": N, "beta": 1.0})
    T = {k: v[0] for k, v in oracle.items()}
    # the numbers, and the solver's events agree with solve_ivp to 1e-7
    for name, want in {"post-ln": 4.1145, "pre-ln": 12.2812, "mix-ln": 10.8652,
                       "peri-ln": 10.6502, "ngpt": 2.8721, "sqrt-scaling": 8.3467}.items():
        assert checks["fig2-last"].numbers[name] == pytest.approx(T[name], rel=1e-7)
        assert round(T[name], 4) == want
    direct_last = _ranked_last(T) == {"pre-ln", "peri-ln"}
    assert checks["fig2-last"].verdict == ("yes" if direct_last else "no") == "no"
    g = {k: v[1] for k, v in oracle.items()}
    direct_early = min(g["post-ln"], g["ngpt"], g["peri-ln"]) > g["pre-ln"]
    assert checks["fig2-early"].verdict == ("yes" if direct_early else "no")
    for k in PAPER_SIX:
        assert checks["fig2-early"].numbers[k] == pytest.approx(g[k], abs=1e-8)
    # the report prints these verdicts and numbers
    from symdyn.output.report import figure_section
    text = figure_section({"files": {}, "checks": checks,
                           "data": {"figure4": {"seeds": 1, "d": 8}}}, "f")
    row = next(line for line in text.splitlines() if "converge last" in line)
    assert "| **no** |" in row and "pre-ln 12.2812" in row and "peri-ln 10.6502" in row


def test_control_the_grid_reading_gets_figure2_wrong(oracle):
    # the old check: first sample >= 0.99 on the report's 400 log-spaced points
    t = np.geomspace(1e-3, horizon(PAPER_SIX, N, 1.0, 0.0), 400)
    grid = {k: first_reach(t, sd.solve(k, n=N, beta=1.0, gamma0=0.0, t=t).gamma, 0.99)
            for k in PAPER_SIX}
    assert grid["mix-ln"] == grid["peri-ln"]              # both on one sample
    assert _ranked_last(grid) == {"pre-ln", "peri-ln"}     # "yes": wrong
    assert _ranked_last({k: v[0] for k, v in oracle.items()}) != {"pre-ln", "peri-ln"}
    late = [grid[k] / oracle[k][0] - 1 for k in PAPER_SIX]
    assert min(late) > 0 and max(late) > 0.015                # every one late, up to 2%


def test_ties_are_called_ties():
    assert verdict(1e-9, 1e-6) == "tie" and verdict(2e-6, 1e-6) == "yes"
    T = reach_times(["pre-ln", "pre-ln"], n=N)             # one scheme twice: equal
    assert len(set(T.values())) == 1
    assert Claim("x", "tie", {}).holds is False
    with pytest.raises(ValueError, match="level"):
        reach_times(["post-ln"], level=1.5)


def test_figure4_verdicts_match_a_second_simulation():
    f4 = figure4_data(d=16, n=6, seeds=3, t_max=2.0, points=5)
    checks = caption_checks({"n": N, "beta": 1.0}, f4)
    w = sd.weights.kaiming(16, heads=1, seed=0)
    X0 = sd.init.gaussian(6, 16, scale=16**-0.5, batch=3, seed=1)
    again = {k: sd.simulate(k, X0, beta=4.0, t=[0.0, f4["t"][1], 2.0], weights=w,
                            rtol=1e-9, atol=1e-11).gamma.mean(axis=0)
             for k in ("post-ln", "pre-ln", "peri-ln", "ngpt")}
    first = min(again["peri-ln"][1], again["ngpt"][1]) > max(again["post-ln"][1],
                                                              again["pre-ln"][1])
    late = min(again["post-ln"][2], again["ngpt"][2]) > max(again["pre-ln"][2],
                                                            again["peri-ln"][2])
    assert checks["fig4-first"].verdict == ("yes" if first else "no")
    assert checks["fig4-collapse"].verdict == ("yes" if late else "no")
    for k in again:
        assert checks["fig4-collapse"].numbers[k] == pytest.approx(again[k][2], abs=1e-5)
    # control: the verdicts follow the data (made-up means with known answers)
    def made(fast, slow):
        c = {k: {"mean": np.full(5, v)} for k, v in
             {"post-ln": fast, "ngpt": fast, "pre-ln": slow, "peri-ln": slow}.items()}
        return caption_checks({"n": N, "beta": 1.0}, {"t": f4["t"], "curves": c})
    assert made(0.9, 0.1)["fig4-collapse"].verdict == "yes"
    assert made(0.1, 0.9)["fig4-collapse"].verdict == "no"
    assert made(0.5, 0.5 + 1e-9)["fig4-collapse"].verdict == "tie"
