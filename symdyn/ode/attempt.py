"""One attempted step of every active member of the driver
(:mod:`symdyn.ode.integrate`): DOP853 for the explicit members, ROS34PW2
(through :class:`symdyn.ode.stiffness.Methods`) for the stiff ones, each
step's error norm from :func:`symdyn.ode.control.error_scale`.

Layer 1, ode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dop853
from .control import error_scale
from .methods import DOP853, stiffness

_S = dop853.N_STAGES


@dataclass(kw_only=True, slots=True)
class Attempt:
    """The active members' step attempt: their indices (``sel``: the same, or
    a slice when every member is active), times, states, first stages, step
    sizes, the steps' ends, the right-hand side's arguments (phase first) and
    whether each member's last attempt was rejected."""

    active: np.ndarray
    sel: object
    t: np.ndarray
    y: np.ndarray
    fy: np.ndarray
    h: np.ndarray
    t_new: np.ndarray
    args: tuple
    after_rejection: np.ndarray

    def rows(self, e):
        """The attempt's fields at rows ``e`` (of the active members)."""
        return dict(t=self.t[e], y=self.y[e], fy=self.fy[e], h=self.h[e],
                    t_new=self.t_new[e], args=tuple(a[e] for a in self.args))


@dataclass(kw_only=True, slots=True)
class Taken:
    """What :func:`take` gives the driver: the new states, ``f(t_new,
    y_new)``, the error norms, the DOP853 stages of the explicit rows and
    their last stage's points (``y_last``, Hairer's stiffness estimate), their
    :math:`h\\lambda` (None where the switch is off) and the evaluations."""

    y_new: np.ndarray
    f_new: np.ndarray
    err: np.ndarray
    K: np.ndarray
    y_last: np.ndarray | None
    lam: np.ndarray | None
    cost: int


def take(f, mode, at, K, work, atol, rtol, dims) -> Taken:
    """One step of every active member of the :class:`Attempt` ``at``: DOP853
    for the explicit ones (and Hairer's :math:`h\\lambda` of each, for the
    switch), ROS34PW2 for the stiff ones."""
    active = at.active
    if mode.all_explicit:        # every member explicit: no gathers
        Ka = K[:, : len(active)]
        done = DOP853.step(f, at.t, at.y, at.fy, at.h, at.t_new, at.args, Ka, work)
        scale = error_scale(atol[at.sel], rtol, at.y, done.y_new)
        err = DOP853.error(done, at.h, scale, dims[at.sel])
        lam = stiffness(Ka, at.h, done.y_new, done.y_last) if mode.enabled else None
        return Taken(y_new=done.y_new, f_new=Ka[_S].copy(), err=err, K=Ka,
                     y_last=done.y_last, lam=lam, cost=_S)
    e = np.flatnonzero(mode.explicit)
    s = np.flatnonzero(~mode.explicit)
    y_new, f_new = np.empty_like(at.y), np.empty_like(at.y)
    err, lam = np.empty(len(active)), np.zeros(len(active))
    Ka, cost, y_last = K[:, : len(active) - s.size], 0, None
    if e.size:
        r = at.rows(e)
        done = DOP853.step(f, r["t"], r["y"], r["fy"], r["h"], r["t_new"], r["args"], Ka,
                           work)
        y_new[e], f_new[e], y_last = done.y_new, Ka[_S], done.y_last
        scale = error_scale(atol[active[e]], rtol, r["y"], done.y_new)
        err[e] = DOP853.error(done, r["h"], scale, dims[active[e]])
        if mode.enabled:
            lam[e] = stiffness(Ka, r["h"], done.y_new, done.y_last)
        cost += _S
    if s.size:
        r = at.rows(s)
        y_new[s], err[s], f_new[s], c = mode.stiff_step(
            f, active[s], r["t"], r["y"], r["fy"], r["h"], r["t_new"], r["args"],
            atol[active[s]], rtol, dims[active[s]], at.after_rejection[s])
        cost += c
    return Taken(y_new=y_new, f_new=f_new, err=err, K=Ka, y_last=y_last,
                 lam=lam if mode.enabled else None, cost=cost)
