"""The batch of :func:`~symdyn.reduced.solver.solve` as the driver sees it.

:class:`ReducedRates` is the batched right-hand side of :math:`(u, r)`,
:math:`u = \\log(1 - \\gamma)` (and of the forward sensitivities); :class:`BatchProblem`
holds it with the start, the field's arguments and the tolerances per member
and component, and runs :func:`symdyn.ode.integrate.integrate` on them. Used
by :mod:`symdyn.reduced.solver` and :mod:`symdyn.reduced.solve_crossing`.

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.checks import shown
from ..ode.integrate import integrate
from .compile import gamma_of
from .solve_checks import field_fault, unnormalized_hint
from .variational import rates

# u = log(epsilon) is held to an absolute error rtol (a relative error of
# epsilon), but no float holds u to better than a few ulps of |u|.
U_RTOL = 100 * np.finfo(float).eps

def u_atol(eps0, n, rtol):
    """Absolute tolerance of u = log(epsilon), per member.

    The rate of u carries the factor delta = 1 + (n-1) gamma = n - (n-1) eps,
    which is small near the regular simplex; an error du moves delta by
    (n-1) eps du. Holding du to rtol * delta0 / ((n-1) eps0) keeps delta's
    relative error at rtol (delta only grows, eps only shrinks). Below the
    floor rtol * 1e-7 (starts within about 1e-7 (n-1) of the simplex) the
    error may exceed rtol; closer still, solve holds the start at the simplex.
    Where ``(n-1) eps0`` exceeds 1e7 the floor is ``rtol / ((n-1) eps0)``
    instead: the scale of u there (u0 ~ -gamma0 ~ 1/(n-1) and gamma grows
    from that scale), so a start at ``gamma0 = 0`` keeps gamma's relative
    precision at n = 1e20 and 1e300 (1e-300 at the least: n = inf).
    """
    with np.errstate(invalid="ignore", divide="ignore"):    # n = inf: gamma0 / eps0
        scale = np.maximum((n - 1) * eps0, 1e-300)
        delta0 = np.abs(n - (n - 1) * eps0)
        ratio = np.where(np.isinf(n), (1 - eps0) / np.maximum(eps0, 1e-300), delta0 / scale)
        floor = np.maximum(np.minimum(1e-7, 1 / scale), 1e-300)
    return rtol * np.clip(ratio, floor, 1.0)


class ReducedRates:
    """The batched right-hand side of ``(u, r)`` and, with a
    :class:`~symdyn.reduced.forward_sensitivity.Sensitivity`, of ``(sigma_u, sigma_r)`` per
    parameter (state columns ``2 + 2 i, 3 + 2 i``).

    States where the speed is not positive and finite or ``r <= 0`` are
    refused with NaN rates. With ``remember`` (the diagnostics of a failed
    member, :meth:`BatchProblem.failure`) it also keeps, per member, the last state
    evaluated or the first refused one: ``seen[:, m] = (t, epsilon, r,
    speed, gamma)``; the solve itself runs without (that bookkeeping cost more than
    the compiled right-hand side on large batches).

    The compiled functions are those of ``form`` (:func:`form_of`), called
    with ``G = gamma`` computed from ``u`` by :func:`gamma_of`.
    """

    def __init__(self, system, sens, M, fixed, cluster, remember=True, form="gamma"):
        self.remember, self.form = remember, form
        self.phases = system.phases("numpy", form=form)
        self.rates = system.rates("numpy", form=form)
        self.laws = system.laws("numpy", form=form)
        self.sens = None if sens is None else sens.phases("numpy", form="gamma")
        self.seen = np.zeros((5, M))
        self.seen[3] = 1.0
        self.found = np.zeros(M, dtype=bool)
        # A law positive by its symbols' signs (r, A_norm > 0: every built-in)
        # needs no evaluation in the hot loop; the others are checked at every state.
        self.check_speed = not system.scheme.speed.is_positive
        # equilibria held in place: rare, so the common batch skips their masks
        self.any_fixed, self.any_cluster = bool(np.any(fixed)), bool(np.any(cluster))

    @property
    def lean(self) -> bool:
        """The common solve: one phase, no law to check, no equilibrium held,
        no sensitivities, nothing remembered (:meth:`_lean`)."""
        return not (len(self.phases) > 1 or self.check_speed or self.any_fixed
                    or self.any_cluster or self.sens is not None or self.remember)

    def lean_rates(self, tt, y, phase, *values):
        """The rates where :attr:`lean` holds, called as the driver calls a field
        given only the law's values ``(n, beta, ...)`` (the masks and member
        indices that only the full path reads are not gathered at every sweep)."""
        return self._lean(tt, y, values)

    def _lean(self, tt, y, values):
        """The rates where :attr:`lean` holds: the same arithmetic, and ``r > 0``
        checked by one reduction (NaN fails it too), unless the rate of ``r`` is
        the number 0 (Post-LN, nGPT): then ``r`` keeps its start, checked there."""
        u, r = y[:, 0], y[:, 1]
        du, dr = self.rates[0](tt, np.exp(u), gamma_of(u), r, *values)
        out = np.empty_like(y)
        out[:, 0], out[:, 1] = du, dr
        if (isinstance(dr, np.ndarray) or dr != 0) and not np.minimum.reduce(r) > 0:
            out[~(r > 0)] = np.nan
        return out

    def __call__(self, tt, y, phase, fixed, cluster, member, *values):
        if self.lean:
            return self._lean(tt, y, values)
        u, r = y[:, 0], y[:, 1]
        eps = np.where(cluster, 0.0, np.exp(u)) if self.any_cluster else np.exp(u)
        gam = np.where(cluster, 1.0, gamma_of(u)) if self.any_cluster else gamma_of(u)
        out = np.empty_like(y)
        speed = np.empty(len(tt)) if self.check_speed else None
        single = len(self.phases) == 1
        for i, (f_rates, (f_s, _)) in enumerate(zip(self.rates, self.laws, strict=True)):
            sel = slice(None) if single else phase == i
            if not single and not sel.any():
                continue
            args = (tt, eps, gam, r, *values) if single else (
                tt[sel], eps[sel], gam[sel], r[sel], *(v[sel] for v in values))
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
        if not self.remember:
            if bad.any():
                out[bad] = np.nan
            return out
        if not (bad.any() or self.found.any()):      # the common case: remember, go on
            self.seen[:3, member] = (tt, eps, r)
            self.seen[4, member] = gam
            if speed is not None:
                self.seen[3, member] = speed
            return out
        speed = np.ones(len(tt)) if speed is None else speed
        out[bad] = np.nan
        # a non-finite state is the echo of an earlier bad rate, not a cause
        cause = bad & np.isfinite(u) & np.isfinite(r)
        keep = ((~self.found[member] & np.isfinite(r))
                | (cause & (tt < self.seen[0, member])))
        self.seen[:, member[keep]] = np.stack([tt, eps, r, speed, gam])[:, keep]
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
    Returns the states seen there (the reference of :func:`field_fault`)."""
    M = len(g0)
    with np.errstate(all="ignore"):
        start = field(np.zeros(M), y0, np.zeros(M, dtype=int), *args)
    first = field.seen.copy()
    singular = ~np.all(np.isfinite(start[:, :2]), axis=1)
    if singular.any():
        i = int(np.flatnonzero(singular)[0])
        values = [a[i] for a in args[3:]]
        raise (field_fault(system, field.laws[0][1], first[:, i], first[:, i], values)
               or ValueError(f"gamma0, n, beta: the vector field of {system.scheme.name} "
                             f"is not finite at gamma0 = {shown(g0[i])}, n = {values[0]:g}, "
                             f"beta = {values[1]:g}"))
    if not np.all(np.isfinite(start)):
        raise ValueError(f"sensitivities: the sensitivity system of {system.scheme.name} "
                         f"is not finite at t = 0 (gamma0 = 1 or a parameter at a "
                         f"singularity of the law)")
    field.found[:] = False
    return first


@dataclass
class BatchProblem:
    """The batch of ``sd.solve`` as the integrator sees it: the field, the
    start ``y0``, the field's arguments and the tolerances per member and
    component; ``first``: the states at ``t = 0`` (the reference of
    :func:`field_fault`)."""

    system: object
    sens: object
    field: ReducedRates
    y0: np.ndarray
    args: tuple
    rtol: list
    atol: np.ndarray
    frozen: np.ndarray
    at_cluster: np.ndarray
    first: np.ndarray

    @classmethod
    def build(cls, system, sens, nn, bb, g0, rr, pp, rtol, atol, form="gamma"):
        """The batch; ``form``: the compiled form its members share (:func:`form_of`)."""
        eps0 = 1.0 - g0
        at_cluster = eps0 <= 0          # gamma0 = 1: epsilon stays 0 (u = -oo)
        # The regular simplex, 1 + (n-1) gamma0 = 0, is an equilibrium too; a
        # start within rounding of it cannot be told from it in floats (and its
        # rounding could push gamma below -1/(n-1)), so it is held there as well.
        # The margin grows with n up to 1e6 only: 64 eps n would hold gamma0 = 0
        # (delta = 1) from n = 7e13 on.
        with np.errstate(invalid="ignore"):     # n = inf: no simplex apart from gamma = 0
            frozen = at_cluster | (np.isfinite(nn) & (
                np.abs(1 + (nn - 1) * g0) <= 64 * np.finfo(float).eps * np.minimum(nn, 1e6)))
        y0 = [np.log(np.where(at_cluster, 1.0, eps0)), rr]
        tol_r = [U_RTOL, rtol]
        tol_a = [u_atol(eps0, nn, rtol), np.full_like(nn, atol)]
        if sens is not None:
            for su, sr in sens.initial(np.where(at_cluster, 1.0, eps0)):
                y0 += [np.where(frozen, 0.0, su), np.broadcast_to(sr, nn.shape)]
                tol_r += [rtol, rtol]
                tol_a += [np.full_like(nn, rtol), np.full_like(nn, atol)]
        field = ReducedRates(system, sens, len(nn), frozen, at_cluster, form=form)
        y0 = np.stack(y0, axis=1)
        args = (frozen, at_cluster, np.arange(len(nn)), nn, bb, *pp)
        first = _start(field, system, y0, args, g0)
        field.remember = False
        return cls(system, sens, field, y0, args, tol_r, np.stack(tol_a, axis=1), frozen,
                   at_cluster, first)

    def member(self, i):
        """Member ``i`` alone, its field remembering the states it evaluates."""
        field = ReducedRates(self.system, self.sens, 1, self.frozen[i:i + 1],
                             self.at_cluster[i:i + 1], form=self.field.form)
        args = tuple(a[i:i + 1] for a in self.args[:2]) + (np.zeros(1, dtype=int),) + tuple(
            a[i:i + 1] for a in self.args[3:])
        with np.errstate(all="ignore"):
            field(np.zeros(1), self.y0[i:i + 1], np.zeros(1, dtype=int), *args)
        field.found[:] = False
        return field, args

    def solve(self, times, **options):
        """``integrate`` on the batch; a failure raises with its cause."""
        field, args = ((self.field.lean_rates, self.args[3:]) if self.field.lean
                       else (self.field, self.args))
        sol = integrate(field, times, self.y0, args, rtol=self.rtol, atol=self.atol,
                        breakpoints=self.system.breakpoints, **options)
        if not sol.success:
            raise self.failure(times, sol, options)
        return sol

    def failure(self, times, sol, options):
        """The error of a failed solve: its first failed member solved again
        alone (a member's steps do not depend on its batch), remembering the
        states it evaluates, names the cause (:func:`field_fault`)."""
        system = self.system
        i = int(np.flatnonzero(~np.isfinite(sol.y[:, -1]).all(axis=1))[0])
        field, args = self.member(i)
        integrate(field, times, self.y0[i:i + 1], args, rtol=self.rtol,
                  atol=self.atol[i:i + 1], breakpoints=system.breakpoints, **options)
        phase = int(np.searchsorted(system.breakpoints, field.seen[0, 0], side="left"))
        return (field_fault(system, field.laws[phase][1], field.seen[:, 0], self.first[:, i],
                       [a[i] for a in self.args[3:]])
                or ArithmeticError(f"solve: {sol.message}" + unnormalized_hint(system)))
