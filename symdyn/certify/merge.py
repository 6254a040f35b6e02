"""Certified merge times of two clusters (the two-cluster reduction).

Clusters of masses ``m`` and ``n - m`` at angle :math:`\\theta_0` merge to the
cosine ``level`` at the time :math:`T` of :func:`symdyn.reduced.merge.merge_time`;
here :math:`T` is enclosed in ball arithmetic from the reduction sympy
derives (:func:`symdyn.reduced.configurations.configuration` ``"two-clusters"``),
in :math:`u = -\\log(1-\\rho)` (:math:`\\rho` the clusters' cosine; the
factor :math:`1-\\rho` of :math:`\\dot\\rho` cancelled by sympy):

* :math:`\\dot\\rho` of :math:`\\rho` alone (Post-LN, nGPT, DeepNorm):
  :math:`T = \\int_{u_0}^{u_1} (1-\\rho)/\\dot\\rho\\,du` by Arb's rigorous
  quadrature (:func:`symdyn.certify.crossing.quadrature`);
* otherwise (radii :math:`r_A, r_B`, a clock :math:`t`, a switch in
  :math:`t`): the state :math:`(t, r_A, r_B)` by the validated Taylor
  integrator in :math:`u` (:math:`dt/du = (1-\\rho)/\\dot\\rho`,
  :math:`dr/du = (1-\\rho)\\dot r/\\dot\\rho`); a phase that ends at a switch
  :math:`t_s` in :math:`t` (the state :math:`(u, r_A, r_B)`,
  :math:`du/dt = \\dot\\rho/(1-\\rho)`) up to :math:`t_s`, or in :math:`u` up to
  the level when the level comes first.

The enclosure holds :math:`T` if :math:`\\dot\\rho > 0` on the way (otherwise
the integrals do not close and the result is :class:`Uncertified`).

Layer 3, certify.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
from flint import arb

from ..base.budget import time_limit
from ..model.piecewise import branch_at
from ..model.registry import scheme as get_scheme
from ..model.symbols import beta as BETA
from ..model.symbols import n, t
from ..reduced.configurations import configuration, m, rho
from ..reduced.merge import LEVEL
from .arith import Enclosure, ball, exact, working
from .crossing import _nonnegative, _refine, _settings, quadrature
from .forms import _edges
from .printer import compile_ball
from .taylor import Uncertified, identity, integrate

U_ = sp.Dummy("u", real=True)


@dataclass(frozen=True, kw_only=True)
class MergePhase:
    """One phase ``[start, end)`` of the two-cluster ODE, compiled: ``rate``
    :math:`(1-\\rho)/\\dot\\rho` in ``(rho, *theta)`` when autonomous, else
    ``in_u(rho, t, r_A, r_B, *theta)`` = :math:`d(t, r_A, r_B)/du` and
    ``in_t(t, u, r_A, r_B, *theta)`` = :math:`d(u, r_A, r_B)/dt`; ``theta`` =
    ``(n, m, beta, *params)``."""

    start: sp.Expr
    end: sp.Expr
    rate: Callable | None = None
    in_u: Callable | None = None
    in_t: Callable | None = None


@lru_cache(maxsize=32)
def by_phases(s: object, attention: str) -> tuple:
    red = configuration("two-clusters").reduce(s, attention)
    theta = [n, m, BETA, *s.symbols]
    names = [v.name for v in red.variables]
    edges = [sp.Integer(0), *_edges(s), sp.oo]
    out = []
    with time_limit(f"certify: the two-cluster laws of {s.name}"):
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            inside = (a + b) / 2 if b != sp.oo else a + 1
            rates = [branch_at(e, inside) for e in red.rates]
            speed = rates[0]
            if len(rates) == 1 and not speed.has(t):
                rate = compile_ball(sp.cancel((1 - rho) / speed), [rho, *theta])
                out.append(MergePhase(start=a, end=b, rate=rate))
                continue
            radii = [red.variables[names.index(k)] for k in ("r_A", "r_B")] \
                if len(rates) == 3 else [sp.Dummy("r_A"), sp.Dummy("r_B")]
            drs = rates[1:] if len(rates) == 3 else [sp.Integer(0), sp.Integer(0)]
            in_u = [_over(speed, sp.Integer(1)), *[_over(speed, d) for d in drs]]
            on_u = {rho: 1 - sp.exp(-U_)}
            in_t = [sp.cancel(speed / (1 - rho)).subs(on_u), *[d.subs(on_u) for d in drs]]
            out.append(MergePhase(start=a, end=b,
                                  in_u=compile_ball(in_u, [rho, t, *radii, *theta]),
                                  in_t=compile_ball(in_t, [t, U_, *radii, *theta])))
    return tuple(out)


def _over(speed: sp.Expr, numerator: sp.Expr) -> sp.Expr:
    """:math:`(1-\\rho)\\,numerator/\\dot\\rho` with :math:`\\dot\\rho`'s factor
    :math:`\\rho - 1` removed from its factored form (fewer terms than a
    cancelled quotient: ball arithmetic over complex boxes loses less)."""
    factors = sp.Mul.make_args(sp.factor(speed))
    if rho - 1 in factors:
        return -numerator / sp.Mul(*[f for f in factors if f != rho - 1])
    return sp.cancel((1 - rho) * numerator / speed)


def _time(phases: tuple, u0: arb, u1: arb, r0: list, theta: list, prec: int) -> tuple:
    """``(T, method)`` from ``u0`` to ``u1`` through the phases."""
    u, t0, radii = u0, arb(0), list(r0)
    order, tol = max(8, prec // 6 + 4), 2.0 ** (-(prec - 20) // 2)
    steps = 0
    for ph in phases:
        if ph.rate is not None:
            if ph.end != sp.oo:
                raise Uncertified("a switch after an autonomous phase is not supported",
                                  more_bits=False)
            def F(x: arb, analytic: bool = False, f: Callable = ph.rate) -> arb:
                return f(1 - (-x).exp(), *theta, analytic=analytic)
            return t0 + quadrature(F, u, u1, prec), "Arb acb.integral of (1 - rho)/rho_dot in u"
        if ph.end != sp.oo:
            start, end = ball(ph.start, "t_switch"), ball(ph.end, "t_switch")
            y, k, _ = integrate(ph.in_t, start, end, [u, *radii], theta,
                                tol=tol, order=order, variable=identity)
            steps += k
            if y[0].upper() < u1.lower():
                u, t0, radii = y[0], end, y[1:]
                continue
            if not y[0].lower() > u1.upper():
                raise Uncertified(f"the level is reached at the switch t = {ph.end} within "
                                  f"{prec} bits")
        y, k, _ = integrate(ph.in_u, u, u1, [t0, *radii], theta, tol=tol, order=order)
        return y[0], (f"validated Taylor series in u = -log(1 - rho), degree {order}, "
                      f"{steps + k} steps")
    raise Uncertified("no phase reaches the level", more_bits=False)


def merge_time(scheme: object, *, beta: object, theta0: object, n: object,
               m: object = None, level: object = LEVEL, r0: tuple = (1, 1), prec: int = 128,
               max_prec: int | None = None, rel_width: float | None = None,
               attention: str = "softmax") -> Enclosure:
    """An :class:`Enclosure` of the time two clusters of masses ``m`` and
    ``n - m`` (``n/2`` by default) at angle ``theta0`` take to reach the
    cosine ``level`` (:func:`symdyn.reduced.merge.merge_time`, certified).
    Inputs are exact (a float is its binary value); ``r0``: the clusters'
    radii for a scheme that does not start on the sphere. Precision as in
    :func:`symdyn.certify.crossing_time`.

    >>> import symdyn as sd
    >>> T = sd.certify.merge_time("post-ln", beta=0, theta0=1.0, n=2, level=0.999)
    >>> round(T.mid, 6), T.relative_width < 1e-40
    (3.195619, True)
    """
    s = get_scheme(scheme)
    nn = exact(n, "n")
    if not nn >= 2:
        raise ValueError(f"n: must be >= 2, got {n!r}")
    mm = nn / 2 if m is None else exact(m, "m")
    if not 0 < mm < nn:
        raise ValueError(f"m: must lie in (0, n) = (0, {n}), got {m!r}")
    if not exact(beta, "beta") >= 0:
        raise ValueError(f"beta: must be >= 0, got {beta!r}")
    th = exact(theta0, "theta0")
    if not (th > 0 and bool(sp.Rational(th.numerator, th.denominator) < sp.pi)):
        raise ValueError(f"theta0: must lie in (0, pi), got {theta0!r}")
    lv = exact(level, "level")
    if not -1 < lv < 1:
        raise ValueError(f"level: must lie in (-1, 1), got {level!r}")
    radii = (1, 1) if s.starts_on_sphere else r0
    if not (isinstance(radii, tuple) and len(radii) == 2
            and all(exact(x, "r0") > 0 for x in radii)):
        raise ValueError(f"r0: a pair of radii > 0, got {r0!r}")
    prec, max_prec, target = _settings(prec, max_prec, rel_width, (beta, theta0, n, level))
    phases = by_phases(s, attention)

    def compute(bits: int) -> Enclosure:
        with working(bits + 20):
            rho0 = ball(th, "theta0").cos()
            u0, u1 = -(1 - rho0).log(), -(1 - ball(lv, "level")).log()
            if not u1.lower() > u0.upper():
                raise ValueError(f"level: must lie above cos(theta0) = {float(rho0.mid()):.6g}, "
                                 f"got {level!r}")
            theta = [ball(nn, "n"), ball(mm, "m"), ball(beta, "beta"),
                     *[ball(s.defaults[x.name], x.name) for x in s.symbols]]
            T, how = _time(phases, u0, u1, [ball(x, "r0") for x in radii], theta, bits + 20)
        return Enclosure(_nonnegative(T), f"two-cluster reduction; {how} ({bits} bits)", bits)
    return _refine(compute, "merge_time", prec, max_prec, target)
