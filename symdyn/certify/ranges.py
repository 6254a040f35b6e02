"""Crossing times over boxes of parameters, with widths that follow the box.

For a box :math:`B` of parameters :math:`\\theta` (``n``, ``beta``, a
scheme's parameters given as intervals) the crossing time is enclosed by the
**mean-value form with proved monotonicity** (:func:`enclose`):

.. math:: T(x) = T(v) + \\sum_i \\partial_i T(\\xi)\\,(x_i - v_i),
          \\qquad \\xi \\in B,

with balls :math:`G_i \\ni \\partial_i T` over :math:`B`. For the lower
bound :math:`v_i = lo_i` where :math:`G_i \\ge 0` (the term is
:math:`\\ge 0`), :math:`v_i = hi_i` where :math:`G_i \\le 0`, else the centre
(the term within :math:`\\pm\\max|G_i|\\,(hi_i - lo_i)/2`); the upper bound
mirrors it. :math:`T(v)` at the two points comes from the point certificates
(:mod:`symdyn.certify.crossing`), so where every sign is proved the
enclosure is :math:`[T(v_{lo}).lo, T(v_{hi}).hi]`, the true range up to the
points' widths. Where a sign is not proved, the box is bisected along that
parameter (``depth`` times at most) and the enclosures' hull is taken.

:math:`G`, where every phase is separable or nested (Post-LN, Pre-LN,
Peri-LN, Mix-LN, nGPT, DeepNorm, sqrt-scaling): the derivatives of the
crossing-time integrals (:func:`affine_gradient`), on pieces of
:math:`[u_0, u_1]`, in affine arithmetic (:mod:`symdyn.certify.affine`: the
box's parameters and the piece's position are its symbols, so the first-order
dependence on the box is exact and each piece is the midpoint rule with its
error bounded), with the integrands written with one exponential of
:math:`\\beta` where sympy can (:func:`balanced`). Otherwise (an ODE phase,
LN-Scaling): the state's sensitivities :math:`S = \\partial y/\\partial\\theta`,
:math:`dS/dx = F_y S + F_\\theta` (sympy's derivatives of the reduced laws),
by the validated Taylor integrator over the box's balls
(:func:`sensitivity`): sound, much wider.

Layer 3, certify.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy as sp
from flint import arb

from ..base.budget import time_limit
from ..model.symbols import beta as BETA
from ..model.symbols import gamma, n, r, t
from .affine import Affine
from .arith import ball
from .forms import Phase, forms
from .interval import Interval
from .printer import compile_ball
from .taylor import Uncertified, gamma_of, identity, integrate

U_ = sp.Dummy("u", real=True)
Q_ = sp.Dummy("q", real=True)
R0_ = sp.Dummy("r0", positive=True)


@dataclass(frozen=True, kw_only=True)
class Variational:
    """One phase's fields with their variational equations, for
    :func:`symdyn.certify.taylor.integrate`: ``in_u(gamma, *y, *theta[, R0])``
    with ``y`` the state and its sensitivities ``(y0, y1, S0j..., S1j...)``:
    in ``u``, the state ``(t, r)``, or ``(t, q)`` with :math:`r = R_0 e^q`
    when ``nested`` (then :math:`dq/du` is free of the state and two Picard
    passes give every coefficient); ``in_t(t, u, r, S..., *theta)`` in ``t``,
    the state ``(u, r)``. ``count``: the parameters ``theta = (n, beta,
    *params)``."""

    in_u: Callable
    in_t: Callable
    count: int
    nested: bool


def _rows(F: list, state: list, theta: list) -> list:
    """``F``, its Jacobian in ``state`` and its derivatives in ``theta``, row by row."""
    J = [sp.diff(f, y) for f in F for y in state]
    P = [sp.diff(f, p) for f in F for p in theta]
    return [*F, *J, *P]


def _extend(rows: Callable, P: int) -> Callable:
    """The field of ``(y, S)``: ``F`` and :math:`F_y S + F_\\theta` from ``rows``."""
    def field(x: object, *args: object, analytic: bool = False) -> list:
        y, rest = args[:2 + 2 * P], args[2 + 2 * P:]
        out = rows(x, y[0], y[1], *rest, analytic=analytic)
        F, J, Fp = out[:2], out[2:6], out[6:]
        S0, S1 = y[2:2 + P], y[2 + P:2 + 2 * P]
        dS = [J[2 * i] * S0[j] + J[2 * i + 1] * S1[j] + Fp[i * P + j]
              for i in range(2) for j in range(P)]
        return [*F, *dS]
    return field


@lru_cache(maxsize=64)
def _variational(phase: Phase, params: tuple) -> Variational:
    G, R = phase.gamma_dot, phase.r_dot
    theta = [n, BETA, *params]
    with time_limit("certify: the variational equations of a phase"):
        if phase.nested:
            ratio = sp.cancel(R / G / r) if R != 0 else sp.Integer(0)
            in_u = [sp.cancel((1 - gamma) / G.subs(r, R0_ * sp.exp(Q_))),
                    sp.cancel((1 - gamma) * ratio)]
            fu = compile_ball(_rows(in_u, [t, Q_], theta), [gamma, t, Q_, *theta, R0_])
        else:
            in_u = [sp.cancel((1 - gamma) / G), sp.cancel((1 - gamma) * R / G)]
            fu = compile_ball(_rows(in_u, [t, r], theta), [gamma, t, r, *theta])
        on_u = {gamma: 1 - sp.exp(-U_)}
        in_t = [sp.cancel(G / (1 - gamma)).subs(on_u), R.subs(on_u)]
        ft = compile_ball(_rows(in_t, [U_, r], theta), [t, U_, r, *theta])
    P = len(theta)
    return Variational(in_u=_extend(fu, P), in_t=_extend(ft, P), count=P,
                       nested=phase.nested)


def variational(scheme: object, attention: str = "softmax") -> tuple[Variational, ...]:
    """The compiled variational fields of each phase of ``scheme`` (cached)."""
    from ..model.registry import scheme as get_scheme
    s = get_scheme(scheme)
    return tuple(_variational(ph, tuple(s.symbols)) for ph in forms(s, attention))


@dataclass(frozen=True, kw_only=True)
class Sensitivity:
    """The crossing time ``time`` and its derivatives ``gradient`` (one per
    parameter of ``theta``), balls that hold them over the whole box."""

    time: arb
    gradient: tuple


ORDER = 12            # Taylor degree over boxes: the width comes from the box
TOL = 1e-12           # each step's remainder, relative to the state
MAX_STEPS = 200       # over a wide box the balls stop the steps early: fail fast


def sensitivity(phases: tuple, variations: tuple, u0: arb, u1: arb, r0: arb,
                theta: list) -> Sensitivity:
    """:math:`T` and :math:`\\partial T/\\partial\\theta` over the balls ``theta``,
    phase by phase (see the module's docstring), by the validated Taylor
    integrator on the state and its variational equations."""
    P = len(theta)
    u, rr = u0, r0
    Su, Sr = [arb(0)] * P, [arb(0)] * P
    for ph, var in zip(phases, variations, strict=True):
        start = ball(ph.start, "t_switch")
        if ph.end != sp.oo:
            y, _, _ = integrate(var.in_t, start, ball(ph.end, "t_switch"), [u, rr, *Su, *Sr], theta,
                                tol=TOL, order=ORDER, variable=identity,
                                max_steps=MAX_STEPS)
            if y[0].upper() < u1.lower():
                u, rr, Su, Sr = y[0], y[1], y[2:2 + P], y[2 + P:]
                continue
            if not y[0].lower() > u1.upper():
                raise Uncertified(f"the level is reached at the switch t = {ph.end} for "
                                  f"some parameters in the box")
        rest = [*theta, rr] if var.nested else list(theta)
        zero = [start, arb(0) if var.nested else rr, *[arb(0)] * (2 * P)]
        F = var.in_u(gamma_of(u), *zero, *rest)[:2]          # the field at the start
        St = [-(F[0] * s) for s in Su]
        if var.nested:                  # q = log(r / r_s): q_theta = r_theta / r_s - p u_theta
            S2 = [a / rr - F[1] * s for a, s in zip(Sr, Su, strict=True)]
        else:
            S2 = [a - F[1] * s for a, s in zip(Sr, Su, strict=True)]
        y, _, _ = integrate(var.in_u, u, u1, [*zero[:2], *St, *S2], rest, tol=TOL,
                            order=ORDER, passes=2 if var.nested else None,
                            max_steps=MAX_STEPS)
        return Sensitivity(time=y[0], gradient=tuple(y[2:2 + P]))
    raise Uncertified("no phase reaches the level", more_bits=False)


@dataclass(frozen=True, kw_only=True)
class Quadrature:
    """A phase's integrands and their derivatives in ``theta = (n, beta,
    *params)``, compiled: a separable phase ``rows(gamma, *theta)`` =
    ``[F, dF/dtheta...]`` (:math:`F = dS/du`), ``S(T, *theta)`` =
    ``[S, dS/dtheta...]``, ``S_inv(I, *theta)`` = ``[dS^{-1}/dI,
    dS^{-1}/dtheta...]``; a nested phase ``rows(gamma, q, *theta, r0)`` =
    ``[w, dw/dq, dw/dtheta..., p, dp/dtheta...]`` (:math:`w = dt/du` at
    :math:`r = r_0 e^q`, :math:`p = dq/du`)."""

    kind: str
    rows: Callable
    S: Callable | None = None
    S_inv: Callable | None = None


def balanced(e: sp.Expr) -> sp.Expr:
    """``e`` with numerator and denominator divided by the exponential of the
    denominator that depends on :math:`\\gamma` (the first such, or none),
    expanded and with exponentials merged (:math:`e^\\beta e^{-\\beta\\gamma}
    = e^{\\beta(1-\\gamma)}`): one occurrence of :math:`\\beta` where there
    were two, so affine arithmetic over a box loses less. An identity."""
    num, den = sp.fraction(sp.cancel(e))
    lead = sorted((x for x in den.atoms(sp.exp) if x.has(gamma)), key=sp.default_sort_key)
    if not lead:
        return e
    k = 1 / lead[0]
    return sp.powsimp(sp.expand(num * k)) / sp.powsimp(sp.expand(den * k))


@lru_cache(maxsize=64)
def _quadrature(phase: Phase, params: tuple) -> Quadrature | None:
    theta = [n, BETA, *params]
    T_, I_ = sp.Symbol("T", positive=True), sp.Symbol("I", positive=True)
    with time_limit("certify: the derivatives of a phase's integrands"):
        if phase.kind == "separable":
            F = balanced(phase.rate_expr)
            rows = compile_ball([F, *[balanced(sp.diff(F, x)) for x in theta]],
                                [gamma, *theta])
            S = compile_ball([phase.S, *[sp.diff(phase.S, x) for x in theta]], [T_, *theta])
            Si = compile_ball([sp.diff(phase.S_inv, I_), *[sp.diff(phase.S_inv, x)
                                                           for x in theta]], [I_, *theta])
            return Quadrature(kind="separable", rows=rows, S=S, S_inv=Si)
        if not phase.nested:
            return None
        G, R = phase.gamma_dot, phase.r_dot
        w = balanced(sp.cancel((1 - gamma) / G.subs(r, R0_ * sp.exp(Q_))))
        p = balanced(sp.cancel((1 - gamma) * R / G / r)) if R != 0 else sp.Integer(0)
        exprs = [w, *[balanced(sp.diff(w, x)) for x in (Q_, *theta)],
                 p, *[balanced(sp.diff(p, x)) for x in theta]]
        return Quadrature(kind="nested", rows=compile_ball(exprs, [gamma, Q_, *theta, R0_]))


def quadratures(scheme: object, attention: str = "softmax") -> tuple:
    """:class:`Quadrature` per phase of ``scheme`` (None for a phase without
    a separable or nested form), cached."""
    from ..model.registry import scheme as get_scheme
    s = get_scheme(scheme)
    return tuple(_quadrature(ph, tuple(s.symbols)) for ph in forms(s, attention))


PIECES = 128           # pieces of [u0, u1] for the derivatives' enclosures


def _const(x, K: int) -> Affine:
    return Affine.of(x, K)


def _integral(f: Affine, h: arb) -> Affine:
    """:math:`\\int` over a piece of length ``h`` of ``f``, affine in the box's
    symbols and in the piece's own :math:`\\tau \\in [-1, 1]` (the last
    symbol, :math:`u = m + h\\tau/2`): the term in :math:`\\tau` integrates to
    0, the rest to ``h`` times itself (midpoint rule, its error in ``e``)."""
    a = (*(x * h for x in f.a[:-1]), arb(0))
    return Affine(f.c * h, a, (f.e * h.abs_upper()).abs_upper())


def _average_from_start(f: Affine) -> Affine:
    """``f`` averaged over :math:`[-1, \\tau]`: its :math:`\\tau` term becomes
    :math:`a_\\tau(\\tau - 1)/2` (a mean value of the affine part)."""
    at = f.a[-1]
    return Affine(f.c - at / 2, (*f.a[:-1], at / 2), f.e)


def affine_gradient(phases: tuple, quads: tuple, u0: arb, u1: arb, r0: arb,
                    theta: list, *, pieces: int = PIECES) -> tuple | None:
    """Balls holding :math:`\\partial T/\\partial\\theta_j` over the box, by
    quadrature on ``pieces`` pieces of :math:`[u_0, u_1]` in affine arithmetic
    (:mod:`symdyn.certify.affine`; ``theta``: affine forms in the box's
    symbols and one more, the piece's :math:`\\tau`). Phases with a separable
    or nested form, a switch after a separable one (None otherwise):

    * separable, :math:`T = S^{-1}(I)`, :math:`I = \\int F\\,du`:
      :math:`\\partial T = \\partial_I S^{-1}\\,\\partial I + \\partial_\\theta S^{-1}`;
    * a switch at :math:`t_s` reached at :math:`u_s`, :math:`I(u_s) = S(t_s)`:
      :math:`\\partial u_s = (\\partial S(t_s) - \\partial I(u_s))/F(u_s)`,
      :math:`u_s \\in [a, b]` (grid points that bracket it over the box); the
      next phase starts at :math:`u_s`: its :math:`\\partial I` at
      :math:`-F(u_s)\\,\\partial u_s`, :math:`\\partial q` at
      :math:`-p(u_s)\\,\\partial u_s`, :math:`\\partial T` at
      :math:`-w(u_s)\\,\\partial u_s`, and :math:`[u_s, b]` by the mean value
      theorem (:math:`(b - u_s) f([a, b])`);
    * nested, :math:`T = t_s + \\int w(\\gamma, r_0 e^q)\\,du`,
      :math:`q = \\int p`: :math:`\\partial T = \\int (\\partial_\\theta w +
      \\partial_q w\\,\\partial q)\\,du`, :math:`\\partial q = \\int \\partial_\\theta p`.

    On a piece, :math:`u = m + h\\tau/2` is affine in :math:`\\tau`, so are
    :math:`\\gamma`, the integrands and :math:`q(u) = Q + (u - c)\\bar p`
    (:math:`\\bar p` the mean of :math:`p` since the piece's start), and each
    integral is the midpoint rule with its error bounded (:func:`_integral`)."""
    P = len(theta)
    K = P + 1                      # the box's symbols and tau
    if any(qd is None for qd in quads) or any(ph.end != sp.oo and qd.kind != "separable"
                                              for ph, qd in zip(phases, quads, strict=True)):
        return None
    grid = [u0] + [arb((u0 + (u1 - u0) * (k / pieces) ** 2).mid()) for k in range(1, pieces)] + [u1]
    tau = Affine.symbol(arb(-1), arb(1), P, K)
    zero = _const(0, K)

    def lifted(fn: Callable) -> Callable:      # constants of a compiled row: affine forms
        return lambda *args: [_const(v, K) for v in fn(*args)]
    quads = tuple(Quadrature(kind=qd.kind, rows=lifted(qd.rows),
                             S=qd.S and lifted(qd.S), S_inv=qd.S_inv and lifted(qd.S_inv))
                  for qd in quads)

    def piece(k: int) -> tuple:
        h = grid[k + 1] - grid[k]
        m = (grid[k] + grid[k + 1]) / 2
        u = tau * (h / 2) + m
        return -((-u).expm1()), h

    def lump(lo: int, hi: int) -> tuple:        # gamma over [grid[lo], grid[hi]], and its length
        X = Interval(grid[lo].lower(), grid[hi].upper())
        return _const(-((-X).expm1()), K), _const(Interval(arb(0), (grid[hi] - grid[lo])
                                                           .upper()), K)
    a = b = 0                      # the switch lies in [grid[a], grid[b]] (indices)
    us = [zero] * P                # d u_s / d theta
    for ph, qd in zip(phases, quads, strict=True):
        g0, W = lump(a, b)         # [u_s, grid[b]]: gamma there, and b - u_s
        if qd.kind == "separable":
            row = qd.rows(g0, *theta)
            acc = W * row[0]
            dI = [-(row[0] * us[j]) + W * row[1 + j] for j in range(P)]
            end = None if ph.end == sp.oo else qd.S(ball(ph.end, "t_switch"), *theta)
            below, k = b, b
            hist = [dI]
            while k < pieces:
                g, h = piece(k)
                row = qd.rows(g, *theta)
                acc = acc + _integral(row[0], h)
                dI = [dI[j] + _integral(row[1 + j], h) for j in range(P)]
                k += 1
                hist.append(dI)
                if end is None:
                    continue
                if acc.range().hi < end[0].range().lo:
                    below = k
                elif acc.range().lo > end[0].range().hi:
                    break
            if end is None or k == pieces and not acc.range().lo > end[0].range().hi:
                if end is not None and not acc.range().hi < end[0].range().lo:
                    raise Uncertified(f"the level is reached at the switch t = {ph.end} for "
                                      f"some parameters in the box")
                d = qd.S_inv(acc, *theta)
                return tuple((d[0] * dI[j] + d[1 + j]).ball() for j in range(P))
            gs, Ws = lump(below, k)    # the switch: I(u_s) = S(t_s), u_s in [below, k]
            row = qd.rows(gs, *theta)
            dI_s = [hist[below - b][j] + Ws * row[1 + j] for j in range(P)]
            us = [(end[1 + j] - dI_s[j]) / row[0] for j in range(P)]
            a, b = below, k
            continue
        row = qd.rows(g0, zero, *theta, r0)
        p0 = row[2 + P]
        Q = W * p0
        dQ = [-(p0 * us[j]) + W * row[3 + P + j] for j in range(P)]
        unit = _const(Interval(arb(0), arb(1)), K)
        row = qd.rows(g0, unit * Q, *theta, r0)
        dqa = [-(p0 * us[j]) + unit * W * row[3 + P + j] for j in range(P)]
        w0 = qd.rows(g0, zero, *theta, r0)[0]
        dT = [-(w0 * us[j]) + W * (row[2 + j] + row[1] * dqa[j]) for j in range(P)]
        for k in range(b, pieces):
            g, h = piece(k)
            prow = qd.rows(g, zero, *theta, r0)
            since = (tau + 1) * (h / 2)                       # u - c
            qX = Q + since * _average_from_start(prow[2 + P])
            dqX = [dQ[j] + since * _average_from_start(prow[3 + P + j]) for j in range(P)]
            row = qd.rows(g, qX, *theta, r0)
            dT = [dT[j] + _integral(row[2 + j] + row[1] * dqX[j], h) for j in range(P)]
            Q = Q + _integral(prow[2 + P], h)
            dQ = [dQ[j] + _integral(prow[3 + P + j], h) for j in range(P)]
        return tuple(x.ball() for x in dT)
    raise Uncertified("no phase reaches the level", more_bits=False)


@lru_cache(maxsize=64)
def time_field(phase: Phase, params: tuple) -> Callable:
    """The phase's field in ``t``: ``f(t, u, r, *theta)`` =
    :math:`(du/dt, dr/dt) = (G/(1-\\gamma), R)` at :math:`\\gamma = 1 - e^{-u}`
    (the factor :math:`1-\\gamma` of :math:`G` cancelled by sympy), compiled."""
    theta = [n, BETA, *params]
    on_u = {gamma: 1 - sp.exp(-U_)}
    with time_limit("certify: a phase's field in t"):
        exprs = [sp.cancel(phase.gamma_dot / (1 - gamma)).subs(on_u), phase.r_dot.subs(on_u)]
        return compile_ball(exprs, [t, U_, r, *theta])


@dataclass(frozen=True, kw_only=True)
class BoxEnclosure:
    """An enclosure ``time`` of the crossing time over a box, ``signs`` of its
    derivatives (``+1``, ``-1`` proved, ``0`` not), the number of sub-boxes
    and points it took, and how (``method``)."""

    time: arb
    signs: tuple
    boxes: int
    points: int
    method: str


Box = dict          # parameter name -> (lo, hi), exact Fractions


def _hull(a: arb, b: arb) -> arb:
    lo, hi = a.lower().min(b.lower()), a.upper().max(b.upper())
    return Interval(lo, hi).ball()


def mean_value(box: Box, names: list, grad: tuple, point: Callable[[dict], arb]) -> arb:
    """The mean-value form with the proved signs (see the module's docstring):
    ``point`` encloses :math:`T` at an exact parameter point."""
    lo_pt, hi_pt = {}, {}
    slack = Interval(0)
    for name, g in zip(names, grad, strict=True):
        G = Interval(g)
        a, b = box[name]
        if a == b:
            lo_pt[name] = hi_pt[name] = a
            continue
        if G.lo >= 0:
            lo_pt[name], hi_pt[name] = a, b
        elif G.hi <= 0:
            lo_pt[name], hi_pt[name] = b, a
        else:
            lo_pt[name] = hi_pt[name] = (a + b) / 2
            big = G.lo.abs_upper().max(G.hi.abs_upper())
            term = (big * (arb((b - a).numerator) / (b - a).denominator) / 2).upper()
            slack = slack + Interval(-term, term)
    T_lo = point(lo_pt)
    T_hi = T_lo if hi_pt == lo_pt else point(hi_pt)
    lo, hi = (T_lo.lower() + slack.lo).lower(), (T_hi.upper() + slack.hi).upper()
    if not lo <= hi:                    # the signs contradict the points: no proof
        raise Uncertified("the mean-value form's bounds cross: the derivatives' signs "
                          "are not those of the crossing time")
    return Interval(lo, hi).ball()


def signs(grad: tuple) -> tuple:
    return tuple(1 if g.lower() >= 0 else -1 if g.upper() <= 0 else 0 for g in grad)


def enclose(box: Box, names: list, gradient: Callable[[Box], tuple],
            point: Callable[[dict], arb], depth: int = 2) -> BoxEnclosure:
    """The crossing time over ``box`` by the mean-value form with proved signs
    (``gradient(box)``: balls holding the derivatives over it; ``point``: an
    enclosure at a point), bisecting along the parameter whose unproved sign
    costs the most width, ``depth`` times at most; the enclosures' hull."""
    grad = gradient(box)
    sg = signs(grad)
    T = mean_value(box, names, grad, point)
    wide = [k for k in names if box[k][1] > box[k][0]]
    points = 1 if all(s == 0 for k, s in zip(names, sg, strict=True) if k in wide) else 2
    boxes = 1
    widths = [(float(g.abs_upper()) * float(box[k][1] - box[k][0]), k)
              for k, g, s in zip(names, grad, sg, strict=True) if s == 0 and k in wide]
    if widths and depth > 0:
        _, k = max(widths)
        a, b = box[k]
        parts = [enclose({**box, k: side}, names, gradient, point, depth - 1)
                 for side in ((a, (a + b) / 2), ((a + b) / 2, b))]
        T = _hull(parts[0].time, parts[1].time)
        boxes = sum(p.boxes for p in parts)
        points = sum(p.points for p in parts)
        sg = tuple(x if x == y else 0 for x, y in zip(parts[0].signs, parts[1].signs,
                                                         strict=True))
    text = ", ".join(f"{k} {'increasing' if s > 0 else 'decreasing' if s < 0 else 'not monotone'}"
                     for k, s in zip(names, sg, strict=True) if k in wide)
    return BoxEnclosure(time=T, signs=sg, boxes=boxes, points=points,
                        method=f"mean-value form over the box with proved signs ({text}); "
                               f"{boxes} box{'es' if boxes > 1 else ''}, {points} point "
                               f"certificate{'s' if points > 1 else ''}")


def ball_of(pair: tuple) -> arb:
    """A ball holding ``[lo, hi]`` (a pair of Fractions), outward at the precision."""
    lo, hi = (arb(q.numerator) / q.denominator for q in pair)
    return Interval(lo.lower(), hi.upper()).ball()


def fractions(value: object) -> tuple[Fraction, Fraction]:
    """``(lo, hi)`` exactly; a number is ``(x, x)``."""
    from .arith import exact
    if isinstance(value, tuple):
        return exact(value[0], "box"), exact(value[1], "box")
    x = exact(value, "box")
    return x, x
