"""Stable numeric right-hand sides of the reduced ODE, compiled by lambdify.

The solvers integrate :math:`u = \\log\\varepsilon`, :math:`\\varepsilon =
1 - \\gamma`, and ``r``. Before compiling, the derived expressions are
rewritten so that no float overflows or cancels:

1. substitute :math:`\\gamma = 1 - \\varepsilon` factor by factor (the
   reduction keeps :math:`\\dot\\gamma` factored, with a factor
   :math:`\\gamma - 1 = -\\varepsilon`), so :math:`\\dot u = -\\dot\\gamma /
   \\varepsilon` cancels :math:`\\varepsilon` exactly instead of dividing two
   tiny numbers;
2. write every kernel value :math:`e^{\\beta(c_0 + c_1\\varepsilon)}` as
   :math:`B^{c_0} E^{-c_1}` with :math:`B = e^{\\beta}`,
   :math:`E = e^{-\\beta\\varepsilon} \\in (0, 1]`;
3. pull common factors out of every sum (``factor_terms``, no expansion):
   the softmax's :math:`B` cancels between numerator and denominator, so
   :math:`\\beta = 10^4` and ``n = 1e9`` stay finite. Only a kernel without
   a softmax denominator keeps :math:`B` (its true scale);
4. put :math:`E = e^{-\\beta\\varepsilon}`, :math:`B = e^{\\beta}` back and
   ``lambdify`` for numpy (arrays broadcast over a batch) or mpmath.

:class:`StableSystem` keeps the expressions in :math:`\\varepsilon` (the
forward sensitivities differentiate them). The solvers compile them in the
form ``"gamma"``: every :math:`1 - \\varepsilon` becomes an argument ``G``, which
they compute from :math:`u` as :math:`-\\operatorname{expm1}(u)`, so that
:math:`\\gamma` keeps its relative precision where it is tiny and ``n``
multiplies it (:math:`\\varepsilon + n\\gamma` at ``n = 1e13``, :math:`\\gamma =
1e-13`: ``1 - exp(u)`` keeps 3 digits of it, ``-expm1(u)`` all). In the form
``"large_n"`` they are also written in :math:`m = 1/n` (:func:`large_n`): no
term grows with ``n``, so ``n`` up to the float's range evaluates without
overflow; ``"limit"`` is that at :math:`m = 0`, the long-context limit
``n = inf`` (:func:`limit`).

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from ..base.budget import complete_cache
from ..base.checks import check_attention, shown
from ..model.piecewise import lambdify_phases, piecewise_breakpoints
from ..model.registry import scheme as get_scheme
from ..model.scheme import Scheme
from ..model.symbols import SCHEME_SYMBOLS, A_norm, a, beta, gamma, n, r, t
from .equiangular import reduce

epsilon = sp.Symbol("epsilon", positive=True)
#: gamma = 1 - epsilon as the compiled functions' argument (the forms "gamma",
#: "large_n", "limit"), computed by the callers from u = log(epsilon) as -expm1(u)
G = sp.Symbol("G", real=True)
_m = sp.Symbol("m", positive=True)
_B = sp.Symbol("B", positive=True)
_E = sp.Symbol("E", positive=True)
ARGS = (t, epsilon, r, n, beta)
GAMMA_ARGS = (t, epsilon, G, r, n, beta)


@dataclass(frozen=True)
class StableSystem:
    """The reduced ODE in ``(u = log epsilon, r)``, as stable sympy expressions.

    Attributes
    ----------
    log_eps_dot : sympy.Expr
        :math:`\\dot u = -\\dot\\gamma/\\varepsilon` in ``t, epsilon, r, n, beta``.
    r_dot : sympy.Expr
        :math:`\\dot r` in the same symbols.
    speed, A_norm : sympy.Expr
        The scheme's speed :math:`s_k` and :math:`|A_k|` in the same symbols
        (for the solvers' checks along the trajectory).
    scheme : Scheme
    attention : str
    """

    scheme: Scheme
    attention: str
    log_eps_dot: sp.Expr
    r_dot: sp.Expr
    speed: sp.Expr
    A_norm: sp.Expr

    @property
    def breakpoints(self) -> tuple[float, ...]:
        """Times where a ``Piecewise`` in ``t`` switches branch (Mix-LN)."""
        return piecewise_breakpoints((self.log_eps_dot, self.r_dot, self.speed))

    @property
    def args(self) -> tuple:
        """The compiled functions' arguments: ``t, epsilon, r, n, beta`` and the
        scheme's free parameters (:attr:`Scheme.symbols`)."""
        return ARGS + self.scheme.symbols

    @property
    def gamma_args(self) -> tuple:
        """The arguments of the functions compiled in the forms ``"gamma"``,
        ``"large_n"`` and ``"limit"`` (:meth:`phases`): ``t,
        epsilon, G, r, n, beta`` and the free parameters; ``G = 1 - epsilon``
        computed accurately (``-expm1(u)``; 1 at the cluster, 0 at ``epsilon = 1``)."""
        return GAMMA_ARGS + self.scheme.symbols

    def phases(self, module: str = "numpy", *, form: str = "epsilon") -> list:
        """Compiled ``(f_u, f_r)`` per phase, each ``f(t, epsilon, r, n, beta,
        *params)`` (see :attr:`args`).

        ``form="gamma"``: ``f(t, epsilon, G, r, n, beta, *params)``
        (:attr:`gamma_args`), every ``1 - epsilon`` read from ``G``, as the
        solvers call them; ``"large_n"``: the same written in ``1/n``
        (:func:`large_n`: no overflow up to ``n = 1e308``); ``"limit"``: its
        ``n -> inf`` limit (``n`` is not read; :meth:`limit_failure`).

        Phase ``i`` is the interval between the ``i``-th breakpoints; its
        functions carry no ``Piecewise``, so a step that ends on a breakpoint
        is evaluated with the branch of the interval it lies in.
        """
        return _lambdify(self, module, ("log_eps_dot", "r_dot"), False, form)

    def rates(self, module: str = "numpy", *, form: str = "epsilon") -> list:
        """One compiled function per phase returning ``[u_dot, r_dot]``, their
        common subexpressions computed once (1.2-2.2x over :meth:`phases`);
        ``form`` as there."""
        return _lambdify(self, module, ("log_eps_dot", "r_dot"), True, form)

    def laws(self, module: str = "numpy", *, form: str = "epsilon") -> list:
        """Compiled ``(f_speed, f_A_norm)`` per phase, with the signature of
        :meth:`phases`."""
        return _lambdify(self, module, ("speed", "A_norm"), False, form)

    def limit_failure(self) -> str | None:
        """Why the ``n -> inf`` limit of this system cannot be used: a rate or
        law that grows without bound with ``n``, or None."""
        return _limit_facts(self)[0]

    def limit_singular_at_zero(self) -> bool:
        """Whether the ``n -> inf`` limit of the rate of ``u`` is not Lipschitz
        at ``gamma = 0`` (a power of ``G`` below 1, such as Peri-LN's
        ``-2 sqrt(G)/r``): from ``gamma0 = 0`` its solution is not unique, and
        the finite-n solutions do not follow the one that stays at 0."""
        return _limit_facts(self)[1]


def _kernel_values(expr: sp.Expr) -> sp.Expr:
    """exp(beta*(c0 + c1*eps) + rest) -> B**c0 * E**(-c1) * exp(rest)."""
    def rewrite(e):
        arg = sp.expand(e.args[0])
        per_beta = sp.expand(arg.coeff(beta))
        c1 = per_beta.coeff(epsilon)
        c0 = sp.expand(per_beta - c1 * epsilon)
        if per_beta == 0 or c0.has(epsilon, beta) or c1.has(epsilon, beta):
            return e
        return _B**c0 * _E**(-c1) * sp.exp(sp.expand(arg - beta * per_beta))
    return expr.replace(lambda e: isinstance(e, sp.exp), rewrite)


def _pull_common_factors(expr: sp.Expr) -> sp.Expr:
    return expr.replace(lambda e: e.is_Add, sp.factor_terms)


def stabilize(expr: sp.Expr) -> sp.Expr:
    """Steps 1-3 of the module docstring for one expression in gamma."""
    expr = expr.subs(gamma, 1 - epsilon)
    expr = _pull_common_factors(_kernel_values(expr))
    return expr.subs({_E: sp.exp(-beta * epsilon), _B: sp.exp(beta)})


def stable_system(scheme, attention: str = "softmax") -> StableSystem:
    """The reduced ODE of ``scheme`` in stable form (cached).

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.stable_system("post-ln").log_eps_dot
    -2*(epsilon + n*(1 - epsilon))*exp(-beta*epsilon)/((n - 1)*exp(-beta*epsilon) + 1)
    """
    return _stable_system(get_scheme(scheme), check_attention(attention))


@complete_cache(maxsize=256)
def _stable_system(s: Scheme, attention: str) -> StableSystem:
    red = reduce(s, attention)
    u_dot = stabilize(-red.gamma_dot) / epsilon
    if any(p.base == epsilon and p.exp.is_negative for p in u_dot.atoms(sp.Pow)):
        raise ValueError(f"scheme: d gamma/dt of {s.name} has no factor (1 - gamma) "
                         f"to cancel: {red.gamma_dot}")
    speed = s.speed.subs({a: red.a, A_norm: red.A_norm})
    return StableSystem(s, attention, u_dot, stabilize(red.r_dot), stabilize(speed),
                        stabilize(red.A_norm))


def in_gamma(expr: sp.Expr) -> sp.Expr:
    """``expr`` with every ``1 - epsilon`` replaced by the symbol :data:`G`."""
    return expr.xreplace({1 - epsilon: G, epsilon - 1: -G})


@lru_cache(maxsize=1024)
def large_n(expr: sp.Expr) -> sp.Expr:
    """``expr`` (in :data:`G`, :func:`in_gamma`) written in ``m = 1/n``: every
    sum over a common denominator, its powers of ``m`` pulled out (the kernel
    values kept as they are, in ``(0, 1]``), so that the powers of ``n``
    cancel between numerator and denominator and no term grows with ``n``;
    ``m`` is then read as ``1/n`` (0 at ``n = inf``).

    >>> import symdyn as sd
    >>> large_n(sd.stable_system("post-ln").log_eps_dot)
    -2*(G + epsilon/n)*exp(-beta*epsilon)/((1 - 1/n)*exp(-beta*epsilon) + 1/n)
    """
    e = in_gamma(expr).subs(n, 1 / _m)
    hidden = {x: sp.Dummy("k", positive=True) for x in e.atoms(sp.exp)}
    e = e.xreplace(hidden)
    e = e.replace(lambda x: x.is_Add, lambda x: sp.factor_terms(sp.together(x)))
    return e.xreplace({v: k for k, v in hidden.items()}).xreplace({_m: 1 / n})


def limit(expr: sp.Expr) -> sp.Expr:
    """The ``n -> inf`` limit of ``expr``: :func:`large_n` at ``1/n = 0``
    (``zoo`` or ``nan`` in it where the limit is not finite).

    >>> import symdyn as sd
    >>> limit(sd.stable_system("peri-ln").log_eps_dot)
    -2*sqrt(G)/r
    """
    return large_n(expr).xreplace({n: sp.oo})


_FIELDS = ("log_eps_dot", "r_dot", "speed", "A_norm")


@lru_cache(maxsize=256)
def _limit_facts(system: StableSystem) -> tuple:
    for f in _FIELDS:
        e = limit(getattr(system, f))
        if e.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
            return (f"the {f.replace('log_eps_dot', 'rate of log(1 - gamma)')} of "
                    f"{system.scheme.name} has no finite limit as n -> inf ({e})"), False
    rate = limit(system.log_eps_dot)
    singular = any(p.base.has(G) and not p.exp.is_integer for p in rate.atoms(sp.Pow))
    return None, singular


#: the forms :meth:`StableSystem.phases` compiles
FORMS = {"epsilon": None, "gamma": in_gamma, "large_n": large_n, "limit": limit}


def _check_concrete(s: Scheme):
    """Only numbers, known functions and the scheme symbols compile."""
    for law, expr in (("speed", s.speed), ("radial", s.radial)):
        unknown = s.undefined(expr)
        if unknown:
            names = s.holding(unknown) + [law]
            raise ValueError(f"{', '.join(names)}: the {law} law {expr} of {s.name} contains "
                             f"the undefined {', '.join(sorted(map(str, unknown)))}; the law "
                             f"must be concrete (numbers and {', '.join(SCHEME_SYMBOLS)}) "
                             f"to solve")


#: Members with n at least this are solved in the form "large_n" (written in
#: 1/n, :func:`symdyn.reduced.compile.large_n`): the form "gamma" holds terms
#: n**2 * gamma, which overflow from about n = 1e154; n = inf in the form "limit".
LARGE_N = 1e100


def form_of(n):
    """The compiled form (:meth:`StableSystem.phases`) each member is solved in:
    ``"gamma"``, ``"large_n"`` from :data:`LARGE_N`, ``"limit"`` at ``n = inf``."""
    n = np.asarray(n, dtype=float)
    return np.where(np.isinf(n), "limit", np.where(n >= LARGE_N, "large_n", "gamma"))


def gamma_of(u):
    """:math:`\\gamma = 1 - e^u` to full relative precision: ``-expm1(u)``,
    numpy's ufunc on arrays and floats alike (the scalar path's bits are the
    batched path's); ``0 - x``, not ``-x``: 0, not -0, at ``u = 0``."""
    return 0.0 - np.expm1(u)


def clear_caches():
    """Forget the compiled reduced systems (they are compiled again on the
    next solve, with the numpy functions then in place)."""
    _lambdify.cache_clear()
    _limit_facts.cache_clear()


@lru_cache(maxsize=256)
def _lambdify(system: StableSystem, module: str, fields: tuple[str, ...],
              together: bool = False, form: str = "epsilon"):
    _check_concrete(system.scheme)
    if form not in FORMS:
        raise ValueError(f"form: must be one of {', '.join(FORMS)}, got {shown(form)}")
    exprs = [getattr(system, f) for f in fields]
    if form == "epsilon":
        return lambdify_phases(system.args, exprs, system.breakpoints, module,
                               together=together)
    return lambdify_phases(system.gamma_args, [FORMS[form](e) for e in exprs],
                           system.breakpoints, module, together=together)
