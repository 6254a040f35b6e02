"""Which members of a batch step with DOP853 and which with ROS34PW2.

:func:`symdyn.ode.integrate.integrate` (``stiff=True``) steps every member
explicitly until its steps are held by stability, then with the
Rosenbrock-W method of :mod:`symdyn.ode.rosenbrock`, and back when explicit
steps are cheaper again; :class:`Methods` keeps that state per member, the
lagged Jacobians, and the counts.

Layer 1, ode.
"""

from __future__ import annotations

import numpy as np

from . import dop853, rosenbrock
from .control import error_scale
from .methods import DOP853, ROS34PW2

STIFF_EDGE = 3.0             # h lambda of DOP853 held near its stability limit ...
STIFF_STEPS = 15             # ... for this many accepted steps: switch to ROS34PW2
TRIAL_STEPS = 8              # ROS34PW2 steps before its step size is judged
JAC_AGE = 10                 # ROS34PW2 steps on one Jacobian ...
JAC_FLOATS = 20_000_000      # the batch's Jacobians must fit in this many floats
MAX_WAIT = 4 * STIFF_STEPS   # the doubled wait before a switch stops growing here
EDGE_MEMORY = 2 * STIFF_STEPS  # attempts over which a member's largest lambda is kept


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

    def __init__(self, M, enabled, dim, dtype):
        # where the switch applies: float64, rosenbrock.MAX_DIM components, and
        # the Jacobians of the whole batch kept (a W-method keeps its order with
        # a lagged one); elsewhere every member stays explicit
        self.enabled = (enabled and np.dtype(dtype) == np.float64
                        and dim <= rosenbrock.MAX_DIM and M * dim * dim <= JAC_FLOATS)
        self.stiff = np.zeros(M, dtype=bool)
        self.count = np.zeros(M, dtype=int)
        self.wait = np.full(M, STIFF_STEPS)
        self.stiff_steps = np.zeros(M, dtype=int)
        self.explicit = None        # which active rows step with DOP853 (a mask)
        self.all_explicit = True    # ... every one of them
        self.explicit_rows = None   # an index of them: slice(None) (views) when all
        self.J = self.ft = None
        self.age = np.full(M, JAC_AGE)
        self.h_explicit = np.zeros(M)
        self.since = np.zeros(M, dtype=int)     # ROS34PW2 steps since the switch
        self.rate = np.zeros(M)                  # the largest recent lambda ...
        self.rate_age = np.zeros(M, dtype=int)  # ... measured this many attempts ago
        self.ratio = max(1.0, (rosenbrock.STAGES + (dim + 1) / JAC_AGE) / dop853.N_STAGES)

    def target(self, active, ta, stop_time, t_out, following):
        """Where each step must end: the next stop; for stiff members also the
        next output time (the Rosenbrock step has no dense output)."""
        sf = self.stiff[active] if self.enabled else np.zeros(len(active), dtype=bool)
        self.explicit = ~sf
        self.all_explicit = not sf.any()
        # while every member steps explicitly the rows are a slice: views, no copies
        self.explicit_rows = slice(None) if self.all_explicit else self.explicit
        if self.all_explicit:
            return stop_time
        nxt = following[active]
        out_time = np.where(nxt < len(t_out), t_out[np.minimum(nxt, len(t_out) - 1)], np.inf)
        return np.where(sf, np.minimum(stop_time, out_time), stop_time)

    def edge(self, active, step, lam):
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

    def exponent(self, active):
        """The step control's exponent per member: DOP853's -1/8 or ROS34PW2's -1/3."""
        if not self.enabled:
            return DOP853.exponent
        sf = self.stiff[active]
        if not sf.any():
            return DOP853.exponent
        return np.where(sf, ROS34PW2.exponent, DOP853.exponent)

    def renew(self, members):
        """The right-hand side of ``members`` changed: no lagged Jacobian."""
        self.age[members] = JAC_AGE

    def stiff_step(self, f, members, ta, ya, fa, step, t_new, args, atol, rtol, dims,
                   after_rejection):
        """ROS34PW2 steps of ``members`` (all stiff): ``y_new``, the error norms,
        ``f(t_new, y_new)`` and the evaluations spent."""
        J, ft, cost = self._jacobian(f, members, ta, ya, fa, args, after_rejection)
        y_new, error, f_new = ROS34PW2.step(f, ta, ya, fa, step, t_new, args, J, ft)
        err = ROS34PW2.error(error, step, error_scale(atol, rtol, ya, y_new), dims)
        self.stiff_steps[members] += 1
        self.since[members] += 1
        return y_new, err, f_new, cost + rosenbrock.STAGES

    def _jacobian(self, f, members, t, y, fy, args, after_rejection):
        """``J`` and ``f_t`` of ``members``: lagged up to JAC_AGE steps, anew after
        a rejection, a switch or a change of the right-hand side."""
        fresh = (self.age[members] >= JAC_AGE) | after_rejection
        cost = 0
        if fresh.any():
            J, ft, cost = rosenbrock.jacobian(f, t[fresh], y[fresh], fy[fresh],
                                              tuple(a[fresh] for a in args))
            if self.J is None:
                M, dim = len(self.stiff), y.shape[1]
                self.J, self.ft = np.empty((M, dim, dim)), np.empty((M, dim))
            self.J[members[fresh]], self.ft[members[fresh]] = J, ft
            self.age[members[fresh]] = 0
        self.age[members] += 1
        return self.J[members], self.ft[members], cost

    def switch(self, active, full, step, new_h, last_err, lam):
        """Count stiff DOP853 steps (``lam``: Hairer's :math:`h\\lambda`) and
        switch members (accepted full steps)."""
        if not self.enabled:
            return
        explicit = self.explicit
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
        last_err[going] = last_err[back] = 0.0
