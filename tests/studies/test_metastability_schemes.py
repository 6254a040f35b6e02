"""Metastability across normalizations (symdyn.studies.metastability_schemes, issue 49 item 3).

Oracles:

* the predicted Post-LN merge time against the hand-typed integral of
  ``studies.metastability.two_cluster_merge_time`` (equal masses), at any
  start time (the law is autonomous); control: unequal masses differ;
* the log-clock integration of the radial schemes (Pre-LN, Mix-LN, Peri-LN,
  LN-Scaling) from ``tau0 = 0`` against ``sd.merge_time``'s integration in
  ``t`` (a second method); sqrt-scaling from ``t0 > 0`` against its closed
  form, a clock change of Post-LN: ``2 sqrt(1 + t)`` advances by Post-LN's
  ``T``; control: from ``t0 = 0`` the time differs;
* the simulator: the last merge measured in particle runs (Post-LN, clock
  ``t``; Pre-LN, clock ``log`` with radii) agrees with the prediction
  within the stated error bar; control: the prediction at 1.25 beta is
  refuted on the same runs (outside that error bar). The statistic was
  checked on seven seed triples (0-20): the law agrees and the control is
  refuted in each.
"""

from __future__ import annotations

import numpy as np
import pytest

from symdyn.reduced.merge import merge_time
from symdyn.studies import metastability_schemes as mx
from symdyn.studies.metastability import two_cluster_merge_time


@pytest.mark.parametrize("beta, theta0, tau0", [(4.0, 1.2, 0.0), (9.0, 2.0, 3.0),
                                                (2.0, 0.5, 40.0)])
def test_post_ln_prediction_is_the_hand_formula(beta, theta0, tau0):
    p = mx.predicted_merge("post-ln", beta=beta, n=16, m=8, cos0=np.cos(theta0), tau0=tau0)
    assert abs(np.exp(p.log_T) / two_cluster_merge_time(beta, theta0) - 1) < 1e-10
    unequal = mx.predicted_merge("post-ln", beta=beta, n=16, m=3, cos0=np.cos(theta0),
                                 tau0=tau0)
    assert abs(np.exp(unequal.log_T) / two_cluster_merge_time(beta, theta0) - 1) > 1e-3


@pytest.mark.parametrize("name", ["pre-ln", "mix-ln", "peri-ln", "ln-scaling"])
def test_log_clock_prediction_against_merge_time_in_t(name):
    p = mx.predicted_merge(name, beta=4.0, n=16, m=5, cos0=np.cos(1.2))
    T = merge_time(name, 4.0, 1.2, 16, 5, t_max=1e300)
    assert abs(p.log_T / np.log(T) - 1) < 1e-9
    assert abs(p.tau - np.log1p(T)) < 1e-8 * p.tau


def test_sqrt_scaling_from_a_later_start_is_post_ln_on_its_clock():
    beta, theta0, n, m, tau0 = 4.0, 1.2, 16, 5, 2.0
    T_post = merge_time("post-ln", beta, theta0, n, m)
    t0 = np.expm1(tau0)
    t_merge = ((2 * np.sqrt(1 + t0) + T_post) / 2) ** 2 - 1
    p = mx.predicted_merge("sqrt-scaling", beta=beta, n=n, m=m, cos0=np.cos(theta0), tau0=tau0)
    assert abs(np.exp(p.log_T) / (t_merge - t0) - 1) < 1e-9
    early = mx.predicted_merge("sqrt-scaling", beta=beta, n=n, m=m, cos0=np.cos(theta0))
    assert abs(early.log_T - p.log_T) > 0.1                       # control


def test_log_duration_against_the_direct_difference():
    for a, b in [(0.5, 2.0), (3.0, 3.1), (100.0, 250.0)]:
        direct = np.log(np.exp(b) - np.exp(a)) if b < 700 else None
        got = mx.log_duration(a, b)
        if direct is not None:
            assert got == pytest.approx(direct, rel=1e-12)
    assert mx.log_duration(800.0, 801.0) == pytest.approx(801.0 + np.log1p(-np.exp(-1.0)))
    assert mx.log_duration(2.0, 2.0) == -np.inf


@pytest.fixture(scope="module")
def post_ln():
    return mx.run_scheme("post-ln", n=12, beta=4.0, seeds=(0, 1, 2), points=300,
                         refine_points=100)


@pytest.fixture(scope="module")
def pre_ln():
    return mx.run_scheme("pre-ln", n=12, beta=4.0, seeds=(0, 1, 2), points=300,
                         refine_points=100)


@pytest.mark.parametrize("runs", ["post_ln", "pre_ln"])
def test_measured_last_merge_agrees_and_a_wrong_beta_is_refuted(runs, request):
    r = request.getfixturevalue(runs)
    assert len(r.merges) >= 2
    row = mx.summarize(r)
    assert row.agrees is True
    assert abs(row.log_ratio[0]) <= 2 * row.error
    control = mx.summarize(r, beta=1.25 * r.beta, error=row.error)
    assert control.agrees is False
    assert abs(control.log_ratio[0]) > 10 * row.error
    assert mx.summarize(r, error=row.error).agrees is True          # the same bar


def test_summary_is_the_mean_and_se_of_the_records(pre_ln):
    r = pre_ln
    row = mx.summarize(r)
    d = np.array([np.mean(m.log_D("log")) - np.log(m.predicted.tau - m.tau0)
                  for m in r.merges])
    assert row.log_ratio[0] == pytest.approx(d.mean(), rel=1e-12)
    assert row.log_ratio[1] == pytest.approx(d.std(ddof=1) / np.sqrt(len(d)), rel=1e-12)
    half = max((hi - lo) / 2 for lo, hi in (m.log_D("log") for m in r.merges))
    assert row.error == pytest.approx(row.log_ratio[1] + half, rel=1e-12)
    lengths = [p[2] for p in r.plateaus]
    assert row.duration[0] == pytest.approx(np.mean(lengths))
    assert row.plateaus == len(lengths) / len(r.seeds)
    assert all(2 <= p[1] < r.n and p[2] > 0 for p in r.plateaus)


def test_the_merge_state_is_two_clusters_of_the_run(post_ln):
    r = post_ln
    for m in r.merges:
        assert sum(m.masses) == r.n and min(m.masses) >= 1
        assert -1 <= m.cos0 < mx.LEVEL
        assert m.tau0 < m.tau_lo < m.tau_hi
        k = np.searchsorted(r.tau, m.tau0)
        j = r.seeds.index(m.seed)
        assert r.counts[j, k] == 2 and r.counts[j, -1] == 1
        # the rerun narrowed the bracket inside the grid's own
        i = np.searchsorted(r.tau, m.tau_hi)
        assert r.tau[i - 1] <= m.tau_lo and m.tau_hi <= r.tau[i]
        assert m.tau_hi - m.tau_lo < (r.tau[i] - r.tau[i - 1]) / 10


def test_count_quartiles(post_ln):
    q = mx.count_quartiles(post_ln)
    assert q.shape == (3, len(post_ln.tau))
    assert np.all(q[0] <= q[1]) and np.all(q[1] <= q[2])
    assert np.array_equal(q[1], np.median(post_ln.counts, axis=0))


def test_bad_input():
    with pytest.raises(ValueError, match="m"):
        mx.predicted_merge("post-ln", beta=1.0, n=8, m=8, cos0=0.0)
    with pytest.raises(ValueError, match="cos0"):
        mx.predicted_merge("post-ln", beta=1.0, n=8, m=4, cos0=1.5)
    with pytest.raises(ValueError, match="beta"):
        mx.predicted_merge("post-ln", beta=-1.0, n=8, m=4, cos0=0.0)
    with pytest.raises(ValueError, match="seeds"):
        mx.run_scheme("post-ln", n=8, beta=1.0, seeds=())
    with pytest.raises(ValueError, match="n"):
        mx.run_scheme("post-ln", n=2, beta=1.0, seeds=(0,))
    assert mx.predicted_merge("post-ln", beta=1.0, n=8, m=4, cos0=0.9995).log_T == -np.inf


def test_duration_ratios_are_the_summary_terms(post_ln):
    d = mx.duration_ratios(post_ln)
    assert len(d) == len(post_ln.merges)
    assert mx.summarize(post_ln).log_ratio[0] == pytest.approx(d.mean(), rel=1e-12, abs=1e-15)


def test_a_law_that_never_merges_is_refuted(pre_ln):
    """A prediction that never reaches the level (here: beta far too large, the
    merge beyond tau_max = 1e4) makes the mean log ratio -inf: refuted, not n/a."""
    row = mx.summarize(pre_ln)
    wrong = mx.summarize(pre_ln, beta=40.0, error=row.error)
    assert wrong.log_ratio[0] == -np.inf and wrong.agrees is False
