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

from .checks import finite_array, integer, output_times
from .compile import stable_system
from .equiangular import check_attention
from .schemes import scheme as get_scheme


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
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if not (np.isfinite(tol) and 0 < tol < 1):
            raise ValueError(f"{name} must lie in (0, 1), got {tol!r}")
    if s.sphere_until > 0:
        r0 = np.ones_like(r0)
    system = stable_system(s, attention)
    if dps is not None:
        return _solve_mp(system, times, n, beta, gamma0, r0, integer(dps, "dps", 15))
    return _solve_float(system, times, n, beta, gamma0, r0, rtol, atol)


def _solve_float(system, times, n, beta, gamma0, r0, rtol, atol):
    from .integrate import integrate

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

    def rhs(tt, y, phase, nk, bk, fixed, cluster):
        eps = np.where(cluster, 0.0, np.exp(y[:, 0]))
        out = np.empty_like(y)
        for i, (f_u, f_r) in enumerate(phases):
            sel = slice(None) if len(phases) == 1 else phase == i
            if len(phases) > 1 and not sel.any():
                continue
            args = (tt[sel], eps[sel], y[sel, 1], nk[sel], bk[sel])
            out[sel, 0] = np.where(fixed[sel], 0.0, f_u(*args))
            out[sel, 1] = f_r(*args)
        return out

    y0 = np.stack([u0, rr], axis=1)
    with np.errstate(all="ignore"):
        start = rhs(np.zeros_like(nn), y0, np.zeros(len(nn), dtype=int), nn, bb,
                    frozen, at_cluster)
    singular = ~np.all(np.isfinite(start), axis=1)
    if singular.any():
        i = int(np.flatnonzero(singular)[0])
        raise ValueError(f"gamma0, beta: the vector field of {system.scheme.name} is "
                         f"not finite at gamma0 = {g0[i]}, n = {nn[i]}, beta = {bb[i]} "
                         f"(A_k = 0 at the regular simplex with beta = 0; or e^beta "
                         f"overflows a float under the unnormalized kernel: "
                         f"beta < 700, or use dps=)")
    sol = integrate(rhs, times, y0, (nn, bb, frozen, at_cluster),
                    rtol=[_U_RTOL, rtol], atol=np.stack([_u_atol(eps0, nn, rtol),
                                                          np.full_like(nn, atol)], axis=1),
                    breakpoints=system.breakpoints)
    if not sol.success:
        raise ArithmeticError(f"solve: {sol.message}")
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
        raise ArithmeticError("solve: non-finite values in the solution; "
                              "for the unnormalized kernel e^beta must fit a float "
                              "(beta < 700), or use dps=")
    out = [x.reshape(shape + (len(times),)) for x in (1 - eps, eps, u, gamma_dot, r)]
    return Trajectory(times, *out, n, beta, gamma0, r0, sol.nfev, sol.message)


def _solve_mp(system, times, n, beta, gamma0, r0, dps):
    from .extrapolation import integrate_mp

    phases = system.phases("mpmath")
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
