"""The continuous dynamics (``step=None``): the batch as one vectorized system.

Per-member adaptive steps (:mod:`symdyn.ode.integrate`; DOP853, and
Rosenbrock-W on stiff stretches with ``method="auto"``), the directions
renormalized after every accepted step, coincident tokens merged between
steps (:mod:`symdyn.particles.merging`), the observables recorded at the output
times from the dense output.

Layer 2, particles.
"""

from __future__ import annotations

import numpy as np

from ..base.arithmetic import row_norms
from ..model import log_clock
from ..model.piecewise import piecewise_breakpoints
from ..ode.integrate import integrate
from . import merging
from .causal import CausalCoalescence, Grouped, group_field
from .field import Field


def _continuous_field(s, w, attention, T, log, dtype, causal=False):
    """The field of a continuous run to ``T`` and its breakpoints (untied
    weights: a new draw every unit of time)."""
    period = None
    unit_bps = []
    if not w.tied:
        if w.draws < np.ceil(T):
            raise ValueError(f"weights: untied weights hold {w.draws} draws but t "
                             f"reaches {T:g} (one draw per unit of time)")
        period = 1.0
        unit_bps = list(np.arange(1.0, np.ceil(T)))
    # a Piecewise temperature switches too (the phases of the laws are the speed's)
    switches = piecewise_breakpoints((s.temperature,)) if s.tempered else ()
    bps = sorted(set(s.breakpoints) | set(unit_bps) | set(switches))
    if log:
        bps = sorted(set(log_clock.breakpoints(s)) | set(np.log1p(switches)))
    return Field(s, w, attention, bps, period, log, dtype, causal), bps


def _pace(field, merged, beta, clock, log):
    """``merged.pace``: member m's direction field at its latest time ``clock[m]``,
    and the clock's scale (t; the log clock: 1, tau being log t already)."""
    def pace(m, th, rr):
        tm = clock[m:m + 1]
        v, _ = field.grouped(tm, th[None], rr[None], beta[m:m + 1], field.phase_at(tm),
                             mass=merged.mass[m:m + 1])
        return v[0].copy(), 1.0 if log else float(tm[0])
    return pace


def _plain(field, beta, clock):
    """``CausalCoalescence.velocity``: member m's plain field at ``clock[m]``."""
    def velocity(m, x, r):
        tm = clock[m:m + 1]
        v, _ = field.grouped(tm, x[None], r[None], beta[m:m + 1], field.phase_at(tm))
        return v[0].copy()
    return velocity


def continuous(s, w, attention, theta, rad, beta, times, rtol, atol, rec, merge, log,
                method, causal=False):
    M, n, d = theta.shape
    field, bps = _continuous_field(s, w, attention, times[-1], log, theta.dtype, causal)
    if log:
        rad = np.log(rad)           # u = log r - tau at tau = 0
    nd = n * d

    def unpack(y):
        return y[:, :nd].reshape(-1, n, d), y[:, nd:]

    clock = np.zeros(M)             # each member's latest time (tau: log clock)
    if causal:                      # exact merging under the mask (causal.py)
        merged = CausalCoalescence(M, n, merge, threshold=rec.threshold)
        merged.velocity = _plain(field, beta, clock)
    else:
        merged = merging.Coalescence(M, n, merge, log_norm=log, threshold=rec.threshold)
        merged.pace = _pace(field, merged, beta, clock, log)

    def rhs(tm, y, phase, bk, mk, member):
        if merge:
            clock[member] = tm
        th, rr = unpack(y)
        # masses only once a token merged (before, all 1: the plain attention)
        if causal and merged.merges:
            dth, drr = group_field(field, merged, member, tm, th, rr, bk, phase)
        else:
            dth, drr = field.grouped(tm, th, rr, bk, phase, mass=mk if merged.merges else None)
        # (on the sphere the field's radial part is 0)
        return np.concatenate((dth.reshape(len(y), nd), drr), axis=1, dtype=y.dtype)

    def project(y):                 # in place: the driver hands over rows of its own
        th = unpack(y)[0]           # a view of y (C order)
        th /= row_norms(th)[..., None]
        return y

    def record(k, members, y):
        # every output inside the sweep's steps at once (k: one per row): the
        # observables and the speeds (one batched evaluation of the field)
        th, rr = unpack(y)
        f = Grouped(field, merged, members) if causal else field
        rec.observe(f, k, members, times[k], th, rr, beta[members], None,
                    lambda: f"t = {times[k].min():g}", merged, times[k] if log else 0.0)

    def refresh(members, y):
        th, rr = unpack(y)
        changed = merged.merge(members, th, rr)
        y[:, :nd], y[:, nd:] = th.reshape(len(y), nd), rr     # unpack may copy
        return changed, merged.live_dims(members, d + 1)

    y0 = np.concatenate([theta.reshape(M, nd), rad], axis=1)
    with np.errstate(all="ignore"):
        sol = integrate(rhs, times, y0, (beta, merged.mass, np.arange(M)), rtol=rtol,
                        atol=atol, breakpoints=bps, project=project, record=record,
                        refresh=refresh if merge else None, stiff=method == "auto")
    if not sol.success:     # a law the field refused is the likely cause
        raise ArithmeticError(f"simulate: {field.fault or sol.message}")
    return (int(sol.nsteps.sum()), sol.nfev + merged.evaluations, sol.message,
            merged.merges, int(sol.stiff_steps.sum()))
