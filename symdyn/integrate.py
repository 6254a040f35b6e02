"""A batch of ODEs integrated as one vectorized system, each with its own steps.

The Dormand-Prince 8(5,3) pair (Hairer, Norsett, Wanner, *Solving ODEs I*,
section II.10; the coefficients of ``scipy.integrate.DOP853``) advances every
member of the batch by one array operation per stage. Unlike handing the
stacked system to ``solve_ivp``, every member keeps its own step size and its
own error test (no averaging of errors across members), so a member's result
is what a scalar solve with the same tolerances would give, whatever else is
in the batch.

Procedure per sweep over the unfinished members:

1. clip each step so it ends exactly on the member's next stop (an output
   time or a breakpoint where the right-hand side has a kink);
2. take the 12-stage step, estimate the error with the embedded 5th and 3rd
   order solutions, :math:`\\mathrm{err} \\le 1` in the weighted norm
   (``scale = atol + rtol*|y|``) accepts;
3. rescale the step by :math:`0.9\\,\\mathrm{err}^{-1/8}`, clipped to
   ``[0.2, 10]``; a non-finite stage counts as a rejection.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate._ivp import dop853_coefficients as _dop

_S = _dop.N_STAGES
_A, _B, _C = _dop.A[:_S, :_S], _dop.B, _dop.C[:_S]
_E3, _E5 = _dop.E3, _dop.E5


@dataclass
class BatchSolution:
    """``y[m, k, :]``: member ``m`` at output time ``k``."""

    y: np.ndarray
    nfev: int
    nsteps: np.ndarray
    success: bool
    message: str


def _combine(weights, K):
    """sum_j weights[j] * K[j], in a fixed order: a member's result does not
    depend on the batch it is computed in (unlike a BLAS reduction)."""
    total = weights[0] * K[0]
    for j in range(1, len(weights)):
        if weights[j] != 0:
            total = total + weights[j] * K[j]
    return total


def _rms(x):
    return np.sqrt(np.mean(x * x, axis=-1))


def integrate(f, t_out, y0, args=(), *, rtol, atol, breakpoints=(),
              max_steps=200_000, project=None, record=None) -> BatchSolution:
    """Integrate ``dy/dt = f(t, y, *args)`` from ``t = 0`` for every member.

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
    args : tuple of arrays of shape (M,)
    rtol : array-like of shape (dim,)
        Per-component relative tolerances.
    atol : array-like of shape (dim,) or (M, dim)
        Absolute tolerances, per component or per member and component.
    breakpoints : sequence of float
        Times where ``f`` changes its law: every member ends a step there
        and the next step starts with a fresh evaluation in the new phase.
    project : callable, optional
        ``project(y)`` maps accepted states back onto a manifold (e.g.
        renormalizes directions on the sphere).
    record : callable, optional
        ``record(k, members, y)`` receives the states of ``members`` at output
        time ``k`` instead of storing them (then ``BatchSolution.y`` is None).
    """
    t_out = np.asarray(t_out, dtype=float)
    y0 = np.asarray(y0, dtype=float)
    M, dim = y0.shape
    rtol = np.broadcast_to(np.asarray(rtol, float), (dim,))
    atol = np.broadcast_to(np.asarray(atol, float), (M, dim))
    bps = np.array(sorted(b for b in breakpoints if 0 < b < t_out[-1]), dtype=float)
    stops = np.union1d(t_out[t_out > 0], bps)
    is_break = np.isin(stops, bps)
    is_output = np.isin(stops, t_out)
    out_index = np.searchsorted(t_out, stops)
    Y = None if record is not None else np.full((M, len(t_out), dim), np.nan)

    def save(members, k_out, rows):
        if record is None:
            Y[members, k_out] = rows
        else:
            for k in np.unique(k_out):
                sel = k_out == k
                record(int(k), members[sel], rows[sel])

    if t_out[0] == 0:
        save(np.arange(M), np.zeros(M, dtype=int), y0)

    t = np.zeros(M)
    y = y0.copy()
    nfev = 0
    def phase_of(tt):
        return np.searchsorted(bps, tt, side="right")

    fy = f(t, y, phase_of(t), *args)
    nfev += 1
    # Initial step (Hairer et al. II.4, as in scipy's select_initial_step).
    with np.errstate(all="ignore"):
        scale = atol + rtol * np.abs(y)
        d0, d1 = _rms(y / scale), _rms(fy / scale)
        h0 = np.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6,
                      0.01 * d0 / np.maximum(d1, 1e-300))
        h0 = np.minimum(h0, t_out[-1])
        f1 = f(t + h0, y + h0[:, None] * fy, phase_of(t), *args)
        nfev += 1
        d2 = _rms((f1 - fy) / scale) / h0
        big = np.maximum(d1, d2)
        h1 = np.where(big <= 1e-15, np.maximum(1e-6, h0 * 1e-3),
                      (0.01 / np.maximum(big, 1e-300)) ** (1 / 8))
        h = np.minimum(100 * h0, h1)
    h = np.where(np.isfinite(h) & (h > 0), h, 1e-6)

    stop = np.zeros(M, dtype=int)
    nsteps = np.zeros(M, dtype=int)
    failed = np.zeros(M, dtype=bool)
    active = np.arange(M) if len(stops) else np.arange(0)
    K = np.empty((_S + 1, M, dim))
    while active.size:
        ta, ya, fa = t[active], y[active], fy[active]
        arga = (phase_of(ta),) + tuple(a[active] for a in args)
        target = stops[stop[active]]
        hp = h[active]
        step = np.minimum(hp, target - ta)
        clipped = step >= target - ta
        Ka = K[:, : active.size]
        Ka[0] = fa
        with np.errstate(all="ignore"):
            for s in range(1, _S):
                Ka[s] = f(ta + _C[s] * step, ya + step[:, None] * _combine(_A[s, :s], Ka),
                          *arga)
            y_new = ya + step[:, None] * _combine(_B, Ka)
            t_new = np.where(clipped, target, ta + step)
            f_new = f(t_new, y_new, *arga)
            Ka[_S] = f_new
            nfev += _S
            scale = atol[active] + rtol * np.maximum(np.abs(ya), np.abs(y_new))
            e5 = _combine(_E5, Ka) / scale
            e3 = _combine(_E3, Ka) / scale
            n5, n3 = np.sum(e5 * e5, axis=1), np.sum(e3 * e3, axis=1)
            denom = np.sqrt((n5 + 0.01 * n3) * dim)
            err = np.where(n5 == 0, 0.0, step * n5 / np.where(denom > 0, denom, 1))
        finite = (np.all(np.isfinite(y_new), axis=1) & np.all(np.isfinite(f_new), axis=1)
                  & np.isfinite(err))
        accept = finite & (err <= 1)
        with np.errstate(divide="ignore"):
            factor = np.clip(0.9 * np.where(err > 0, err, 1e-300) ** (-1 / 8), 0.2, 10)
        factor = np.where(finite, np.where(accept, factor, np.minimum(factor, 1)), 0.2)
        new_h = step * factor
        # A step shortened to land on a stop does not shrink the next proposal.
        new_h = np.where(accept & clipped, np.maximum(new_h, hp), new_h)

        idx = active[accept]
        if project is not None and idx.size:
            y_new[accept] = project(y_new[accept])
        t[idx], y[idx], fy[idx] = t_new[accept], y_new[accept], f_new[accept]
        nsteps[active] += 1
        landed = idx[clipped[accept]]
        if landed.size:
            k = stop[landed]
            record_rows = landed[is_output[k]]
            save(record_rows, out_index[k[is_output[k]]], y[record_rows])
            stop[landed] += 1
            crossed = landed[is_break[k]]
            if crossed.size:          # new phase: no first-same-as-last reuse
                fy[crossed] = f(t[crossed], y[crossed], phase_of(t[crossed]),
                                *(a[crossed] for a in args))
                nfev += 1
        h[active] = new_h
        too_small = new_h < 1e-14 * np.maximum(1.0, np.abs(ta))
        failed[active[too_small & ~accept]] = True
        failed[active[nsteps[active] >= max_steps]] = True
        active = active[(stop[active] < len(stops)) & ~failed[active]]
    if failed.any():
        m = int(np.flatnonzero(failed)[0])
        why = ("step size fell below 1e-14 t (non-finite or stiff right-hand side)"
               if nsteps[m] < max_steps else f"more than {max_steps} steps")
        return BatchSolution(Y, nfev, nsteps, False,
                             f"integration failed for {failed.sum()} member(s), "
                             f"first #{m} at t = {t[m]:.6g}: {why}")
    return BatchSolution(Y, nfev, nsteps, True, "integration successful")
