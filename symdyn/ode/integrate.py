"""A batch of ODEs integrated as one vectorized system, each with its own steps.

The Dormand-Prince 8(5,3) pair (:mod:`symdyn.ode.dop853`; Hairer, Norsett &
Wanner, *Solving ODEs I*, II.10) advances every member of the batch by one
array operation per stage. Unlike handing the stacked system to
``solve_ivp``, every member keeps its own step size and its own error test (no
averaging of errors across members), so a member's result is what a scalar
solve with the same tolerances would give, whatever else is in the batch.

This module is the driver: the loop, breakpoints, events (:mod:`.events`),
the hooks (``project``, ``record``, ``refresh``); the methods are in
:mod:`.methods`, the step control (with its floor on the error estimate) in
:mod:`.control`, one attempted step of every member in :mod:`.attempt`.

Procedure per sweep over the unfinished members:

1. clip each step so it ends exactly on the member's next stop (a
   breakpoint where the right-hand side has a kink, or the last output time);
   output times in between neither end nor change a step: they are read from
   DOP853's continuous extension (Hairer's ``contd8``, three evaluations;
   made only on the accepted steps that hold an output; :mod:`symdyn.ode.outputs`);
2. take the 12-stage step (``DOP853.step``, :mod:`symdyn.ode.methods`) and
   measure its error with the embedded 5th and 3rd order solutions
   (``DOP853.error``, :func:`symdyn.ode.control.dop853_norm`); a step is
   accepted when :math:`\\mathrm{err} < 1` and every value is finite;
3. rescale the step by the controller
   (:class:`symdyn.ode.control.Controller`: :math:`0.9\\,\\mathrm{err}^{-1/8}`,
   clipped to ``[0.2, 10]``); a non-finite stage counts as a rejection
   (factor 0.2).

With ``stiff=True``, a member whose steps stability holds (a contraction
faster than the motion being resolved) continues with the Rosenbrock-W
method of :mod:`symdyn.ode.rosenbrock`, and returns when explicit steps are
cheaper again (:mod:`symdyn.ode.stiffness`).

Layer 1, ode.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.arithmetic import all_finite
from ..base.checks import finite_array, shown
from .attempt import Attempt, take
from .control import Controller, controller_or_default
from .events import check as check_events
from .events import crossed
from .events import locate as locate_root
from .events import values as event_values
from .methods import (
    DENSE_OUTPUTS,
    DOP853,
    ORDER7,
    ExplicitPair,
    initial_step,
)
from .outputs import Moved, Output, Stops, read, serve_ends
from .rk import AheadSums
from .stiffness import Methods

REFRESH_STEPS = 10           # accepted steps between calls of ``refresh``



class Status(enum.Enum):
    """How an integration ended (beside its message)."""

    SUCCESS = "integration successful"
    STEP_TOO_SMALL = "a member's step fell below the controller's minimum"
    MAX_STEPS = "a member needed more than max_steps steps"


@dataclass(kw_only=True)
class BatchSolution:
    """``y[m, k, :]``: member ``m`` at output time ``k``; ``status`` a
    :class:`Status` (``SUCCESS`` when ``success``, the default then)."""

    y: np.ndarray | None
    nfev: int
    nsteps: np.ndarray
    success: bool
    message: str
    stiff_steps: np.ndarray | None = None     # Rosenbrock-W steps per member
    t_events: np.ndarray | None = None        # (M, events): first root, NaN if none
    y_events: np.ndarray | None = None        # (M, events, dim): the state there
    status: Status | None = None

    def __post_init__(self) -> None:
        if self.status is None:
            if not self.success:
                raise ValueError("status: required for a failed integration")
            self.status = Status.SUCCESS
        if self.success != (self.status is Status.SUCCESS):
            raise ValueError(f"status: {self.status} contradicts success={self.success}")


@dataclass(frozen=True, slots=True)
class _Inputs:
    """The checked inputs of :func:`integrate`."""

    t_out: np.ndarray
    y0: np.ndarray
    rtol: np.ndarray
    atol: np.ndarray


def _check(t_out: Any, y0: Any, rtol: Any, atol: Any) -> _Inputs:
    t_out = np.asarray(t_out, dtype=float)
    y0 = np.asarray(y0)
    if y0.dtype not in (np.float32, np.float64):
        y0 = y0.astype(float)
    M, dim = y0.shape
    if t_out.ndim != 1 or not t_out.size or t_out[0] < 0 or np.any(np.diff(t_out) <= 0):
        raise ValueError(f"t_out must be increasing times >= 0, got {shown(t_out)}")
    rtol = np.broadcast_to(finite_array(rtol, "rtol", 0.0, low_open=True), (dim,))
    atol = np.broadcast_to(finite_array(atol, "atol", 0.0), (M, dim))
    return _Inputs(t_out=t_out, y0=y0, rtol=rtol, atol=atol)


def integrate(f: Callable[..., Any], t_out: Any, y0: Any, args: tuple = (), *, rtol: Any,
              atol: Any, breakpoints: Sequence[float] = (), max_steps: int = 200_000,
              project: Callable[..., Any] | None = None, record: Callable[..., Any] | None = None,
              refresh: Callable[..., Any] | None = None, stiff: bool = False,
              events: Any = None, controller: Controller | None = None,
              dense_output: str = ORDER7, method: ExplicitPair = DOP853) -> BatchSolution:
    """Integrate ``dy/dt = f(t, y, phase, *args)`` from ``t = 0`` for every member.

    Parameters
    ----------
    f : callable
        ``f(t, y, phase, *args)`` with ``t`` of shape ``(m,)``, ``y`` of shape
        ``(m, dim)``, ``phase`` (ints, shape ``(m,)``) the number of
        breakpoints at or before the start of the current step, and each arg
        of shape ``(m,)``; returns ``(m, dim)``.
    t_out : array, shape (K,)
        Output times, increasing, ``>= 0``.
    y0 : array, shape (M, dim)
        float64, or float32: the stages and states stay in float32 (the error
        estimate and the step control are computed in float64).
    args : tuple of arrays of shape (M,)
    rtol : array-like of shape (dim,)
        Per-component relative tolerances, ``> 0``.
    atol : array-like of shape (dim,) or (M, dim)
        Absolute tolerances ``>= 0``, per component or per member and component.
    breakpoints : sequence of float
        Times where ``f`` changes its law: every member ends a step there
        and the next step starts with a fresh evaluation in the new phase.
    max_steps : int
        Attempted steps per member before it fails.
    project : callable, optional
        ``project(y)`` maps accepted states back onto a manifold (e.g.
        renormalizes directions on the sphere); every output is a projected
        state (``y0`` too). ``y`` is always rows the driver made for the call
        (never a view of its state): ``project`` may change it in place and
        return it.
    record : callable, optional
        ``record(k, members, y)`` receives, instead of storing them (then
        ``BatchSolution.y`` is None), the states ``y[i]`` of ``members[i]`` at
        output ``k[i]`` (arrays: every output a sweep reaches, in chunks; in
        time order per member).
    refresh : callable, optional
        ``refresh(members, y) -> (changed, dims)``, called for the members
        that just completed :data:`REFRESH_STEPS` accepted steps with their
        states ``y`` (a copy it may change in place: the rows of changed
        members are taken over): ``changed`` (bools) marks members whose state
        or right-hand side changed (the merging of coincident particles: their
        first stage is evaluated anew and the error prediction dropped),
        ``dims`` the number of components of each member that still move (the
        error norm averages over them).
    stiff : bool
        Let members whose explicit steps are stability-limited switch to the
        Rosenbrock-W method :mod:`symdyn.ode.rosenbrock` (:mod:`symdyn.ode.stiffness`),
        and back: float64 states of at most ``rosenbrock.MAX_DIM`` components,
        whose batch's Jacobians fit in ``stiffness.JAC_FLOATS`` floats.
        Stiff steps end on every output time (no dense output).
    events : Event or sequence of Event, optional
        :class:`symdyn.ode.events.Event` objects (or bare callables: terminal,
        either direction): ``g(t, y, *args)`` per member; the first root of
        each is located on the continuous extension and returned in
        ``BatchSolution.t_events`` (NaN where none) and ``y_events``; a
        terminal event stops its member there (later outputs stay NaN).
        Not with ``stiff=True``.
    controller : Controller, optional
        The step-size controller (:class:`symdyn.ode.control.Controller`);
        default :data:`symdyn.ode.control.DEFAULT`.
    dense_output : {"order7", "order6"}
        How states between a step's ends (output times, events) are read.
        ``"order7"`` (default): Hairer's ``contd8``, as accurate as the step
        ends, three more evaluations on each step that holds an output (steps
        held by stability, :math:`h\\lambda >`
        :data:`~symdyn.ode.methods.DENSE_EDGE`, use the order-6 extension,
        which follows their stiff mode better). ``"order6"``: the extension of
        :mod:`symdyn.ode.dense` from the step's own stages, no evaluation, but
        up to about 20x less accurate between the step ends on smooth
        nonlinear problems (``benchmarks/output_accuracy.py``).
    method : ExplicitPair
        The explicit pair (:class:`symdyn.ode.methods.ExplicitPair`):
        :data:`~symdyn.ode.methods.DOP853` (default) or any pair declared by
        its table, e.g. :data:`~symdyn.ode.methods.DP54` (its own
        interpolant; ``dense_output`` applies to DOP853).

    Returns
    -------
    BatchSolution
        ``success`` is False (``status`` says why, ``message`` names the first
        failed member) when a member's step falls below the controller's
        ``min_relative_step`` times ``max(1, |t|)`` (a non-finite, stiff or
        blowing-up right-hand side) or it needs ``max_steps`` steps; bad
        ``t_out``, ``rtol``, ``atol`` raise ``ValueError``.
    """
    checked = _check(t_out, y0, rtol, atol)
    t_out, y0, rtol, atol = checked.t_out, checked.y0, checked.rtol, checked.atol
    max_steps = _count(max_steps)
    events = check_events(events)
    if not isinstance(method, ExplicitPair):
        raise ValueError(f"method must be an ExplicitPair (symdyn.ode.methods), "
                         f"got {shown(method)}")
    if dense_output not in DENSE_OUTPUTS:
        raise ValueError(f"dense_output must be one of {', '.join(DENSE_OUTPUTS)}, "
                         f"got {shown(dense_output)}")
    if events and stiff:
        raise ValueError("events: not with stiff=True (Rosenbrock steps have no dense "
                         "output to locate them on)")
    return _Driver(f, t_out, y0, args, rtol, atol, breakpoints, project, record, refresh,
                   stiff, events, controller_or_default(controller), dense_output,
                   method).run(max_steps)


def _count(max_steps: Any) -> Any:
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) \
            or max_steps < 1:
        raise ValueError(f"max_steps must be an integer >= 1, got {shown(max_steps)}")
    return int(max_steps)


@dataclass(slots=True)
class State:
    """The driver's loop state, one entry per member (index ``m``): time ``t``,
    state ``y``, its first stage ``fy``, next step size ``h``; the index of
    the next stop (``stop``) and output (``following``); attempted steps
    (``nsteps``), accepted ones (``accepted``, for ``refresh``), whether the
    last attempt was rejected and whether it failed; the controller's memory
    (``last_err``, ``last_h``: the last full accepted step); the components
    that still move (``dims``); the events' values ``g`` and first roots;
    and the batch's: the unfinished members (``active``), the evaluations
    (``nfev``) and the earliest next output time (None: not known). Only the
    driver's methods change it."""

    t: np.ndarray
    y: np.ndarray
    fy: np.ndarray
    h: np.ndarray
    stop: np.ndarray
    following: np.ndarray
    nsteps: np.ndarray
    accepted: np.ndarray
    rejected: np.ndarray
    failed: np.ndarray
    last_err: np.ndarray
    last_h: np.ndarray
    dims: np.ndarray
    g: np.ndarray
    t_events: np.ndarray
    y_events: np.ndarray
    active: np.ndarray
    nfev: int
    earliest: float | None = None

    @classmethod
    def start(cls, t: Any, y: Any, fy: Any, h: Any, any_stop: bool, n_events: int) -> State:
        """Every member at its start (two evaluations spent: ``fy`` and the
        initial step's)."""
        M, dim = y.shape
        zeros = np.zeros(M, dtype=int)
        return cls(t=t, y=y, fy=fy, h=h, stop=zeros.copy(), following=zeros.copy(),
                   nsteps=zeros.copy(), accepted=zeros.copy(),
                   rejected=np.zeros(M, dtype=bool), failed=np.zeros(M, dtype=bool),
                   last_err=np.zeros(M), last_h=np.ones(M), dims=np.full(M, dim),
                   g=np.zeros((M, n_events)),
                   t_events=np.full((M, n_events), np.nan),
                   y_events=np.full((M, n_events, dim), np.nan),
                   active=np.arange(M) if any_stop else np.arange(0), nfev=2)

    def move(self, moved: Moved) -> None:
        """The members' next outputs moved (:mod:`symdyn.ode.outputs`)."""
        if moved.members.size:
            self.following[moved.members] = moved.following
            self.earliest = None


class _Driver:
    """One integration: the problem (field, outputs, stops, hooks, method and
    the stiffness switch), its :class:`State` ``s``, and the loop
    (:meth:`run`: :meth:`sweep` until no member is active; a sweep takes one
    step of every active member, :meth:`advance` what the accepted steps
    bring: events, outputs, new states, stops, ``refresh``)."""

    def __init__(self, f: Callable[..., Any], t_out: np.ndarray, y0: np.ndarray, args: tuple,
                 rtol: np.ndarray, atol: np.ndarray, breakpoints: Sequence[float],
                 project: Callable[..., Any] | None, record: Callable[..., Any] | None,
                 refresh: Callable[..., Any] | None, stiff: bool, events: list,
                 control: Controller, dense_output: str, method: ExplicitPair) -> None:
        M, dim = y0.shape
        self.control, self.dense_output, self.method = control, dense_output, method
        self.f, self.t_out, self.args, self.rtol, self.atol = f, t_out, tuple(args), rtol, atol
        self.project, self.refresh, self.events = project, refresh, events
        self.stops = stops = Stops.build(t_out, breakpoints)
        self.dense = stops.dense(t_out)          # which steps make their extension
        self.out = Output(record, M, len(t_out), dim)
        self.K = np.empty((method.stages, M, dim), dtype=y0.dtype)
        self.work = AheadSums(y0.dtype)
        self.mode = Methods(M, stiff, dim, y0.dtype, method)
        t = np.zeros(M)
        fy = f(t, y0, stops.phase(t), *args)
        h = initial_step(f, y0, fy, (stops.phase(t),) + self.args, rtol, atol, t_out[-1],
                         method.error_order)
        self.s = s = State.start(t, y0.copy(), fy, h, len(stops.times) > 0, len(events))
        s.g = event_values(events, s.t, s.y, self.args)
        if t_out[0] == 0:
            self.out.save(np.arange(M), s.following,
                          y0 if self.project is None else self.project(y0.copy()))
            s.following += 1

    def run(self, max_steps: Any) -> Any:
        while self.s.active.size:
            self.sweep(max_steps)
        t, nsteps, failed, mode = self.s.t, self.s.nsteps, self.s.failed, self.mode
        ev = (self.s.t_events, self.s.y_events) if self.events else (None, None)
        if failed.any():
            m = int(np.flatnonzero(failed)[0])
            status = Status.STEP_TOO_SMALL if nsteps[m] < max_steps else Status.MAX_STEPS
            why = (f"step size fell below {self.control.min_relative_step:g} t (non-finite "
                   "or stiff right-hand side)" if status is Status.STEP_TOO_SMALL
                   else f"more than {max_steps} steps")
            return BatchSolution(y=self.out.y, nfev=self.s.nfev, nsteps=nsteps, success=False,
                                 message=f"integration failed for {failed.sum()} member(s), "
                                 f"first #{m} at t = {t[m]:.6g}: {why}",
                                 stiff_steps=mode.stiff_steps, t_events=ev[0],
                                 y_events=ev[1], status=status)
        return BatchSolution(y=self.out.y, nfev=self.s.nfev, nsteps=nsteps, success=True,
                             message=Status.SUCCESS.value, stiff_steps=mode.stiff_steps,
                             t_events=ev[0], y_events=ev[1])

    def sweep(self, max_steps: Any) -> None:
        """One attempted step of every active member."""
        active, h, mode, last_err = self.s.active, self.s.h, self.mode, self.s.last_err
        # every member active: slices (views), no gathers or scatters
        sel = slice(None) if active.size == len(self.s.t) else active
        ta, ya, fa = self.s.t[sel], self.s.y[sel], self.s.fy[sel]
        arga = (self.stops.phase(ta),) + (self.args if sel is not active
                                          else tuple(a[active] for a in self.args))
        stop_time = self.stops.times[self.s.stop[sel]]
        split = mode.split(active)
        target = mode.target(split, active, stop_time, self.t_out, self.s.following)
        h_a, rejected = h[sel], self.s.rejected[sel]
        step = np.minimum(h_a, target - ta)
        clipped = step >= target - ta
        with np.errstate(all="ignore"):
            t_new = np.where(clipped, target, ta + step)
            taken = take(self.f, self.method, mode, split, Attempt(
                active=active, sel=sel, t=ta, y=ya, fy=fa, h=step, t_new=t_new, args=arga,
                after_rejection=rejected), self.K, self.work, self.atol, self.rtol, self.s.dims)
            y_new, f_new, err, cost = taken.y_new, taken.f_new, taken.err, taken.cost
            predicted = self.control.predicted(last_err[sel], step / self.s.last_h[sel],
                                               self.method.exponent)
            finite = _finite_rows(y_new, f_new, err)
        self.s.nfev += cost
        accept, new_h = self.control.next_step(step, h_a, err, finite, clipped, rejected,
                                               predicted, mode.exponent(active))
        self.s.rejected[sel] = ~accept
        keep = accept & ~clipped & split.explicit
        if keep.any():
            at = keep if sel is not active else active[keep]
            last_err[at], self.s.last_h[at] = err[keep], step[keep]
        too_small = self.control.too_small(new_h, ta)
        self.advance(split, accept, clipped, ta, ya, step, t_new, arga, taken, stop_time,
                     mode.edge(active, step, taken.lam))
        last_err[mode.switch(split, active, accept & ~clipped, step, new_h, taken.lam)] = 0.0
        if self.refresh is not None:
            self.renew(active[accept])
        h[sel] = new_h
        nsteps = self.s.nsteps[sel] + 1
        self.s.nsteps[sel] = nsteps
        failed = (too_small & ~accept) | (nsteps >= max_steps)
        if failed.any():
            self.s.failed[active[failed]] = True
        done = (self.s.stop[sel] >= len(self.stops.times)) | failed
        if done.any():
            self.s.active = active[~done]

    def advance(self, split: Any, accept: np.ndarray, clipped: np.ndarray, ta: np.ndarray,
                ya: np.ndarray, step: Any, t_new: np.ndarray, arga: Any, taken: Any,
                stop_time: np.ndarray, z: Any) -> Any:
        """The accepted steps: their continuous extensions, events, outputs, the
        new states, the stops. ``z``: each step's :math:`h\\lambda` as the
        stiffness switch keeps it (None without the switch)."""
        active, t, y, fy = self.s.active, self.s.t, self.s.y, self.s.fy
        y_new, f_new = taken.y_new, taken.f_new
        ex = split.rows
        idx = active[accept]
        every = idx.size == accept.size     # every row accepted: no boolean gathers

        def accepted(x: np.ndarray) -> Any:
            return x if every else x[accept]
        t_end, y_end = t_new, y_new
        if self.events:
            t_end, y_end = self.locate(accept, ta, ya, step, t_new, arga, taken)
        if idx.size and self._outputs_by(t_end):
            F = None
            if self.dense:                  # only the steps that hold an output
                pe = np.flatnonzero(accept[ex])     # accepted DOP853 steps: Ka's rows
                nxt = self.s.following[active[ex][pe]]
                K = len(self.t_out)
                pe = pe[(nxt < K) & (self.t_out[np.minimum(nxt, K - 1)] < t_end[ex][pe])]
                F = self.extension(pe, ex, ta, ya, step, arga, taken, z)
            if F is not None:       # (without, no output lies inside a step)
                def rows(x: np.ndarray) -> Any:
                    return x[ex][pe]
                self.s.move(read(self.t_out, self.out, self.s.following, self.project,
                                 rows(active), rows(ta), rows(ya), rows(step), rows(t_end), F))
            self.s.move(serve_ends(self.t_out, self.out, self.s.following, self.project, idx,
                                   accepted(t_end), accepted(y_end)))
        if self.project is not None and idx.size:
            if every:
                y_end = self.project(y_end)
            else:
                y_end[accept] = self.project(y_end[accept])
        if idx.size == len(t):              # every member accepted: no scatter
            t[:], y[:], fy[:] = t_end, y_end, f_new
        elif idx.size:
            t[idx] = accepted(t_end)
            y[idx], fy[idx] = accepted(y_end), accepted(f_new)
        on_stop = accept & clipped & (t_end == stop_time)
        if on_stop.any():
            self.land(active[on_stop])

    def extension(self, pe: np.ndarray, ex: np.ndarray, ta: np.ndarray, ya: np.ndarray, step: Any,
                  arga: Any, taken: Any, z: Any) -> Any:
        """The continuous extensions of the accepted DOP853 steps at explicit
        rows ``pe`` (None if there are none), by ``dense_output``; ``z``: the
        steps' :math:`h\\lambda` kept by the switch, else measured here."""
        if not pe.size:
            return None
        def rows(x: np.ndarray) -> Any:
            return x[ex][pe]
        Ka = taken.K if pe.size == taken.K.shape[1] else taken.K[:, pe]
        return self._dense(rows(ta), rows(ya), rows(step), rows(taken.y_new),
                           tuple(rows(a) for a in arga), Ka,
                           None if z is None else rows(z),
                           taken.y_last if pe.size == taken.K.shape[1] else taken.y_last[pe])

    def _dense(self, t: Any, y: Any, h: Any, y_new: np.ndarray, args: Any, K: Any, z: Any,
               y_last: Any) -> Any:
        """The method's continuous extensions of these steps
        (:meth:`~symdyn.ode.methods.ExplicitPair.dense`)."""
        with np.errstate(all="ignore"):
            F, cost = self.method.dense(self.f, t, y, h, y_new, args, K, z, self.dense_output,
                                        y_last)
        self.s.nfev += cost
        return F

    def _outputs_by(self, t_end: np.ndarray) -> Any:
        """Whether some member's next output time is at or before the latest
        step's end (else no output is served: no output inside any step)."""
        if self.s.earliest is None:      # following only moves when outputs are served
            first = self.s.following.min()
            self.s.earliest = self.t_out[first] if first < len(self.t_out) else np.inf
        return self.s.earliest <= t_end.max()

    def locate(self, accept: np.ndarray, ta: np.ndarray, ya: np.ndarray, step: Any,
               t_new: np.ndarray, arga: Any, taken: Any, F: Any = None) -> Any:
        """Evaluate the events after the accepted steps; locate the first root
        of each on the continuous extension (``F``: those of every accepted
        step, if made), and stop the members whose terminal event fired.
        Returns the steps' ends (the root for those)."""
        active, events, y_new = self.s.active, self.events, taken.y_new
        p = np.flatnonzero(accept)
        m, sub = active[p], tuple(a[p] for a in arga[1:])
        g_new, g_old = event_values(events, t_new[p], y_new[p], sub), self.s.g[m]
        hit = crossed(events, g_old, g_new) & np.isnan(self.s.t_events[m])
        self.s.g[m] = g_new
        rows = np.flatnonzero(hit.any(axis=1))
        if not rows.size:
            return t_new, y_new
        q, mq = p[rows], m[rows]
        if F is None:
            F = self._dense(ta[q], ya[q], step[q], y_new[q], tuple(a[q] for a in arga),
                            taken.K[:, q], None, taken.y_last[q])
        else:                       # events: no stiff members, F's rows are p's
            F = [c[rows] for c in F]
        t_end, y_end = t_new.copy(), y_new.copy()
        first = np.full(len(q), np.inf)
        for j, e in enumerate(events):
            r = np.flatnonzero(hit[rows, j])
            tr, yr = locate_root(e.g, ta[q[r]], ya[q[r]], step[q[r]], [c[r] for c in F],
                                 self.method.interpolate, tuple(a[q[r]] for a in arga[1:]),
                                 g_old[rows[r], j])
            self.s.t_events[mq[r], j], self.s.y_events[mq[r], j] = tr, yr
            if e.terminal:
                sooner = tr < first[r]
                first[r[sooner]] = tr[sooner]
                t_end[q[r[sooner]]], y_end[q[r[sooner]]] = tr[sooner], yr[sooner]
        done = np.isfinite(first)
        self.s.stop[mq[done]] = len(self.stops.times)       # terminal: the member stops
        return t_end, y_end

    def renew(self, idx: np.ndarray) -> None:
        """``refresh`` of the particles: every :data:`REFRESH_STEPS` accepted steps."""
        if self.refresh is None:
            return
        self.s.accepted[idx] += 1
        due = idx[self.s.accepted[idx] % REFRESH_STEPS == 0]
        if due.size:
            rows = self.s.y[due]
            changed, self.s.dims[due] = self.refresh(due, rows)
            self.s.y[due[changed]] = rows[changed]
            self.mode.renew(due[changed])
            self.restart(due[changed])


    def land(self, landed: np.ndarray) -> None:
        """Members ``landed`` on their next stop move on to the next one; after
        a breakpoint the stages restart."""
        k = self.s.stop[landed]
        self.s.stop[landed] += 1
        # new phase: no first-same-as-last reuse, and no error prediction across it
        self.restart(landed[self.stops.is_break[k]])
        self.mode.renew(landed)

    def restart(self, members: np.ndarray) -> None:
        """A new right-hand side for ``members``: their first stage anew."""
        if not members.size:
            return
        s = self.s
        s.fy[members] = self.f(s.t[members], s.y[members], self.stops.phase(s.t[members]),
                               *(a[members] for a in self.args))
        s.last_err[members] = 0.0
        s.nfev += 1


def _finite_rows(y: Any, fy: Any, err: np.ndarray) -> Any:
    """Per member, whether ``y``, ``fy`` (rows) and ``err`` are all finite: the
    common case by :func:`~symdyn.base.arithmetic.all_finite` of each (numpy's
    reductions over a short last axis cost more than the step's arithmetic),
    row by row only when one is not."""
    if all_finite(y) and all_finite(fy) and all_finite(err):
        return np.ones(len(err), dtype=bool)
    return np.isfinite(y).all(axis=1) & np.isfinite(fy).all(axis=1) & np.isfinite(err)
