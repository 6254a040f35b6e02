r"""Merge laws of two clusters, per scheme, from the derived two-cluster reduction.

Two clusters of masses ``m`` and ``n - m`` at angle :math:`\theta_0`
(:func:`~symdyn.reduced.configurations.configuration` ``"two-clusters"``)
merge, to the level :math:`\rho_c` (their cosine), at the time

.. math:: T(\beta, \theta_0, m, n) = \int_{\rho_0}^{\rho_c} \frac{d\rho}{\dot\rho(\rho)}
          = \int_{\theta_c}^{\theta_0} \frac{\sin\theta\, d\theta}{\dot\rho(\cos\theta)}

when :math:`\dot\rho` (derived by sympy) depends on :math:`\rho` alone (the
schemes on the sphere with laws free of ``t``: Post-LN, DeepNorm, nGPT with
a constant step, ...); otherwise (radii, a clock ``t``) the reduced ODE is
integrated to the event :math:`\rho = \rho_c` (:func:`merge_time`).

For large :math:`\beta` (:func:`merge_asymptotics`, autonomous laws), with
:math:`\varepsilon = 1 - \rho`, the integrand grows as
:math:`g(\varepsilon)\,e^{p\beta\varepsilon}` (sympy's limits give
:math:`p = \lim \log(1/\dot\rho)/(\beta\varepsilon)` and
:math:`g = \lim e^{-p\beta\varepsilon}/\dot\rho`), and Laplace's method at the
far end gives :math:`T \sim g(\varepsilon_0)\,e^{p\beta\varepsilon_0}/(p\beta)`.

Three equal clusters equally spaced on a great circle sit on a saddle
(:func:`saddle_rate`): the Jacobian of the derived ODE of their cosines
(configuration ``"clusters"``, masses ``n/3``) at :math:`c_{ij} = -1/2` has
the eigenvector :math:`(1, -1, 0)` (a perturbation within the plane), whose
eigenvalue is the rate at which the saddle is left.

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..base.budget import complete_cache, time_limit
from ..base.checks import check_attention, number
from ..model.guards import lambdify
from ..model.registry import SchemeLike
from ..model.registry import scheme as get_scheme
from ..model.symbols import beta as BETA
from ..model.symbols import n, t
from .configurations import configuration, cosine, m, rho

#: The default merge level: the clusters' cosine (the simulator's cluster threshold).
LEVEL = 0.999
#: :math:`\varepsilon = 1 - \rho` and :math:`\theta` of the merge laws.
epsilon = sp.Symbol("epsilon", positive=True)
theta = sp.Symbol("theta", positive=True)


def _reduction(scheme, attention):
    return configuration("two-clusters").reduce(scheme, attention)


def autonomous(scheme: SchemeLike, attention: str = "softmax") -> bool:
    """True when the two-cluster :math:`\\dot\\rho` depends on :math:`\\rho` alone
    (no radii, no ``t``): then :math:`T` is a quadrature."""
    red = _reduction(scheme, attention)
    return len(red.variables) == 1 and not red.rates[0].has(t)


def merge_integrand(scheme: SchemeLike, attention: str = "softmax") -> sp.Expr:
    """:math:`dT/d\\theta = \\sin\\theta / \\dot\\rho(\\cos\\theta)` in ``theta``,
    ``beta``, ``n``, ``m`` (autonomous schemes, see :func:`autonomous`)."""
    check_attention(attention)
    return _integrand(get_scheme(scheme), attention)


@complete_cache(maxsize=64)
def _integrand(s, attention):
    if not autonomous(s, attention):
        raise ValueError(f"scheme: the two-cluster law of {s.name} depends on t or on the "
                         f"radii; merge_time integrates its ODE instead")
    rate = _reduction(s, attention).rate("rho")
    return sp.sin(theta) / rate.subs(rho, sp.cos(theta))


@dataclass(frozen=True, slots=True)
class _Numbers:
    """The checked numbers of a merge: ``beta``, ``theta0``, the masses ``n``
    and ``m``, the ``level``."""

    beta: float
    theta0: float
    n: float
    m: float
    level: float


def _numbers(beta, theta0, n_value, m_value, level) -> _Numbers:
    b = number(beta, "beta", 0)
    th0 = number(theta0, "theta0", 0, np.pi, low_open=True, high_open=True)
    nn = number(n_value, "n", 2)
    mm = nn / 2 if m_value is None else number(m_value, "m", 0, nn, low_open=True,
                                                 high_open=True)
    lv = number(level, "level", -1, 1, high_open=True)
    return _Numbers(beta=b, theta0=th0, n=nn, m=mm, level=lv)


def merge_time(scheme: SchemeLike, beta: float, theta0: float, n: float, m: float | None = None,
               level: float = LEVEL, attention: str = "softmax", r0=(1.0, 1.0),
               t_max: float = 1e15) -> float:
    """The time two clusters of masses ``m`` and ``n - m`` (``m = n/2`` by
    default) at angle ``theta0`` take to reach the cosine ``level``.

    Quadrature of the derived :math:`\\sin\\theta/\\dot\\rho(\\cos\\theta)` over
    :math:`[\\arccos(\\text{level}), \\theta_0]` for autonomous laws; else the
    reduced ODE (radii from ``r0``, 1 for schemes renormalized at ``t = 0``)
    to the event :math:`\\rho = \\text{level}` (DOP853, rtol 1e-12); ``inf``
    if not reached by ``t_max``.

    Examples
    --------
    >>> from symdyn.reduced.merge import merge_time
    >>> round(merge_time("post-ln", beta=0, theta0=1.0, n=2, level=0.999), 6)
    3.195619
    """
    from scipy.integrate import quad
    s = get_scheme(scheme)
    check_attention(attention)
    num = _numbers(beta, theta0, n, m, level)
    b, th0, nn, mm, lv = num.beta, num.theta0, num.n, num.m, num.level
    thc = float(np.arccos(lv))
    if th0 <= thc:
        return 0.0
    values = {BETA: b, globals()["n"]: nn, globals()["m"]: mm}
    with time_limit(f"merge law of {s.name}"):
        if autonomous(s, attention):
            integrand = merge_integrand(s, attention).subs(values)
            loose = integrand.free_symbols - {theta}
            if loose:
                raise ValueError(f"scheme: give numbers for {', '.join(sorted(map(str, loose)))} "
                                 f"(scheme.bind(...))")
            f = lambdify(theta, integrand, "integrand")
            return float(quad(f, thc, th0, limit=400, epsabs=0, epsrel=1e-13)[0])
        red = _reduction(s, attention)
    start = {"rho": float(np.cos(th0))}
    if len(red.variables) > 1:
        rA, rB = (1.0, 1.0) if s.starts_on_sphere else r0
        start.update(r_A=number(rA, "r0", 0, low_open=True),
                     r_B=number(rB, "r0", 0, low_open=True))
    breaks, phases = red.numeric(n=nn, m=mm, beta=b)
    y = np.array([start[v.name] for v in red.variables])
    edges = [0.0, *[x for x in breaks if x < t_max], number(t_max, "t_max", 0, low_open=True)]

    return crossing_in_phases(phases, edges, y, lv, "merge_time")


def crossing_in_phases(phases, edges, y, level: float, who: str) -> float:
    """The first time :math:`y_0` rises through ``level``, integrating phase by
    phase over ``edges`` (``phases[i]`` on ``[edges[i], edges[i+1]]``, the last
    phase beyond; DOP853, rtol 1e-12, atol 1e-14); ``inf`` if not reached by
    ``edges[-1]``. A failed integration raises ``ArithmeticError`` naming ``who``."""
    from scipy.integrate import solve_ivp

    def hit(tt, yy, *_):
        return yy[0] - level
    hit.terminal, hit.direction = True, 1
    for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        f = phases[min(i, len(phases) - 1)]
        sol = solve_ivp(lambda tt, yy, f=f: np.asarray(f(tt, *yy), float), (lo, hi), y,
                        method="DOP853", rtol=1e-12, atol=1e-14, events=hit)
        if not sol.success:
            raise ArithmeticError(f"{who}: {sol.message}")
        if sol.t_events[0].size:
            return float(sol.t_events[0][0])
        y = sol.y[:, -1]
    return float("inf")


def merge_asymptotics(scheme: SchemeLike, attention: str = "softmax") -> sp.Expr:
    """The leading large-beta merge time
    :math:`g(\\varepsilon_0)\\,e^{p\\beta\\varepsilon_0}/(p\\beta)` in ``epsilon``
    (:math:`1 - \\cos\\theta_0`), ``beta``, ``n``, ``m`` (autonomous schemes,
    softmax attention).

    Derivation: in :math:`1/\\dot\\rho` put :math:`\\rho = 1 - \\varepsilon`,
    :math:`e^{\\beta} = E`, :math:`e^{\\beta\\rho} = E x` with
    :math:`x = e^{-\\beta\\varepsilon} \\to 0`; the softmax weights are
    homogeneous, so ``E`` cancels, and the leading term in ``x`` is
    :math:`g(\\varepsilon)\\,x^{-p}` (sympy's ``as_leading_term``; the masses
    as ``m`` and ``m_B = n - m``, both positive). Post-LN at ``m = n/2``:
    :math:`e^{\\beta\\varepsilon_0}/(2\\beta\\varepsilon_0(2 - \\varepsilon_0))`.
    A ``ValueError`` when the law is not of this form."""
    s = get_scheme(scheme)
    if attention != "softmax":
        raise ValueError(f"attention: the large-beta law is derived for 'softmax', "
                         f"got {attention!r}")
    merge_integrand(s, attention)           # refuses the non-autonomous laws
    return _asymptotics(s, attention)


@complete_cache(maxsize=64)
def _asymptotics(s, attention):
    x, E = sp.Symbol("x", positive=True), sp.Symbol("E", positive=True)
    m_B = sp.Symbol("m_B", positive=True)
    with time_limit(f"merge asymptotics of {s.name}"):
        rate = _reduction(s, attention).rate("rho").subs(n, m + m_B)
        inverse = 1 / rate.subs({sp.exp(BETA * rho): E * x, sp.exp(BETA): E})
        inverse = sp.powsimp(sp.powdenest(inverse.subs(rho, 1 - epsilon), force=True))
        g, power = inverse.as_leading_term(x).as_coeff_exponent(x)
        g, p = sp.factor(g), -power
    if g.has(E, x, BETA, t) or not (p.is_number and p.is_positive):
        raise ValueError(f"scheme: the merge time of {s.name} is not of the form "
                         f"g(epsilon) exp(p beta epsilon) with p > 0 (p = {p}, g = {g})")
    return sp.factor(g.subs(m_B, n - m)) * sp.exp(p * BETA * epsilon) / (p * BETA)


def saddle_rate(scheme: SchemeLike, attention: str = "softmax") -> sp.Expr:
    """The unstable rate of three equal clusters equally spaced on a great circle,
    in ``beta`` (and ``n``, ``t`` where the law has them), for a scheme on the
    sphere: :math:`\\lambda = J_{11} - J_{12}`, the eigenvalue of the Jacobian
    of :math:`(\\dot c_{12}, \\dot c_{13}, \\dot c_{23})` at
    :math:`c_{ij} = -1/2` on :math:`(1, -1, 0)` (checked to be an eigenvector)."""
    s = get_scheme(scheme)
    check_attention(attention)
    if not s.on_sphere:
        raise ValueError(f"scheme: the saddle of {s.name} moves with the radii; a scheme on "
                         f"the sphere is needed")
    return _saddle(s, attention)


@complete_cache(maxsize=64)
def _saddle(s, attention):
    third = n / 3
    config = configuration("clusters", masses=(third, third, third))
    with time_limit(f"saddle rate of {s.name}"):
        red = config.reduce(s, attention)
        cs = [cosine(1, 2), cosine(1, 3), cosine(2, 3)]
        at = dict.fromkeys(cs, sp.Rational(-1, 2))
        J = sp.Matrix(red.rates).jacobian(cs).subs(at)
        v = sp.Matrix([1, -1, 0])
        rate = sp.factor(sp.simplify(J[0, 0] - J[0, 1]))
        if sp.simplify(J * v - rate * v) != sp.zeros(3, 1):
            raise ArithmeticError(f"saddle_rate: (1, -1, 0) is not an eigenvector for {s.name}")
    return rate
