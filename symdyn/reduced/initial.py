"""Initial velocities, derived from the equiangular reduction, and leading orders.

Evaluate :math:`\\dot\\gamma` and :math:`|\\dot\\theta_k|` of
:func:`~symdyn.reduced.equiangular.reduce` at ``t = 0`` (at a symmetric
start ``gamma0``, radius ``r0``); :func:`leading_order` gives their order
as ``n -> oo``.

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..base.budget import time_limit, within
from ..base.checks import shown
from ..model.display import latex
from ..model.expressions import value
from ..model.guards import ExprLike, clipped, in_domain, lambdify, substitute
from ..model.registry import SchemeLike
from ..model.registry import scheme as get_scheme
from ..model.symbols import ALL_SYMBOLS, gamma, n, r, t
from ..model.symbols import beta as BETA
from .bounded import UNDECIDED, sympy_failures, tidy
from .equiangular import large_exact, reduce

#: The state and time, on which a starting value cannot depend.
_STATE = ("t", "r", "a", "A_norm", "gamma", "C")


def _start_value(x, argument):
    v = value(x, argument, ALL_SYMBOLS)
    state = sorted(str(s) for s in v.free_symbols if s.name in _STATE)
    if state:
        raise ValueError(f"{argument}: a starting value cannot depend on the state or "
                         f"time ({', '.join(state)}); it may use n and beta, got {shown(x)}")
    return v


def _start_values(s, gamma0, r0, n_value, beta_value):
    """The substitution ``{t: 0, gamma: gamma0, r: r0, n: n}`` of a start,
    each value checked in the model's domain."""
    g0, rr = _start_value(gamma0, "gamma0"), _start_value(r0, "r0")
    given = {} if beta_value == BETA else {BETA: beta_value}
    if n_value is not None:
        given[n] = in_domain(_start_value(n_value, "n"), "n")
    g0, rr = substitute(g0, given, "gamma0"), substitute(rr, given, "r0")
    if rr.is_number and not (rr.is_real and rr.is_finite and rr > 0):
        raise ValueError(f"r0 must be a finite number > 0, got {shown(r0)}")
    in_domain(rr, "r", "r0")
    _check_gamma0(g0, given.get(n, n), gamma0)
    values = {t: sp.Integer(0), gamma: g0}
    if n in given:
        values[n] = given[n]
    # Tokens renormalized at t = 0 (docs/model.md, section 2) have r = 1.
    values[r] = sp.Integer(1) if s.starts_on_sphere else rr
    return values


#: Where a symbolic gamma0 is checked: n from 2 to 1e6, beta from 0 to 10.
_GAMMA0_WITNESSES = np.meshgrid([2.0, 3.0, 8.0, 1e3, 1e6], [0.0, 1.0, 10.0])


def _check_gamma0(g0, nn, gamma0):
    """gamma0 in [-1/(n-1), 1]: decided for numbers, else at sample n, beta."""
    if g0.is_number and not (g0.is_real and g0.is_finite):
        raise ValueError(f"gamma0 must be a finite real number, got {shown(gamma0)}")
    lower = -1 / (nn - 1)
    if g0.is_number and (g0 > 1 or (lower.is_number and g0 < lower) or g0 < -1):
        raise ValueError(f"gamma0 must lie in [-1/(n-1), 1] = [{lower}, 1], got {shown(gamma0)}")
    if g0.is_number or not (g0.free_symbols | lower.free_symbols) <= {n, BETA}:
        return
    f = lambdify([n, BETA], [g0, lower], "gamma0")
    with np.errstate(all="ignore"):
        g, low = (np.broadcast_to(np.asarray(v, dtype=complex), _GAMMA0_WITNESSES[0].shape)
                  for v in f(*_GAMMA0_WITNESSES))
    bad = ~((g.imag == 0) & (g.real <= 1) & (g.real >= low.real - 1e-12 * abs(low.real)))
    if bad.any():
        i = np.unravel_index(np.flatnonzero(bad)[0], bad.shape)
        nk, bk = (float(w[i]) for w in _GAMMA0_WITNESSES)
        raise ValueError(f"gamma0 must lie in [-1/(n-1), 1]; {clipped(g0)} is {g[i]:.6g} "
                         f"at n = {nk:g}, beta = {bk:g}")


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
    return _initial("initial_velocity", "gamma_dot", scheme, gamma0, r0, attention, n, beta)


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
    return _initial("initial_token_speed", "token_speed", scheme, gamma0, r0, attention, n, beta)


def _initial(what, field, scheme, gamma0, r0, attention, n_value, beta):
    """``field`` of the reduction at the start, simplified. A large exact
    ``beta`` (:func:`~symdyn.reduced.equiangular.large_exact`) is put in last, after
    simplifying: sympy's factoring makes ``exp(1000)`` a power of ``E``."""
    s = get_scheme(scheme)
    beta = in_domain(_expression(beta, "beta"), "beta")
    late = large_exact(beta)
    used = BETA if late else beta
    values = _start_values(s, gamma0, r0, n_value, used)
    names = "gamma0, r0" if n_value is None else "n, gamma0, r0"
    with time_limit(f"{what} of {s.name}"):
        law = getattr(reduce(s, attention, used), field)
        out = _simplify(substitute(law, values, names))
        return substitute(out, {BETA: beta}, "beta") if late else out


def _simplify(expr):
    plain = sp.factor(sp.powsimp(sp.simplify(expr)))
    return within(_denested, plain, otherwise=plain)


def _denested(expr):
    """``expr`` with powers of positive sums split, ``sqrt(a/b) = sqrt(a)/sqrt(b)``:
    with ``n = 1 + m``, ``m > 0``, sums such as ``n + exp(beta) - 1`` are
    positive, so sympy may denest them. Kept only when shorter and equal to
    ``expr`` at sample points (free parameters of either sign)."""
    m = sp.Dummy("m", positive=True)
    split = sp.powdenest(sp.powsimp(expr.subs(n, m + 1), force=True), force=True)
    tidy = sp.factor(sp.simplify(split)).subs(m, n - 1)
    if sp.count_ops(tidy) >= sp.count_ops(expr) or not equal_at_samples(expr, tidy):
        return expr
    return tidy


def equal_at_samples(a, b) -> bool:
    names = sorted(a.free_symbols | b.free_symbols, key=str)
    for k in range(3):
        point = {x: {n: (2, 3.7, 40)[k], BETA: (0.3, 1.7, 4.0)[k]}.get(x, (0.45, 1.3, -0.6)[k])
                 for x in names}
        try:
            u, v = complex(a.evalf(30, subs=point)), complex(b.evalf(30, subs=point))
        except (TypeError, ValueError):
            return False
        if not abs(u - v) <= 1e-12 * max(abs(u), abs(v), 1e-300):
            return False
    return True


@dataclass(frozen=True, kw_only=True)
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

    def _repr_latex_(self) -> str:
        return rf"$\Theta\left({latex(self.var ** self.exponent)}\right)$"


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
        raise ValueError(f"var: expected a symbol such as n, got {shown(var)}")
    with time_limit("leading_order"), sympy_failures(f"expr: no leading order of {expr} "
                                                      f"in {var} could be found"):
        return _leading_order(expr, var)


def _leading_order(expr, var):
    p = sp.limit(sp.log(sp.Abs(expr)) / sp.log(var), var, sp.oo)
    if _no_limit(p):
        raise _undecided(f"log|{clipped(expr)}| / log({var})", var, p)
    if not (p.is_real and p.is_finite):
        raise ValueError(f"expr: no power-law leading order in {var} ({p})")
    c = tidy(sp.limit(expr / var ** p, var, sp.oo))
    if _no_limit(c):
        # sin(n): p = 0 comes out, but sin(n) / n**0 has no limit (it oscillates)
        raise _undecided(f"({clipped(expr)}) / {var}**{p}", var, c)
    if c.is_zero or not c.is_finite:
        raise ValueError(f"expr: no power-law leading order in {var} "
                         f"(coefficient {c})")
    if _not_real(c) or _complex_at_large(expr, var):
        raise ValueError(f"expr: {clipped(expr)} is not real as {var} -> oo (its leading "
                         f"term: ({clipped(c)})*{var}**({p})); a leading order c*{var}**p "
                         f"needs a real expression and a real c")
    return LeadingOrder(coefficient=c, exponent=p, var=var)


def _not_real(c) -> bool:
    """A coefficient that is not real: sympy says so, or, free of symbols, its
    value has an imaginary part (``sqrt(1 - n) ~ I sqrt(n)``)."""
    if c.is_extended_real is False:
        return True
    if c.free_symbols or c.is_extended_real:
        return False
    try:
        z = complex(c.evalf(30))
    except (TypeError, ValueError):
        return True
    return z.imag != 0


def _complex_at_large(expr, var) -> bool:
    """``expr`` has an imaginary part at ``var = 10**6`` and ``10**9`` (the
    other symbols at two sample points): ``sqrt(1 - n) + n`` leads with the
    real ``n``, but is not a real quantity."""
    others = sorted(expr.free_symbols - {var}, key=str)
    for k, big in enumerate((10**6, 10**9)):
        point = {x: (1.7, 4.0)[k] for x in others} | {var: big}
        try:
            z = complex(expr.evalf(30, subs=point))
        except (TypeError, ValueError):
            return False
        if not abs(z.imag) > 1e-25 * abs(z):
            return False
    return True


def _undecided(what, var, found):
    return ValueError(f"expr: {UNDECIDED}: {what} has no limit as {var} -> oo that sympy "
                      f"finds ({clipped(found)}), so no leading order c*{var}**p")


def _no_limit(x) -> bool:
    """sympy's way of saying a limit does not exist (or was not found)."""
    return x.has(sp.AccumBounds, sp.Limit, sp.nan, sp.zoo)

