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

from functools import lru_cache

import sympy as sp

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


@lru_cache(maxsize=32)
def certificate(a, b, r0=ONE):
    """Compiled ``(d0, D_A, D_B, w_A, w_B, p_A, p_B, d0 == 0)`` at the start's
    radius ``r0`` (exact), or None (no pointwise form)."""
    pa, pb = pace(a), pace(b)
    if pa is None or pb is None:
        return None
    (wa, qa), (wb, qb) = pa, pb
    d = sp.cancel(wb.subs(r, R_B) - wa.subs(r, R_A))
    at_a = d.subs(R_B, R0)
    at_0 = at_a.subs(R_A, R0)
    DB = sp.cancel((d - at_a) / (R_B - R0))
    DA = sp.cancel((at_a - at_0) / (R_A - R0))
    d0 = sp.simplify(at_0.subs(R0, r0))
    args = [gamma, R_A, R_B, R0, n, BETA]
    one = [gamma, r, n, BETA]
    d0, DA, DB, wa, wb, qa, qb = (tidy(sp.factor(x)) for x in (d0, DA, DB, wa, wb, qa, qb))
    return (compile_ball(d0, args), compile_ball(DA, args), compile_ball(DB, args),
            compile_ball(wa, one), compile_ball(wb, one),
            compile_ball(qa, one), compile_ball(qb, one), d0 == 0)


def applies(a, b) -> bool:
    """Both schemes have the pointwise form (autonomous, one phase, ``p`` free of ``r``)."""
    return certificate(get_scheme(a), get_scheme(b)) is not None


def difference(a, b, level, *, n, beta, gamma0=0, r0=1, pieces=32, prec=53):
    """An :class:`Interval` holding :math:`T_B - T_A` for every ``(n, beta)`` in
    the box (pairs ``(lo, hi)``, taken exactly), or None when the schemes have
    no pointwise form or a pace is not certainly positive (nothing claimed).

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
    d0f, DAf, DBf, waf, wbf, paf, pbf, zero = cert
    with working(prec):
        nb, bb = _interval(n, "n"), _interval(beta, "beta")
        g0, rb0 = ball(gamma0, "gamma0"), Interval(ball(r0, "r0"))
        u0, u1 = -(1 - g0).log(), -(1 - ball(level, "level")).log()
        h = (u1 - u0) / pieces
        Q = [Interval(0), Interval(0)]              # q_A, q_B at the piece's start
        total, c = Interval(0), Interval(u0)
        for k in range(pieces):
            e = Interval(u1 if k == pieces - 1 else u0 + h * (k + 1))
            g = 1 - Interval(-e.hi, -c.lo).exp()       # gamma over [c, e]
            width = e - c
            diffs, rs = [], []
            for j, pf in enumerate((paf, pbf)):
                step = width * Interval.of(pf(g, rb0, nb, bb))   # q on P: Q + [0, |P|] p(P)
                q = Q[j].hull(Q[j] + step)
                Q[j] = Q[j] + step
                diffs.append(rb0 * q.expm1())
                rs.append(rb0 * q.exp())
            paces = (Interval.of(waf(g, rs[0], nb, bb)), Interval.of(wbf(g, rs[1], nb, bb)))
            if not (paces[0].lo > 0 and paces[1].lo > 0):    # G > 0: gamma increases
                return None
            vals = (g, rs[0], rs[1], rb0, nb, bb)
            d = (Interval(0) if zero else Interval.of(d0f(*vals))) + diffs[1] * DBf(*vals) \
                + diffs[0] * DAf(*vals)
            total = total + width * d
            c = e
        return None if total.lo.is_nan() or total.hi.is_nan() else total


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
