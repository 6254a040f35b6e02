"""Initial and terminal velocities, derived from the equiangular reduction.

Initial velocity: evaluate :math:`\\dot\\gamma` and :math:`|\\dot\\theta_k|` of
:func:`~symdyn.reduced.equiangular.reduce` at ``t = 0``; :func:`leading_order` gives
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
   leading ``growth``), else the exact :math:`C e^{-\\Lambda(t)}`.

Layer 2, reduced.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..base.budget import SECONDS, note_cut, time_limit, within
from ..base.checks import shown
from ..model.display import formula_table, latex
from ..model.expressions import ExprLike, _short, in_domain, lambdify, substitute, value
from ..model.registry import SchemeLike, branch_at
from ..model.registry import scheme as get_scheme
from ..model.symbols import ALL_SYMBOLS, C, gamma, n, r, t
from ..model.symbols import beta as BETA
from .equiangular import check_attention, large_exact, reduce

r_0 = sp.Symbol("r_0", positive=True)
_s = sp.Symbol("s", nonnegative=True)


# --------------------------------------------------------------------------
# initial velocity
# --------------------------------------------------------------------------

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
        raise ValueError(f"gamma0 must lie in [-1/(n-1), 1]; {_short(g0)} is {g[i]:.6g} "
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
    with time_limit("leading_order"), _sympy_failures(f"expr: no leading order of {expr} "
                                                      f"in {var} could be found"):
        return _leading_order(expr, var)


def _leading_order(expr, var):
    p = sp.limit(sp.log(sp.Abs(expr)) / sp.log(var), var, sp.oo)
    if _no_limit(p):
        raise _undecided(f"log|{_short(expr)}| / log({var})", var, p)
    if not (p.is_real and p.is_finite):
        raise ValueError(f"expr: no power-law leading order in {var} ({p})")
    c = _tidy(sp.limit(expr / var ** p, var, sp.oo))
    if _no_limit(c):
        # sin(n): p = 0 comes out, but sin(n) / n**0 has no limit (it oscillates)
        raise _undecided(f"({_short(expr)}) / {var}**{p}", var, c)
    if c.is_zero or not c.is_finite:
        raise ValueError(f"expr: no power-law leading order in {var} "
                         f"(coefficient {c})")
    return LeadingOrder(c, p, var)


def _undecided(what, var, found):
    return ValueError(f"expr: {UNDECIDED}: {what} has no limit as {var} -> oo that sympy "
                      f"finds ({_short(found)}), so no leading order c*{var}**p")


def _no_limit(x) -> bool:
    """sympy's way of saying a limit does not exist (or was not found)."""
    return x.has(sp.AccumBounds, sp.Limit, sp.nan, sp.zoo)


# --------------------------------------------------------------------------
# terminal velocity
# --------------------------------------------------------------------------

#: The classes of the terminal law of :math:`1-\gamma = C e^{-\Lambda(t)}`,
#: fastest decay first, by the growth of :math:`\Lambda` as ``t -> oo``:
#: ``Lambda/t -> oo``; ``Lambda ~ c t``; ``Lambda/t -> 0`` but
#: ``Lambda/log t -> oo``; ``Lambda ~ c log t``; ``Lambda/log t -> 0`` but
#: ``Lambda -> oo``; ``Lambda`` bounded. :func:`terminal` answers one of these
#: or :data:`UNDECIDED`.
LAWS = ("super-exponential", "exponential", "stretched-exponential", "polynomial",
        "slower-than-polynomial", "no-collapse")

#: The answer when the asymptotic comparison cannot be decided (see ``Terminal.reason``).
UNDECIDED = "undecided"

#: Each sympy step of the comparison (the integral, one limit, the expansion)
#: may take at most this fraction of ``symdyn.base.budget.SECONDS["derivation"]``;
#: all of them end before that budget does (then the law is ``undecided``).
STEP_FRACTION = 0.25


@dataclass(frozen=True)
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

    def _repr_latex_(self) -> str:
        rows = [(r"\text{law}", rf"\text{{{self.law}}}")]
        if self.reason:
            rows.append((r"\text{why}", latex(self.reason)))
        rows += [(label, latex(v)) for label, v in (
            (r"1-\gamma \sim", self.epsilon), (r"\dot\gamma \sim", self.gamma_dot),
            (r"\text{rate}", self.rate), (r"r(t) =", self.radius),
            (r"\Lambda(t) \sim", self.growth)) if v is not None]
        return formula_table("terminal law", rows)


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
            _sympy_failures(f"scheme: cannot derive the terminal law of {s}"):
        rate_t, radius = _rate(s, attention)
        steps = _Steps()
        result = _law(rate_t, radius, steps)
    if not steps.timed_out:            # an answer cut short by time is not kept
        if len(_CACHE) >= 128:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = result
    return result


_CACHE: dict = {}


@contextmanager
def _sympy_failures(message):
    """sympy's "no method for this" (NotImplementedError, and TypeError or
    AttributeError from comparisons it cannot decide) as a ValueError."""
    try:
        yield
    except (NotImplementedError, TypeError, AttributeError, RecursionError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{message} (sympy: {detail[:200]})") from None


def _rate(s, attention):
    """lambda(t) along the radius at the cluster, and the radius r(t)."""
    red = reduce(s, attention)
    G = branch_at(red.gamma_dot, sp.oo)
    rate = _tidy(-sp.diff(G, gamma).subs(gamma, 1))
    rho = _tidy(branch_at(red.r_dot, sp.oo).subs(gamma, 1))
    radius = _radius(rho, sp.Integer(1) if s.on_sphere else r_0)
    return _tidy(rate.subs(r, radius)), radius


def _tidy(expr):
    """``simplify(expr)``, or ``expr`` itself (equal, only untidy) when
    simplify takes longer than ``SECONDS["tidy"]``: trigsimp expands
    ``sin(10**8*t)`` into multiple angles for minutes."""
    return within(sp.simplify, expr, otherwise=expr)


# --- bounded sympy steps -----------------------------------------------------

class _GiveUp(BaseException):
    """A step ran out of time (a BaseException, so sympy's ``except Exception``
    lets it pass)."""


def _give_up(signum, frame):
    raise _GiveUp


class _Steps:
    """Runs the sympy steps of one comparison, each bounded in time.

    Every step gets at most ``STEP_FRACTION`` of the derivation budget, and
    all of them end a margin before the budget of the enclosing
    :func:`~symdyn.base.budget.time_limit` does, so that running out of time gives
    ``undecided`` rather than an error. Without a usable alarm (budget None,
    not the main thread) steps run unbounded, like ``time_limit``.
    """

    def __init__(self):
        total = SECONDS["derivation"]
        self.usable = (total is not None and hasattr(signal, "setitimer")
                       and threading.current_thread() is threading.main_thread())
        self.step = STEP_FRACTION * total if self.usable else None
        self.deadline = None
        self.timed_out = False
        self.failure = ""
        if self.usable:
            left = signal.getitimer(signal.ITIMER_REAL)[0] or total
            self.deadline = time.monotonic() + left - min(2.0, 0.1 * left)

    def run(self, fn, *args):
        """``fn(*args)``, or None when it fails or runs out of time."""
        seconds = None
        if self.usable:
            seconds = min(self.step, self.deadline - time.monotonic())
            if seconds <= 0:
                self.timed_out = True
                return None
        try:
            with self._alarm(seconds):
                return fn(*args)
        except _GiveUp:
            self.timed_out = True
            note_cut()
        except Exception as exc:   # noqa: BLE001 -- sympy's failures: not decided
            self.failure = " ".join(str(exc).split())[:160] or type(exc).__name__
        return None

    @contextmanager
    def _alarm(self, seconds):
        if seconds is None:
            yield
            return
        outer = signal.getitimer(signal.ITIMER_REAL)[0]
        start = time.monotonic()
        previous = signal.signal(signal.SIGALRM, _give_up)
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
        try:
            yield
        finally:
            try:
                signal.setitimer(signal.ITIMER_REAL, 0)
            finally:
                signal.signal(signal.SIGALRM, previous)
                if outer > 0:       # re-arm the enclosing budget's alarm
                    left = outer - (time.monotonic() - start)
                    signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))


# --- the comparison ----------------------------------------------------------

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


class _Comparison:
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
    cmp = _Comparison(lam, closed, steps)
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
    return Terminal(law, eps, gamma_dot, lam, radius, exponent, reason, growth, Lam)


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
        rest = _Comparison(sp.Abs(lam - sp.diff(growth, t)), None, steps)
        if rest.converges(rest.lam):
            return sp.powsimp(C * sp.exp(-growth))
    if Lam.is_Add:                      # constants go into C
        Lam = sp.Add(*(term for term in Lam.args if term.has(t)))
    return C * sp.exp(-Lam)
