"""Numeric solutions of the reduced ODE: batched floats, or mpmath digits.

``solve`` integrates :math:`u = \\log(1-\\gamma)` and ``r`` with the stable
compiled right-hand sides of :mod:`symdyn.reduced.compile`:

* ``dps=None``: the whole batch (``n, beta, gamma0, r0`` broadcast together)
  as one vectorized system, each member with its own adaptive steps
  (:mod:`symdyn.ode.integrate`); :math:`1-\\gamma` keeps its relative precision
  far below ``1e-16`` because its logarithm is what is integrated;
* ``dps=D``: every member with mpmath at ``D`` digits by extrapolation
  (:mod:`symdyn.ode.extrapolation`); arrays of ``mpmath.mpf`` come back.

Tokens of schemes that renormalize at ``t = 0`` (post-ln, mix-ln, the
on-sphere schemes) start at ``r = 1`` whatever ``r0`` says.

Layer 2, reduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mpmath
import numpy as np

from ..base.checks import (
    RTOL_FLOOR,
    check_attention,
    check_gamma0,
    finite_array,
    integer,
    memory,
    output_times,
    shown,
    tolerance,
)
from ..model.display import summary_html, trajectory_rows
from ..model.law_limits import R_UNDERFLOW, check_speed, law_text, underflow
from ..model.registry import Scheme, run_parameters
from ..model.registry import scheme as get_scheme
from ..model.symbols import beta as b_sym
from ..model.symbols import n as n_sym
from ..model.symbols import t as t_sym
from ..ode.extrapolation import integrate_mp
from ..ode.integrate import BatchSolution, initial_step, integrate
from ..ode.scalar import GiveUp, integrate_one
from .compile import stable_system
from .forward_sensitivity import parameter_names, rates, sensitivity


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
        Right-hand-side evaluations (vectorized calls count once); 0 with
        ``dps`` (the extrapolation does not count them).
    message : str
    params : dict of str to ndarray
        The scheme's free parameters (:attr:`Scheme.free`), broadcast.
    sensitivities : dict of str to ndarray, or None
        :math:`\\partial\\gamma/\\partial q` at the output times, shape batch +
        (K,), for each ``q`` asked for (``solve(..., sensitivities=...)``).

    Examples
    --------
    >>> import symdyn as sd
    >>> tr = sd.solve("ngpt", n=[8, 32], beta=1.0, gamma0=0.0, t=[1.0, 2.0])
    >>> tr.gamma.shape, tr.n.tolist()
    ((2, 2), [8.0, 32.0])
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
    params: dict = field(default_factory=dict)
    sensitivities: dict | None = None

    def _repr_html_(self) -> str:
        return summary_html("Trajectory (sd.solve)", trajectory_rows(self), self.t, self.gamma)


# u = log(epsilon) is held to an absolute error rtol (a relative error of
# epsilon), but no float holds u to better than a few ulps of |u|.
# mpmath digits: dps = 80 answers in seconds (Pre-LN to t = 10: 6 s; dps = 100
# took 70 s), and covers the unnormalized kernel to beta of about 150.
MAX_DPS = 80
_U_RTOL = 100 * np.finfo(float).eps
#: Output times of one solve: each costs about 30 us of Python (dense output
#: and the observables: 1e6 times took 31 s), so more are refused.
MAX_TIMES = 100_000


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


def _parameters(s: Scheme, n, beta, gamma0, r0, params: dict):
    """The arguments as float arrays broadcast together: ``n, beta, gamma0, r0``
    and a dict of the scheme's free parameters (defaults where not given)."""
    unknown = set(params) - set(s.defaults)
    if unknown:
        allowed = ", ".join(s.defaults) or "none"
        names = law_text(", ".join(sorted(unknown)), 60)
        raise ValueError(f"{names}: not a parameter of {s.name} (its free parameters: "
                         f"{allowed})")
    values = {k: finite_array(params.get(k, v), k) for k, v in s.defaults.items()}
    named = {"n": finite_array(n, "n", 2.0), "beta": finite_array(beta, "beta", 0.0),
             "gamma0": finite_array(gamma0, "gamma0"),
             "r0": finite_array(r0, "r0", 0.0, low_open=True), **values}
    try:
        arrays = dict(zip(named, np.broadcast_arrays(*named.values()), strict=True))
    except ValueError:
        shapes = ", ".join(str(np.shape(v)) for v in named.values())
        raise ValueError(f"{', '.join(named)}: shapes {shapes} do not broadcast") from None
    check_gamma0(arrays["gamma0"], arrays["n"])
    return [arrays.pop(k) for k in ("n", "beta", "gamma0", "r0")] + [arrays]


def _wrt(s: Scheme, sensitivities):
    """The parameters of ``solve(..., sensitivities=...)``: None, or a tuple
    (names checked here, before anything is derived)."""
    if sensitivities is False or sensitivities is None:
        return None
    if sensitivities is not True and (isinstance(sensitivities, np.ndarray)
                                      or not hasattr(sensitivities, "__iter__")):
        raise ValueError(f"sensitivities: expected True, False or parameter names, "
                         f"got {shown(sensitivities)}")
    return parameter_names(s, None if sensitivities is True else sensitivities)


#: the options of :func:`solve` (a scheme's parameters go in ``params=``)
SOLVE_OPTIONS = ("scheme", "n", "beta", "gamma0", "r0", "t", "attention", "rtol", "atol", "dps",
                 "sensitivities", "params")


def solve(scheme, n, beta, gamma0, r0=1.0, t=(0.0, 1.0), attention="softmax", *,
          rtol=1e-11, atol=1e-12, dps=None, sensitivities=False, params=None,
          **legacy) -> Trajectory:
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
        The error each step may add: ``rtol`` to ``u = log(1 - gamma)`` (a
        relative error of ``1 - gamma``; 100 ulps of ``u`` where ``|u|`` is
        larger than ``rtol / 2e-14``), ``rtol`` relative and ``atol`` absolute
        to ``r``. The error at the end is that of the steps, amplified: an
        error ``du`` made where ``u`` moves slowly is a shift in time, which
        ``u`` carries later as ``du |u'(T)| / |u'(s)|``. So the global error of
        ``u`` is about ``rtol`` for starts that move at once and up to
        ``rtol * max_s |u'(T)/u'(s)|`` for slow ones (near the regular simplex
        at large ``beta``: 1e-8 at ``rtol = 1e-11``, measured against an
        mpmath quadrature in ``tests/test_tolerance.py``).
    dps : int, optional
        Solve with mpmath at this many digits (>= 15) instead of floats.
    sensitivities : bool or sequence of str
        Also integrate the forward sensitivities of :mod:`symdyn.reduced.forward_sensitivity`
        and return :math:`\\partial\\gamma/\\partial q` in
        ``Trajectory.sensitivities``: ``True`` for the scheme's free
        parameters, ``beta`` and ``gamma0``; or names among those, ``n`` and
        ``r0``. Their errors are controlled with the same ``rtol``.
    params : dict of str to float or array, optional
        Values of the scheme's free parameters (``params={"c": 0.5}``, or an
        array: one more batch axis, broadcast with ``n`` etc.); defaults where
        omitted. (Passing them beside the options, ``c=0.5``, is deprecated.)

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
    >>> fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})
    >>> tr = sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1, 3], params={"c": [0.0, 1.0]},
    ...               sensitivities=["c"])
    >>> tr.gamma.shape, tr.sensitivities["c"].shape
    ((2, 2), (2, 2))
    """
    if not isinstance(scheme, (str, Scheme)):
        raise ValueError(f"scheme: expected a name or a Scheme, got {shown(scheme)}")
    s = get_scheme(scheme)
    params = run_parameters(s, params, legacy, "solve", SOLVE_OPTIONS)
    check_attention(attention)
    times = output_times(t, MAX_TIMES, "each costs about 30 us of Python")
    _check_size(s, times, (n, beta, gamma0, r0, *params.values()), sensitivities)
    n, beta, gamma0, r0, params = _parameters(s, n, beta, gamma0, r0, params)
    wrt = _wrt(s, sensitivities)
    rtol, atol = _tolerance(rtol, "rtol"), _tolerance(atol, "atol")
    if dps is not None:
        dps = integer(dps, "dps", 15)
        if dps > MAX_DPS:
            raise ValueError(f"dps must be an integer in [15, {MAX_DPS}], got {dps}")
    if s.starts_on_sphere:
        r0 = np.ones_like(r0)
    system = stable_system(s, attention)
    _check_time_law(system, times, n, beta, params)
    check_speed(s, float(times[-1]), {n_sym: n, b_sym: beta,
                                      **{x: params[x.name] for x in s.symbols}}, "solve")
    sens = None if wrt is None else sensitivity(s, wrt, attention)
    if dps is not None:
        return _solve_mp(system, times, n, beta, gamma0, r0, params, sens, dps)
    tr = _solve_float(system, times, n, beta, gamma0, r0, params, sens, rtol, atol)
    _check_underflow(system, tr)
    return tr


def _check_size(s, times, values, sensitivities):
    """Refuse (:func:`checks.memory`), before anything is broadcast, a batch
    that would not fit: ``values`` (n, beta, gamma0, r0, the parameters)
    broadcast to M members, each integrated with about 40 floats per state
    component and holding its outputs (5, and a state, per output time)."""
    try:
        shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    except (ValueError, TypeError):
        return                  # _parameters names the shapes that do not broadcast
    M, K = math.prod(shape), len(times)
    dim = 2 + 2 * len(_wrt(s, sensitivities) or ())
    memory(8 * M * (40 * dim + K * (dim + 12)),
           f"solve: n, beta, gamma0, r0 and the parameters broadcast to shape {shape} "
           f"({M:,} members) x {K:,} times")


def _check_underflow(system, tr):
    """A solution whose ``r`` fell below :data:`R_UNDERFLOW` reports rounding
    (0 or a subnormal number), not the law's ``r``: refused, naming the first
    output time where it happened."""
    low = ~(np.abs(tr.r) >= R_UNDERFLOW)
    if low.any():
        idx = tuple(np.argwhere(low)[0])
        raise _underflow(system, float(tr.r[idx]), f"by t = {tr.t[idx[-1]]:.6g}",
                         float(tr.n[idx[:-1]]), float(tr.beta[idx[:-1]]))


def _underflow(system, value, when, nk, bk):
    return ValueError(f"radial: {underflow(system.scheme, value, when)} "
                      f"(n = {nk:g}, beta = {bk:g})")


def _tolerance(value, name):
    """rtol in [checks.RTOL_FLOOR, 1), atol in (0, 1)."""
    return tolerance(value, name, RTOL_FLOOR if name == "rtol" else 0.0)


def _law_fault(system, what, value, tt, nk, bk):
    """The error for a speed <= 0 (or not finite), or r <= 0, along a trajectory."""
    s = system.scheme
    if what == "radial" and abs(value) < R_UNDERFLOW:   # stalled at the float's bottom
        return _underflow(system, value, f"at t = {tt:.6g}", nk, bk)
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


def _fault(system, f_norm, state, start, values):
    """Name the cause of a non-finite field (or a stalled member) at ``state``:
    ``(t, epsilon, r, speed)``; ``start``: the same at t = 0; ``values``: the
    member's ``n, beta`` and free parameters. None if unknown."""
    tt, eps, r, speed = state
    nk, bk = values[0], values[1]
    if not r > 1e-8 * start[2]:           # r <= 0, or stalled on its way there
        return _law_fault(system, "radial", r, tt, nk, bk)
    with np.errstate(all="ignore"):
        norm = float(f_norm(tt, eps, r, *values))
    where = f"at t = {tt:.6g}, gamma = {shown(float(1 - eps))}, n = {nk:g}, beta = {bk:g}"
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


def _check_time_law(system, times, n, beta, params):
    """A speed law in t, n, beta and free parameters only is checked on
    [0, t_max] before solving: its first non-positive or non-finite value,
    located by bisection."""
    own = set(system.scheme.symbols)
    if not system.speed.free_symbols <= {t_sym, n_sym, b_sym} | own:
        return
    T = times[-1]
    grid = np.unique(np.concatenate([[0.0], np.linspace(0, T, 1025), times,
                                     np.geomspace(T * 1e-12, T, 1025) if T > 0 else []]))
    used = [system.speed.has(x) for x in (n_sym, b_sym, *system.scheme.symbols)]
    columns = [np.ravel(x) for x in (n, beta, *params.values())]
    # one tuple per distinct value of the symbols the law depends on
    key = np.stack([c if u else np.zeros_like(c) for c, u in zip(columns, used,
                                                                    strict=True)], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    breaks = np.concatenate([[0.0], system.breakpoints])
    laws = system.laws("numpy")

    def bad(tt, member):
        tt = np.atleast_1d(tt)
        phase = np.searchsorted(breaks, tt, side="right") - 1
        val = np.empty(len(tt))
        with np.errstate(all="ignore"):
            for p in np.unique(phase):
                val[phase == p] = laws[p][0](tt[phase == p], 1.0, 1.0, *member)
        return ~(val > 0), val              # +inf passes: 1/s = 0

    for i in first:
        member = [c[i] for c in columns]
        flags, val = bad(grid, member)
        if not flags.any():
            continue
        k = int(np.argmax(flags))
        if k > 0:                      # bisect between the last good and first bad time
            lo, hi = grid[k - 1], grid[k]
            for _ in range(60):
                mid = (lo + hi) / 2
                if mid in (lo, hi):
                    break
                lo, hi = (lo, mid) if bad(mid, member)[0][0] else (mid, hi)
            grid[k], val[k] = hi, bad(hi, member)[1][0]
        raise _law_fault(system, "speed", val[k], grid[k], member[0], member[1])


class _Field:
    """The batched right-hand side of ``(u, r)`` and, with a
    :class:`~symdyn.reduced.forward_sensitivity.Sensitivity`, of ``(sigma_u, sigma_r)`` per
    parameter (state columns ``2 + 2 i, 3 + 2 i``).

    Per member it remembers the last state evaluated, or the first one where
    the speed is not positive and finite or ``r <= 0`` (such states are
    refused with NaN rates): ``seen[:, m] = (t, epsilon, r, speed)``.
    """

    def __init__(self, system, sens, M, fixed, cluster):
        self.phases = system.phases("numpy")
        self.rates = system.rates("numpy")
        self.laws = system.laws("numpy")
        self.sens = None if sens is None else sens.phases("numpy")
        self.seen = np.zeros((4, M))
        self.seen[3] = 1.0
        self.found = np.zeros(M, dtype=bool)
        # A law positive by its symbols' signs (r, A_norm > 0: every built-in)
        # needs no evaluation in the hot loop; the others are checked at every state.
        self.check_speed = not system.scheme.speed.is_positive
        # equilibria held in place: rare, so the common batch skips their masks
        self.any_fixed, self.any_cluster = bool(np.any(fixed)), bool(np.any(cluster))

    def __call__(self, tt, y, phase, fixed, cluster, member, *values):
        u, r = y[:, 0], y[:, 1]
        eps = np.where(cluster, 0.0, np.exp(u)) if self.any_cluster else np.exp(u)
        out = np.empty_like(y)
        speed = np.empty(len(tt)) if self.check_speed else None
        single = len(self.phases) == 1
        for i, (f_rates, (f_s, _)) in enumerate(zip(self.rates, self.laws, strict=True)):
            sel = slice(None) if single else phase == i
            if not single and not sel.any():
                continue
            args = (tt, eps, r, *values) if single else (
                tt[sel], eps[sel], r[sel], *(v[sel] for v in values))
            du, dr = f_rates(*args)
            out[sel, 0] = np.where(fixed[sel], 0.0, du) if self.any_fixed else du
            out[sel, 1] = dr
            if self.check_speed:
                with np.errstate(divide="ignore"):      # A_norm/alpha, alpha = 0: +inf
                    speed[sel] = f_s(*args)
            if self.sens is not None:
                self._sensitivity_rates(out, y, sel, fixed, self.sens[i](*args))
        if self.check_speed:    # +inf passes: 1/s = 0 (nGPT's alpha = 0 at an instant)
            bad = ~((r > 0) & (speed > 0))
        else:
            bad = ~(r > 0)
        if not (bad.any() or self.found.any()):      # the common case: remember, go on
            self.seen[:3, member] = (tt, eps, r)
            if speed is not None:
                self.seen[3, member] = speed
            return out
        speed = np.ones(len(tt)) if speed is None else speed
        out[bad] = np.nan
        # a non-finite state is the echo of an earlier bad rate, not a cause
        cause = bad & np.isfinite(u) & np.isfinite(r)
        keep = ((~self.found[member] & np.isfinite(r))
                | (cause & (tt < self.seen[0, member])))
        self.seen[:, member[keep]] = np.stack([tt, eps, r, speed])[:, keep]
        self.found[member[cause & keep]] = True
        return out

    @staticmethod
    def _sensitivity_rates(out, y, sel, fixed, values):
        sigma = [(y[sel, j], y[sel, j + 1]) for j in range(2, y.shape[1], 2)]
        for j, (du, dr) in zip(range(2, y.shape[1], 2), rates(values, sigma), strict=True):
            out[sel, j] = np.where(fixed[sel], 0.0, du)
            out[sel, j + 1] = dr


def _start(field, system, y0, args, g0):
    """Evaluate the field at t = 0; a non-finite start raises with its cause.
    Returns the states seen there (the reference of :func:`_fault`)."""
    M = len(g0)
    with np.errstate(all="ignore"):
        start = field(np.zeros(M), y0, np.zeros(M, dtype=int), *args)
    first = field.seen.copy()
    singular = ~np.all(np.isfinite(start[:, :2]), axis=1)
    if singular.any():
        i = int(np.flatnonzero(singular)[0])
        values = [a[i] for a in args[3:]]
        raise (_fault(system, field.laws[0][1], first[:, i], first[:, i], values)
               or ValueError(f"gamma0, n, beta: the vector field of {system.scheme.name} "
                             f"is not finite at gamma0 = {shown(g0[i])}, n = {values[0]:g}, "
                             f"beta = {values[1]:g}"))
    if not np.all(np.isfinite(start)):
        raise ValueError(f"sensitivities: the sensitivity system of {system.scheme.name} "
                         f"is not finite at t = 0 (gamma0 = 1 or a parameter at a "
                         f"singularity of the law)")
    field.found[:] = False
    return first


def _solve_float(system, times, n, beta, gamma0, r0, params, sens, rtol, atol):
    shape = n.shape
    nn, bb, g0, rr = (np.ravel(x).astype(float) for x in (n, beta, gamma0, r0))
    pp = [np.ravel(v).astype(float) for v in params.values()]
    eps0 = 1.0 - g0
    at_cluster = eps0 <= 0          # gamma0 = 1: epsilon stays 0 (u = -oo)
    # The regular simplex, 1 + (n-1) gamma0 = 0, is an equilibrium too; a
    # start within rounding of it cannot be told from it in floats (and its
    # rounding could push gamma below -1/(n-1)), so it is held there as well.
    frozen = at_cluster | (np.abs(1 + (nn - 1) * g0) <= 64 * np.finfo(float).eps * nn)
    y0 = [np.log(np.where(at_cluster, 1.0, eps0)), rr]
    tol_r = [_U_RTOL, rtol]
    tol_a = [_u_atol(eps0, nn, rtol), np.full_like(nn, atol)]
    if sens is not None:
        for su, sr in sens.initial(np.where(at_cluster, 1.0, eps0)):
            y0 += [np.where(frozen, 0.0, su), np.broadcast_to(sr, nn.shape)]
            tol_r += [rtol, rtol]
            tol_a += [np.full_like(nn, rtol), np.full_like(nn, atol)]
    field = _Field(system, sens, len(nn), frozen, at_cluster)
    y0 = np.stack(y0, axis=1)
    args = (frozen, at_cluster, np.arange(len(nn)), nn, bb, *pp)
    first = _start(field, system, y0, args, g0)
    atol_all = np.stack(tol_a, axis=1)
    small = len(nn) == 1 and sens is None and not frozen[0]
    sol = (_solve_one(system, times, y0, args, tol_r, atol_all, field) if small else None)
    if sol is None:
        sol = integrate(field, times, y0, args, rtol=tol_r, atol=atol_all,
                        breakpoints=system.breakpoints)
    if not sol.success:
        i = int(np.flatnonzero(~np.isfinite(sol.y[:, -1]).all(axis=1))[0])
        phase = int(np.searchsorted(system.breakpoints, field.seen[0, i], side="left"))
        raise (_fault(system, field.laws[phase][1], field.seen[:, i], first[:, i],
                      [a[i] for a in args[3:]])
               or ArithmeticError(f"solve: {sol.message}" + _hint(system)))
    u = np.where(at_cluster[:, None], -np.inf, sol.y[:, :, 0])
    r = sol.y[:, :, 1]
    eps = np.exp(u)
    phase = np.searchsorted(system.breakpoints, times, side="left")  # left limits
    rate = np.empty_like(eps)
    with np.errstate(invalid="ignore"):
        for k, tk in enumerate(times):
            rate[:, k] = field.phases[phase[k]][0](tk, eps[:, k], r[:, k], nn, bb, *pp)
    gamma_dot = np.where(frozen[:, None], 0.0, -eps * rate)
    if not (np.all(np.isfinite(gamma_dot)) and np.all(np.isfinite(r))):
        raise ArithmeticError("solve: non-finite values in the solution" + _hint(system))
    out = [x.reshape(shape + (len(times),)) for x in (1 - eps, eps, u, gamma_dot, r)]
    derivs = None if sens is None else {
        q: np.where(at_cluster[:, None], 0.0, -eps * sol.y[:, :, 2 + 2 * j]).reshape(
            shape + (len(times),)) for j, q in enumerate(sens.wrt)}
    return Trajectory(times, *out, n, beta, gamma0, r0, sol.nfev, sol.message, params, derivs)


def _solve_one(system, times, y0, args, rtol, atol, field):
    """A batch of one on the scalar path (:mod:`symdyn.ode.scalar`): a
    :class:`~symdyn.ode.integrate.BatchSolution`, or None where the batched path
    must answer (a refused state, a failure: its diagnostics name the cause)."""
    rates = system.rates("float")
    speed = [law for law, _ in system.laws("float")] if field.check_speed else None
    values = [float(v[0]) for v in args[3:]]

    def f(tt, y, phase):
        eps, r = float(np.exp(y[0])), y[1]      # numpy's exp, as _Field (not libm's)
        try:
            s = speed[phase](tt, eps, r, *values) if speed is not None else 1.0
            if not (r > 0 and s > 0):    # as _Field refuses (+inf passes, nan not)
                raise ArithmeticError("refused")
            return rates[phase](tt, eps, r, *values)
        except (NameError, TypeError, AttributeError):   # code that needs arrays
            raise GiveUp from None

    h0 = initial_step(field, y0, field(np.zeros(1), y0, np.zeros(1, dtype=int), *args),
                      (np.zeros(1, dtype=int),) + args, np.asarray(rtol), atol, times[-1])
    try:
        with np.errstate(all="ignore"):     # an overflow is a non-finite value: GiveUp
            states, nfev, nsteps = integrate_one(
                f, times.tolist(), y0[0].tolist(), float(h0[0]), rtol=list(rtol),
                atol=atol[0].tolist(), breakpoints=system.breakpoints)
    except GiveUp:
        return None
    return BatchSolution(np.array(states)[None], nfev + 2, np.array([nsteps]), True,  # + h0
                         "integration successful")


def _hint(system):
    return f"; {_UNNORMALIZED}" if system.attention == "unnormalized" else ""


def _solve_mp(system, times, n, beta, gamma0, r0, params, sens, dps):
    res = {k: np.empty(n.shape + (len(times),), dtype=object)
           for k in ("gamma", "epsilon", "log_epsilon", "gamma_dot", "r")}
    derivs = None if sens is None else {
        q: np.empty(n.shape + (len(times),), dtype=object) for q in sens.wrt}
    with mpmath.workdps(dps):
        for idx in np.ndindex(n.shape):
            values = [mpmath.mpf(x[idx]) for x in (n, beta, *params.values())]
            _solve_mp_member(system, times, values, gamma0[idx], r0[idx], sens, dps,
                             res, derivs, idx)
    return Trajectory(times, res["gamma"], res["epsilon"], res["log_epsilon"],
                      res["gamma_dot"], res["r"], n, beta, gamma0, r0, 0,
                      f"mpmath extrapolation at {dps} digits", params, derivs)


def _solve_mp_member(system, times, values, gamma0, r0, sens, dps, res, derivs, idx):
    """One member with mpmath; its outputs go to ``res`` (and ``derivs``) at ``idx``."""
    phases, laws, bps = system.phases("mpmath"), system.laws("mpmath"), system.breakpoints
    sens_phases = None if sens is None else sens.phases("mpmath")
    zero = mpmath.mpf(0)
    eps0 = 1 - mpmath.mpf(gamma0)
    nk = values[0]
    cluster = eps0 == 0
    fixed = cluster or eps0 + nk * (1 - eps0) <= 0   # equilibria

    def rhs(tt, y, phase):
        f_u, f_r = phases[phase]
        eps = zero if cluster else mpmath.exp(y[0])
        # no state has r <= 0 or a speed <= 0 (evaluated first: it may be
        # a division by zero)
        try:
            speed = laws[phase][0](tt, eps, y[1], *values) if y[1] > 0 else None
        except ZeroDivisionError:   # A_norm/alpha at alpha = 0: +inf, velocity 0
            speed = mpmath.inf
        if speed is None:
            raise _mp_radial_fault(system, phases[phase][1], tt, eps, y[1], values, dps)
        if not speed > 0:
            raise _law_fault(system, "speed" if speed is not None else "radial",
                             float(y[1] if speed is None else speed), float(tt),
                             float(values[0]), float(values[1]))
        args = (tt, eps, y[1], *values)
        out = [zero if fixed else f_u(*args), f_r(*args)]
        if sens_phases is not None:
            sigma = list(zip(y[2::2], y[3::2], strict=True))
            for du, dr in rates(sens_phases[phase](*args), sigma):
                out += [zero if fixed else du, dr]
        return out

    u0 = zero if cluster else mpmath.log(eps0)
    y0 = [u0, mpmath.mpf(r0)]
    if sens is not None:
        y0 += [v for pair in sens.initial(mpmath.mpf(1) if cluster else eps0) for v in pair]
    try:
        states = integrate_mp(rhs, times, y0, dps, bps)
    except ArithmeticError as exc:
        raise ArithmeticError(f"solve: {exc}") from None
    for k, y in enumerate(states):
        f_u = phases[int(np.searchsorted(bps, times[k], side="left"))][0]
        u, r = (-mpmath.inf if cluster else y[0]), y[1]
        eps = mpmath.exp(u)
        rate = zero if fixed else f_u(mpmath.mpf(times[k]), eps, r, *values)
        res["log_epsilon"][idx + (k,)] = +u
        res["epsilon"][idx + (k,)] = +eps
        res["gamma"][idx + (k,)] = 1 - eps
        res["gamma_dot"][idx + (k,)] = -eps * rate
        res["r"][idx + (k,)] = +r
        for j, q in enumerate(() if sens is None else sens.wrt):
            derivs[q][idx + (k,)] = zero if cluster else -eps * y[2 + 2 * j]


def _mp_radial_fault(system, f_r, tt, eps, r, values, dps):
    """The error for ``r <= 0`` at a state the extrapolation tried.

    A radial law that can drive ``r`` through 0 (``d log r/dt = rho/r``
    unbounded as ``r -> 0+``, such as ``-1``) is at fault. One that cannot
    (``-2 r``: ``d log r/dt = -2``) was followed below what ``dps`` digits
    resolve: steps hold ``r`` to an absolute ``10^-(dps+3)`` while ``r < 1``.
    """
    s, nk, bk = system.scheme, float(values[0]), float(values[1])
    tiny = mpmath.mpf(10) ** (-2 * dps - 40)
    try:
        near, far = (f_r(tt, eps, x, *values) / x for x in (tiny, tiny * 10 ** (dps + 20)))
        barrier = bool(mpmath.isfinite(near) and abs(near) <= 10 * max(1, abs(far)))
    except (ArithmeticError, ValueError, TypeError):
        barrier = False
    if not barrier:
        return _law_fault(system, "radial", float(r), float(tt), nk, bk)
    return ValueError(f"radial: r underflowed the dps = {dps} extrapolation at t = "
                      f"{float(tt):.6g} (n = {nk:g}, beta = {bk:g}): the radial law dr/dt = "
                      f"{law_text(s.radial, 50)} of {s.name} keeps r > 0, but r fell too "
                      f"close to 0 for {dps} digits (steps hold r to 1e-{dps + 3} absolute, "
                      f"not relative) and a trial step took it to {float(r):.3g}; use a "
                      f"larger dps or an earlier t")
