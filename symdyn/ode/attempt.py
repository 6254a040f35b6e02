"""One attempted step of every active member of the driver
(:mod:`symdyn.ode.integrate`): DOP853 for the explicit members, ROS34PW2
(through :class:`symdyn.ode.stiffness.Methods`) for the stiff ones, each
step's error norm from :func:`symdyn.ode.control.error_scale`.

Layer 1, ode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .control import error_scale
from .methods import ExplicitPair, Stages, stiffness
from .rk import AheadSums


@dataclass(kw_only=True, slots=True)
class Attempt:
    """The active members' step attempt: their indices (``sel``: the same, or
    a slice when every member is active), times, states, first stages, step
    sizes, the steps' ends, the right-hand side's arguments (phase first) and
    whether each member's last attempt was rejected."""

    active: np.ndarray
    sel: Any
    t: np.ndarray
    y: np.ndarray
    fy: np.ndarray
    h: np.ndarray
    t_new: np.ndarray
    args: tuple
    after_rejection: np.ndarray

    def rows(self, e: np.ndarray) -> dict:
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


def take(f: Callable[..., Any], method: ExplicitPair, mode: Any, split: Any, at: Attempt,
         K: np.ndarray, work: AheadSums, atol: np.ndarray, rtol: np.ndarray,
         dims: np.ndarray) -> Taken:
    """One step of every active member of the :class:`Attempt` ``at``: the
    explicit ``method`` for the explicit ones (and Hairer's :math:`h\\lambda`
    of each, for the switch), ROS34PW2 for the stiff ones (``split``:
    :meth:`symdyn.ode.stiffness.Methods.split`)."""
    active, S = at.active, method.tab.N_STAGES
    if split.all:        # every member explicit: no gathers
        Ka = K[:, : len(active)]
        done = method.step(f, at.t, at.y, at.fy, at.h, at.t_new, at.args, Stages(Ka, work))
        scale = error_scale(atol[at.sel], rtol, at.y, done.y_new)
        err = method.error(done, at.h, scale, dims[at.sel])
        lam = stiffness(Ka, at.h, done.y_new, done.y_last, S) if mode.enabled else None
        return Taken(y_new=done.y_new, f_new=done.f_new.copy(), err=err, K=Ka,
                     y_last=done.y_last, lam=lam, cost=S)
    e = np.flatnonzero(split.explicit)
    s = np.flatnonzero(~split.explicit)
    y_new, f_new = np.empty_like(at.y), np.empty_like(at.y)
    err, lam = np.empty(len(active)), np.zeros(len(active))
    Ka, cost, y_last = K[:, : len(active) - s.size], 0, None
    if e.size:
        r = at.rows(e)
        done = method.step(f, r["t"], r["y"], r["fy"], r["h"], r["t_new"], r["args"],
                           Stages(Ka, work))
        y_new[e], f_new[e], y_last = done.y_new, done.f_new, done.y_last
        scale = error_scale(atol[active[e]], rtol, r["y"], done.y_new)
        err[e] = method.error(done, r["h"], scale, dims[active[e]])
        if mode.enabled:
            lam[e] = stiffness(Ka, r["h"], done.y_new, done.y_last, S)
        cost += S
    if s.size:
        r = at.rows(s)
        y_new[s], err[s], f_new[s], c = mode.stiff_step(
            f, active[s], r["t"], r["y"], r["fy"], r["h"], r["t_new"], r["args"],
            atol[active[s]], rtol, dims[active[s]], at.after_rejection[s])
        cost += c
    return Taken(y_new=y_new, f_new=f_new, err=err, K=Ka, y_last=y_last,
                 lam=lam if mode.enabled else None, cost=cost)
