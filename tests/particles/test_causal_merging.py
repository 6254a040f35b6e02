"""Merging under the causal mask (symdyn.particles.causal).

* The field of a merged state equals the plain causal field of the expanded
  state (every token at its representative's position, no masses): for every
  non-member query, bit-close; the head moves with its members' mean; frozen
  members stand still. Control: attending to the group as one token of mass 2
  at its head (the full mask's merging, ignoring the mask) changes the field
  of the queries between the members by O(1e-2).
* A causal run merged (merge=1e-8, opt-in under the mask) reports what merge=0 reports: the same
  labels and events, epsilon within 1e-6 relative where exact, within its
  bound (epsilon + spread) after the last merge. Control: the same run with
  the inexact merge (key masses at the head) reports a different epsilon.
"""

from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd
from symdyn.particles import causal, continuous
from symdyn.particles.field import Field


def merged_pair(n=6, d=3, a=1, b=4, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(1, n, d))
    theta /= np.linalg.norm(theta, axis=-1, keepdims=True)
    theta[0, b] = theta[0, a]
    merged = causal.CausalCoalescence(1, n, 1e-8)
    merged.rep[0, b], merged.mass[0, a], merged.mass[0, b] = a, 2.0, 0.0
    merged.merges = 1
    field = Field(sd.scheme("post-ln"), sd.weights.identity(d), "softmax", (), None,
                  causal=True)
    return theta, np.ones((1, n)), field, merged


def test_group_field_is_the_expanded_causal_field():
    theta, rad, field, merged = merged_pair()
    args = (np.zeros(1), theta, rad, np.full(1, 3.0), np.zeros(1, dtype=int))
    plain = field.grouped(*args)[0].copy()
    v, _ = causal.group_field(field, merged, np.arange(1), *args)
    others = [0, 2, 3, 5]
    np.testing.assert_allclose(v[0, others], plain[0, others], rtol=0, atol=1e-15)
    np.testing.assert_allclose(v[0, 1], (plain[0, 1] + plain[0, 4]) / 2, rtol=0, atol=1e-15)
    assert not v[0, 4].any()
    # the members' own velocities differ (4 sees 2 and 3, 1 does not)
    assert np.linalg.norm(plain[0, 1] - plain[0, 4]) > 1e-3
    # control: one token of mass 2 at the head, seen by queries 1..3 too
    keyed = field.grouped(*args, mass=merged.mass)[0]
    assert np.linalg.norm(keyed[0, [2, 3]] - plain[0, [2, 3]], axis=-1).max() > 1e-2


CASE = {"scheme": "post-ln", "beta": 9.0, "t": [0.0, 10.0, 100.0, 1e3, 1e4], "mask": "causal"}


def run(merge, X0):
    return sd.simulate(CASE["scheme"], X0, beta=CASE["beta"], t=CASE["t"], mask="causal",
                       merge=merge)


@pytest.fixture(scope="module")
def runs():
    X0 = sd.init.sphere(16, 3, batch=2, seed=1)
    return X0, run(1e-8, X0), run(0.0, X0)


def test_causal_merging_reports_what_merge_0_reports(runs):
    X0, merged, plain = runs
    assert run(None, X0).merged == 0                    # the default: no merging
    assert merged.merged > 0 and plain.merged == 0
    np.testing.assert_array_equal(merged.labels, plain.labels)
    energies = ["energy_before", "energy_after"]     # the same events, energies to rounding
    assert merged.events.drop(columns=energies).equals(plain.events.drop(columns=energies))
    np.testing.assert_allclose(merged.events[energies], plain.events[energies], rtol=1e-6)
    exact = ~merged.bound["epsilon"]
    assert exact[:, :3].all() and not exact.all()
    np.testing.assert_allclose(merged.epsilon[exact], plain.epsilon[exact], rtol=1e-6)
    # after the last merge the merged run's epsilon is a bound (merging's rule)
    assert (plain.epsilon <= merged.epsilon + merged.spread).all()


def test_an_inexact_causal_merge_changes_what_is_reported(runs, monkeypatch):
    X0, _, plain = runs

    def keyed(field, merged, member, tm, theta, rad, beta, phase, draw=None):
        return field.grouped(tm, theta, rad, beta, phase, draw, mass=merged.mass[member])

    monkeypatch.setattr(continuous, "group_field", keyed)
    monkeypatch.setattr(causal.CausalCoalescence, "split",
                        lambda self, members, theta, rad: np.zeros(len(members), bool))
    wrong = run(1e-8, X0)
    assert wrong.merged > 0
    gap = np.abs(wrong.epsilon / plain.epsilon - 1).max()
    assert gap > 1e-4
