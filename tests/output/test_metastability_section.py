"""The report's section "Metastability" (symdyn.output.metastability_section).

* k* against the argmax of k^2 I_k(beta)/(beta I_0(beta)) from scipy's Bessel
  functions; the sampled Rényi counts against a pair loop over the same draws
  (angles on the circle, geodesic distance |phi_i - phi_j| mod 2 pi, strict);
  the merge slope against np.polyfit of the bracket midpoints.
* The verdicts follow the numbers: agreeing rows plain, a measurement off its
  prediction in bold ("disagrees", "+2.0 off") (control: the same rows moved
  off the prediction), and the figures are written and linked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import special

from symdyn.output import metastability_section as M
from symdyn.studies import metastability as ms


def test_fastest_mode_rows_against_the_bessel_rates():
    rows = M.modes((4.0, 64.0), n=40, seeds=(0, 1))
    k = np.arange(1, 80)
    for row in rows:
        rate = k**2 * special.ive(k, row["beta"]) / (row["beta"] * special.ive(0, row["beta"]))
        assert row["k"] == k[np.argmax(rate)]
        assert all(isinstance(c, int) and c >= 1 for c in row["counts"])
        assert row["agrees"] == (abs(np.mean(row["counts"]) - row["k"])
                                 <= 2 * row["se"] + 0.5)


def gap(a, b):
    """Geodesic distance of two angles on the circle."""
    return min(abs(a - b), 2 * np.pi - abs(a - b))


def test_renyi_rows_against_a_pair_loop():
    rows = M.renyi(ns=(4, 16), samples=40, seed=3)
    rng = np.random.default_rng(3)
    for row in rows:
        phi = rng.uniform(0, 2 * np.pi, size=(row["samples"], row["n"]))
        counts = [sum(all(gap(p[i], p[j]) > M.RENYI_DELTA for j in range(i))
                      for i in range(len(p))) for p in phi]
        assert row["mean"] == pytest.approx(np.mean(counts), abs=1e-12)
        assert row["formula"] == pytest.approx(ms.expected_renyi_centres(row["n"], 0.5))


def test_merge_slope_is_the_fit_of_the_brackets():
    betas = np.array([4.0, 8.0, 12.0])
    row = M.merges(2, 2, betas, seeds=(0, 1), times=100)
    lo, hi = ms.first_merge_times(2, betas, d=2, seeds=(0, 1), times=100)
    mid = np.log(np.sqrt(lo * hi))
    assert row["slope"] == pytest.approx(np.mean([np.polyfit(betas, mid[:, j], 1)[0]
                                                  for j in range(2)]), rel=1e-12)
    assert row["pred"] == pytest.approx(ms.predicted_slope(2, betas))


def synthetic(off: float) -> dict:
    """A result whose measurements sit ``off`` error bars from the predictions."""
    modes = [{"beta": 8.0, "k": 4, "estimate": 4.0, "counts": [4, 4, 4], "mean": 4.0 + off,
              "se": 0.5, "agrees": abs(off) <= 2 * 0.5 + 0.5}]
    merges = [{"k": 2, "d": 2, "betas": np.array([4.0, 8.0, 12.0]),
               "logT": np.array([2.0, 5.0, 8.5]), "slope": 0.88 + off * 0.01, "err": 0.01,
               "pred": 0.88, "agrees": abs(off) <= 2}]
    renyi = [{"n": 16, "samples": 100, "mean": 5.9 + off * 0.1, "se": 0.1, "formula": 5.9,
              "z": off, "agrees": abs(off) <= 3}]
    return {"n": 40, "modes": modes, "merges": merges, "renyi": renyi, "seconds": 1.0}


def test_the_section_says_where_measurement_disagrees(tmp_path):
    good = synthetic(0.0)
    good["files"] = M.figures(good, Path(tmp_path))
    text = M.metastability_section(good, "figures")
    for name in ("metastability_modes", "metastability_merges", "metastability_renyi"):
        assert f"(figures/{name}.png)" in text
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    assert "**disagrees**" not in text and " off**" not in text
    assert text.count("| agrees |") == 3
    # control: the same rows 4 error bars off are called out
    bad = synthetic(4.0)
    bad["files"] = good["files"]
    text = M.metastability_section(bad, "figures")
    assert text.count("**disagrees**") == 2 and "**+4.0 off**" in text


def fake_runs(offset: float, scheme: str = "post-ln"):
    """Runs of one scheme whose measured merges sit ``offset`` (in log D) from the
    prediction, each seed's bracket 0.002 wide, spread 0.01 between seeds."""
    from symdyn.studies import metastability_schemes as mx
    merges = []
    for i, seed in enumerate((0, 1, 2)):
        pred = mx.predicted_merge(scheme, beta=4.0, n=12, m=5, cos0=-0.8, tau0=2.0)
        log_T = pred.log_T + offset + 0.01 * (i - 1)
        merges.append(mx.LastMerge(seed=seed, tau0=2.0, masses=(5, 7), cos0=-0.8,
                                   log_r0=(0.0, 0.0), tau_lo=np.nan, tau_hi=np.nan,
                                   log_T_lo=log_T - 0.001, log_T_hi=log_T + 0.001,
                                   predicted=pred))
    tau = np.geomspace(1e-2, 25, 50)
    counts = np.stack([np.where(tau < 2 + s, 12, np.where(tau < 6 + s, 2, 1)) for s in range(3)])
    return mx.SchemeRuns(scheme=scheme, clock="t", n=12, beta=4.0, d=3, seeds=(0, 1, 2),
                         tau=tau, counts=counts, plateaus=((0, 2, 4.0), (1, 2, 4.0), (2, 2, 4.0)),
                         merges=tuple(merges), unmerged=())


def test_the_schemes_table_says_where_the_law_fails(tmp_path):
    good, bad = fake_runs(0.0), fake_runs(0.5, "deepnorm")
    rows = M.across_schemes([good, bad])
    text = M.schemes_table(rows)
    lines = text.splitlines()[2:]
    assert "| agrees | detected |" in lines[0]
    assert "**disagrees**" in lines[1]
    # the control: a 1.25 beta prediction lengthens log T by about (Laplace's
    # exponent) 0.25 beta (1 - cos theta0) = 1.8, less the log beta of the prefactor
    shift = rows[0]["control"].log_ratio[0] - rows[0]["summary"].log_ratio[0]
    assert -1.8 < shift < -1.8 + np.log(1.25) + 0.1
    paths = M.schemes_figure([good, bad], tmp_path)
    assert paths[0].name == "metastability_schemes.png" and paths[0].stat().st_size > 10_000
    result = synthetic(0.0)
    result["files"] = {**M.figures(result, Path(tmp_path)), "schemes": paths}
    result["schemes"] = rows
    section = M.metastability_section(result, "figures")
    assert "(figures/metastability_schemes.png)" in section
    assert "**4. Across normalizations**" in section
