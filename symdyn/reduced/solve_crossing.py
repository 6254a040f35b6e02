"""First times at which :math:`\\gamma(t)` reaches a level, by event location.

``sd.solve``'s batch (the same field, starts and tolerances, one member per
parameter set) runs with a terminal event on :math:`u = \\log(1-\\gamma)`
falling through :math:`\\log(1-\\text{level})`: each member stops at its
crossing, located on DOP853's continuous extension of the step that crosses
(:mod:`symdyn.ode.events`), so a member costs the steps up to its crossing
and no more, in one pass from ``t = 0``.

Layer 2, reduced.
"""

from __future__ import annotations

import numpy as np

from ..model.law_limits import check_speed
from ..model.registry import scheme as get_scheme
from ..model.symbols import beta as b_sym
from ..model.symbols import n as n_sym
from ..ode.events import Event
from .compile import stable_system
from .problem import BatchProblem
from .solve_checks import broadcast_arguments, check_time_law, check_tolerance


def crossing_time(scheme, n, beta, level, gamma0=0.0, r0=1.0, *, t_max=1e6,
                  attention="softmax", rtol=1e-11, atol=1e-12, params=None):
    """The first ``t <= t_max`` with :math:`\\gamma(t) =` ``level`` from ``gamma0``
    (``inf`` where it is not reached), shape: ``n, beta, gamma0, r0`` and the
    parameters broadcast.

    The arguments are those of :func:`symdyn.reduced.solver.solve` (checked
    alike); ``level`` must lie above every ``gamma0`` and below 1 (the
    caller checks it). The crossing of ``u`` is located to the last bit of the
    interpolant, whose error is that of the solve (``rtol`` on ``u``).

    Examples
    --------
    >>> from symdyn.reduced.solve_crossing import crossing_time
    >>> T = crossing_time("post-ln", n=32, beta=[1.0, 8.0], level=0.999)
    >>> [round(float(x), 3) for x in T]
    [5.27, 73.446]
    """
    s = get_scheme(scheme)
    n, beta, gamma0, r0, params = broadcast_arguments(s, n, beta, gamma0, r0, params or {})
    rtol, atol = check_tolerance(rtol, "rtol"), check_tolerance(atol, "atol")
    if s.starts_on_sphere:
        r0 = np.ones_like(r0)
    system = stable_system(s, attention)
    times = np.array([float(t_max)])
    check_time_law(system, times, n, beta, params)
    check_speed(s, float(t_max), {n_sym: n, b_sym: beta,
                                  **{x: params[x.name] for x in s.symbols}}, "solve")
    nn, bb, g0, rr = (np.ravel(x).astype(float) for x in (n, beta, gamma0, r0))
    pp = [np.ravel(v).astype(float) for v in params.values()]
    problem = BatchProblem.build(system, None, nn, bb, g0, rr, pp, rtol, atol)
    target = float(np.log1p(-level))

    def below(t, y, *args):
        return y[:, 0] - target

    sol = problem.solve(times, events=Event(below, terminal=True, direction=-1))
    T = sol.t_events[:, 0]
    return np.where(np.isnan(T), np.inf, T).reshape(n.shape)
