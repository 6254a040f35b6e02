"""Which members of a batch step with DOP853 and which with ROS34PW2.

:func:`symdyn.ode.integrate.integrate` (``stiff=True``) steps every member
explicitly until its steps are held by stability, then with the
Rosenbrock-W method of :mod:`symdyn.ode.rosenbrock`, and back when explicit
steps are cheaper again; :class:`Methods` keeps that state per member, the
lagged Jacobians, and the counts.

Layer 1, ode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import rosenbrock
from .control import error_scale
from .methods import DOP853, ROS34PW2, ExplicitPair

STIFF_EDGE = 3.0             # h lambda of DOP853 held near its stability limit ...
STIFF_STEPS = 15             # ... for this many accepted steps: switch to ROS34PW2
TRIAL_STEPS = 8              # ROS34PW2 steps before its step size is judged
JAC_AGE = 10                 # ROS34PW2 steps on one Jacobian ...
JAC_FLOATS = 20_000_000      # the batch's Jacobians must fit in this many floats
MAX_WAIT = 4 * STIFF_STEPS   # the doubled wait before a switch stops growing here
EDGE_MEMORY = 2 * STIFF_STEPS  # attempts over which a member's largest lambda is kept


class Split(NamedTuple):
    """The active rows of a sweep by method: ``explicit`` (a mask), whether
    that is every row (``all``), and ``rows``, an index of the explicit ones
    (``slice(None)`` when all: views, no copies)."""

    explicit: np.ndarray
    all: bool
    rows: Any


class StiffStep(NamedTuple):
    """ROS34PW2 steps of stiff members: the new states, their error norms,
    ``f(t_new, y_new)`` and the evaluations spent (Jacobians included)."""

    y_new: Any
    err: Any
    f_new: Any
    cost: int


class Methods:
    r"""Which members step explicitly (DOP853) and which with ROS34PW2.

    Hairer's estimate of the stiff eigenvalue, :math:`\lambda = |k_{12} -
    k_{11}| / |y_1 - Y_{11}|` (``dop853.f``: the last stage and the new
    solution are both at ``t + h``), measures where DOP853's step sits. Held
    by stability, its accepted steps stay at :math:`h\lambda \approx 3.5`-5
    (measured: the linear test :math:`\lambda = 10^4` of
    ``tests/ode/test_rosenbrock.py``, and contracting clusters in the log clock),
    while steps that accuracy limits wander. A member switches after
    :data:`STIFF_STEPS` accepted steps in a row with :math:`h\lambda >`
    :data:`STIFF_EDGE`, and back once the Rosenbrock step no longer pays for
    itself: a step costs 4 evaluations and a share :math:`(\dim + 1)/10` of
    the Jacobian, which is kept for :data:`JAC_AGE` steps, against DOP853's
    12, so the member returns when its step falls below
    :math:`\max(1, (4 + (\dim + 1)/10)/12)` times its last explicit step
    (judged from the :data:`TRIAL_STEPS`-th step on: the first steps grow
    from the explicit step size).
    Each return doubles the member's count before the next switch, up to
    :data:`MAX_WAIT`, so a member whose steps only look stiff pays for a few
    trials, then one trial (8 ROS34PW2 steps and a Jacobian, ~130
    evaluations) per ``MAX_WAIT`` explicit steps (~720): without the cap, a
    member that thrashed while two clusters met (both methods near equal
    cost) waited 960 explicit steps at the stability limit once they had met
    (causal Post-LN, ``benchmarks/causal_long_run.py``).
    Explicit steps never end on output times (their steps do not depend on
    them); :meth:`edge` gives each step's :math:`h\lambda` with the largest
    :math:`\lambda` of the member's last :data:`EDGE_MEMORY` attempts
    (rejected ones included): where the step size oscillates about the
    stability limit, a long step after short ones measures a small
    :math:`\lambda` (its stiff component was damped), and Hairer's ``contd8``,
    built from stages that amplify that component, missed by 3e-7 at
    ``rtol = 1e-9``; past :data:`symdyn.ode.methods.DENSE_EDGE` the outputs
    are read from the order-6 extension of :mod:`symdyn.ode.dense`.
    """

    def __init__(self, M: Any, enabled: Any, dim: Any, dtype: Any,
                 method: ExplicitPair = DOP853) -> None:
        self.method = method
        # where the switch applies: float64, rosenbrock.MAX_DIM components, and
        # the Jacobians of the whole batch kept (a W-method keeps its order with
        # a lagged one); elsewhere every member stays explicit
        self.enabled = (enabled and np.dtype(dtype) == np.float64
                        and dim <= rosenbrock.MAX_DIM and M * dim * dim <= JAC_FLOATS)
        self.stiff = np.zeros(M, dtype=bool)
        self.count = np.zeros(M, dtype=int)
        self.wait = np.full(M, STIFF_STEPS)
        self.stiff_steps = np.zeros(M, dtype=int)
        self.J: np.ndarray | None = None
        self.ft: np.ndarray | None = None
        self.age = np.full(M, JAC_AGE)
        self.h_explicit = np.zeros(M)
        self.since = np.zeros(M, dtype=int)     # ROS34PW2 steps since the switch
        self.rate = np.zeros(M)                  # the largest recent lambda ...
        self.rate_age = np.zeros(M, dtype=int)  # ... measured this many attempts ago
        self.ratio = max(1.0, (rosenbrock.STAGES + (dim + 1) / JAC_AGE) / method.tab.N_STAGES)

    def split(self, active: np.ndarray) -> Split:
        """Which active rows step explicitly in this sweep."""
        sf = self.stiff[active] if self.enabled else None
        if sf is None or not sf.any():
            return Split(np.ones(len(active), dtype=bool), True, slice(None))
        return Split(~sf, False, ~sf)

    @staticmethod
    def target(split: Split, active: np.ndarray, stop_time: np.ndarray, t_out: np.ndarray,
               following: np.ndarray) -> Any:
        """Where each step must end: the next stop; for stiff members also the
        next output time (the Rosenbrock step has no dense output)."""
        if split.all:
            return stop_time
        nxt = following[active]
        out_time = np.where(nxt < len(t_out), t_out[np.minimum(nxt, len(t_out) - 1)], np.inf)
        return np.where(split.explicit, stop_time, np.minimum(stop_time, out_time))

    def edge(self, active: np.ndarray, step: Any, lam: Any) -> Any:
        """:math:`h\\lambda` of every active row's step with the largest
        :math:`\\lambda` of the member's last :data:`EDGE_MEMORY` attempts
        (``lam``: this attempt's :math:`h\\lambda`, 0 for stiff rows); None
        without the switch."""
        if not self.enabled:
            return None
        with np.errstate(all="ignore"):
            now = np.where(np.isfinite(lam) & (step > 0), lam / step, 0.0)
        rate, age = self.rate[active], self.rate_age[active] + 1
        newer = (now >= rate) | (age >= EDGE_MEMORY)
        self.rate[active] = rate = np.where(newer, now, rate)
        self.rate_age[active] = np.where(newer, 0, age)
        return step * rate

    def exponent(self, active: np.ndarray) -> Any:
        """The step control's exponent per member: DOP853's -1/8 or ROS34PW2's -1/3."""
        explicit = self.method.exponent
        if not self.enabled:
            return explicit
        sf = self.stiff[active]
        if not sf.any():
            return explicit
        return np.where(sf, ROS34PW2.exponent, explicit)

    def renew(self, members: np.ndarray) -> None:
        """The right-hand side of ``members`` changed: no lagged Jacobian."""
        self.age[members] = JAC_AGE

    def stiff_step(self, f: Callable[..., Any], members: np.ndarray, ta: np.ndarray,
                   ya: np.ndarray, fa: np.ndarray, step: np.ndarray, t_new: np.ndarray,
                   args: tuple, atol: np.ndarray, rtol: np.ndarray, dims: np.ndarray,
                   after_rejection: np.ndarray) -> StiffStep:
        """ROS34PW2 steps of ``members`` (all stiff): ``y_new``, the error norms,
        ``f(t_new, y_new)`` and the evaluations spent."""
        J, ft, cost = self._jacobian(f, members, ta, ya, fa, args, after_rejection)
        done = ROS34PW2.step(f, ta, ya, fa, step, t_new, args, (J, ft))
        y_new, f_new = done.y_new, done.f_new
        err = ROS34PW2.error(done, step, error_scale(atol, rtol, ya, y_new), dims)
        self.stiff_steps[members] += 1
        self.since[members] += 1
        return StiffStep(y_new, err, f_new, cost + rosenbrock.STAGES)

    def _jacobian(self, f: Callable[..., Any], members: np.ndarray, t: Any, y: Any, fy: Any,
                  args: Any, after_rejection: Any) -> Any:
        """``J`` and ``f_t`` of ``members``: lagged up to JAC_AGE steps, anew after
        a rejection, a switch or a change of the right-hand side."""
        fresh = (self.age[members] >= JAC_AGE) | after_rejection
        J_all, ft_all = self.J, self.ft
        if J_all is None or ft_all is None:         # made at the first switch
            M, dim = len(self.stiff), y.shape[1]
            self.J, self.ft = J_all, ft_all = np.empty((M, dim, dim)), np.empty((M, dim))
        cost = 0
        if fresh.any():
            J, ft, cost = rosenbrock.jacobian(f, t[fresh], y[fresh], fy[fresh],
                                              tuple(a[fresh] for a in args))
            J_all[members[fresh]], ft_all[members[fresh]] = J, ft
            self.age[members[fresh]] = 0
        self.age[members] += 1
        return J_all[members], ft_all[members], cost

    def switch(self, split: Split, active: np.ndarray, full: np.ndarray, step: Any,
               new_h: np.ndarray, lam: Any) -> np.ndarray:
        """Count stiff explicit steps (``lam``: Hairer's :math:`h\\lambda`) and
        switch members (accepted full steps). Returns the members that
        switched, either way (the controller's memory does not carry over)."""
        if not self.enabled:
            return np.arange(0)
        explicit = split.explicit
        e = full & explicit
        edge = lam > STIFF_EDGE
        self.count[active[e]] = np.where(edge[e], self.count[active[e]] + 1, 0)
        ready = e & edge & (self.count[active] >= self.wait[active])
        going = active[ready]
        back = active[full & ~explicit & (self.since[active] >= TRIAL_STEPS)
                      & (new_h < self.ratio * self.h_explicit[active])]
        self.stiff[going], self.count[going], self.h_explicit[going] = True, 0, step[ready]
        self.since[going] = 0
        self.renew(going)
        self.stiff[back] = False
        self.wait[back] = np.minimum(2 * self.wait[back], MAX_WAIT)
        return np.concatenate([going, back])
