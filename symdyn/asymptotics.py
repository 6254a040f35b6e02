"""Initial and terminal velocities, derived from the equiangular reduction.

Initial velocity: evaluate :math:`\\dot\\gamma` and :math:`|\\dot\\theta_k|` of
:func:`~symdyn.equiangular.reduce` at ``t = 0``; :func:`leading_order` gives
their order as ``n -> oo``.

Terminal velocity, near the cluster :math:`\\gamma = 1`, with
:math:`\\varepsilon = 1 - \\gamma`:

1. Linearize: :math:`\\dot\\varepsilon = -\\lambda(r, t)\\,\\varepsilon`,
   :math:`\\lambda = \\partial_\\gamma \\dot\\gamma |_{\\gamma=1}` up to sign,
   with the branch of every ``Piecewise`` that holds as ``t -> oo``.
2. Solve the radial law at the cluster, :math:`\\dot r = \\rho(r, t)|_{\\gamma=1}`,
   from ``r(0) = r_0``.
3. :math:`\\varepsilon(t) = C \\exp(-\\Lambda(t))`,
   :math:`\\Lambda(t) = \\int_0^t \\lambda(r(s), s)\\,ds`.
4. Keep the terms of :math:`\\Lambda` that do not stay bounded (powers
   :math:`c\\,t^p` and :math:`d \\log t`; all of :math:`\\Lambda` when what
   is left oscillates without bound) and name the law by the largest:
   ``p >= 1`` exponential, ``0 < p < 1`` stretched-exponential, only
   ``log t`` polynomial, none (bounded :math:`\\Lambda`) no-collapse.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from .budget import time_limit
from .equiangular import check_attention, reduce
from .expressions import ExprLike, value
from .schemes import SchemeLike, branch_at
from .schemes import scheme as get_scheme
from .symbols import ALL_SYMBOLS, C, gamma, n, r, t
from .symbols import beta as BETA

r_0 = sp.Symbol("r_0", positive=True)
_s = sp.Symbol("s", nonnegative=True)


# --------------------------------------------------------------------------
# initial velocity
# --------------------------------------------------------------------------

def _start_values(s, gamma0, r0, n_value):
    g0 = _expression(gamma0, "gamma0")
    rr = _expression(r0, "r0")
    if rr.is_number and not (rr.is_real and rr.is_finite and rr > 0):
        raise ValueError(f"r0 must be a finite number > 0, got {r0!r}")
    values = {t: sp.Integer(0), gamma: g0}
    if n_value is not None:
        nn = _expression(n_value, "n")
        if nn.is_number and not (nn.is_finite and nn >= 2):
            raise ValueError(f"n must be >= 2, got {n_value!r}")
        values[n] = nn
    lower = -1 / (values.get(n, n) - 1)
    if g0.is_number:
        if not (g0.is_real and g0.is_finite):
            raise ValueError(f"gamma0 must be a finite real number, got {gamma0!r}")
        if g0 > 1 or (lower.is_number and g0 < lower) or g0 < -1:
            raise ValueError(f"gamma0 must lie in [-1/(n-1), 1] = [{lower}, 1], "
                             f"got {gamma0!r}")
    # Tokens renormalized at t = 0 (docs/model.md, section 2) have r = 1.
    values[r] = sp.Integer(1) if s.starts_on_sphere else rr
    return values


def _expression(x, argument):
    return value(x, argument, ALL_SYMBOLS)


def initial_velocity(scheme: SchemeLike, gamma0: ExprLike = 0, r0: ExprLike = 1,
                     attention: str = "softmax", *,
                     n: ExprLike | None = None, beta: ExprLike = BETA) -> sp.Expr:
    """:math:`\\dot\\gamma(0)` from an equiangular start, simplified.

    Parameters
    ----------
    scheme : str or Scheme
    gamma0, r0 : number or sympy.Expr
        Starting cosine similarity (in ``[-1/(n-1), 1]``) and token norm (> 0).
    attention : {"softmax", "unnormalized"}
    n, beta : number or sympy.Expr, optional
        Substitute a number of tokens (>= 2) or an inverse temperature.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.initial_velocity("post-ln")
    2/(n + exp(beta) - 1)
    """
    s = get_scheme(scheme)
    values = _start_values(s, gamma0, r0, n)
    with time_limit(f"initial_velocity of {s.name}"):
        return _simplify(reduce(s, attention, beta).gamma_dot.subs(values))


def initial_token_speed(scheme: SchemeLike, gamma0: ExprLike = 0, r0: ExprLike = 1,
                        attention: str = "softmax", *,
                        n: ExprLike | None = None, beta: ExprLike = BETA) -> sp.Expr:
    """:math:`|\\dot\\theta_k(0)|` from an equiangular start, simplified.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.initial_token_speed("peri-ln")
    sqrt(n - 1)/sqrt(n + exp(2*beta) - 1)
    """
    s = get_scheme(scheme)
    values = _start_values(s, gamma0, r0, n)
    with time_limit(f"initial_token_speed of {s.name}"):
        return _simplify(reduce(s, attention, beta).token_speed.subs(values))


def _simplify(expr):
    return sp.factor(sp.powsimp(sp.simplify(expr)))


@dataclass(frozen=True)
class LeadingOrder:
    """``coefficient * var**exponent``: the leading behaviour of an expression."""

    coefficient: sp.Expr
    exponent: sp.Expr
    var: sp.Symbol = n

    @property
    def term(self) -> sp.Expr:
        return self.coefficient * self.var ** self.exponent

    def __str__(self) -> str:
        return f"Theta({self.var ** self.exponent})"


def leading_order(expr: ExprLike, var: sp.Symbol | str = n) -> LeadingOrder:
    """Leading order of ``expr`` as ``var -> oo``: ``c * var**p``.

    ``p = lim log|expr| / log var`` and ``c = lim expr / var**p``.

    Examples
    --------
    >>> import symdyn as sd
    >>> str(sd.leading_order(sd.initial_velocity("peri-ln")))
    'Theta(1/sqrt(n))'
    """
    expr = value(expr, "expr", ALL_SYMBOLS)
    var = ALL_SYMBOLS.get(var, var) if isinstance(var, str) else var
    if not isinstance(var, sp.Symbol):
        raise ValueError(f"var: expected a symbol such as n, got {var!r}")
    with time_limit("leading_order"), _sympy_failures(f"expr: no leading order of {expr} "
                                                      f"in {var} could be found"):
        return _leading_order(expr, var)


def _leading_order(expr, var):
    p = sp.limit(sp.log(sp.Abs(expr)) / sp.log(var), var, sp.oo)
    if not (p.is_real and p.is_finite):
        raise ValueError(f"expr: no power-law leading order in {var} ({p})")
    c = sp.simplify(sp.limit(expr / var ** p, var, sp.oo))
    if c.is_zero or not c.is_finite:
        raise ValueError(f"expr: no power-law leading order in {var} "
                         f"(coefficient {c})")
    return LeadingOrder(c, p, var)


# --------------------------------------------------------------------------
# terminal velocity
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Terminal:
    """The terminal law of ``1 - gamma(t)`` near the cluster.

    Attributes
    ----------
    law : str
        ``"exponential"``, ``"stretched-exponential"``, ``"polynomial"`` or
        ``"no-collapse"``.
    epsilon : sympy.Expr
        The leading :math:`1-\\gamma(t)`, with free constant ``C``.
    gamma_dot : sympy.Expr
        The leading :math:`\\dot\\gamma(t) = -\\dot\\varepsilon`.
    rate : sympy.Expr
        :math:`\\lambda(t)` of :math:`\\dot\\varepsilon = -\\lambda\\varepsilon`
        along the radius ``r(t)`` (initial radius ``r_0``).
    radius : sympy.Expr
        ``r(t)`` at the cluster.
    exponent : sympy.Expr or None
        ``p`` for ``C t**-p``, ``c`` for ``C exp(-c t)``, ``(c, p)`` for
        ``C exp(-c t**p)``; None otherwise.
    reason : str
        Why the law is ``"undecided"`` (then the formulas are None); else "".
    """

    law: str
    epsilon: sp.Expr | None
    gamma_dot: sp.Expr | None
    rate: sp.Expr | None
    radius: sp.Expr | None
    exponent: object
    reason: str = ""


def _radius(rho, r_start):
    """Solve dr/dt = rho(r, t), r(0) = r_start."""
    if rho == 0:
        return r_start
    if not rho.has(r):
        return sp.simplify(r_start + sp.integrate(rho.subs(t, _s), (_s, 0, t)))
    f = sp.Function("f")
    try:
        sol = sp.dsolve(sp.Eq(f(t).diff(t), rho.subs(r, f(t))), f(t),
                        ics={f(0): r_start})
    except (NotImplementedError, ValueError) as exc:   # sympy: no method for this ODE
        raise ValueError(f"scheme: cannot solve the radial law dr/dt = {rho} "
                         f"({exc})") from None
    sols = sol if isinstance(sol, list) else [sol]
    if len(sols) != 1:
        raise ValueError(f"scheme: radial law dr/dt = {rho} has several "
                         f"solutions {sols}")
    return sp.simplify(sols[0].rhs)


def _growing_terms(Lam, max_terms=4):
    """Terms c t**p (p > 0) and d log t of Lam(t) that do not stay bounded.

    Returns ``(terms, settled)``: ``settled`` is False when what is left after
    the terms oscillates without bound (e.g. ``t sin(8t)``), so that only the
    exact ``exp(-Lambda)`` describes epsilon.
    """
    terms, rest = [], Lam
    for _ in range(max_terms):
        lim = sp.limit(rest, t, sp.oo)
        if lim.is_finite:
            return terms, True
        if lim not in (sp.oo, -sp.oo):
            if terms:
                return terms, False
            raise ValueError(f"scheme: Lambda(t) = {Lam} has no limit behaviour "
                             f"as t -> oo ({lim})")
        p = sp.limit(sp.log(sp.Abs(rest)) / sp.log(t), t, sp.oo)
        if not (p.is_finite and p.is_nonnegative):
            raise ValueError(f"scheme: Lambda(t) = {Lam} grows faster than "
                             f"any power of t")
        term = t ** p if p.is_positive else sp.log(t)
        coeff = sp.simplify(sp.limit(rest / term, t, sp.oo))
        if isinstance(coeff, sp.AccumBounds) and terms:
            return terms, False
        if coeff.is_zero or not coeff.is_finite:
            raise ValueError(f"scheme: cannot expand Lambda(t) = {Lam} "
                             f"as t -> oo")
        terms.append((coeff, p))
        rest = sp.simplify(rest - coeff * term)
    raise ValueError(f"scheme: Lambda(t) = {Lam} needs more than {max_terms} "
                     f"growing terms")


def terminal(scheme: SchemeLike, attention: str = "softmax") -> Terminal:
    """Derive the terminal law of ``1 - gamma`` for a scheme.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.terminal("pre-ln").epsilon
    C/t**2
    >>> sd.terminal("sqrt-scaling").law
    'stretched-exponential'
    """
    s = get_scheme(scheme)
    with time_limit(f"terminal law of {s.name}"), \
            _sympy_failures(f"scheme: cannot derive the terminal law of {s}"):
        return _terminal(s, check_attention(attention))


@contextmanager
def _sympy_failures(message):
    """sympy's "no method for this" (NotImplementedError, and TypeError or
    AttributeError from comparisons it cannot decide) as a ValueError."""
    try:
        yield
    except (NotImplementedError, TypeError, AttributeError, RecursionError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{message} (sympy: {detail[:200]})") from None


@lru_cache(maxsize=128)
def _terminal(s, attention):
    red = reduce(s, attention)
    G = branch_at(red.gamma_dot, sp.oo)
    rate = sp.simplify(-sp.diff(G, gamma).subs(gamma, 1))
    rho = sp.simplify(branch_at(red.r_dot, sp.oo).subs(gamma, 1))
    radius = _radius(rho, sp.Integer(1) if s.on_sphere else r_0)
    rate_t = sp.simplify(rate.subs(r, radius))
    Lam = sp.integrate(rate_t.subs(t, _s), (_s, 0, t))
    if Lam.has(sp.Integral):
        # An unevaluated integral (e.g. nGPT with a general alpha(t)): the law
        # stays exp(-Lambda), exponential in Lambda.
        eps = C * sp.exp(-Lam)
        return Terminal("exponential", eps, sp.simplify(-sp.diff(eps, t)),
                        rate_t, radius, None)
    Lam = sp.collect(sp.expand(Lam), t, func=sp.trigsimp)
    terms, settled = _growing_terms(Lam)
    growth = sp.Add(*(c * (t ** p if p.is_positive else sp.log(t))
                      for c, p in terms))
    eps = sp.powsimp(C * sp.exp(-(growth if settled else Lam)))
    top = max((p for _, p in terms), default=None)
    if top is None:
        law, exponent = "no-collapse", None
    elif top == 0:
        law, exponent = "polynomial", terms[0][0]
    elif top >= 1:
        law = "exponential"
        exponent = terms[0][0] if top == 1 else (terms[0][0], top)
    else:
        law, exponent = "stretched-exponential", (terms[0][0], top)
    return Terminal(law, eps, sp.simplify(-sp.diff(eps, t)), rate_t, radius,
                    exponent)
