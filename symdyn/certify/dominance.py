"""Pointwise dominance: the sign of :math:`T_B - T_A` without enclosing either time.

For a scheme whose reduced ODE is autonomous in one phase
(:math:`\\dot\\gamma = G(\\gamma, r)`, :math:`\\dot r = R(\\gamma, r)`, no
``t``) and whose radial rate :math:`p = (1-\\gamma) R/(G r)` is free of ``r``,
in :math:`u = -\\log(1-\\gamma)` while :math:`G > 0`:

.. math::
    r(u) = r_0 e^{q(u)},\\quad q(u) = \\int_{u_0}^{u} p,\\qquad
    T = \\int_{u_0}^{u_1} w(\\gamma, r(u))\\,du,\\quad w = (1-\\gamma)/G.

Two such schemes started alike (the same :math:`\\gamma_0` and :math:`r_0`,
required) cross the same :math:`u`-range, so
:math:`T_B - T_A = \\int d`, :math:`d = w_B(\\gamma, r_B) - w_A(\\gamma, r_A)`.
Sympy writes the difference in divided differences (exact identities, no
scheme typed):

.. math::
    d = d_0(\\gamma) + (r_B - r_0) D_B(\\gamma, r_A, r_B) + (r_A - r_0) D_A(\\gamma, r_A),

:math:`d_0 = d|_{r_A = r_B = r_0}` (Pre-LN against Post-LN: :math:`d_0 = 0`,
:math:`D_B = (1-\\gamma)/f > 0`). On each piece :math:`P` of
:math:`[u_0, u_1]` the balls of :math:`q` (cumulative sums of
:math:`|P|\\,p(P)`), of :math:`r - r_0 = r_0\\,\\mathrm{expm1}(q)` and of the
factors give :math:`d(P)`, with interval products taken at the endpoints (so
a factor :math:`[0, \\epsilon]` keeps its sign), and
:math:`\\sum_P |P|\\,d(P) \\ni T_B - T_A`: a lower end above 0 proves
"A before B" for every parameter in the box, an upper end below 0 the
reverse. :math:`w_A, w_B > 0` is checked on every piece (then
:math:`\\gamma` increases and the integrals are the crossing times).

Layer 3, certify.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
from flint import arb

from ..model.registry import scheme as get_scheme
from ..model.symbols import beta as BETA
from ..model.symbols import gamma, n, r, t
from .arith import ball, exact, working
from .forms import forms
from .interval import Interval
from .printer import compile_ball

R_A, R_B, R0 = sp.symbols("r_A r_B r_0", positive=True)
ONE = sp.Integer(1)
#: the certificate's name in a Region
NAME = "pointwise dominance"
#: the most pieces one difference takes (then nothing is claimed)
MAX_PIECES = 20000


def _gather(co):
    """``co`` with each sum among its factors factored, and each sum among
    those collected in ``gamma`` (other factors, a square root, left alone)."""
    def sums(x):
        return sp.Mul(*[sp.collect(f, gamma, func=sp.factor) if f.is_Add else f
                        for f in sp.Mul.make_args(x)])
    return sp.Mul(*[sums(sp.factor(f)) if f.is_Add and not _rooted(f) else f
                    for f in sp.Mul.make_args(co)])


def _rooted(e: sp.Expr) -> bool:
    """``e`` holds a fractional power (``factor`` would expand inside it)."""
    return any(f.exp.is_Rational and not f.exp.is_Integer for f in e.atoms(sp.Pow))


def tidy(e: sp.Expr) -> sp.Expr:
    """``e`` for interval evaluation, bottom up: each sum collected in its
    exponentials and ``gamma``, coefficients factored (``n e^x - e^x`` becomes
    ``(n - 1) e^x``: one occurrence of ``n``, so no spurious sign change)."""
    if not e.args:
        return e
    e = e.func(*[tidy(a) for a in e.args])
    if not e.is_Add:
        return e
    gens = sorted(e.atoms(sp.exp), key=sp.default_sort_key)
    collected = sp.collect(sp.expand(e, deep=False), [*gens, gamma], func=_gather)
    return _conjugate(sp.Add(*[_gather(a) for a in sp.Add.make_args(collected)]))


def _conjugate(e: sp.Expr) -> sp.Expr:
    """``X - c sqrt(Y)`` as ``(X^2 - c^2 Y) / (X + c sqrt(Y))`` (one square root
    with a negative sign): the cancellation happens in sympy, not in the
    intervals (``X^2 - c^2 Y`` simplified and tidied)."""
    roots = [a for a in sp.Add.make_args(e) if a.could_extract_minus_sign()
             and any(f.is_Pow and f.exp == sp.Rational(1, 2) for f in sp.Mul.make_args(-a))]
    if not e.is_Add or len(roots) != 1:
        return e
    root = -roots[0]
    X = e + root
    if _rooted(X):
        return e                                  # X itself has a root: left alone
    num = sp.factor(sp.expand(X**2 - root**2))
    return tidy(num) / (X + root)


def pace(s):
    """``(w, p)`` of an autonomous one-phase scheme (sympy, in ``gamma``, ``r``;
    its parameters at their defaults, exactly), or None."""
    phases = forms(s)
    if len(phases) != 1:
        return None
    G, R = phases[0].gamma_dot, phases[0].r_dot
    if G.has(t) or R.has(t):
        return None
    fixed = {x: sp.Rational(s.defaults[x.name]) for x in s.symbols}
    G, R = G.subs(fixed), R.subs(fixed)
    p = sp.Integer(0) if sp.simplify(R) == 0 else sp.cancel((1 - gamma) * R / (G * r))
    if p.has(r):
        return None
    return sp.cancel((1 - gamma) / G), p


@dataclass(frozen=True, kw_only=True)
class Certificate:
    """The compiled pieces of a pointwise-dominance certificate at the start's
    radius ``r0``: ``d0``, ``DA``, ``DB`` of
    :math:`d = d_0 + (r_B - r_0) D_B + (r_A - r_0) D_A` (arguments ``gamma,
    r_A, r_B, r_0, n, beta``), the paces ``wa``, ``wb`` and radial rates ``pa``,
    ``pb`` (arguments ``gamma, r, n, beta``), ``zero``: ``d0 == 0`` in sympy;
    and for the trapezoid rule's remainder the second derivatives along the
    solution in ``u``, with :math:`L f = (1-\\gamma) f_\\gamma + r_A p_A f_{r_A}
    + r_B p_B f_{r_B}`: ``d2`` :math:`= L^2 (w_B - w_A)` (arguments ``gamma, r_A,
    r_B, n, beta``) and ``p2a``, ``p2b`` :math:`= ((1-\\gamma)\\partial_\\gamma)^2 p`
    (arguments ``gamma, n, beta``). For the mean-value form: ``sens`` per scheme
    :math:`(\\partial_n w, \\partial_\\beta w, \\partial_r w)` and ``psens``
    :math:`(\\partial_n p, \\partial_\\beta p)` (arguments ``gamma, r, n, beta``)."""

    d0: Callable
    DA: Callable
    DB: Callable
    wa: Callable
    wb: Callable
    pa: Callable
    pb: Callable
    zero: bool
    d2: Callable
    p2a: Callable
    p2b: Callable
    sens: tuple[Callable, Callable] = ()
    psens: tuple[Callable, Callable] = ()


def _along(f: sp.Expr, pa: sp.Expr, pb: sp.Expr) -> sp.Expr:
    """:math:`df/du` along the solution: :math:`d\\gamma/du = 1 - \\gamma`,
    :math:`dr_A/du = r_A p_A`, :math:`dr_B/du = r_B p_B`."""
    return ((1 - gamma) * sp.diff(f, gamma) + R_A * pa * sp.diff(f, R_A)
            + R_B * pb * sp.diff(f, R_B))


@lru_cache(maxsize=32)
def certificate(a, b, r0=ONE) -> Certificate | None:
    """The compiled :class:`Certificate` at the start's radius ``r0`` (exact),
    or None (no pointwise form)."""
    pa, pb = pace(a), pace(b)
    if pa is None or pb is None:
        return None
    (wa, qa), (wb, qb) = pa, pb
    raw = wb.subs(r, R_B) - wa.subs(r, R_A)
    d = sp.cancel(raw)
    at_a = d.subs(R_B, R0)
    at_0 = at_a.subs(R_A, R0)
    DB = sp.cancel((d - at_a) / (R_B - R0))
    DA = sp.cancel((at_a - at_0) / (R_A - R0))
    d0 = sp.simplify(at_0.subs(R0, r0))
    d2 = _along(_along(raw, qa, qb), qa, qb)
    p2 = [(1 - gamma) * sp.diff((1 - gamma) * sp.diff(x, gamma), gamma) for x in (qa, qb)]
    args = [gamma, R_A, R_B, R0, n, BETA]
    one = [gamma, r, n, BETA]
    sens = tuple(compile_ball([sp.diff(w, x) for x in (n, BETA, r)], [gamma, r, n, BETA])
                 for w in (wa, wb))
    psens = tuple(compile_ball([sp.diff(x, n), sp.diff(x, BETA)], [gamma, r, n, BETA])
                  for x in (qa, qb))
    d0, DA, DB, wa, wb, qa, qb = (tidy(sp.factor(x)) for x in (d0, DA, DB, wa, wb, qa, qb))
    return Certificate(sens=sens, psens=psens, d0=compile_ball(d0, args), DA=compile_ball(DA, args),
                       DB=compile_ball(DB, args), wa=compile_ball(wa, one),
                       wb=compile_ball(wb, one), pa=compile_ball(qa, one),
                       pb=compile_ball(qb, one), zero=d0 == 0,
                       d2=compile_ball(d2, [gamma, R_A, R_B, n, BETA]),
                       p2a=compile_ball(p2[0], [gamma, n, BETA]),
                       p2b=compile_ball(p2[1], [gamma, n, BETA]))


def applies(a, b) -> bool:
    """Both schemes have the pointwise form (autonomous, one phase, ``p`` free of ``r``)."""
    return certificate(get_scheme(a), get_scheme(b)) is not None


def difference(a, b, level: object, *, n: object, beta: object, gamma0: object = 0,
               r0: object = 1, pieces: int = 32, prec: int = 53, centred: bool = True,
               trapezoid: bool = True) -> Interval | None:
    """An :class:`Interval` holding :math:`T_B - T_A` for every ``(n, beta)`` in
    the box (pairs ``(lo, hi)``, taken exactly), or None when the schemes have
    no pointwise form or a pace is not certainly positive (nothing claimed).
    Over a box whose direct enclosure holds 0, with ``centred``, it is
    intersected with the mean-value form :math:`F(c) + \\nabla F(\\text{box})
    \\cdot (\\theta - c)`, :math:`F = T_B - T_A`, :math:`\\theta = (n, \\beta)`
    (:func:`_gradient`). ``trapezoid=False``: first-order pieces alone (a control).

    >>> difference("post-ln", "pre-ln", "0.99", n=(2, 1024), beta=(0, 16)).lo > 0
    True
    """
    sa, sb = get_scheme(a), get_scheme(b)
    _check(level, n, beta, gamma0, pieces, prec)
    r0x = exact(r0, "r0")
    if (sa.starts_on_sphere or sb.starts_on_sphere) and r0x != 1:
        raise ValueError(f"r0: a scheme that starts on the sphere has r0 = 1, got {r0!r}")
    if not r0x > 0:
        raise ValueError(f"r0: must be > 0, got {r0!r}")
    cert = certificate(sa, sb, sp.Rational(r0x.numerator, r0x.denominator))
    if cert is None:
        return None
    with working(prec):
        nb, bb = _interval(n, "n"), _interval(beta, "beta")
        g0, rb0 = ball(gamma0, "gamma0"), Interval(ball(r0, "r0"))
        u0, u1 = -(1 - g0).log(), -(1 - ball(level, "level")).log()
        direct = _integrate(cert, nb, bb, rb0, u0, u1, pieces, trapezoid)
        if direct is None or not centred or not (direct.lo < 0 < direct.hi) \
                or not (isinstance(n, tuple) or isinstance(beta, tuple)) \
                or max(-direct.lo, direct.hi) > 20 * min(-direct.lo, direct.hi):
            return direct        # no box, or one end far out: the gradient would be as loose
        centre = [Interval(x.lo + (x.hi - x.lo) / 2) for x in (nb, bb)]
        mid = [Interval(arb(c.lo.mid())) for c in centre]   # an exact point of the box
        at = _integrate(cert, mid[0], mid[1], rb0, u0, u1, pieces, trapezoid)
        grad = _gradient(cert, nb, bb, rb0, u0, u1, pieces)
        if at is None or grad is None:
            return direct
        mv = at + grad[0] * (nb - mid[0]) + grad[1] * (bb - mid[1])
        return _meet(direct, mv) or direct


def _varies(over: Interval, ends) -> bool:
    """A function varies along a piece: its width over the piece is more than
    twice its widths at the two ends (the parameters' share of the width) plus
    a quarter of its size."""
    spread = max(float((x.hi - x.lo).upper()) for x in ends)
    size = float(over.lo.abs_lower()) if over.lo > 0 or over.hi < 0 else 0.0
    return float((over.hi - over.lo).upper()) > 2 * spread + 0.25 * size


def _steady(paces, wc, we, pP, pc, pe) -> bool:
    """Neither the paces nor the radial rates vary much along a piece
    (:func:`_varies`): ``paces``, ``pP`` over it, ``wc``, ``we``, ``pc``, ``pe``
    at its ends (one pair per scheme)."""
    return not any(_varies(paces[j], (wc[j], we[j])) or _varies(pP[j], (pc[j], pe[j]))
                   for j in range(2))


def _meet(x: Interval, y: Interval) -> Interval | None:
    """The intersection of two enclosures of one number (None if empty: one of
    them is wrong, so nothing is claimed)."""
    if not x.is_finite():
        return y
    if not y.is_finite():
        return x
    lo, hi = x.lo.max(y.lo), x.hi.min(y.hi)
    return Interval(lo, hi) if lo <= hi else None


def _gamma(c: Interval, e: Interval | None = None) -> Interval:
    """:math:`\\gamma = 1 - e^{-u}` over :math:`u \\in [c_{lo}, e_{hi}]` (``e = c`` by
    default), increasing in :math:`u`."""
    top = c if e is None else e
    return 1 - Interval(-top.hi, -c.lo).exp()


def _piece_end(c: Interval, h: float, u1) -> tuple[bool, Interval]:
    """Whether the piece from ``c`` of length ``h`` is the last one, and its end:
    ``u1``, or an exact point at ``c + h``."""
    last = not (c.hi + h < u1.lower())
    return last, Interval(u1) if last else Interval(arb((c.hi + h).mid()))


def _integrate(cert: Certificate, nb: Interval, bb: Interval, rb0: Interval, u0, u1,
               pieces: int, trapezoid: bool = True) -> Interval | None:
    """:math:`\\int_{u_0}^{u_1} d` over ``pieces`` equal pieces :math:`P = [c, e]`.
    Each piece's integral, and each increment of :math:`q`, is the intersection
    of two enclosures: the first-order :math:`|P|\\,f(P)` and the trapezoid rule
    :math:`|P|(f(c) + f(e))/2 - |P|^3 f''(P)/12` (exact for some point of
    :math:`P`, :math:`f \\in C^2`). :math:`f(c)`, :math:`f(e)` take
    :math:`r = r_0 e^{q}` at the piece's ends, :math:`f(P)`, :math:`f''(P)` the
    first-order enclosure of :math:`r` on :math:`P`."""
    hmax = float(((u1 - u0) / pieces).upper())
    pfs, p2fs = (cert.pa, cert.pb), (cert.p2a, cert.p2b)

    def d_at(g, qA: Interval, qB: Interval):
        """d at ``gamma`` with :math:`q_A`, :math:`q_B`: :math:`r - r_0 = r_0\\,\\mathrm{expm1}(q)`
        keeps the sign of a factor :math:`[0, \\epsilon]`."""
        vals = (g, rb0 * qA.exp(), rb0 * qB.exp(), rb0, nb, bb)
        return (Interval(0) if cert.zero else Interval.of(cert.d0(*vals))) \
            + rb0 * qB.expm1() * Interval.of(cert.DB(*vals)) \
            + rb0 * qA.expm1() * Interval.of(cert.DA(*vals))

    Q = [Interval(0), Interval(0)]               # q_A, q_B at the piece's start
    c = Interval(u0)
    gc = _gamma(c)
    pc = [Interval.of(pf(gc, rb0, nb, bb)) for pf in pfs]
    dc = d_at(gc, Interval(0), Interval(0))
    wc = [Interval.of(wf(gc, rb0, nb, bb)) for wf in (cert.wa, cert.wb)]
    total, h, count = Interval(0), hmax, 0
    while True:
        count += 1
        if count > MAX_PIECES:
            return None
        last, e = _piece_end(c, h, u1)
        gP, ge = _gamma(c, e), _gamma(e)
        width = e - c
        pP = [Interval.of(pf(gP, rb0, nb, bb)) for pf in pfs]
        steps = [width * x for x in pP]                     # Q + [0, |P|] p(P)
        qP = [Q[j].hull(Q[j] + steps[j]) for j in range(2)]
        rP = [rb0 * q.exp() for q in qP]
        paces = (Interval.of(cert.wa(gP, rP[0], nb, bb)), Interval.of(cert.wb(gP, rP[1], nb, bb)))
        pe = [Interval.of(pf(ge, rb0, nb, bb)) for pf in pfs]
        we = [Interval.of(wf(ge, rb0 * (Q[j] + steps[j]).exp(), nb, bb))
              for j, wf in enumerate((cert.wa, cert.wb))]
        if h > hmax / 256 and not _steady(paces, wc, we, pP, pc, pe):
            h /= 2                               # r or the paces change fast: a shorter piece
            continue
        half, rem = width / 2, width ** 3 / 12
        for j in range(2):
            trap = half * (pc[j] + pe[j]) - rem * Interval.of(p2fs[j](gP, nb, bb))
            inc = _meet(steps[j], trap) if trapezoid else steps[j]
            if inc is None:
                return None
            Q[j] = Q[j] + inc
        if not (paces[0].lo > 0 and paces[1].lo > 0):    # G > 0: gamma increases
            return None
        first = width * d_at(gP, qP[0], qP[1])
        de = d_at(ge, Q[0], Q[1])
        trap = half * (dc + de) - rem * Interval.of(cert.d2(gP, rP[0], rP[1], nb, bb))
        piece = _meet(first, trap) if trapezoid else first
        if piece is None:
            return None
        total = total + piece
        if last:
            break
        c, pc, dc = e, pe, de
        wc = [Interval.of(wf(ge, rb0 * Q[j].exp(), nb, bb))
              for j, wf in enumerate((cert.wa, cert.wb))]
        h = min(hmax, 2 * h)
    return None if total.lo.is_nan() or total.hi.is_nan() else total


def _gradient(cert: Certificate, nb: Interval, bb: Interval, rb0: Interval, u0, u1,
              pieces: int) -> list[Interval] | None:
    """Enclosures of :math:`\\partial_n F` and :math:`\\partial_\\beta F` over the
    box, :math:`F = T_B - T_A = \\int (w_B - w_A)\\,du`: with
    :math:`\\partial_\\theta q = \\int \\partial_\\theta p\\,du` (the radius
    :math:`r = r_0 e^q` moves with the parameters),
    :math:`\\partial_\\theta F = \\int \\sum_X \\pm(\\partial_\\theta w_X +
    \\partial_r w_X\\, r_X\\, \\partial_\\theta q_X)\\,du` (+ for B, - for A), each
    integral by first-order pieces; None where a pace is not certainly
    positive on the way."""
    hmax = float(((u1 - u0) / pieces).upper())
    Q = [Interval(0), Interval(0)]                      # q_A, q_B
    DQ = [[Interval(0), Interval(0)], [Interval(0), Interval(0)]]   # d q_X / d(n, beta)
    grad = [Interval(0), Interval(0)]
    c, h, count = Interval(u0), hmax, 0
    while True:
        count += 1
        if count > MAX_PIECES:
            return None
        last, e = _piece_end(c, h, u1)
        gP = _gamma(c, e)
        width = e - c
        steps = [width * Interval.of(pf(gP, rb0, nb, bb)) for pf in (cert.pa, cert.pb)]
        qP = [Q[j].hull(Q[j] + steps[j]) for j in range(2)]
        rP = [rb0 * q.exp() for q in qP]
        paces = (Interval.of(cert.wa(gP, rP[0], nb, bb)), Interval.of(cert.wb(gP, rP[1], nb, bb)))
        if not (paces[0].lo > 0 and paces[1].lo > 0):
            return None
        if h > hmax / 256:
            gc, ge = _gamma(c), _gamma(e)
            ends = [[Interval.of(f(g, rb0 * q.exp(), nb, bb)) for g, q in
                     ((gc, Q[j]), (ge, Q[j] + steps[j]))]
                    for j, f in enumerate((cert.wa, cert.wb))]
            pends = [[Interval.of(f(g, rb0, nb, bb)) for g in (gc, ge)]
                     for f in (cert.pa, cert.pb)]
            pP = [Interval.of(f(gP, rb0, nb, bb)) for f in (cert.pa, cert.pb)]
            if not _steady(paces, [x[0] for x in ends], [x[1] for x in ends], pP,
                           [x[0] for x in pends], [x[1] for x in pends]):
                h /= 2
                continue
        for j in range(2):
            Q[j] = Q[j] + steps[j]
            dp = [Interval.of(x) for x in cert.psens[j](gP, rb0, nb, bb)]
            dqP = [DQ[j][i].hull(DQ[j][i] + width * dp[i]) for i in range(2)]
            DQ[j] = [DQ[j][i] + width * dp[i] for i in range(2)]
            dw = [Interval.of(x) for x in cert.sens[j](gP, rP[j], nb, bb)]
            sign = 1 if j else -1
            for i in range(2):
                grad[i] = grad[i] + sign * width * (dw[i] + dw[2] * rP[j] * dqP[i])
        if last:
            break
        c, h = e, min(hmax, 2 * h)
    return grad if all(g.is_finite() for g in grad) else None


def _check(level, n, beta, gamma0, pieces, prec):
    lo = {k: exact(v[0] if isinstance(v, tuple) else v, k)
          for k, v in (("n", n), ("beta", beta), ("gamma0", gamma0), ("level", level))}
    if not lo["n"] >= 2:
        raise ValueError(f"n: must be >= 2, got {n!r}")
    if not lo["beta"] >= 0:
        raise ValueError(f"beta: must be >= 0, got {beta!r}")
    if not lo["gamma0"] * (lo["n"] - 1) + 1 > 0:
        raise ValueError(f"gamma0: must lie above -1/(n-1), got {gamma0!r}")
    if not lo["gamma0"] < lo["level"] < 1:
        raise ValueError(f"level: must lie in (gamma0, 1), got {level!r}")
    if not (isinstance(pieces, int) and 1 <= pieces <= 10**5):
        raise ValueError(f"pieces: an int in [1, 100000], got {pieces!r}")
    if not (isinstance(prec, int) and 16 <= prec <= 4096):
        raise ValueError(f"prec: bits in [16, 4096], got {prec!r}")


def _interval(x, name) -> Interval:
    if isinstance(x, tuple):
        lo, hi = (exact(v, name) for v in x)
        return Interval(ball(lo, name)).hull(ball(hi, name))
    return Interval(ball(x, name))
