"""Numeric solutions of the reduced ODE: batched floats, or mpmath digits.

``solve`` integrates :math:`u = \\log(1-\\gamma)` and ``r`` with the stable
compiled right-hand sides of :mod:`symdyn.compile`:

* ``dps=None``: the whole batch (``n, beta, gamma0, r0`` broadcast together)
  as one vectorized system, each member with its own adaptive steps
  (:mod:`symdyn.integrate`); :math:`1-\\gamma` keeps its relative precision
  far below ``1e-16`` because its logarithm is what is integrated;
* ``dps=D``: every member with mpmath at ``D`` digits by extrapolation
  (:mod:`symdyn.extrapolation`); arrays of ``mpmath.mpf`` come back.

Tokens of schemes that renormalize at ``t = 0`` (post-ln, mix-ln, the
on-sphere schemes) start at ``r = 1`` whatever ``r0`` says.
"""

from __future__ import annotations

from dataclasses import dataclass

import mpmath
import numpy as np

from .checks import check_attention, finite_array, integer, output_times
from .compile import stable_system
from .extrapolation import integrate_mp
from .integrate import integrate
from .schemes import scheme as get_scheme
from .symbols import beta as b_sym
from .symbols import n as n_sym
from .symbols import t as t_sym


@dataclass(frozen=True)
class Trajectory:
    """The solution of the reduced ODE; batch axes first, time last.

    Attributes
    ----------
    t : ndarray, shape (K,)
    gamma, epsilon, log_epsilon, gamma_dot, r : ndarray, shape batch + (K,)
        :math:`\\gamma`, :math:`\\varepsilon = 1-\\gamma`, its logarithm,
        :math:`\\dot\\gamma` and the token norm. ``dtype=object`` (mpmath
        numbers) when solved with ``dps``.
    n, beta, gamma0, r0 : ndarray, shape batch
        The parameters, broadcast.
    nfev : int
        Right-hand-side evaluations (vectorized calls count once).
    message : str
    """

    t: np.ndarray
    gamma: np.ndarray
    epsilon: np.ndarray
    log_epsilon: np.ndarray
    gamma_dot: np.ndarray
    r: np.ndarray
    n: np.ndarray
    beta: np.ndarray
    gamma0: np.ndarray
    r0: np.ndarray
    nfev: int
    message: str
    success: bool = True


# u = log(epsilon) is held to an absolute error rtol (a relative error of
# epsilon), but no float holds u to better than a few ulps of |u|.
# mpmath digits: dps = 80 answers in seconds (Pre-LN to t = 10: 6 s; dps = 100
# took 70 s), and covers the unnormalized kernel to beta of about 150.
MAX_DPS = 80
_U_RTOL = 100 * np.finfo(float).eps


def _u_atol(eps0, n, rtol):
    """Absolute tolerance of u = log(epsilon), per member.

    The rate of u carries the factor delta = 1 + (n-1) gamma = n - (n-1) eps,
    which is small near the regular simplex; an error du moves delta by
    (n-1) eps du. Holding du to rtol * delta0 / ((n-1) eps0) keeps delta's
    relative error at rtol (delta only grows, eps only shrinks). Below the
    floor rtol * 1e-7 (starts within about 1e-7 (n-1) of the simplex) the
    error may exceed rtol; closer still, solve holds the start at the simplex.
    """
    delta0 = np.abs(n - (n - 1) * eps0)
    ratio = delta0 / np.maximum((n - 1) * eps0, 1e-300)
    return rtol * np.clip(ratio, 1e-7, 1.0)


def _parameters(n, beta, gamma0, r0):
    n = finite_array(n, "n", 2.0)
    beta = finite_array(beta, "beta", 0.0)
    gamma0 = finite_array(gamma0, "gamma0")
    r0 = finite_array(r0, "r0", 0.0, low_open=True)
    try:
        n, beta, gamma0, r0 = np.broadcast_arrays(n, beta, gamma0, r0)
    except ValueError:
        raise ValueError(f"n, beta, gamma0, r0: shapes {np.shape(n)}, "
                         f"{np.shape(beta)}, {np.shape(gamma0)}, {np.shape(r0)} "
                         f"do not broadcast") from None
    lower = -1 / (n - 1)
    bad = (gamma0 > 1) | (gamma0 < lower)
    if np.any(bad):
        i = np.flatnonzero(bad.ravel())[0]
        raise ValueError(f"gamma0 must lie in [-1/(n-1), 1]; got gamma0 = "
                         f"{gamma0.ravel()[i]!r} with n = {n.ravel()[i]!r}")
    return n, beta, gamma0, r0


def solve(scheme, n, beta, gamma0, r0=1.0, t=(0.0, 1.0), attention="softmax", *,
          rtol=1e-11, atol=1e-12, dps=None) -> Trajectory:
    """Solve the reduced ODE of ``scheme`` from equiangular starts.

    Parameters
    ----------
    scheme : str or Scheme
    n, beta, gamma0, r0 : float or array
        Number of tokens (>= 2), inverse temperature (>= 0), starting cosine
        similarity (in ``[-1/(n-1), 1]``) and token norm (> 0); they broadcast.
    t : float or 1-D array
        Output times, ``>= 0`` and strictly increasing; the start is ``t = 0``.
    attention : {"softmax", "unnormalized"}
    rtol, atol : float
        Per step: ``rtol`` bounds the relative error of ``1 - gamma`` (the
        absolute error of its logarithm) and, with ``atol``, that of ``r``.
    dps : int, optional
        Solve with mpmath at this many digits (>= 15) instead of floats.

    Returns
    -------
    Trajectory

    Examples
    --------
    >>> import symdyn as sd
    >>> tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[0, 300])
    >>> float(tr.log_epsilon[-1])        # 1 - gamma ~ C exp(-2 t), far below 1e-16
    -597.49...
    >>> tr = sd.solve("pre-ln", n=[4, 64], beta=1.0, gamma0=0.0, t=[1, 10])
    >>> tr.gamma.shape
    (2, 2)
    """
    s = get_scheme(scheme)
    check_attention(attention)
    times = output_times(t)
    n, beta, gamma0, r0 = _parameters(n, beta, gamma0, r0)
    rtol, atol = _tolerance(rtol, "rtol"), _tolerance(atol, "atol")
    if dps is not None:
        dps = integer(dps, "dps", 15)
        if dps > MAX_DPS:
            raise ValueError(f"dps must be an integer in [15, {MAX_DPS}], got {dps}")
    if s.starts_on_sphere:
        r0 = np.ones_like(r0)
    system = stable_system(s, attention)
    _check_time_law(system, times, n, beta)
    if dps is not None:
        return _solve_mp(system, times, n, beta, gamma0, r0, dps)
    return _solve_float(system, times, n, beta, gamma0, r0, rtol, atol)


def _tolerance(value, name):
    try:
        tol = finite_array(value, name)
    except ValueError:
        tol = None
    if tol is None or tol.ndim != 0 or not 0 < tol < 1:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(tol)


def _law_fault(system, what, value, tt, nk, bk):
    """The error for a speed <= 0 (or not finite), or r <= 0, along a trajectory."""
    s = system.scheme
    if what == "radial":
        return ValueError(f"radial: the radial law dr/dt = {s.radial} of {s.name} "
                          f"drives r to {value:.3g} at t = {tt:.6g} (n = {nk:g}, "
                          f"beta = {bk:g}); r must stay > 0")
    return ValueError(f"speed: the speed law s = {s.speed} of {s.name} is {value:.3g} "
                      f"at t = {tt:.6g} (n = {nk:g}, beta = {bk:g}); it must be "
                      f"positive and finite along the trajectory")


# Under the unnormalized kernel gamma closes in on 1 within a time of order
# e^-beta (the rate of log(1 - gamma) grows to ~2 e^beta / s): floats resolve
# that for beta up to about 30 (the integrator's smallest step is 1e-14);
# mpmath at D digits resolves e^-beta > 10^-D.
_UNNORMALIZED = ("under the unnormalized kernel gamma reaches 1 within a time of "
                 "order e^-beta, which floats resolve for beta up to about 30: "
                 f"use dps= (beta/2 digits or more, at most {MAX_DPS})")


def _fault(system, f_norm, state, start, nk, bk):
    """Name the cause of a non-finite field (or a stalled member) at ``state``:
    ``(t, epsilon, r, speed)``; ``start``: the same at t = 0. None if unknown."""
    tt, eps, r, speed = state
    if not r > 1e-8 * start[2]:           # r <= 0, or stalled on its way there
        return _law_fault(system, "radial", r, tt, nk, bk)
    with np.errstate(all="ignore"):
        norm = float(f_norm(tt, eps, r, nk, bk))
    where = f"at t = {tt:.6g}, gamma = {float(1 - eps)!r}, n = {nk:g}, beta = {bk:g}"
    if norm == 0:
        return ValueError(f"gamma0, beta: A_k = 0 {where} (the regular simplex with "
                          f"beta = 0), and {system.scheme.name} divides by |A_k|")
    if np.isnan(norm):
        return ValueError(f"n, gamma0: |A_k|^2, a sum of O(n) terms that cancels to O(1) "
                          f"next to the regular simplex gamma = -1/(n-1), rounds below 0 "
                          f"in floats {where}; use dps= or start farther from the simplex")
    if not np.isfinite(norm):
        return ValueError(f"beta: e^beta overflows a float {where} under the "
                          f"unnormalized kernel (beta < 709); use dps=")
    if not speed > 1e-8 * start[3]:       # <= 0, not finite, or stalled toward 0
        return _law_fault(system, "speed", speed, tt, nk, bk)
    return None


def _check_time_law(system, times, n, beta):
    """A speed law in t, n, beta only is checked on [0, t_max] before solving:
    its first non-positive or non-finite value, located by bisection."""
    if not system.speed.free_symbols <= {t_sym, n_sym, b_sym}:
        return
    T = times[-1]
    grid = np.unique(np.concatenate([[0.0], np.linspace(0, T, 1025), times,
                                     np.geomspace(T * 1e-12, T, 1025) if T > 0 else []]))
    pairs = np.unique(np.stack([np.ravel(n), np.ravel(beta)], axis=1), axis=0)
    if not system.speed.has(n_sym, b_sym):       # a law of t alone: one pair decides
        pairs = pairs[:1]
    breaks = np.concatenate([[0.0], system.breakpoints])
    laws = system.laws("numpy")

    def bad(tt, nk, bk):
        tt = np.atleast_1d(tt)
        phase = np.searchsorted(breaks, tt, side="right") - 1
        val = np.empty(len(tt))
        with np.errstate(all="ignore"):
            for p in np.unique(phase):
                val[phase == p] = laws[p][0](tt[phase == p], 1.0, 1.0, nk, bk)
        return ~(val > 0), val              # +inf passes: 1/s = 0

    for nk, bk in pairs:
        flags, val = bad(grid, nk, bk)
        if not flags.any():
            continue
        k = int(np.argmax(flags))
        if k > 0:                      # bisect between the last good and first bad time
            lo, hi = grid[k - 1], grid[k]
            for _ in range(60):
                mid = (lo + hi) / 2
                if mid in (lo, hi):
                    break
                lo, hi = (lo, mid) if bad(mid, nk, bk)[0][0] else (mid, hi)
            grid[k], val[k] = hi, bad(hi, nk, bk)[1][0]
        raise _law_fault(system, "speed", val[k], grid[k], nk, bk)


def _solve_float(system, times, n, beta, gamma0, r0, rtol, atol):

    phases = system.phases("numpy")
    shape = n.shape
    nn, bb, g0, rr = (np.ravel(x).astype(float) for x in (n, beta, gamma0, r0))
    eps0 = 1.0 - g0
    at_cluster = eps0 <= 0          # gamma0 = 1: epsilon stays 0 (u = -oo)
    # The regular simplex, 1 + (n-1) gamma0 = 0, is an equilibrium too; a
    # start within rounding of it cannot be told from it in floats (and its
    # rounding could push gamma below -1/(n-1)), so it is held there as well.
    frozen = at_cluster | (np.abs(1 + (nn - 1) * g0) <= 64 * np.finfo(float).eps * nn)
    u0 = np.log(np.where(at_cluster, 1.0, eps0))

    laws = system.laws("numpy")
    # Per member: the last state evaluated, or the first one where the speed
    # is not positive and finite or r <= 0 (such states are refused).
    seen = np.zeros((4, len(nn)))
    found = np.zeros(len(nn), dtype=bool)
    # A law positive by its symbols' signs (r, A_norm > 0: every built-in) needs
    # no evaluation in the hot loop; the others are checked at every state.
    check_speed = not system.scheme.speed.is_positive

    def rhs(tt, y, phase, nk, bk, fixed, cluster, member):
        eps = np.where(cluster, 0.0, np.exp(y[:, 0]))
        out = np.empty_like(y)
        speed = np.empty(len(tt)) if check_speed else np.ones(len(tt))
        for i, ((f_u, f_r), (f_s, _)) in enumerate(zip(phases, laws, strict=True)):
            sel = slice(None) if len(phases) == 1 else phase == i
            if len(phases) > 1 and not sel.any():
                continue
            args = (tt[sel], eps[sel], y[sel, 1], nk[sel], bk[sel])
            out[sel, 0] = np.where(fixed[sel], 0.0, f_u(*args))
            out[sel, 1] = f_r(*args)
            if check_speed:
                speed[sel] = f_s(*args)
        bad = ~((y[:, 1] > 0) & np.isfinite(speed) & (speed > 0))
        out[bad] = np.nan
        keep = ~found[member] | (bad & (tt < seen[0, member]))
        seen[:, member[keep]] = np.stack([tt, eps, y[:, 1], speed])[:, keep]
        found[member[bad & keep]] = True
        return out

    y0 = np.stack([u0, rr], axis=1)
    args = (nn, bb, frozen, at_cluster, np.arange(len(nn)))
    with np.errstate(all="ignore"):
        start = rhs(np.zeros_like(nn), y0, np.zeros(len(nn), dtype=int), *args)
    first = seen.copy()
    singular = ~np.all(np.isfinite(start), axis=1)
    if singular.any():
        i = int(np.flatnonzero(singular)[0])
        raise (_fault(system, laws[0][1], first[:, i], first[:, i], nn[i], bb[i])
               or ValueError(f"gamma0, n, beta: the vector field of {system.scheme.name} "
                             f"is not finite at gamma0 = {g0[i]!r}, n = {nn[i]:g}, "
                             f"beta = {bb[i]:g}"))
    found[:] = False
    sol = integrate(rhs, times, y0, args,
                    rtol=[_U_RTOL, rtol], atol=np.stack([_u_atol(eps0, nn, rtol),
                                                          np.full_like(nn, atol)], axis=1),
                    breakpoints=system.breakpoints)
    if not sol.success:
        i = int(np.flatnonzero(~np.isfinite(sol.y[:, -1]).all(axis=1))[0])
        phase = int(np.searchsorted(system.breakpoints, seen[0, i], side="left"))
        raise (_fault(system, laws[phase][1], seen[:, i], first[:, i], nn[i], bb[i])
               or ArithmeticError(f"solve: {sol.message}"
                                  + (f"; {_UNNORMALIZED}" if system.attention
                                     == "unnormalized" else "")))
    u = np.where(at_cluster[:, None], -np.inf, sol.y[:, :, 0])
    r = sol.y[:, :, 1]
    eps = np.exp(u)
    phase = np.searchsorted(system.breakpoints, times, side="left")  # left limits
    rate = np.empty_like(eps)
    with np.errstate(invalid="ignore"):
        for k, tk in enumerate(times):
            f_u = phases[phase[k]][0]
            rate[:, k] = f_u(tk, eps[:, k], r[:, k], nn, bb)
    gamma_dot = np.where(frozen[:, None], 0.0, -eps * rate)
    if not (np.all(np.isfinite(gamma_dot)) and np.all(np.isfinite(r))):
        raise ArithmeticError("solve: non-finite values in the solution"
                              + (f"; {_UNNORMALIZED}"
                                 if system.attention == "unnormalized" else ""))
    out = [x.reshape(shape + (len(times),)) for x in (1 - eps, eps, u, gamma_dot, r)]
    return Trajectory(times, *out, n, beta, gamma0, r0, sol.nfev, sol.message)


def _solve_mp(system, times, n, beta, gamma0, r0, dps):

    phases = system.phases("mpmath")
    laws = system.laws("mpmath")
    bps = system.breakpoints
    K = len(times)
    res = {k: np.empty(n.shape + (K,), dtype=object)
           for k in ("gamma", "epsilon", "log_epsilon", "gamma_dot", "r")}
    zero = mpmath.mpf(0)
    with mpmath.workdps(dps):
        for idx in np.ndindex(n.shape):
            nk, bk = mpmath.mpf(n[idx]), mpmath.mpf(beta[idx])
            eps0 = 1 - mpmath.mpf(gamma0[idx])
            cluster = eps0 == 0
            fixed = cluster or eps0 + nk * (1 - eps0) <= 0   # equilibria

            def rhs(tt, y, phase, nk=nk, bk=bk, cluster=cluster, fixed=fixed):
                f_u, f_r = phases[phase]
                eps = zero if cluster else mpmath.exp(y[0])
                # no state has r <= 0 or a speed <= 0 (evaluated first: it may be
                # a division by zero)
                speed = laws[phase][0](tt, eps, y[1], nk, bk) if y[1] > 0 else None
                if speed is None or not (mpmath.isfinite(speed) and speed > 0):
                    raise _law_fault(system, "speed" if speed else "radial",
                                     float(y[1] if speed is None else speed), float(tt),
                                     float(nk), float(bk))
                return [zero if fixed else f_u(tt, eps, y[1], nk, bk),
                        f_r(tt, eps, y[1], nk, bk)]

            u0 = zero if cluster else mpmath.log(eps0)
            try:
                states = integrate_mp(rhs, times, [u0, mpmath.mpf(r0[idx])], dps, bps)
            except ArithmeticError as exc:
                raise ArithmeticError(f"solve: {exc}") from None
            for k, (u, r) in enumerate(states):
                f_u = phases[int(np.searchsorted(bps, times[k], side="left"))][0]
                u = -mpmath.inf if cluster else u
                eps = mpmath.exp(u)
                rate = zero if fixed else f_u(mpmath.mpf(times[k]), eps, r, nk, bk)
                res["log_epsilon"][idx + (k,)] = +u
                res["epsilon"][idx + (k,)] = +eps
                res["gamma"][idx + (k,)] = 1 - eps
                res["gamma_dot"][idx + (k,)] = -eps * rate
                res["r"][idx + (k,)] = +r
    return Trajectory(times, res["gamma"], res["epsilon"], res["log_epsilon"],
                      res["gamma_dot"], res["r"], n, beta, gamma0, r0, 0,
                      f"mpmath extrapolation at {dps} digits")
