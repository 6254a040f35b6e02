"""Quadrature forms of the reduced ODE, derived and checked by sympy.

For each phase of a scheme (Mix-LN has two: the branches of its
``Piecewise`` laws) the reduced ODE :math:`\\dot\\gamma = G(\\gamma, r, t)`,
:math:`\\dot r = R(\\gamma, r, t)` of :func:`symdyn.reduce` is put in one of
two forms, nothing typed per scheme:

* **separable**: :math:`R = 0` (``r`` stays at its value) and
  :math:`G = s(t)\\,f(\\gamma)` with :math:`f = G|_{t=t_a}`,
  :math:`s = G/f` free of :math:`\\gamma` and :math:`r` (checked:
  ``simplify(s f - G) == 0``). Then
  :math:`\\int_{\\gamma_a}^{\\gamma(T)} d\\gamma/f = S(T) = \\int_{t_a}^T s`,
  with ``S`` and its inverse found by sympy and checked
  (``S' = s``, ``S(S^{-1}(I)) = I``). Post-LN, nGPT, DeepNorm,
  sqrt-scaling.
* **ODE in gamma** (everything else): :math:`\\gamma` increases, so
  :math:`dt/d\\gamma = 1/G`, :math:`dr/d\\gamma = R/G`; when
  :math:`R/(G r)` is free of ``r`` and ``t`` (Pre-LN, Peri-LN) it is the
  nested quadrature :math:`r = r_0\\exp\\int g/f`,
  :math:`T = \\int r/f\\,d\\gamma`, integrated in the state :math:`(t, q)`,
  :math:`r = r_0 e^q` (triangular: :math:`dq/du` is free of the state,
  :math:`dt/du` depends on :math:`q` alone). Integrated by
  :mod:`symdyn.certify.taylor`.

Layer 3, certify.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
from sympy.core.function import AppliedUndef

from ..base.budget import time_limit, within
from ..model.piecewise import branch_at
from ..model.registry import scheme as get_scheme
from ..model.symbols import beta as BETA
from ..model.symbols import gamma, n, r, t
from ..reduced.equiangular import reduce
from .printer import NotCertifiable, compile_ball

T_ = sp.Symbol("T", positive=True)
I_ = sp.Symbol("I", positive=True)
Q_ = sp.Dummy("q", real=True)           # dummies: no clash with a scheme's parameter names
R0 = sp.Dummy("r0", positive=True)


@dataclass(frozen=True)
class Phase:
    """One phase ``[start, end)`` of the reduced ODE in its form.

    ``kind`` is ``"separable"`` (``rate``: :math:`(1-\\gamma)/f(\\gamma, r, \\ldots)`,
    the integrand in :math:`u = -\\log(1-\\gamma)`,
    ``S``, ``S_inv``: sympy in ``T`` and ``I``, ``S_at``, ``S_inv_at``:
    compiled) or ``"ode"`` (``field``: :math:`(dt/du, dr/du)`, :math:`u = -\\log(1-\\gamma)`,
    compiled in ``gamma, t, r, n, beta, *params``; when ``nested``, the
    field of :math:`(t, q)`, :math:`r = r_0 e^q`, in ``gamma, t, q, n, beta,
    *params, r0``); ``text`` names the form; ``rate_expr``: a separable
    phase's integrand in sympy.
    """

    start: sp.Expr
    end: sp.Expr
    kind: str
    text: str
    gamma_dot: sp.Expr
    r_dot: sp.Expr
    rate: object = None
    S: sp.Expr = None
    S_inv: sp.Expr = None
    S_at: object = None
    S_inv_at: object = None
    field: object = None
    nested: bool = False
    rate_expr: sp.Expr = None


def _edges(s) -> list:
    """Exact switch times of the scheme's ``Piecewise`` laws (``t < c``)."""
    points = set()
    laws = (s.speed, s.radial, s.temperature)      # already parsed expressions (or 1)
    for pw in set().union(*(law.atoms(sp.Piecewise) for law in laws
                            if isinstance(law, sp.Basic))):
        for _, cond in pw.args:
            for rel in cond.atoms(sp.core.relational.Relational):
                c = rel.rhs if rel.lhs == t else rel.lhs
                if not c.is_number:
                    raise NotCertifiable(f"the switch in {rel} is not a number")
                points.add(sp.nsimplify(c, rational=True) if c.is_Float else c)
    return sorted(p for p in points if p > 0)


def _simple(expr) -> bool:
    """``expr`` is 0, decided by sympy (False when undecided)."""
    return sp.simplify(expr) == 0 or sp.simplify(sp.factor(expr, deep=True)) == 0


def _integral(s, start):
    """:math:`\\int_{start}^T s`, or None when sympy does not find it in 5 s."""
    S = within(sp.integrate, s, (t, start, T_), otherwise=None, seconds=5.0)
    return None if S is None or S.has(sp.Integral) else S


@dataclass(frozen=True, kw_only=True)
class Separable:
    """``G = s(t) f(gamma)``: ``S`` :math:`= \\int_{start}^T s` in ``T`` and its
    inverse ``S_inv`` in ``I`` (sympy, both checked)."""

    f: sp.Expr
    s: sp.Expr
    S: sp.Expr
    S_inv: sp.Expr


def _separable(G, R, start, params) -> Separable | None:
    """The separable form of ``G`` (with ``R = 0``), or None."""
    if not _simple(R):
        return None
    f = sp.factor(G.subs(t, start))
    if f == 0:
        return None
    s = sp.simplify(G / f)
    if s.has(gamma) or s.has(r) or not _simple(s * f - G):
        return None
    S = _integral(s, start)
    if S is None or not _simple(sp.diff(S, T_) - s.subs(t, T_)) \
            or not _simple(S.subs(T_, start)):
        return None
    if s == 1:
        inverse = [start + I_]
    else:
        try:
            inverse = within(sp.solve, sp.Eq(S, I_), T_, otherwise=[], seconds=5.0)
        except NotImplementedError:
            return None
    for cand in inverse:
        if not cand.has(gamma, r, t) and _simple(S.subs(T_, cand) - I_) \
                and cand.subs(I_, 0) == start:
            return Separable(f=f, s=s, S=S, S_inv=cand)
    return None


def _phase(G, R, start, end, params) -> Phase:
    args = [gamma, r, n, BETA, *params]
    sep = _separable(G, R, start, params)
    if sep is not None:
        f, S, S_inv = sep.f, sep.S, sep.S_inv
        text = (f"separable: int dgamma/f = {sp.sstr(S)} (T from t = {start}), "
                f"f = dgamma/dt at t = {start}")
        rate = sp.factor(sp.cancel((1 - gamma) / f))      # d/du of int dgamma/f
        return Phase(start, end, "separable", text, G, R, rate=compile_ball(rate, args),
                     rate_expr=rate,
                     S=S, S_inv=S_inv, S_at=compile_ball(S, [T_, n, BETA, *params]),
                     S_inv_at=compile_ball(S_inv, [I_, n, BETA, *params]))
    ratio = sp.cancel(R / G / r) if not _simple(R) else sp.Integer(0)
    if not ratio.has(r) and not ratio.has(t) and not G.has(t):
        # nested: state (t, q), r = r0 e^q; dq/du is free of the state, dt/du
        # depends on q alone (triangular: two Picard passes give every coefficient)
        field = compile_ball([sp.factor(sp.cancel((1 - gamma) / G.subs(r, R0 * sp.exp(Q_)))),
                              sp.factor(sp.cancel((1 - gamma) * ratio))],
                             [gamma, t, Q_, n, BETA, *params, R0])
        return Phase(start, end, "ode", "nested quadrature: r = r0 exp(int p dgamma), "
                     "T = int dgamma/G(gamma, r)", G, R, field=field, nested=True)
    # d/du with u = -log(1 - gamma): the factor 1 - gamma cancels G's zero at 1
    field = compile_ball([sp.factor(sp.cancel((1 - gamma) / G)),
                          sp.factor(sp.cancel((1 - gamma) * R / G))],
                         [gamma, t, r, n, BETA, *params])
    return Phase(start, end, "ode", "ODE in gamma: dt/dgamma = 1/G, dr/dgamma = R/G", G, R,
                 field=field)


@lru_cache(maxsize=64)
def _forms(s, attention: str) -> tuple:
    red = reduce(s, attention)
    params = tuple(s.symbols)
    with time_limit(f"certify: the forms of {s.name}"):
        return _all_phases(s, red, params)


def _all_phases(s, red, params) -> tuple:
    if red.gamma_dot.atoms(AppliedUndef) or red.r_dot.atoms(AppliedUndef):
        raise NotCertifiable(f"{s.name}: its laws hold a function without a formula")
    edges = [sp.Integer(0), *_edges(s), sp.oo]
    phases = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        inside = (a + b) / 2 if b != sp.oo else a + 1
        G, R = branch_at(red.gamma_dot, inside), branch_at(red.r_dot, inside)
        for law in (G, R):
            if law.has(sp.Piecewise):
                raise NotCertifiable(f"{s.name}: a Piecewise law that is not a switch in t")
        phases.append(_phase(G, R, a, b, params))
    return tuple(phases)


def forms(scheme, attention: str = "softmax") -> tuple[Phase, ...]:
    """The phases of ``scheme``'s reduced ODE in their forms (cached).

    >>> [p.kind for p in forms("mix-ln")]
    ['separable', 'ode']
    """
    return _forms(get_scheme(scheme), attention)
