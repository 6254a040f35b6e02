"""Event times located on the dense output (sd.locate_events, issue 38 item 1).

* Every located time lies in its output-time bracket, within ``tol`` of its
  end, and the events are ``sim.events`` otherwise unchanged, sorted by the
  located time.
* Oracle: an independent run (DOP853 at rtol 1e-12, another tolerance and
  method than the located run's default) saves the tokens on 20,001 output
  times across a bracket; single linkage of those positions
  (``cluster_labels`` of ``X``, not the recorder's labels) first joins the
  event's leaders within one fine spacing plus the located error of the
  located time. Control: the bracket's midpoint, the best a bracketed event
  can say, misses the same fine time by more than that.
* A causal run's events are located too (the same oracle, one bracket).
* Layer runs, noisy runs and tolerances out of range are refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd
from symdyn.particles.clusters import cluster_labels

TOL = 1e-6
T = [0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]


@pytest.fixture(scope="module")
def located():
    X0 = sd.init.sphere(8, 2, batch=2, seed=3)
    sim = sd.simulate("post-ln", X0, beta=4.0, t=T)
    return X0, sim, sd.locate_events(sim, tol=TOL)


def _fine_time(X0, event, mask="full", n_points=20_001):
    """The first time on a fine grid over the event's bracket at which single
    linkage of saved positions (independent run) has the event happened."""
    g = np.linspace(event.t_lo, event.t_hi, n_points)
    t = g if g[0] == 0 else np.r_[0.0, g]
    run = sd.simulate("post-ln", X0, beta=4.0 if mask == "full" else 9.0, t=t, rtol=1e-12,
                      atol=1e-14, method="dop853", save_x=True, mask=mask)
    lab = cluster_labels(run.X[event.member][-n_points:])
    seen = lab[:, list(event.leaders)]
    together = np.all(seen == seen[:, :1], axis=-1)
    happened = together if event.kind == "merge" else ~together
    assert happened.any() and not happened[0]
    return g[np.argmax(happened)], g[1] - g[0]


def test_located_times_lie_in_their_brackets(located):
    _, sim, events = located
    raw = sim.events
    assert len(events) == len(raw) > 5
    assert events["t_event"].is_monotonic_increasing          # sorted by the located time
    assert list(events.columns) == [*raw.columns[:4], "t_event", "t_event_error",
                                    *raw.columns[4:]]
    # the same events, in another order: match them by member and bracket
    key = ["member", "t_lo", "t_hi", "into"]
    both = events.merge(raw, on=key, suffixes=("", "_raw"), validate="one_to_one")
    assert len(both) == len(raw)
    for e in both.itertuples():
        assert e.t_lo < e.t_event <= e.t_hi
        assert 0 < e.t_event_error <= TOL * e.t_event * (1 + 1e-9)
        assert e.t_event - e.t_event_error >= e.t_lo
        assert (e.kind, e.parts, e.leaders, e.sizes) == (e.kind_raw, e.parts_raw,
                                                         e.leaders_raw, e.sizes_raw)
    assert "t_event" not in raw.columns


@pytest.mark.parametrize("which", [0, 3])
def test_located_time_matches_a_fine_grid_run(located, which):
    X0, _, events = located
    e = events.iloc[which]
    fine, spacing = _fine_time(X0, e)
    assert abs(e.t_event - fine) <= spacing + e.t_event_error + 1e-9 * fine
    # control: the bracket's midpoint misses it by far more
    assert abs((e.t_lo + e.t_hi) / 2 - fine) > 10 * (spacing + e.t_event_error)


def test_causal_event_located():
    X0 = sd.init.sphere(8, 3, batch=1, seed=2)
    sim = sd.simulate("post-ln", X0, beta=9.0, t=[0.0, 10.0, 100.0, 1e3], mask="causal")
    events = sd.locate_events(sim, tol=TOL)
    late = events.loc[events.t_lo.idxmax()]
    assert late.t_lo >= 10.0
    fine, spacing = _fine_time(X0, late, mask="causal")
    assert abs(late.t_event - fine) <= spacing + late.t_event_error + 1e-9 * fine
    assert abs((late.t_lo + late.t_hi) / 2 - fine) > 10 * spacing


def test_refused():
    X0 = sd.init.sphere(4, 2, batch=1, seed=0)
    layers = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 1.0], step=0.5)
    with pytest.raises(ValueError, match="sim: events are located"):
        sd.locate_events(layers)
    sim = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 1.0])
    for bad in (0.0, 2.0):
        with pytest.raises(ValueError, match="tol"):
            sd.locate_events(sim, tol=bad)
    with pytest.raises(ValueError, match="points"):
        sd.locate_events(sim, points=1)
