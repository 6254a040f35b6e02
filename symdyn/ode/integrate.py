"""A batch of ODEs integrated as one vectorized system, each with its own steps.

The Dormand-Prince 8(5,3) pair (:mod:`symdyn.ode.dop853`; Hairer, Norsett &
Wanner, *Solving ODEs I*, II.10) advances every member of the batch by one
array operation per stage. Unlike handing the stacked system to
``solve_ivp``, every member keeps its own step size and its own error test (no
averaging of errors across members), so a member's result is what a scalar
solve with the same tolerances would give, whatever else is in the batch.

Procedure per sweep over the unfinished members:

1. clip each step so it ends exactly on the member's next stop (a
   breakpoint where the right-hand side has a kink, or the last output time);
   output times in between cost no step: they are read from DOP853's
   continuous extension (:func:`dense_coefficients`, :func:`interpolate`;
   three more evaluations on a step that has outputs inside);
2. take the 12-stage step (:func:`dop853_step`) and measure its error with
   the embedded 5th and 3rd order solutions (:func:`error_norm`); a step is
   accepted when :math:`\\mathrm{err} < 1` and every value is finite;
3. rescale the step by :math:`0.9\\,\\mathrm{err}^{-1/8}`, clipped to
   ``[0.2, 10]`` (:func:`step_factor`); a non-finite stage counts as a
   rejection (factor 0.2).

With ``stiff=True``, a member whose steps stability holds (a contraction
faster than the motion being resolved) continues with the Rosenbrock-W
method of :mod:`symdyn.ode.rosenbrock`, and returns when explicit steps are
cheaper again (:mod:`symdyn.ode.stiffness`).

This is the control of ``scipy.integrate.DOP853`` (no growth right after a
rejection included) with one deliberate addition, :data:`ESTIMATE_FLOOR`:
the error estimate of a one-dimensional problem (or of a system with one
dominant component) passes through zero now and then; without the floor the
next step grows 3-4x on that accident and the estimator, outside its
asymptotic range, then accepts a step whose true error is 10^4-10^6 times
the tolerance (scipy's DOP853 does so for about 1 in 10^4 members of the
Post-LN grid of ``benchmarks/solve.py``).

Layer 1, ode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.arithmetic import power
from ..base.checks import finite_array, shown
from . import dop853
from .stiffness import Methods

SAFETY = 0.9          # aim at err = 0.9**8 ~ 0.43, not at the edge err = 1
MIN_FACTOR = 0.2      # a step shrinks at most 5x per attempt ...
MAX_FACTOR = 10.0     # ... and grows at most 10x
ERROR_EXPONENT = -1.0 / (dop853.ERROR_ORDER + 1)   # err ~ h**8
E3_WEIGHT = 0.01      # weight of the 3rd-order estimate in the error norm
# An accepted step's err counts as at least this fraction of the err that the
# previous accepted step predicts for it, err_prev * (h / h_prev)**8.
ESTIMATE_FLOOR = 0.1
MIN_RELATIVE_STEP = 1e-14    # below 1e-14 * max(1, |t|) a member fails
FALLBACK_STEP = 1e-6         # first step when the estimate is not usable
REFRESH_STEPS = 10           # accepted steps between calls of ``refresh``

_S = dop853.N_STAGES


@dataclass
class BatchSolution:
    """``y[m, k, :]``: member ``m`` at output time ``k``."""

    y: np.ndarray
    nfev: int
    nsteps: np.ndarray
    success: bool
    message: str
    stiff_steps: np.ndarray | None = None     # Rosenbrock-W steps per member


def _combine(weights, K, out=None, tmp=None):
    """sum_j weights[j] * K[j], in a fixed order: a member's result does not
    depend on the batch it is computed in (unlike a BLAS reduction).

    Each term is rounded, then added, left to right (zero weights skipped),
    in place in ``out`` with ``tmp`` as scratch (both shaped like ``K[0]``;
    allocated when not given): the same roundings as ``w0*K0 + w1*K1 + ...``
    without a temporary array per term.
    """
    weights = weights.tolist() if hasattr(weights, "tolist") else weights
    out = np.empty_like(K[0]) if out is None else out
    np.multiply(K[0], weights[0], out=out)   # Python floats: float32 stays float32
    for j in range(1, len(weights)):
        if weights[j] != 0:
            tmp = np.empty_like(out) if tmp is None else tmp
            np.multiply(K[j], weights[j], out=tmp)
            np.add(out, tmp, out=out)
    return out


def _rms(x):
    return np.sqrt(np.mean(x * x, axis=-1))


def initial_step(f, y, fy, args, rtol, atol, t_end):
    """First step of every member from ``t = 0`` (Hairer et al. II.4).

    With :math:`d_0 = \\|y\\|`, :math:`d_1 = \\|f\\|` in the weighted RMS norm,
    :math:`h_0 = 0.01\\,d_0/d_1`, :math:`d_2 = \\|f(h_0, y + h_0 f) - f\\|/h_0`:
    :math:`h = \\min(100 h_0, (0.01/\\max(d_1, d_2))^{1/8}, t_{end})`, as
    scipy's ``select_initial_step``. Returns ``h``, shape ``(M,)``; costs one
    evaluation of ``f``.
    """
    with np.errstate(all="ignore"):
        scale = atol + rtol * np.abs(y)
        d0, d1 = _rms(y / scale), _rms(fy / scale)
        h0 = np.where((d0 < 1e-5) | (d1 < 1e-5), FALLBACK_STEP,
                      0.01 * d0 / np.maximum(d1, 1e-300))
        h0 = np.minimum(h0, t_end)
        f1 = f(np.zeros(len(y)) + h0, y + (h0[:, None] * fy).astype(y.dtype, copy=False),
               *args)
        d2 = _rms((f1 - fy) / scale) / h0
        big = np.maximum(d1, d2)
        h1 = np.where(big <= 1e-15, np.maximum(FALLBACK_STEP, h0 * 1e-3),
                      (0.01 / np.maximum(big, 1e-300)) ** -ERROR_EXPONENT)
        h = np.minimum(np.minimum(100 * h0, h1), t_end)
    return np.where(np.isfinite(h) & (h > 0), h, FALLBACK_STEP)


def dop853_step(f, t, y, fy, h, t_new, args, K):
    """One DOP853 step of size ``h`` (shape ``(m,)``) for every row of ``y``.

    Fills ``K[0..12]`` with the stages (``K[0] = fy``, ``K[12] = f(t_new,
    y_new)``) and returns :math:`y_{new} = y + h \\sum_j b_j k_j`. ``t_new``
    is ``t + h`` or, for a step clipped onto a stop, the stop itself.
    """
    K[0] = fy
    hs = h[:, None].astype(y.dtype, copy=False)       # float32 states stay float32
    tmp = np.empty_like(y)
    for s in range(1, _S):
        stage = _combine(dop853.A[s, :s], K, tmp=tmp)
        np.multiply(hs, stage, out=stage)           # y + h * sum_j a_sj k_j
        K[s] = f(t + dop853.C[s] * h, np.add(y, stage, out=stage), *args)
    y_new = _combine(dop853.B, K, tmp=tmp)
    np.multiply(hs, y_new, out=y_new)
    np.add(y, y_new, out=y_new)
    K[_S] = f(t_new, y_new, *args)
    return y_new


def error_norm(K, h, scale, dims=None):
    """The DOP853 error of a step, 1 at the tolerance (Hairer's ``dop853.f``).

    With :math:`e_5 = \\sum_j e^{(5)}_j k_j / \\mathrm{scale}`, :math:`e_3`
    alike: :math:`h\\,|e_5|^2 / \\sqrt{\\dim\\,(|e_5|^2 + 0.01\\,|e_3|^2)}`;
    ``dims`` (per member, default all components) counts the components that
    move (frozen ones add nothing to the sums and are not averaged over).
    """
    tmp = np.empty_like(K[0])
    e5 = np.divide(_combine(dop853.E5, K, tmp=tmp), scale)
    e3 = np.divide(_combine(dop853.E3, K, tmp=tmp), scale)
    n5, n3 = np.sum(e5 * e5, axis=1), np.sum(e3 * e3, axis=1)
    denom = np.sqrt((n5 + E3_WEIGHT * n3) * (scale.shape[1] if dims is None else dims))
    return np.where(n5 == 0, 0.0, h * n5 / np.where(denom > 0, denom, 1))


def step_factor(err, finite, after_rejection, predicted, exponent=ERROR_EXPONENT):
    """Next step / this step, per member.

    :math:`0.9\\,\\max(\\mathrm{err}, 0.1\\,\\mathrm{predicted})^{-1/8}`
    (``exponent``, per member: -1/8 for DOP853, -1/3 for ROS34PW2) in
    ``[0.2, 10]`` (the floor only for accepted steps); at most 1 for a
    rejected step or the first acceptance after a rejection; 0.2 after a
    non-finite step. ``predicted``: the err that the previous accepted step
    implies for this one (0 if none).
    """
    accept = finite & (err < 1)
    effective = np.where(accept, np.maximum(err, ESTIMATE_FLOOR * predicted), err)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(effective > 0, SAFETY * power(effective, exponent), MAX_FACTOR)
    factor = np.clip(factor, MIN_FACTOR, MAX_FACTOR)
    factor = np.where(accept & ~after_rejection, factor, np.minimum(factor, 1.0))
    return accept, np.where(finite, factor, MIN_FACTOR)


@dataclass
class _Stops:
    """Where every member must end a step: the breakpoints and the last output
    time. Output times in between cost no step (dense output)."""

    times: np.ndarray       # sorted stop times > 0
    is_break: np.ndarray
    breakpoints: np.ndarray

    @classmethod
    def build(cls, t_out, breakpoints):
        bps = np.array(sorted(b for b in breakpoints if 0 < b < t_out[-1]), dtype=float)
        times = np.union1d(t_out[-1:][t_out[-1:] > 0], bps)
        return cls(times, np.isin(times, bps), bps)

    def phase(self, t):
        """Number of breakpoints at or before ``t``."""
        return np.searchsorted(self.breakpoints, t, side="right")


class _Output:
    """Stores states at output times, or hands them to ``record``."""

    def __init__(self, record, M, K, dim):
        self.record = record
        self.y = None if record is not None else np.full((M, K, dim), np.nan)

    def save(self, members, k_out, rows):
        if self.record is None:
            self.y[members, k_out] = rows
            return
        for k in np.unique(k_out):
            sel = k_out == k
            self.record(int(k), members[sel], rows[sel])


def dense_coefficients(f, t, y, h, y_new, args, K):
    """The seven coefficient rows of DOP853's continuous extension on a step.

    ``K`` holds the 13 stages of the step (``K[12] = f(t + h, y_new)``); the
    three extra stages :math:`k_{13..15}` are evaluated into ``K[13:16]``.
    With :math:`\\Delta = y_{new} - y`: :math:`F_0 = \\Delta`,
    :math:`F_1 = h k_0 - \\Delta`, :math:`F_2 = 2\\Delta - h(k_{12} + k_0)`,
    :math:`F_{3..6} = h \\sum_j D_{ij} k_j` (Hairer, Norsett & Wanner, II.6
    and ``contd8``). Costs three evaluations of ``f``.
    """
    for j, c in enumerate(dop853.C_EXTRA):
        s = _S + 1 + j
        K[s] = f(t + c * h, y + (h[:, None] * _combine(dop853.A_EXTRA[j, :s], K)
                                 ).astype(y.dtype, copy=False), *args)
    delta = y_new - y
    F = [delta, h[:, None] * K[0] - delta, 2 * delta - h[:, None] * (K[_S] + K[0])]
    F += [h[:, None] * _combine(row, K) for row in dop853.D]
    return F


def interpolate(F, y, x):
    """The dense output at fraction ``x`` (shape ``(m,)``, in [0, 1]) of the step:
    :math:`y + x(F_0 + (1-x)(F_1 + x(F_2 + (1-x)(F_3 + x(F_4 + (1-x)(F_5 + x F_6))))))`."""
    x = x[:, None]
    out = np.zeros_like(y)
    for i, row in enumerate(reversed(F)):
        out += row
        out *= x if i % 2 == 0 else 1 - x
    return out + y


def _check(t_out, y0, rtol, atol):
    t_out = np.asarray(t_out, dtype=float)
    y0 = np.asarray(y0)
    if y0.dtype not in (np.float32, np.float64):
        y0 = y0.astype(float)
    M, dim = y0.shape
    if t_out.ndim != 1 or not t_out.size or t_out[0] < 0 or np.any(np.diff(t_out) <= 0):
        raise ValueError(f"t_out must be increasing times >= 0, got {shown(t_out)}")
    rtol = np.broadcast_to(finite_array(rtol, "rtol", 0.0, low_open=True), (dim,))
    atol = np.broadcast_to(finite_array(atol, "atol", 0.0), (M, dim))
    return t_out, y0, rtol, atol


def integrate(f, t_out, y0, args=(), *, rtol, atol, breakpoints=(),
              max_steps=200_000, project=None, record=None,
              refresh=None, stiff=False) -> BatchSolution:
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
        renormalizes directions on the sphere).
    record : callable, optional
        ``record(k, members, y)`` receives the states of ``members`` at output
        time ``k`` instead of storing them (then ``BatchSolution.y`` is None).
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

    Returns
    -------
    BatchSolution
        ``success`` is False (and ``message`` names the first failed member)
        when a member's step falls below ``1e-14 max(1, |t|)`` (a non-finite,
        stiff or blowing-up right-hand side) or it needs ``max_steps``
        steps; bad ``t_out``, ``rtol``, ``atol`` raise ``ValueError``.
    """
    t_out, y0, rtol, atol = _check(t_out, y0, rtol, atol)
    M, dim = y0.shape
    stops = _Stops.build(t_out, breakpoints)
    out = _Output(record, M, len(t_out), dim)
    following = np.zeros(M, dtype=int)      # index of each member's next output
    if t_out[0] == 0:
        out.save(np.arange(M), following, y0)
        following += 1
    t, y = np.zeros(M), y0.copy()
    fy = f(t, y, stops.phase(t), *args)
    h = initial_step(f, y, fy, (stops.phase(t),) + tuple(args), rtol, atol, t_out[-1])
    nfev = 2
    stop, nsteps = np.zeros(M, dtype=int), np.zeros(M, dtype=int)
    failed, rejected = np.zeros(M, dtype=bool), np.zeros(M, dtype=bool)
    last_err, last_h = np.zeros(M), np.ones(M)   # of the last full accepted step
    active = np.arange(M) if len(stops.times) else np.arange(0)
    K = np.empty((dop853.N_EXTENDED, M, dim), dtype=y0.dtype)
    dims, accepted = np.full(M, dim), np.zeros(M, dtype=int)
    mode = Methods(M, stiff, dim, y0.dtype)
    while active.size:
        every = active.size == M     # all members: plain copies, no gathers
        ta, ya = (t.copy(), y.copy()) if every else (t[active], y[active])
        fa = fy.copy() if every else fy[active]
        arga = (stops.phase(ta),) + (tuple(args) if every else tuple(a[active] for a in args))
        stop_time = stops.times[stop[active]]
        target = mode.target(active, ta, stop_time, t_out, following)
        step = np.minimum(h[active], target - ta)
        clipped = step >= target - ta
        with np.errstate(all="ignore"):
            t_new = np.where(clipped, target, ta + step)
            y_new, f_new, err, Ka, lam, cost = _step(f, mode, active, ta, ya, fa,
                                                     step, t_new, arga, K, atol, rtol,
                                                     dims, rejected[active])
            ratio = step / last_h[active]
            predicted = np.where(last_err[active] > 0,
                                 last_err[active] * power(ratio, -1 / ERROR_EXPONENT), 0.0)
        nfev += cost
        finite = (np.all(np.isfinite(y_new), axis=1) & np.all(np.isfinite(f_new), axis=1)
                  & np.isfinite(err))
        accept, factor = step_factor(err, finite, rejected[active], predicted,
                                     mode.exponent(active))
        new_h = step * factor
        # A step shortened to land on a stop does not shrink the next proposal.
        new_h = np.where(accept & clipped, np.maximum(new_h, h[active]), new_h)
        rejected[active] = ~accept
        ex = mode.explicit
        keep = accept & ~clipped & (ex if isinstance(ex, np.ndarray) else True)
        last_err[active[keep]], last_h[active[keep]] = err[keep], step[keep]

        idx = active[accept]
        nfev += _serve(f, t_out, out, following, project, accept[ex], active[ex][accept[ex]],
                       ta[ex], ya[ex], step[ex], t_new[ex], y_new[ex],
                       tuple(a[ex] for a in arga), Ka)
        _serve_ends(t_out, out, following, project, idx, t_new[accept], y_new[accept])
        if project is not None and idx.size:
            y_new[accept] = project(y_new[accept])
        t[idx] = t_new[accept]
        y[idx], fy[idx] = y_new[accept], f_new[accept]
        on_stop = accept & clipped & (t_new == stop_time)
        nfev += _land(f, args, stops, active[on_stop], stop, t, y, fy, last_err)
        mode.renew(active[on_stop])
        mode.switch(active, accept & ~clipped, step, new_h, last_err, lam)
        if refresh is not None:
            accepted[idx] += 1
            due = idx[accepted[idx] % REFRESH_STEPS == 0]
            if due.size:
                rows = y[due]
                changed, dims[due] = refresh(due, rows)
                y[due[changed]] = rows[changed]
                mode.renew(due[changed])
                nfev += _restart(f, args, stops, due[changed], t, y, fy, last_err)
        h[active] = new_h
        nsteps[active] += 1
        too_small = new_h < MIN_RELATIVE_STEP * np.maximum(1.0, np.abs(ta))
        failed[active[too_small & ~accept]] = True
        failed[active[nsteps[active] >= max_steps]] = True
        active = active[(stop[active] < len(stops.times)) & ~failed[active]]
    if failed.any():
        m = int(np.flatnonzero(failed)[0])
        why = ("step size fell below 1e-14 t (non-finite or stiff right-hand side)"
               if nsteps[m] < max_steps else f"more than {max_steps} steps")
        return BatchSolution(out.y, nfev, nsteps, False,
                             f"integration failed for {failed.sum()} member(s), "
                             f"first #{m} at t = {t[m]:.6g}: {why}", mode.stiff_steps)
    return BatchSolution(out.y, nfev, nsteps, True, "integration successful",
                         mode.stiff_steps)


def _step(f, mode, active, ta, ya, fa, step, t_new, arga, K, atol, rtol, dims,
          after_rejection):
    """One step of every active member: DOP853 for the explicit ones (and
    Hairer's :math:`h\\lambda` of each, for the switch), ROS34PW2 for the
    stiff ones. Returns ``y_new``, ``f(t_new, y_new)``, the error norms, the
    DOP853 stages, :math:`h\\lambda` and the evaluations spent."""
    every = isinstance(mode.explicit, slice)
    e = mode.explicit if every else np.flatnonzero(mode.explicit)
    s = np.arange(0) if every else np.flatnonzero(~mode.explicit)
    y_new, f_new = np.empty_like(ya), np.empty_like(ya)
    err, lam = np.empty(len(active)), np.zeros(len(active))
    Ka, cost = K[:, : len(active) - s.size], 0
    if len(active) - s.size:
        sub = tuple(a[e] for a in arga)
        y_new[e] = dop853_step(f, ta[e], ya[e], fa[e], step[e], t_new[e], sub, Ka)
        f_new[e] = Ka[_S]
        scale = atol[active[e]] + rtol * np.maximum(np.abs(ya[e]), np.abs(y_new[e]))
        err[e] = error_norm(Ka, step[e], scale, dims[active[e]])
        if mode.enabled:        # y_last: the last stage's point, also at t + h
            y_last = ya[e] + step[e][:, None] * _combine(dop853.A[_S - 1, : _S - 1], Ka)
            lam[e] = step[e] * np.sqrt(_sq(Ka[_S] - Ka[_S - 1]) / _sq(y_new[e] - y_last))
        cost += _S
    if s.size:
        y_new[s], err[s], f_new[s], c = mode.stiff_step(
            f, active[s], ta[s], ya[s], fa[s], step[s], t_new[s], tuple(a[s] for a in arga),
            atol[active[s]], rtol, dims[active[s]], after_rejection[s])
        cost += c
    return y_new, f_new, err, Ka, lam, cost


def _sq(x):
    return np.einsum("mi,mi->m", x, x)


def _serve(f, t_out, out, following, project, accept, idx, ta, ya, step, t_new, y_new,
           arga, Ka):
    """Save the outputs strictly inside the accepted DOP853 steps, from the
    continuous extension. Returns the evaluations spent (3 when some step has
    an output inside)."""
    pos = np.flatnonzero(accept)
    nxt = following[idx]
    pending = nxt < len(t_out)
    inside = pending & (t_out[np.minimum(nxt, len(t_out) - 1)] < t_new[pos])
    if not inside.any():
        return 0
    p, m = pos[inside], idx[inside]
    Kp = Ka[:, p]
    with np.errstate(all="ignore"):
        F = dense_coefficients(f, ta[p], ya[p], step[p], y_new[p],
                               tuple(a[p] for a in arga), Kp)
    first = following[m]
    count = np.searchsorted(t_out, t_new[p], side="left") - first
    row = np.repeat(np.arange(len(p)), count)           # one row per output
    k = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
    x = (t_out[k] - ta[p][row]) / step[p][row]
    rows = interpolate([c[row] for c in F], ya[p][row], x)
    out.save(m[row], k, rows if project is None else project(rows))
    following[m] += count
    return 3


def _serve_ends(t_out, out, following, project, idx, t_new, y_new):
    """Save ``y_new`` of the accepted steps that end on an output time."""
    nxt = following[idx]
    ends = (nxt < len(t_out)) & (t_out[np.minimum(nxt, len(t_out) - 1)] == t_new)
    if ends.any():
        rows = y_new[ends]
        out.save(idx[ends], nxt[ends], rows if project is None else project(rows))
        following[idx[ends]] += 1


def _land(f, args, stops, landed, stop, t, y, fy, last_err):
    """Members ``landed`` on their next stop move on to the next one; after a
    breakpoint the stages restart. Returns the evaluations spent."""
    if not landed.size:
        return 0
    k = stop[landed]
    stop[landed] += 1
    # new phase: no first-same-as-last reuse, and no error prediction across it
    return _restart(f, args, stops, landed[stops.is_break[k]], t, y, fy, last_err)


def _restart(f, args, stops, members, t, y, fy, last_err):
    """A new right-hand side for ``members``: evaluate their first stage anew."""
    if not members.size:
        return 0
    fy[members] = f(t[members], y[members], stops.phase(t[members]),
                    *(a[members] for a in args))
    last_err[members] = 0.0
    return 1
