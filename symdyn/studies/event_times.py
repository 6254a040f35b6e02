r"""Event times located between output times on the run's dense output.

``sim.events`` brackets every merge or split by two output times
``(t_lo, t_hi]``. :func:`locate_events` narrows the bracket: it runs
the same simulation again (what ``sd.rerun`` runs: the same start, scheme,
options) with ``points`` more output times inside every bracket, read from
the integrator's continuous extension (DOP853's dense output; ROS34PW2 steps
end on them), and keeps the sub-interval in which the event's *predicate*
first holds; again on that sub-interval, until every bracket is at most
``tol`` times its end:

* a merge of clusters with leaders :math:`\ell_1, \dots, \ell_p` (tokens, at
  ``t_lo``) has happened at ``s`` when the labels at ``s`` put all
  :math:`\ell_i` in one cluster;
* a split into clusters with leaders :math:`\ell_i` (at ``t_hi``) has
  happened when they are not all in one cluster.

So the located event lies in ``(t_event - t_event_error, t_event]`` with
``t_event_error <= tol * t_event`` (on the run's trajectory: the reruns are
the same integration to the tolerance ``rtol``; their state differs by
``~rtol``, which moves a threshold crossing by ``rtol / |d cos/dt|``).
Each level costs one run (all brackets at once); ``points = 1000`` and
``tol = 1e-6`` need two on a grid of a few output times per decade.
Layer runs (``step=h``) and noisy runs (``kappa``) stay bracketed by their
output times: their events happen at layers, and a noisy rerun with other
output times is another sample path's comparison, not a finer one.

Layer 3, studies.
"""

from __future__ import annotations

import numpy as np

from ..base.checks import integer, number
from ..particles.clusters import member_columns
from ..particles.result import Simulation
from ..particles.simulation import rerun_simulation

#: At most this many reruns (levels of refinement).
MAX_LEVELS = 8


def locate_events(sim: Simulation, tol: float = 1e-6, points: int = 1000, scheme=None,
                  weights=None):
    """``sim.events`` (a ``pandas.DataFrame``) with two more columns,
    ``t_event`` and ``t_event_error``: each event happened in ``(t_event -
    t_event_error, t_event]``, ``t_event_error <= tol * t_event`` (module
    docstring), sorted by ``t_event`` (then member). ``tol`` in ``[1e-12, 1]``;
    ``points`` (output times per bracket and level) in ``[2, 100000]``;
    ``scheme``, ``weights``: what ``sd.rerun`` needs for a custom scheme or
    weight arrays. An event whose predicate the rerun does not reproduce
    keeps its bracket (``t_event = t_hi``, ``t_event_error = t_hi - t_lo``)."""
    rel = number(tol, "tol", 1e-12, 1)
    k = integer(points, "points", 2)
    if k > 100_000:
        raise ValueError(f"points must be in [2, 100000], got {points!r}")
    p = sim.provenance
    if p is None or p.producer != "simulate":
        raise ValueError("sim: a result of sd.simulate with its provenance")
    if p.step is not None or p.kappa is not None:
        raise ValueError("sim: events are located on the continuous dynamics' dense output "
                         "(step=None, no noise); a layer or noisy run's events stay "
                         "bracketed by its output times (sim.events)")
    events = sim.events
    lo, hi = events["t_lo"].to_numpy(copy=True), events["t_hi"].to_numpy(copy=True)
    members = [tuple(int(i) for i in row)
               for row in events[member_columns(np.ndim(sim.clusters) - 1)].to_numpy()]
    found = np.ones(len(events), dtype=bool)
    for _ in range(MAX_LEVELS):
        todo = np.flatnonzero(found & (hi - lo > rel * hi))
        if not todo.size:
            break
        grids = [np.linspace(lo[i], hi[i], k + 1) for i in todo]
        t = np.union1d(sim.t, np.concatenate(grids))
        labels = rerun_simulation(sim, t, scheme, weights).cluster_labels()
        for i, grid in zip(todo, grids, strict=True):
            lab = labels[members[i]]
            rows = lab[np.searchsorted(t, grid[1:])]
            held = _happened(events["kind"].iat[i], events["leaders"].iat[i], rows)
            if not held.any():
                found[i] = False
                continue
            j = int(np.argmax(held))
            lo[i], hi[i] = grid[j], grid[j + 1]
    out = events.copy()
    out.insert(out.columns.get_loc("t_hi") + 1, "t_event",
               np.where(found, hi, events["t_hi"].to_numpy()))
    out.insert(out.columns.get_loc("t_event") + 1, "t_event_error",
               np.where(found, hi - lo, events["t_hi"].to_numpy() - events["t_lo"].to_numpy()))
    order = ["t_event"] + member_columns(np.ndim(sim.clusters) - 1)
    return out.sort_values(order, kind="stable").reset_index(drop=True)


def _happened(kind, leaders, labels) -> np.ndarray:
    """Has the event (``kind``, its parts' ``leaders``) happened, at each row
    of ``labels`` (K, n)?"""
    seen = labels[:, list(leaders)]
    together = np.all(seen == seen[:, :1], axis=-1)
    return together if kind == "merge" else ~together
