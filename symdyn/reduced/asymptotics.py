"""Terminal velocities, derived from the equiangular reduction.

Near the cluster :math:`\\gamma = 1`, with :math:`\\varepsilon = 1 - \\gamma`:

Terminal velocity, near the cluster :math:`\\gamma = 1`, with
:math:`\\varepsilon = 1 - \\gamma`:

1. Linearize: :math:`\\dot\\varepsilon = -\\lambda(r, t)\\,\\varepsilon`,
   :math:`\\lambda = \\partial_\\gamma \\dot\\gamma |_{\\gamma=1}` up to sign,
   with the branch of every ``Piecewise`` that holds as ``t -> oo``.
2. Solve the radial law at the cluster, :math:`\\dot r = \\rho(r, t)|_{\\gamma=1}`,
   from ``r(0) = r_0``.
3. :math:`\\varepsilon(t) = C \\exp(-\\Lambda(t))`,
   :math:`\\Lambda(t) = \\int_0^t \\lambda(r(s), s)\\,ds`.
4. Name the law by the growth of :math:`\\Lambda` (:data:`LAWS`, fastest
   decay first): ``Lambda/t -> oo`` super-exponential; ``Lambda ~ c t``
   exponential; ``Lambda/t -> 0``, ``Lambda/log t -> oo``
   stretched-exponential; ``Lambda ~ c log t`` polynomial;
   ``Lambda/log t -> 0``, ``Lambda -> oo`` slower-than-polynomial;
   bounded no-collapse. The limits are taken on the integrand
   (l'Hopital: ``lim Lambda/t = lim lambda``, ``lim Lambda/log t = lim t
   lambda``; boundedness by an iterated-logarithm test of
   :math:`\\int^\\infty \\lambda`) and, where those do not exist, on the
   closed form of :math:`\\Lambda`. What no limit decides within the time
   budget is ``undecided``, never a default class.
5. The formula: ``C exp(-growing terms)`` when the rest of :math:`\\Lambda`
   stays bounded (powers :math:`c\\,t^p` and :math:`d \\log t`, or the

Initial velocities live in :mod:`symdyn.reduced.initial` (re-exported here).

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..base.budget import time_limit
from ..base.checks import check_attention
from ..model.display import formula_table, formula_text, latex
from ..model.piecewise import branch_at
from ..model.registry import SchemeLike
from ..model.registry import scheme as get_scheme
from ..model.symbols import C, gamma, r, t
from .bounded import UNDECIDED, Steps, sympy_failures, tidy
from .comparison import Comparison
from .equiangular import reduce

r_0 = sp.Symbol("r_0", positive=True)
_s = sp.Symbol("s", nonnegative=True)



#: The classes of the terminal law of :math:`1-\gamma = C e^{-\Lambda(t)}`,
#: fastest decay first, by the growth of :math:`\Lambda` as ``t -> oo``:
#: ``Lambda/t -> oo``; ``Lambda ~ c t``; ``Lambda/t -> 0`` but
#: ``Lambda/log t -> oo``; ``Lambda ~ c log t``; ``Lambda/log t -> 0`` but
#: ``Lambda -> oo``; ``Lambda`` bounded. :func:`terminal` answers one of these
#: or :data:`UNDECIDED`.
LAWS = ("super-exponential", "exponential", "stretched-exponential", "polynomial",
        "slower-than-polynomial", "no-collapse")

#: The answer when the asymptotic comparison cannot be decided (see ``Terminal.reason``).
@dataclass(frozen=True, kw_only=True)
class Terminal:
    """The terminal law of ``1 - gamma(t)`` near the cluster.

    Attributes
    ----------
    law : str
        One of :data:`LAWS` (``"super-exponential"``, ``"exponential"``,
        ``"stretched-exponential"``, ``"polynomial"``,
        ``"slower-than-polynomial"``, ``"no-collapse"``), or ``"undecided"``.
    epsilon : sympy.Expr
        The leading :math:`1-\\gamma(t)`, with free constant ``C``: the growing
        terms of :math:`\\Lambda` when they leave a bounded rest, else the
        exact :math:`C e^{-\\Lambda(t)}` (constants dropped; an unevaluated
        ``Integral`` when :math:`\\Lambda` has no closed form).
    gamma_dot : sympy.Expr
        The leading :math:`\\dot\\gamma(t) = -\\dot\\varepsilon`.
    rate : sympy.Expr
        :math:`\\lambda(t)` of :math:`\\dot\\varepsilon = -\\lambda\\varepsilon`
        along the radius ``r(t)`` (initial radius ``r_0``).
    radius : sympy.Expr
        ``r(t)`` at the cluster.
    exponent : object
        ``c`` for ``C exp(-c t)`` (exponential; an ``AccumBounds`` when
        ``Lambda/t`` only stays within positive bounds) and for ``C t**-c``
        (polynomial) and ``C (log t)**-c`` (``Lambda ~ c log log t``);
        ``(c, p)`` for ``C exp(-c t**p)``; ``(c, p, q)`` for
        ``C exp(-c t**p (log t)**q)``, e.g. ``(2, 1, -1)``, the
        ``t/log t``-type growth of a speed ``log t``; None otherwise.
    reason : str
        Why the law is ``"undecided"``; else "".
    growth : sympy.Expr or None
        The leading :math:`\\Lambda(t)` (``Lambda/growth -> 1``), e.g.
        ``2*t/log(t)``, when found; None otherwise (no-collapse, undecided).
    Lambda : sympy.Expr
        The exact :math:`\\Lambda(t) = \\int_0^t \\lambda`, closed form or
        ``Integral``.

    Examples
    --------
    >>> import symdyn as sd
    >>> term = sd.terminal("sqrt-scaling")
    >>> term.law, term.epsilon
    ('stretched-exponential', C*exp(-4*sqrt(t)))
    """

    law: str
    epsilon: sp.Expr | None
    gamma_dot: sp.Expr | None
    rate: sp.Expr | None
    radius: sp.Expr | None
    exponent: object
    reason: str = ""
    growth: sp.Expr | None = None
    Lambda: sp.Expr | None = None

    def __str__(self) -> str:
        rows = [("law", self.law)] + ([("why", self.reason)] if self.reason else [])
        rows += [(label, v) for label, v in (
            ("1 - gamma ~", self.epsilon), ("d gamma/dt ~", self.gamma_dot),
            ("rate", self.rate), ("r(t) =", self.radius), ("Lambda(t) ~", self.growth))
            if v is not None]
        return formula_text("Terminal law", rows)

    def _repr_latex_(self) -> str:
        rows = [(r"\text{law}", rf"\text{{{self.law}}}")]
        if self.reason:
            rows.append((r"\text{why}", latex(self.reason)))
        rows += [(label, latex(v)) for label, v in (
            (r"1-\gamma \sim", self.epsilon), (r"\dot\gamma \sim", self.gamma_dot),
            (r"\text{rate}", self.rate), (r"r(t) =", self.radius),
            (r"\Lambda(t) \sim", self.growth)) if v is not None]
        return formula_table("terminal law", rows)


#: sympy's ODE methods that give no closed form (or only search for one)
NO_CLOSED_FORM = ("1st_power_series", "lie_group")


def _radius(rho, r_start):
    """Solve dr/dt = rho(r, t), r(0) = r_start."""
    if rho == 0:
        return r_start
    if not rho.has(r):
        return sp.simplify(r_start + sp.integrate(rho.subs(t, _s), (_s, 0, t)))
    f = sp.Function("f")
    ode = sp.Eq(f(t).diff(t), rho.subs(r, f(t)))
    # Refused by construction, not by the budget: an ODE whose only methods are
    # a power series (no closed form) or Lie-group heuristics (a long search
    # that fails) has no closed-form radius here.
    hints = sp.classify_ode(ode, f(t))
    if not [h for h in hints if h.removesuffix("_Integral") not in NO_CLOSED_FORM]:
        raise ValueError(f"scheme: cannot solve the radial law dr/dt = {rho} (no "
                         f"closed-form method applies; sympy's: "
                         f"{', '.join(hints) or 'none'})")
    try:
        sol = sp.dsolve(ode, f(t), ics={f(0): r_start})
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
    exact ``exp(-Lambda)`` describes epsilon. Raises ValueError when Lam is
    not such a sum (the caller then keeps the exact Lambda).
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

    The class (:data:`LAWS`) is decided by limits as ``t -> oo`` of
    ``Lambda/t``, ``Lambda/log t`` and ``Lambda``, taken on the integrand
    (l'Hopital: ``lambda``, ``t lambda``, and an iterated-logarithm test of
    ``int^oo lambda``) and, where those limits do not exist, on the closed
    form of ``Lambda``. When none decides within the time budget the law is
    ``"undecided"``, with the exact ``Lambda`` and the reason.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.terminal("pre-ln").epsilon
    C/t**2
    >>> sd.terminal("sqrt-scaling").law
    'stretched-exponential'
    >>> term = sd.terminal(sd.scheme("ngpt", alpha="1 + t"))
    >>> term.law, term.epsilon
    ('super-exponential', C*exp(-t*(t + 2)))
    >>> term = sd.terminal(sd.custom_scheme("log", speed="log(t + 2)"))
    >>> term.law, term.growth
    ('stretched-exponential', 2*t/log(t))
    >>> sd.terminal(sd.scheme("ngpt", alpha="alpha(t)")).law
    'undecided'
    """
    s = get_scheme(scheme)
    attention = check_attention(attention)
    key = (s, attention)
    if key in _CACHE:
        return _CACHE[key]
    with time_limit(f"terminal law of {s.name}"), \
            sympy_failures(f"scheme: cannot derive the terminal law of {s}"):
        rate_t, radius = _rate(s, attention)
        steps = Steps()
        result = _law(rate_t, radius, steps)
    if not steps.timed_out:            # an answer cut short by time is not kept
        if len(_CACHE) >= 128:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = result
    return result


_CACHE: dict = {}


def _rate(s, attention):
    """lambda(t) along the radius at the cluster, and the radius r(t)."""
    red = reduce(s, attention)
    G = branch_at(red.gamma_dot, sp.oo)
    rate = tidy(-sp.diff(G, gamma).subs(gamma, 1))
    rho = tidy(branch_at(red.r_dot, sp.oo).subs(gamma, 1))
    radius = _radius(rho, sp.Integer(1) if s.on_sphere else r_0)
    return tidy(rate.subs(r, radius)), radius




def _law(lam, radius, steps):
    """The Terminal for the rate ``lam(t)`` (and ``radius``), by comparison."""
    lam_s = lam.subs(t, _s)
    exact = sp.Integral(lam_s, (_s, 0, t))
    undefined = lam.atoms(sp.core.function.AppliedUndef)
    closed = steps.run(sp.integrate, lam_s, (_s, 0, t))
    if closed is not None and closed.has(sp.Integral):
        exact, closed = closed, None          # sympy's form: constant factors outside
    if closed is not None:      # polylog(2, t*exp_polar(I*pi)) -> polylog(2, -t)
        closed = steps.run(lambda: sp.collect(sp.expand(closed.replace(sp.exp_polar, sp.exp)), t,
                                              func=sp.trigsimp)) or closed
    Lam = exact if closed is None else closed
    cmp = Comparison(lam, closed, steps)
    if undefined:
        names = ", ".join(sorted(map(str, undefined)))
        law, first, reason = UNDECIDED, None, f"Lambda(t) depends on {names}, not given"
    else:
        law, first, reason = cmp.classify()
    growth, exponent = (None, None)
    if law not in (UNDECIDED, "no-collapse"):
        growth, exponent = cmp.growth(law, first)
    if law == UNDECIDED:
        reason = f"{reason}; the law is C exp(-Lambda(t)), Lambda(t) = {Lam}"
    eps = _epsilon(law, Lam, closed, growth, exponent, lam, steps)
    gamma_dot = -sp.diff(eps, t)
    gamma_dot = steps.run(sp.simplify, gamma_dot) or gamma_dot
    return Terminal(law=law, epsilon=eps, gamma_dot=gamma_dot, rate=lam, radius=radius,
                    exponent=exponent, reason=reason, growth=growth, Lambda=Lam)


def _epsilon(law, Lam, closed, growth, exponent, lam, steps):
    """C exp(-growing part of Lambda) when the rest stays bounded, else exact."""
    if law == "no-collapse":
        return C
    if law != UNDECIDED and closed is not None and growth is not None \
            and not (isinstance(exponent, tuple) and len(exponent) == 3):
        # Lambda = c t**p + ... + d log t + bounded: keep every growing term.
        # The leading term must be the growth found on the integrand (sympy's
        # limits of closed forms with special functions can be wrong).
        found = steps.run(_growing_terms, closed)
        if found is not None and found[0]:
            terms, settled = found
            parts = [c * (t ** p if p.is_positive else sp.log(t)) for c, p in terms]
            if sp.simplify(parts[0] - growth) == 0:
                return sp.powsimp(C * sp.exp(-(sp.Add(*parts) if settled else closed)))
    if growth is not None:
        # Lambda - growth bounded: int^oo |lambda - growth'| converges.
        rest = Comparison(sp.Abs(lam - sp.diff(growth, t)), None, steps)
        if rest.converges(rest.lam):
            return sp.powsimp(C * sp.exp(-growth))
    if Lam.is_Add:                      # constants go into C
        Lam = sp.Add(*(term for term in Lam.args if term.has(t)))
    return C * sp.exp(-Lam)
