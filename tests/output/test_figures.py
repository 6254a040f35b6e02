"""The figures' data: shapes, monotonicity where the math implies it, agreement."""

import numpy as np

import symdyn as sd
import symdyn.output.figures as F
from symdyn.output.claims import caption_checks
from symdyn.output.figures import figure2_data, figure3_data, figure4_data, figure5_data


def test_figure2_curves_are_sd_solve():
    data = figure2_data(n=16, beta=2.0, t_max=10.0, points=51)
    assert set(data["curves"]) == set(sd.schemes())
    for name, c in data["curves"].items():
        assert c["gamma"].shape == (51,) and c["gamma_dot"].shape == (51,)
        assert np.all(np.diff(c["gamma"]) >= 0)           # gamma never decreases
        assert np.all(c["gamma_dot"] >= 0)
        # a second solve on another output grid takes other steps: both hold
        # 1 - gamma to ~1e-10 relative
        idx = [10, 35]
        tr = sd.solve(name, n=16, beta=2.0, gamma0=0.0, t=data["t"][idx])
        assert np.allclose(c["epsilon"][idx], tr.epsilon, rtol=1e-8, atol=0)
        assert np.allclose(1 - c["gamma"][idx], tr.epsilon, rtol=1e-8, atol=0)
    # the default time axis runs in log time until every curve is at 1e-6 of 1
    paper = ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"]
    auto = figure2_data(n=16, beta=2.0, points=41, schemes_=paper)
    assert auto["t"][0] == 1e-3 and 100 < auto["t"][-1] < 1e4
    assert max(c["epsilon"][-1] for c in auto["curves"].values()) <= 1e-6
    # ... or to the cap t = 1e4 when a curve gets there later (LN-Scaling: C/t)
    late = figure2_data(n=16, beta=2.0, points=41, schemes_=["post-ln", "ln-scaling"])
    assert late["t"][-1] == 1e4 and late["curves"]["ln-scaling"]["epsilon"][-1] > 1e-6


def test_figure3_schedules_order():
    data = figure3_data(t_max=3.0, points=31)
    g = {k: c["gamma"][-1] for k, c in data["curves"].items()}
    assert g["linear"] > g["root"] > g["constant"]        # larger alpha, faster
    for c in data["curves"].values():
        assert np.all(np.diff(c["gamma"]) >= 0)


def test_figure4_and_5_bands():
    f4 = figure4_data(d=32, n=8, seeds=3, t_max=4.0, points=9)
    for c in f4["curves"].values():
        assert c["runs"].shape == (3, 9)
        assert np.all(c["low"] <= c["mean"] + 1e-15) and np.all(c["mean"] <= c["high"] + 1e-15)
    f5 = figure5_data(base=f4)
    assert list(f5["curves"]) == ["none", *sd.schemes()]
    assert f5["curves"]["post-ln"] is f4["curves"]["post-ln"]
    checks = caption_checks(figure2_data(t_max=20.0, points=201), f4)
    assert set(checks) == {"fig2-last", "fig2-early", "fig4-first", "fig4-collapse"}
    assert all(isinstance(c.holds, bool) and c.numbers for c in checks.values())


def test_write_figures_makes_png_and_svg(tmp_path, monkeypatch):
    small = F.figure4_data

    def tiny(**kw):
        kw.update(d=16, n=6, seeds=2, t_max=2.0, points=5)
        return small(**kw)
    monkeypatch.setattr(F, "figure4_data", tiny)
    result = F.write_figures(tmp_path, quick=True)
    for name in ("figure2", "figure3", "figure4", "figure5"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
        assert (tmp_path / f"{name}.svg").exists()
    assert set(result["data"]) == {"figure2", "figure3", "figure4", "figure5"}
