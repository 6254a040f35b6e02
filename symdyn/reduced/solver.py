"""Numeric solutions of the reduced ODE: batched floats, or mpmath digits.

``solve`` integrates :math:`u = \\log(1-\\gamma)` and ``r`` with the stable
compiled right-hand sides of :mod:`symdyn.reduced.compile`:

* ``dps=None``: the whole batch (``n, beta, gamma0, r0`` broadcast together)
  as one vectorized system, each member with its own adaptive steps
  (:mod:`symdyn.ode.integrate`); :math:`1-\\gamma` keeps its relative precision
  far below ``1e-16`` because its logarithm is what is integrated, and
  :math:`\\gamma` too, read from it as ``-expm1(u)`` (the compiled form
  ``"gamma"`` of :mod:`symdyn.reduced.compile`; ``n`` from ``1e100`` and
  ``n = inf`` in the forms ``"large_n"`` and ``"limit"``);
* ``dps=D``: every member with mpmath at ``D`` digits by extrapolation
  (:mod:`symdyn.ode.extrapolation`); arrays of ``mpmath.mpf`` come back.

Tokens of schemes that renormalize at ``t = 0`` (post-ln, mix-ln, the
on-sphere schemes) start at ``r = 1`` whatever ``r0`` says.

The batch as the driver sees it is :class:`~symdyn.reduced.problem.BatchProblem` (also used by
:mod:`symdyn.reduced.solve_crossing`); the checks and fault messages live in
:mod:`symdyn.reduced.solve_checks`, the mpmath path in
:mod:`symdyn.reduced.solve_mp`, :class:`Trajectory` in
:mod:`symdyn.reduced.solve_result`.

Layer 2, reduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..base.checks import check_attention, integer, memory, output_times, shown
from ..model.law_limits import check_speed
from ..model.parameters import run_parameters
from ..model.registry import scheme as get_scheme
from ..model.scheme import Scheme
from ..model.symbols import beta as b_sym
from ..model.symbols import n as n_sym
from ..ode.integrate import BatchSolution
from ..ode.methods import DENSE_OUTPUTS, initial_step
from ..ode.outputs import count
from ..ode.scalar import GiveUp, integrate_one
from .compile import LARGE_N, form_of, gamma_of, limit, stable_system
from .forward_sensitivity import parameter_names, sensitivity
from .problem import BatchProblem
from .solve_checks import (
    MAX_DPS,
    broadcast_arguments,
    check_r_underflow,
    check_time_law,
    check_tolerance,
    unnormalized_hint,
)
from .solve_mp import solve_multiprecision
from .solve_result import Trajectory, provenance


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
                 "sensitivities", "params", "dense_output")


def solve(scheme, n, beta, gamma0, r0=1.0, t=(0.0, 1.0), attention="softmax", *,
          rtol=1e-11, atol=1e-12, dps=None, sensitivities=False, params=None,
          dense_output="order7", **legacy) -> Trajectory:
    """Solve the reduced ODE of ``scheme`` from equiangular starts.

    Parameters
    ----------
    scheme : str or Scheme
    n, beta, gamma0, r0 : float or array
        Number of tokens (>= 2), inverse temperature (>= 0), starting cosine
        similarity (in ``[-1/(n-1), 1]``) and token norm (> 0); they broadcast.
        ``n`` keeps full precision up to the float's range (``gamma`` is
        read as ``-expm1(u)``; from ``n = 1e100`` the laws are evaluated in
        ``1/n``), and ``n = inf`` is the long-context limit ``n -> inf`` of
        the reduced ODE (refused where the limit is not finite, or from
        ``gamma0 = 0`` where its rate is not Lipschitz there, as Peri-LN's
        ``-2 sqrt(gamma)/r``; no sensitivities).
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
        mpmath quadrature in ``tests/ode/test_tolerance.py``).
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
    dense_output : {"order7", "order6"}
        How values at output times between the steps' ends are read:
        ``"order7"`` (default) as accurate as the step ends (Hairer's
        ``contd8``, three more evaluations on each step that holds an output);
        ``"order6"`` costs no evaluation but is up to about 20x less accurate
        (``benchmarks/output_accuracy.py``; :func:`symdyn.ode.integrate.integrate`).

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
    _check_size(s, count(t), (n, beta, gamma0, r0, *params.values()), sensitivities)
    times = output_times(t)
    n, beta, gamma0, r0, params = broadcast_arguments(s, n, beta, gamma0, r0, params,
                                                      n_inf=True)
    wrt = _wrt(s, sensitivities)
    rtol, atol = check_tolerance(rtol, "rtol"), check_tolerance(atol, "atol")
    if dense_output not in DENSE_OUTPUTS:
        raise ValueError(f"dense_output must be one of {', '.join(DENSE_OUTPUTS)}, "
                         f"got {shown(dense_output)}")
    if dps is not None:
        dps = integer(dps, "dps", 15)
        if dps > MAX_DPS:
            raise ValueError(f"dps must be an integer in [15, {MAX_DPS}], got {dps}")
    if s.starts_on_sphere:
        r0 = np.ones_like(r0)
    system = stable_system(s, attention)
    if wrt is not None and np.any(n >= LARGE_N):
        raise ValueError(f"n, sensitivities: sensitivities are solved for n below "
                         f"{LARGE_N:g} (their laws are not written in 1/n), got n = "
                         f"{float(np.max(n)):g}")
    if np.isinf(n).any():
        _check_limit(system, gamma0[np.isinf(n)])
    check_time_law(system, times, n, beta, params)
    check_speed(s, float(times[-1]), {n_sym: n, b_sym: beta,
                                      **{x: params[x.name] for x in s.symbols}}, "solve")
    sens = None if wrt is None else sensitivity(s, wrt, attention)
    made = provenance(s, n, beta, attention, {"rtol": rtol, "atol": atol, "dps": dps,
                                               "sensitivities": sensitivities,
                                               "dense_output": dense_output})
    if dps is not None:
        res, derivs = solve_multiprecision(system, times, n, beta, gamma0, r0, params, sens, dps)
        return Trajectory(t=times, **res, n=n, beta=beta, gamma0=gamma0, r0=r0, nfev=0,
                          message=f"mpmath extrapolation at {dps} digits", params=params,
                          sensitivities=derivs, provenance=made)
    tr = _solve_float(system, times, n, beta, gamma0, r0, params, sens, rtol, atol,
                      dense_output)
    check_r_underflow(system, tr)
    return replace(tr, provenance=made)


def _check_limit(system, gamma0):
    """``n = inf`` (the long-context limit, the compiled form ``"limit"``) where
    the limit exists and its solution is the limit of the finite-n ones;
    ``gamma0``: the starts of the members at ``n = inf``."""
    name = system.scheme.name
    failure = system.limit_failure()
    if failure:
        raise ValueError(f"n: n = inf is the n -> inf limit of the reduced ODE, but {failure}; "
                         f"use a finite n (floats hold n up to 1e308, dps= beyond)")
    if system.limit_singular_at_zero() and np.any(gamma0 == 0):
        raise ValueError(f"n, gamma0: the n -> inf limit of {name} has a rate of "
                         f"log(1 - gamma) that is not Lipschitz at gamma = 0 "
                         f"({limit(system.log_eps_dot)}): from gamma0 = 0 its solution is "
                         f"not unique, and the finite-n solutions leave 0 at once; use a "
                         f"finite n or gamma0 > 0")


def _check_size(s, K, values, sensitivities):
    """Refuse (:func:`checks.memory`), before anything is broadcast or ``t``
    converted, a batch that would not fit: ``values`` (n, beta, gamma0, r0,
    the parameters) broadcast to M members, each integrated with about 40
    floats per state component and holding its ``K`` outputs (5, and a
    state, per output time: the only limit on their count). The message
    names ``t`` where the outputs take most of it."""
    try:
        shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    except (ValueError, TypeError):
        return                  # broadcast_arguments names the shapes that do not broadcast
    M = math.prod(shape)
    dim = 2 + 2 * len(_wrt(s, sensitivities) or ())
    memory(8 * M * (40 * dim + K * (dim + 12)),
           f"t: {K:,} output times x {M:,} members (n, beta, gamma0, r0 and the "
           f"parameters broadcast to shape {shape})" if K * (dim + 12) > 40 * dim else
           f"solve: n, beta, gamma0, r0 and the parameters broadcast to shape {shape} "
           f"({M:,} members) x {K:,} times")


def _solve_float(system, times, n, beta, gamma0, r0, params, sens, rtol, atol, dense_output):
    """The batch in floats: its members grouped by compiled form (:func:`form_of`:
    ``n`` below :data:`~symdyn.reduced.compile.LARGE_N`, up to the float's
    range, ``inf``), each group solved as one batch (a member's steps do not
    depend on its batch)."""
    shape = n.shape
    nn, bb, g0, rr = (np.ravel(x).astype(float) for x in (n, beta, gamma0, r0))
    pp = [np.ravel(v).astype(float) for v in params.values()]
    forms = form_of(nn)
    K = len(times)
    names = ("gamma", "epsilon", "log_epsilon", "gamma_dot", "r")
    out = {k: np.empty((len(nn), K)) for k in names}
    derivs = None if sens is None else {q: np.empty((len(nn), K)) for q in sens.wrt}
    nfev, message = 0, None
    for form in dict.fromkeys(forms.tolist()):      # in order of first appearance
        sel = np.flatnonzero(forms == form)
        part = _solve_group(system, times, nn[sel], bb[sel], g0[sel], rr[sel],
                            [v[sel] for v in pp], sens, rtol, atol, dense_output, form)
        for k in names:
            out[k][sel] = part.values[k]
        for q in () if sens is None else sens.wrt:
            derivs[q][sel] = part.derivs[q]
        nfev += part.nfev
        message = message or part.message
    shaped = {k: out[k].reshape(shape + (K,)) for k in names}
    derivs = None if sens is None else {q: d.reshape(shape + (K,)) for q, d in derivs.items()}
    return Trajectory(t=times, **shaped, n=n, beta=beta, gamma0=gamma0, r0=r0, nfev=nfev,
                      message=message, params=params, sensitivities=derivs)


@dataclass(frozen=True, slots=True)
class _Group:
    """One compiled form's part of a batch: the output arrays by name, the
    sensitivities (or None), the evaluations and the solver's message."""

    values: dict
    derivs: dict | None
    nfev: int
    message: str


def _solve_group(system, times, nn, bb, g0, rr, pp, sens, rtol, atol, dense_output, form):
    """Members that share the compiled ``form``: ``(values, derivs, nfev, message)``,
    ``values`` the arrays of ``gamma, epsilon, log_epsilon, gamma_dot, r`` (members x
    times)."""
    pb = BatchProblem.build(system, sens, nn, bb, g0, rr, pp, rtol, atol, form)
    frozen, at_cluster, field = pb.frozen, pb.at_cluster, pb.field
    small = len(nn) == 1 and sens is None and not frozen[0]
    sol = (solve_one(system, times, pb.y0, pb.args, pb.rtol, pb.atol, field, dense_output)
           if small else None)
    if sol is None:
        try:
            sol = pb.solve(times, dense_output=dense_output)
        except ArithmeticError as exc:
            raise _unresolved(exc, nn) from None
    u = np.where(at_cluster[:, None], -np.inf, sol.y[:, :, 0])
    r = sol.y[:, :, 1]
    eps = np.exp(u)
    gam = gamma_of(u)
    phase = np.searchsorted(system.breakpoints, times, side="left")  # left limits
    rate = np.empty_like(eps)
    with np.errstate(invalid="ignore"):       # one call per phase, every output time
        for p in np.unique(phase):
            cols = np.flatnonzero(phase == p)
            rate[:, cols] = field.phases[p][0](times[cols], eps[:, cols], gam[:, cols],
                                               r[:, cols], nn[:, None], bb[:, None],
                                               *(v[:, None] for v in pp))
    gamma_dot = np.where(frozen[:, None], 0.0, -eps * rate)
    if not (np.all(np.isfinite(gamma_dot)) and np.all(np.isfinite(r))):
        raise ArithmeticError("solve: non-finite values in the solution"
                              + unnormalized_hint(system))
    values = dict(gamma=gam, epsilon=eps, log_epsilon=u, gamma_dot=gamma_dot, r=r)
    derivs = None if sens is None else {
        q: np.where(at_cluster[:, None], 0.0, -eps * sol.y[:, :, 2 + 2 * j])
        for j, q in enumerate(sens.wrt)}
    return _Group(values=values, derivs=derivs, nfev=sol.nfev, message=sol.message)


#: from this n on, a failed float solve names n and dps= (time scales that shrink with n)
LARGE_N_FAILURE = 1e15


def _unresolved(exc, nn):
    """A failed float solve with a member at large ``n``: a ``ValueError`` naming
    ``n`` and ``dps=`` (the solution can move on time scales that shrink with
    ``n``, such as ``n^-1/2`` from ``gamma0 = 0`` under a law normalized by
    ``|A_k|``, below the smallest step floats take)."""
    big = nn[nn >= LARGE_N_FAILURE]
    if not big.size:
        return exc
    return ValueError(f"n: {str(exc).removeprefix('solve: ')}; at n = {float(big.max()):g} the "
                      f"solution can move on a time scale that shrinks with n (about "
                      f"n^-1/2 from gamma0 = 0 where the law divides by |A_k|), below "
                      f"what floats resolve: use dps= (mpmath), a smaller n, or gamma0 > 0 "
                      f"(n = inf: the long-context limit)")


def solve_one(system, times, y0, args, rtol, atol, field, dense_output="order7"):
    """A batch of one on the scalar path (:mod:`symdyn.ode.scalar`): a
    :class:`~symdyn.ode.integrate.BatchSolution`, or None where the batched path
    must answer (a refused state, a failure: its diagnostics name the cause)."""
    rates = system.rates("float", form=field.form)
    speed = ([law for law, _ in system.laws("float", form=field.form)] if field.check_speed
             else None)
    values = [float(v[0]) for v in args[3:]]

    def f(tt, y, phase):
        # numpy's exp and expm1, as ReducedRates (not libm's): the same bits
        eps, gam, r = float(np.exp(y[0])), float(gamma_of(y[0])), y[1]
        try:
            s = speed[phase](tt, eps, gam, r, *values) if speed is not None else 1.0
            if not (r > 0 and s > 0):    # as ReducedRates refuses (+inf passes, nan not)
                raise ArithmeticError("refused")
            return rates[phase](tt, eps, gam, r, *values)
        except (NameError, TypeError, AttributeError):   # code that needs arrays
            raise GiveUp from None

    h0 = initial_step(field, y0, field(np.zeros(1), y0, np.zeros(1, dtype=int), *args),
                      (np.zeros(1, dtype=int),) + args, np.asarray(rtol), atol, times[-1])
    try:
        with np.errstate(all="ignore"):     # an overflow is a non-finite value: GiveUp
            states, nfev, nsteps = integrate_one(
                f, times.tolist(), y0[0].tolist(), float(h0[0]), rtol=list(rtol),
                atol=atol[0].tolist(), breakpoints=system.breakpoints,
                dense_output=dense_output)
    except GiveUp:
        return None
    return BatchSolution(y=states[None], nfev=nfev + 2, nsteps=np.array([nsteps]),  # + h0
                         success=True, message="integration successful")

