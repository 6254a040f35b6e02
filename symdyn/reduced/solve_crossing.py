"""First times at which :math:`\\gamma(t)` reaches a level, by event location
(``sd.crossing_time``).

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

from ..base.checks import check_attention, number, shown
from ..model.law_limits import check_speed
from ..model.registry import scheme as get_scheme
from ..model.scheme import Scheme
from ..model.symbols import beta as b_sym
from ..model.symbols import n as n_sym
from ..ode.events import Event
from .compile import stable_system
from .problem import BatchProblem
from .solve_checks import broadcast_arguments, check_time_law, check_tolerance


def crossing_time(scheme, level, *, n, beta, gamma0=0.0, r0=1.0, t_max=1e6,
                  attention="softmax", rtol=1e-11, atol=1e-12, params=None):
    """The first time :math:`T \\le` ``t_max`` at which :math:`\\gamma(T) =`
    ``level``, from the equiangular start ``gamma0`` (``inf`` where it is not
    reached by ``t_max``), in floats: ``sd.crossing_time``.

    ``n, beta, gamma0, r0`` and ``params`` (the scheme's free parameters)
    broadcast as in :func:`symdyn.solve` and are checked alike; the result
    has their broadcast shape (a NumPy float for scalars). ``level`` in
    ``(gamma0, 1)`` for every member.

    **Tolerance.** The batch is solved once with a terminal event on
    :math:`u = \\log(1-\\gamma)` falling through :math:`\\log(1-\\text{level})`,
    located to the last bits on DOP853's continuous extension of the step
    that crosses (the dense output's root). The only error left is the
    solve's: an error :math:`\\delta u` of :math:`u` moves the crossing by
    :math:`\\delta T = \\delta u / |u'(T)|`, so :math:`|T - T_*| \\lesssim
    \\text{rtol}\\,(1 + |\\log(1-\\text{level})|)/|u'(T)|` for starts that move
    at once (``sd.solve``'s ``rtol``: the slow starts' amplification applies).
    The tests hold it to ``1e-9 T`` against ``sd.certify.crossing_time``'s
    enclosure at the default ``rtol = 1e-11``.

    Examples
    --------
    >>> import symdyn as sd
    >>> T = sd.crossing_time("post-ln", 0.999, n=32, beta=[1.0, 8.0])
    >>> [round(float(x), 3) for x in T]
    [5.27, 73.446]
    >>> float(sd.crossing_time("post-ln", 0.99, n=8, beta=1))     # sd.certify: 3.5509444339...
    3.55094443395...
    """
    if not isinstance(scheme, (str, Scheme)):
        raise ValueError(f"scheme: expected a name or a Scheme, got {shown(scheme)}")
    s = get_scheme(scheme)
    n, beta, gamma0, r0, params = broadcast_arguments(s, n, beta, gamma0, r0, params or {})
    lv = number(level, "level", -1, 1, low_open=True, high_open=True)
    if not np.all(gamma0 < lv):
        raise ValueError(f"level: must lie in (gamma0, 1) for every member, got level = "
                         f"{level!r} and gamma0 up to {float(np.max(gamma0)):g}")
    t_end = number(t_max, "t_max", 0, low_open=True)
    rtol, atol = check_tolerance(rtol, "rtol"), check_tolerance(atol, "atol")
    if s.starts_on_sphere:
        r0 = np.ones_like(r0)
    system = stable_system(s, check_attention(attention))
    times = np.array([t_end])
    check_time_law(system, times, n, beta, params)
    check_speed(s, t_end, {n_sym: n, b_sym: beta,
                           **{x: params[x.name] for x in s.symbols}}, "solve")
    nn, bb, g0, rr = (np.ravel(x).astype(float) for x in (n, beta, gamma0, r0))
    pp = [np.ravel(v).astype(float) for v in params.values()]
    problem = BatchProblem.build(system, None, nn, bb, g0, rr, pp, rtol, atol)
    target = float(np.log1p(-lv))

    def below(t, y, *args):
        return y[:, 0] - target

    sol = problem.solve(times, events=Event(below, terminal=True, direction=-1))
    T = sol.t_events[:, 0]
    return np.where(np.isnan(T), np.inf, T).reshape(n.shape)[()]
