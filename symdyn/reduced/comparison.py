"""The comparison that names a terminal law: limits of Lambda(t) as t -> oo.

The limits are taken on the integrand :math:`\\lambda` (l'Hopital:
``lim Lambda/t = lim lambda``, ``lim Lambda/log t = lim t lambda``;
boundedness by an iterated-logarithm test of :math:`\\int^\\infty \\lambda`)
and, where those do not exist, on the closed form of :math:`\\Lambda`; each
sympy step bounded (:class:`~symdyn.reduced.bounded.Steps`).

Layer 2, reduced.
"""

from __future__ import annotations

import sympy as sp

from ..model.symbols import t
from .bounded import UNDECIDED

_s = sp.Symbol("s", nonnegative=True)


def _kind(v):
    """A limit as 'zero', 'finite' (in (0, oo), or oscillating within positive
    bounds), 'infinite', or None (not decided: unknown, negative, symbolic)."""
    if v is None:
        return None
    if v == sp.oo:
        return "infinite"
    if isinstance(v, sp.AccumBounds):
        if v.max.is_zero:
            return "zero"
        if v.min.is_positive and v.max.is_finite:
            return "finite"
        if v.min == sp.oo:
            return "infinite"
        return None
    if v.is_zero:
        return "zero"
    if v.is_positive and v.is_finite:
        return "finite"
    return None


def _number(v):
    return v is not None and not isinstance(v, sp.AccumBounds) and v.is_number \
        and (v.is_real or v in (sp.oo, -sp.oo))


class Comparison:
    """Limits of Lambda(t) as t -> oo from the integrand ``lam`` (l'Hopital)
    and, where those do not exist, from the closed form ``closed``."""

    def __init__(self, lam, closed, steps):
        self.lam, self.closed, self.steps = lam, closed, steps

    def limit(self, expr):
        v = self.steps.run(sp.limit, expr, t, sp.oo)
        if v is None or v.has(sp.Limit, sp.nan, sp.zoo):
            return None
        return v

    def ratio(self, g, dg):
        """lim Lambda/g for g increasing to oo: lim lambda/g' (l'Hopital; an
        AccumBounds of lambda/g' also bounds Lambda/g), else (or, for an
        oscillating lambda/g', more sharply) lim of the closed form's Lambda/g."""
        v = self.limit(self.lam / dg)
        if (_kind(v) is None or isinstance(v, sp.AccumBounds)) and self.closed is not None:
            w = self.limit(self.closed / g)
            if _kind(w) is not None or v is None:
                return w
        return v

    def converges(self, f):
        """Whether int^oo f converges (f > 0): the iterated-logarithm test.

        ``q_k = lim -log(f L_0 ... L_{k-1}) / log L_k`` with ``L_0 = t``,
        ``L_{k+1} = log L_k``: ``q_k > 1`` converges, ``q_k < 1`` diverges,
        ``q_k = 1`` goes one logarithm deeper. None: not decided.
        """
        prod, L = sp.Integer(1), t
        for _ in range(4):
            q = self.limit(-sp.log(f * prod) / sp.log(L))
            if not _number(q):
                return None
            if q > 1:
                return True
            if q < 1:
                return False
            prod, L = prod * L, sp.log(L)
        return None

    def bounded(self):
        """Whether Lambda(t) stays bounded; None: not decided."""
        found = self.converges(self.lam)
        if found is None and self.closed is not None:
            v = self.limit(self.closed)
            if v == sp.oo:
                return False
            if isinstance(v, sp.AccumBounds):
                return True if v.max.is_finite and v.min.is_finite else None
            if _number(v) and v.is_finite:
                return True
        return found

    def index(self, lam_norm, closed_norm, base, shift):
        """The k of ``Lambda/closed_norm = base**(k + o(1))``: from the integrand,
        ``shift + lim log(lam/lam_norm)/log(base)``, else from the closed form,
        ``lim log(Lambda/closed_norm)/log(base)``; None when not decided."""
        v = self.limit(sp.log(self.lam / lam_norm) / sp.log(base))
        if _number(v):
            return v + shift
        if self.closed is not None:
            v = self.limit(sp.log(self.closed / closed_norm) / sp.log(base))
            if _number(v):
                return v
        return None

    def growth(self, law, first):
        """(leading Lambda, exponent) for the class ``law`` decided with the
        limit ``first``; (None, None) when not found."""
        if law in ("exponential", "polynomial"):
            if isinstance(first, sp.AccumBounds):      # Theta(t) or Theta(log t) only
                return None, first
            return first * (t if law == "exponential" else sp.log(t)), first
        logt, one = sp.log(t), sp.Integer(1)
        if law in ("super-exponential", "stretched-exponential"):
            p = self.index(one, one, t, 1)                 # Lambda = t**(p + o(1))
        elif law == "slower-than-polynomial":
            p = sp.Integer(0)
        else:
            return None, None
        if not (_number(p) and p.is_finite and p.is_nonnegative):
            return None, None
        if p.is_positive:                                  # Lambda/t**p = (log t)**(q + o(1))
            q = self.index(t ** (p - 1), t ** p, logt, 0)
        else:                                              # Lambda = (log t)**(q + o(1))
            q = self.index(1 / t, one, logt, 1)
        if not (_number(q) and q.is_finite):
            return None, None
        g = sp.log(logt) if p == 0 and q == 0 else t ** p * logt ** q
        c = self.ratio(g, sp.diff(g, t))
        if _kind(c) != "finite" or isinstance(c, sp.AccumBounds):
            return None, None
        if p == 0 and q == 0:                              # C (log t)**-c
            return c * g, c
        return c * g, ((c, p) if q == 0 else (c, p, q))

    def classify(self):
        """(law, first limit, reason): the class by Lambda/t, Lambda/log t, Lambda."""
        # the ladder of scales: growth faster than, comparable to, or slower than each
        ladder = ((t, sp.Integer(1), "super-exponential", "exponential"),
                  (sp.log(t), 1 / t, "stretched-exponential", "polynomial"))
        for scale, derivative, faster, comparable in ladder:
            ratio = self.ratio(scale, derivative)
            kind = _kind(ratio)
            if kind == "infinite":
                return faster, ratio, ""
            if kind == "finite":
                return comparable, ratio, ""
            if kind is None:
                return UNDECIDED, None, self.why(f"Lambda(t)/{scale}", ratio)
        bounded = self.bounded()
        if bounded is None:
            return UNDECIDED, None, self.why("Lambda(t)", None, "bounded or not")
        return ("no-collapse" if bounded else "slower-than-polynomial"), None, ""

    def why(self, what, v, question="the limit"):
        if self.steps.timed_out:
            found = "ran out of time (symdyn.base.budget.SECONDS['derivation'])"
        elif v is None:
            found = "was not found" + (f" (sympy: {self.steps.failure})"
                                       if self.steps.failure else "")
        elif v.free_symbols:
            found = f"is {v}, which depends on {', '.join(sorted(map(str, v.free_symbols)))}"
        else:
            found = f"is {v}"
        what = f"whether {what} is {question}" if question != "the limit" \
            else f"lim {what} as t -> oo"
        return f"{what} {found}"


