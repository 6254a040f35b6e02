"""The phase diagram: T* against a closed form, mpmath and the particles;
the distance measure against synthetic data; the trend in d; the CLI."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli import run as run_cli

import symdyn as sd
from symdyn.cli import main, parse_range
from symdyn.output.report import phase_section
from symdyn.studies.curves import first_reach
from symdyn.studies.phase_diagram import (
    diagrams,
    equiangular_time,
    phase_diagram,
)


def test_post_ln_at_beta_zero_matches_the_logistic_closed_form():
    # beta = 0: uniform attention, so eps' = -(2/n) eps (n - (n-1) eps), a logistic
    # law: eps(t) = K / (1 + (K - 1) e^{2t}) with K = n/(n-1), from gamma0 = 0.
    for n in (2, 8, 32, 1000):
        K = n / (n - 1)
        exact = 0.5 * np.log((K / 1e-3 - 1) / (K - 1))
        assert equiangular_time("post-ln", n, 0.0)[0] == pytest.approx(exact, rel=1e-9)
    # negative control: another level gives another time
    assert abs(equiangular_time("post-ln", 32, 0.0, level=0.99)[0] - exact) > 0.5


@pytest.mark.parametrize("scheme", ["pre-ln", "mix-ln", "ngpt", "sqrt-scaling"])
def test_equiangular_time_hits_the_level(scheme):
    T = equiangular_time(scheme, 16, [0.5, 3.0])
    for b, tb in zip([0.5, 3.0], T, strict=True):
        mp = sd.solve(scheme, n=16, beta=b, gamma0=0.0, t=[tb], dps=30)
        assert float(mp.gamma[0]) == pytest.approx(0.999, abs=1e-11)
        X0 = sd.init.equiangular(16, 16, 0.0, seed=3)                     # the particles
        sim = sd.simulate(scheme, X0, b, [tb])
        assert sim.gamma[0] == pytest.approx(0.999, abs=1e-8)


def test_equiangular_time_not_reached_is_inf():
    assert equiangular_time("pre-ln", 32, 9.0, t_max=1e3)[0] == np.inf
    with pytest.raises(ValueError, match="level"):
        equiangular_time("post-ln", 32, 1.0, level=1.0)


def test_crossing_time_interpolates_in_log_t():
    t = np.array([0.0, 1.0, 10.0, 100.0])
    def crossing(f):
        return first_reach(t, f, 0.5, log_interpolate=True)
    assert crossing(np.array([0, 0, 0.25, 0.75])) == pytest.approx(10 ** 1.5)
    assert crossing(np.array([0, 0.5, 1, 1])) == 1.0
    assert crossing(np.array([0, 0, 0.1, 0.4])) == np.inf
    assert first_reach(t, np.array([0, 0, 0.25, 0.75]), 0.5) == t[3]    # no interpolation


def _synthetic(shift):
    """A table whose linked fraction jumps from 0 to 1 at T*(beta) * 10**shift."""
    betas = [0.0, 2.0, 4.0]
    T = equiangular_time("post-ln", 8, betas)
    t = np.geomspace(0.1, 1e3, 401)
    rows = []
    for b, tb in zip(betas, T, strict=True):
        for tk in t:
            rows.append({"scheme": "post-ln", "d": 8, "beta": b, "t": tk,
                         "linked": float(tk >= tb * 10 ** shift)})
    return diagrams(pd.DataFrame(rows), n=8)["post-ln"]


def test_distance_measures_decades():
    assert _synthetic(0.0).distance[0] < 0.01          # jump at T*: grid resolution only
    assert _synthetic(0.5).distance[0] == pytest.approx(0.5, abs=0.01)   # control


def test_transition_approaches_the_curve_as_d_grows():
    dg, table = phase_diagram(d=(3, 48), beta=[0.0, 2.0, 4.0], n=8, seeds=6,
                              t=np.concatenate([[0.0], np.geomspace(0.1, 100.0, 61)]),
                              executor="serial")
    p = dg["post-ln"]
    assert set(table.d) == {3, 48} and p.linked.shape == (2, 3, 62)
    assert p.distance[1] < p.distance[0] and p.distance[1] < 0.05
    assert p.mismatched.tolist() == [0, 0]
    text = phase_section(dg, {"post-ln": [Path("phase_diagram_post-ln.png")]}, "pd")
    assert "![phase diagram, post-ln](pd/phase_diagram_post-ln.png)" in text
    assert f"| post-ln | {p.distance[0]:.3f} | {p.distance[1]:.3f} |" in text
    assert "the distance shrinks as $d$ grows" in text


def test_parse_range():
    np.testing.assert_array_equal(parse_range("0:9:10"), np.arange(10.0))
    np.testing.assert_array_equal(parse_range("2.5"), [2.5])
    for bad in ("1:0:3", "0:1", "0:1:0", "a:b:c"):
        with pytest.raises(ValueError, match="beta"):
            parse_range(bad)


def test_cli_phase_diagram(tmp_path, capsys):
    out = tmp_path / "pd"
    assert main(["phase-diagram", "--schemes", "post-ln", "pre-ln", "--d", "4", "16",
                 "--beta", "0:4:3", "--n", "6", "--seeds", "2", "--t-max", "100",
                 "--points", "21", "--workers", "2", "--out", str(out),
                 "--cache", str(tmp_path / "cache")]) == 0
    text = capsys.readouterr().out
    assert "| post-ln |" in text and "| pre-ln |" in text
    for name in ("phase_diagram.csv", "phase_diagram_post-ln.png", "phase_diagram_all.svg"):
        assert (out / name).exists()
    table = pd.read_csv(out / "phase_diagram.csv")
    assert len(table) == 2 * 2 * 3 * 2 * 22


@pytest.mark.parametrize("argv, culprit", [
    (["--beta", "3:1:2"], "beta"),
    (["--d", "0"], "'d'"),
    (["--seeds", "0"], "seeds"),
    (["--schemes", "layernorm"], "scheme"),
    (["--points", "1"], "points"),
])
def test_cli_phase_diagram_bad_input(argv, culprit, tmp_path):
    proc = run_cli("phase-diagram", *argv, "--out", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and culprit in lines[0], proc.stderr


def test_custom_scheme_diagram():
    brake = sd.custom_scheme("brake", speed="2")   # Post-LN has s = 1: the same flow, half speed
    dg, _ = phase_diagram(schemes=[brake], d=(24,), beta=[0.0], n=6, seeds=2,
                          t=np.concatenate([[0.0], np.geomspace(0.1, 100.0, 31)]),
                          executor="serial")
    T_post = equiangular_time("post-ln", 6, 0.0)[0]
    assert dg["brake"].prediction[0] == pytest.approx(2 * T_post, rel=1e-8)
