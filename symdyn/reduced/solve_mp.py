"""``sd.solve(..., dps=D)``: every member with mpmath at ``D`` digits.

The extrapolation method of :mod:`symdyn.ode.extrapolation` on the mpmath
right-hand sides of :mod:`symdyn.reduced.compile`; a state with ``r <= 0``
or a speed that is not positive is refused with its cause.

Layer 2, reduced.
"""

from __future__ import annotations

import mpmath
import numpy as np

from ..model.guards import law_text
from ..ode.extrapolation import OutsideDomain, integrate_mp
from .solve_checks import law_fault
from .variational import rates


def solve_multiprecision(system, times, n, beta, gamma0, r0, params, sens, dps):
    """Every member at ``dps`` digits: ``(res, derivs)``, the arrays of
    ``gamma, epsilon, log_epsilon, gamma_dot, r`` (mpf, batch shape + times)
    and of the sensitivities (or None)."""
    res = {k: np.empty(n.shape + (len(times),), dtype=object)
           for k in ("gamma", "epsilon", "log_epsilon", "gamma_dot", "r")}
    derivs = None if sens is None else {
        q: np.empty(n.shape + (len(times),), dtype=object) for q in sens.wrt}
    with mpmath.workdps(dps):
        for idx in np.ndindex(n.shape):
            values = [mpmath.mpf(x[idx]) for x in (n, beta, *params.values())]
            _solve_mp_member(system, times, values, gamma0[idx], r0[idx], sens, dps,
                             res, derivs, idx)
    return res, derivs


def _solve_mp_member(system, times, values, gamma0, r0, sens, dps, res, derivs, idx):
    """One member with mpmath; its outputs go to ``res`` (and ``derivs``) at ``idx``.

    The compiled functions read ``G = gamma = -expm1(u)`` (every ``1 - epsilon``
    of the rates, :attr:`StableSystem.gamma_args`): ``1 - epsilon`` at ``dps``
    digits would keep no digit of a ``gamma`` below ``10^-dps``; ``n = inf``
    in the form ``"limit"``."""
    nk = values[0]
    form = "limit" if mpmath.isinf(nk) else "gamma"
    phases, laws = system.phases("mpmath", form=form), system.laws("mpmath", form=form)
    bps = system.breakpoints
    sens_phases = None if sens is None else sens.phases("mpmath", form="gamma")
    zero, one = mpmath.mpf(0), mpmath.mpf(1)
    g0 = mpmath.mpf(gamma0)
    eps0 = 1 - g0
    cluster = eps0 == 0
    fixed = cluster or (form == "gamma" and eps0 + nk * g0 <= 0)   # equilibria
    u0 = zero if cluster else mpmath.log(eps0)
    # The extrapolation holds u to 10^-(dps+3) relative to max(1, |u|) and r
    # relative to r: u is integrated as u / scale, its scale where |u| < 1 (u0,
    # or 1/(n-1): gamma grows from that scale at gamma0 = 0), so that a gamma
    # of 1e-300 keeps dps digits.
    scale = min(one, max(abs(u0), 1 / (nk - 1))) or one

    def rhs(tt, y, phase):
        f_u, f_r = phases[phase]
        u = y[0] * scale
        eps = zero if cluster else mpmath.exp(u)
        gam = one if cluster else -mpmath.expm1(u)
        # no state has r <= 0 or a speed <= 0 (evaluated first: it may be
        # a division by zero)
        try:
            speed = laws[phase][0](tt, eps, gam, y[1], *values) if y[1] > 0 else None
        except ZeroDivisionError:   # A_norm/alpha at alpha = 0: +inf, velocity 0
            speed = mpmath.inf
        if speed is None:
            raise OutsideDomain(_mp_radial_fault(system, phases[phase][1], tt, eps, gam, y[1],
                                                 values, dps))
        if not speed > 0:
            raise law_fault(system, "speed" if speed is not None else "radial",
                             float(y[1] if speed is None else speed), float(tt),
                             float(values[0]), float(values[1]))
        args = (tt, eps, gam, y[1], *values)
        out = [zero if fixed else f_u(*args) / scale, f_r(*args)]
        if sens_phases is not None:
            sigma = list(zip(y[2::2], y[3::2], strict=True))
            for du, dr in rates(sens_phases[phase](*args), sigma):
                out += [zero if fixed else du, dr]
        return out

    y0 = [u0 / scale, mpmath.mpf(r0)]
    if sens is not None:
        y0 += [v for pair in sens.initial(mpmath.mpf(1) if cluster else eps0) for v in pair]
    try:
        # r keeps its sign: held to dps digits relative, however small it gets
        floors = [1, 0] + [1] * (len(y0) - 2)
        states = integrate_mp(rhs, times, y0, dps, bps, floors=floors)
    except ArithmeticError as exc:
        raise ArithmeticError(f"solve: {exc}") from None
    for k, y in enumerate(states):
        f_u = phases[int(np.searchsorted(bps, times[k], side="left"))][0]
        u, r = (-mpmath.inf if cluster else y[0] * scale), y[1]
        eps = mpmath.exp(u)
        gam = one if cluster else -mpmath.expm1(u)
        rate = zero if fixed else f_u(mpmath.mpf(times[k]), eps, gam, r, *values)
        res["log_epsilon"][idx + (k,)] = +u
        res["epsilon"][idx + (k,)] = +eps
        res["gamma"][idx + (k,)] = +gam
        res["gamma_dot"][idx + (k,)] = -eps * rate
        res["r"][idx + (k,)] = +r
        for j, q in enumerate(() if sens is None else sens.wrt):
            derivs[q][idx + (k,)] = zero if cluster else -eps * y[2 + 2 * j]


def _mp_radial_fault(system, f_r, tt, eps, gam, r, values, dps):
    """The error for ``r <= 0`` at a state the extrapolation tried.

    A radial law that can drive ``r`` through 0 (``d log r/dt = rho/r``
    unbounded as ``r -> 0+``, such as ``-1``) is at fault. One that cannot
    (``-2 r``: ``d log r/dt = -2``) lost ``r > 0`` in the extrapolation itself
    (a trial step below 0 however small the step): too few digits.
    """
    s, nk, bk = system.scheme, float(values[0]), float(values[1])
    tiny = mpmath.mpf(10) ** (-2 * dps - 40)
    try:
        near, far = (f_r(tt, eps, gam, x, *values) / x
                     for x in (tiny, tiny * 10 ** (dps + 20)))
        barrier = bool(mpmath.isfinite(near) and abs(near) <= 10 * max(1, abs(far)))
    except (ArithmeticError, ValueError, TypeError):
        barrier = False
    if not barrier:
        return law_fault(system, "radial", float(r), float(tt), nk, bk)
    return ValueError(f"radial: r underflowed the dps = {dps} extrapolation at t = "
                      f"{float(tt):.6g} (n = {nk:g}, beta = {bk:g}): the radial law dr/dt = "
                      f"{law_text(s.radial, 50)} of {s.name} keeps r > 0, but trial steps "
                      f"took r to {float(r):.3g} however small they were; use a larger dps "
                      f"or an earlier t")
