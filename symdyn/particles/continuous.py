"""The continuous dynamics (``step=None``): the batch as one vectorized system.

Per-member adaptive steps (:mod:`symdyn.ode.integrate`; DOP853, and
Rosenbrock-W on stiff stretches with ``method="auto"``), the directions
renormalized after every accepted step, coincident tokens merged between
steps (:mod:`symdyn.particles.merging`), the observables recorded at the output
times from the dense output.

**The cluster's frame.** Unit vectors stored as such resolve the
differences :math:`\\theta_j - \\theta_k` only to their rounding, and the
error control (relative to ``|theta| = 1``) to ``atol``: ``epsilon`` of a
collapsing configuration stalled at 1e-23 (Post-LN, equiangular start,
``n = 8``, ``beta = 1``: 1.3e-21 at ``t = 100`` where the truth is
1.7e-86). Where the field allows it (:attr:`~symdyn.particles.field.Field.frames`:
identity weights, attention of the directions, no mask, float64, a mean direction
of the start at least :data:`FRAME_CENTRE` long) each member
is integrated in its own frame, :math:`\\theta_k = c + e^{\\ell} u_k`: a
centre ``c`` (the tangential mean motion), the log ``ell`` of the
deviations' scale and the scaled deviations ``u_k`` (``sum_k m_k |u_k|^2``
conserved, all of order 1), the field written in the differences ``u_j -
u_k`` (:meth:`~symdyn.particles.field.Field.frame`). The error control acts
on the deviations at their own scale, and ``epsilon`` is
:math:`e^{2\\ell} \\sum_k |\\hat u_k - \\bar u|^2/(n-1)`: relative precision
down to :data:`~symdyn.particles.field.FRAME_FLOOR`. Merging (:mod:`symdyn.particles.merging`) then
reads the directions only where they resolve the deviations (a scale of at
least :data:`FRAME_RESOLVED`), never merges a group of every live token
(the frame resolves its collapse), and merges all tokens of a member whose
``epsilon`` fell below that floor (its values then bounds).

Layer 2, particles.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base.arithmetic import row_norms
from ..model import log_clock
from ..model.piecewise import piecewise_breakpoints
from ..ode.integrate import integrate
from . import merging
from .causal import CausalCoalescence, Grouped, group_field
from .field import FRAME_FLOOR, Field, FrameState, frame_directions, frame_epsilon
from .result import RunStats

#: A member's tokens are merged (``merge > 0``) from their directions only
#: while the square root of its ``epsilon`` is at least this: the directions
#: then resolve the deviations to ~1e-13 of their size.
FRAME_RESOLVED = 1e-3
#: A member whose ``epsilon`` is below FRAME_FAST_BELOW (where directions are
#: no longer merged) and whose deviations contract at least FRAME_FAST e-folds
#: per e-fold of the clock (``t |d ell/dt|``; the log clock: ``|d ell/d tau|``)
#: merges into one token, its values bounds: a speed law with a pole, which
#: the frame's scale could not follow (Post-LN's own collapse reaches
#: FRAME_FLOOR long before: its pace is ``t`` times a rate of order 1; a
#: power law ``epsilon = C t^{-2p}`` has the pace ``p``).
FRAME_FAST = 1e6
FRAME_FAST_BELOW = FRAME_RESOLVED**2
#: The least length of the mean direction of a start integrated in the
#: frame (its centre: the mean direction normalized); shorter (the tokens
#: spread evenly over the sphere, e.g. a simplex) stores unit vectors.
FRAME_CENTRE = 1e-3
#: Output states are projected and recorded in blocks of about this many
#: token floats (rows x n x d): the temporaries of a block stay in the
#: processor's cache, where those of a whole chunk of the driver's outputs
#: (up to ``symdyn.ode.outputs.OUTPUT_FLOATS``) would not.
BLOCK_FLOATS = 1 << 16


def blocks(rows: int, width: int) -> list[slice]:
    """Slices of ``rows`` rows of ``width`` floats each, in blocks of about
    :data:`BLOCK_FLOATS` floats."""
    size = max(1, BLOCK_FLOATS // max(width, 1))
    return [slice(lo, lo + size) for lo in range(0, rows, size)]


def in_blocks(record: Callable[..., None], width: int) -> Callable[..., None]:
    """``record(k, members, y)`` called block by block of :func:`blocks`
    (``k`` one output per row, or one for all)."""
    def blocked(k: np.ndarray | int, members: np.ndarray, y: np.ndarray) -> None:
        for b in blocks(len(y), width):
            record(k[b] if isinstance(k, np.ndarray) and k.ndim else k, members[b], y[b])
    return blocked


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
               method, causal=False) -> RunStats:
    """Integrate the batch from directions ``theta`` (M, n, d) and norms ``rad``
    (M, n) to the output ``times``, recording into ``rec``; in each member's
    frame where the field allows it (:func:`framed`)."""
    M, n, d = theta.shape
    field, bps = _continuous_field(s, w, attention, times[-1], log, theta.dtype, causal)
    if field.frames and theta.dtype == np.float64 and centred(theta):
        return framed(field, bps, theta, rad, beta, times, rtol, atol, rec, merge, log,
                      method)
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
                        atol=atol, breakpoints=bps, project=project,
                        record=in_blocks(record, nd),
                        refresh=refresh if merge else None, stiff=method == "auto")
    if not sol.success:     # a law the field refused is the likely cause
        raise ArithmeticError(f"simulate: {field.fault or sol.message}")
    return _stats(sol, merged)


def _stats(sol, merged) -> RunStats:
    """What the integration ``sol`` and the merging ``merged`` did."""
    return RunStats(steps=int(sol.nsteps.sum()), nfev=sol.nfev + merged.evaluations,
                    message=sol.message, merged=merged.merges,
                    stiff_steps=int(sol.stiff_steps.sum()))


def into_frame(theta, weight=None):
    """``(c, ell, u)`` of unit directions ``theta`` (m, n, d) with masses
    ``weight`` (m, n; default 1): the centre is the normalized mean (the
    tangential mean of ``u`` is then 0, as :meth:`~symdyn.particles.field.Field.frame`
    keeps it), ``e^ell`` the root mean square deviation from it (``ell = 0``
    where the tokens coincide)."""
    weight = np.ones(theta.shape[:2]) if weight is None else weight
    total = weight.sum(axis=1)
    mean = np.einsum("mn,mnd->md", weight, theta) / total[:, None]
    c = mean / np.sqrt(np.einsum("md,md->m", mean, mean))[:, None]
    dev = theta - c[:, None, :]
    rms = np.sqrt(np.einsum("mn,mnd,mnd->m", weight, dev, dev) / total)
    ell = np.log(np.where(rms > 0, rms, 1.0))
    return c, ell, dev / np.exp(ell)[:, None, None]


def centred(theta) -> bool:
    """Whether every member's mean direction is at least :data:`FRAME_CENTRE`
    long: the frame's centre is then well defined."""
    mean = theta.mean(axis=1)
    return bool((np.einsum("md,md->m", mean, mean) >= FRAME_CENTRE**2).all())


def framed(field, bps, theta, rad, beta, times, rtol, atol, rec, merge, log,
           method) -> RunStats:
    """:func:`continuous` in each member's frame (module docstring): the state
    ``(c, ell, u, rad)``, ``d + 1 + n d + n`` components a member."""
    M, n, d = theta.shape
    if log:
        rad = np.log(rad)           # u = log r - tau at tau = 0
    nd = n * d

    clock = np.zeros(M)
    merged = merging.Coalescence(M, n, merge, log_norm=log, threshold=rec.threshold,
                                 whole=False)
    merged.pace = _pace(field, merged, beta, clock, log)

    def rhs(tm, y, phase, bk, mk, member):
        if merge:
            clock[member] = tm
        # the parts of the state (c, ell, u, rad) as views, the rates in their layout
        rates = np.empty(y.shape, dtype=y.dtype)
        field.frame_grouped(tm, y[:, :d], y[:, d], y[:, d + 1:d + 1 + nd].reshape(-1, n, d),
                            y[:, d + 1 + nd:], bk, phase,
                            mass=mk if merged.merges else None, out=rates)
        return rates

    def project(y):                 # in place: the directions back on the sphere
        for b in blocks(len(y), nd):
            st = FrameState.of(y[b], n, d)
            fd = frame_directions(st.c, st.ell, st.u)
            y[b, :d] = fd.centre
            y[b, d + 1:d + 1 + nd] = fd.deviations.reshape(len(fd.centre), nd)
        return y

    def record(k, members, y):
        # the outputs are projected (integrate's project=): c is the unit
        # centre and u the deviations of unit directions, as frame_directions gives
        st = FrameState.of(y, n, d)
        ch, e, uh, rr = st.c, np.exp(st.ell), st.u, st.rad
        theta = ch[:, None, :] + e[:, None, None] * uh
        speed = None
        if rec.needs_field:
            tm = np.broadcast_to(np.asarray(times[k], dtype=float), (len(members),))
            mass = merged.mass[members] if merged.merges else None
            field.fault = None
            speed = field.frame_grouped(tm, ch, st.ell, uh, rr, beta[members],
                                        field.phase_at(tm), mass=mass) * e[:, None]
        rec.observe(field, k, members, times[k], theta, rr, beta[members], None,
                    lambda: f"t = {times[k].min():g}", merged, times[k] if log else 0.0,
                    frame=(e, uh, speed))

    def fast(members, y, ch, uh, rr):
        """Members whose deviations contract at least FRAME_FAST e-folds per
        e-fold of the clock (one evaluation each; only asked below
        FRAME_FAST_BELOW): a pole of the speed law the integration cannot
        step through."""
        tm = clock[members]
        rates = np.empty(y.shape, dtype=y.dtype)
        field.frame_grouped(tm, ch, y[:, d], uh, rr, beta[members], field.phase_at(tm),
                            mass=merged.mass[members], out=rates)
        dell = FrameState.of(rates, n, d).ell
        merged.evaluations += len(members)
        return -dell * (1.0 if log else tm) >= FRAME_FAST

    def refresh(members, y):
        st = FrameState.of(y, n, d)
        fd = frame_directions(st.c, st.ell, st.u)
        ch, e, uh, rr = fd.centre, fd.scale, fd.deviations, st.rad
        live = merged.mass[members] > 0
        eps = frame_epsilon(e, uh, merged.mass[members])
        changed = np.zeros(len(members), dtype=bool)
        wide = np.flatnonzero(eps >= FRAME_RESOLVED**2)
        if wide.size:
            theta = ch[wide, None, :] + e[wide, None, None] * uh[wide]
            part = rr[wide].copy()
            moved = merged.merge(members[wide], theta, part)
            if moved.any():
                at = wide[moved]
                c2, ell2, u2 = into_frame(theta[moved], merged.mass[members[at]])
                y[at, :d], y[at, d] = c2, ell2
                y[at, d + 1:d + 1 + nd] = u2.reshape(len(at), nd)
                y[at, d + 1 + nd:] = part[moved]
                changed[at] = True
        collapse = eps < FRAME_FLOOR
        ask = np.flatnonzero((eps < FRAME_FAST_BELOW) & ~collapse & (live.sum(axis=1) > 1))
        if ask.size:
            collapse[ask] = fast(members[ask], y[ask], ch[ask], uh[ask], rr[ask])
        for i in np.flatnonzero(collapse):
            if live[i].sum() > 1:   # every token within the floor: one token, a bound
                weight = merged.mass[members[i]]
                mean = weight @ uh[i] / weight.sum()
                head = merged.collapse(members[i], e[i] * np.linalg.norm(uh[i] - mean, axis=-1),
                                       rr[i])
                y[i, d + 1 + head * d:d + 1 + (head + 1) * d] = mean
                y[i, d + 1 + nd:] = rr[i]
                changed[i] = True
        return changed, d + 1 + merged.live_dims(members, d + 1)

    c, ell, u = into_frame(theta)
    y0 = np.concatenate([c, ell[:, None], u.reshape(M, nd), rad], axis=1)
    # ell carries the scale of every deviation: its error alone may not hide in
    # the root mean square over the member's components
    dim = y0.shape[1]
    rtols = np.full(dim, rtol)
    atols = np.full(dim, atol)
    rtols[d] /= np.sqrt(dim)
    atols[d] /= np.sqrt(dim)
    with np.errstate(all="ignore"):
        sol = integrate(rhs, times, y0, (beta, merged.mass, np.arange(M)), rtol=rtols,
                        atol=atols, breakpoints=bps, project=project,
                        record=in_blocks(record, nd),
                        refresh=refresh if merge else None, stiff=method == "auto")
    if not sol.success:
        raise ArithmeticError(f"simulate: {field.fault or sol.message}")
    return _stats(sol, merged)
