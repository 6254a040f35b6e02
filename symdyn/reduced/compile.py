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

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from ..base.budget import complete_cache
from ..base.checks import check_attention
from ..model.piecewise import lambdify_phases, piecewise_breakpoints
from ..model.registry import scheme as get_scheme
from ..model.scheme import Scheme
from ..model.symbols import SCHEME_SYMBOLS, A_norm, a, beta, gamma, n, r, t
from .equiangular import reduce

epsilon = sp.Symbol("epsilon", positive=True)
_B = sp.Symbol("B", positive=True)
_E = sp.Symbol("E", positive=True)
ARGS = (t, epsilon, r, n, beta)


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

    def phases(self, module: str = "numpy") -> list:
        """Compiled ``(f_u, f_r)`` per phase, each ``f(t, epsilon, r, n, beta,
        *params)`` (see :attr:`args`).

        Phase ``i`` is the interval between the ``i``-th breakpoints; its
        functions carry no ``Piecewise``, so a step that ends on a breakpoint
        is evaluated with the branch of the interval it lies in.
        """
        return _lambdify(self, module, ("log_eps_dot", "r_dot"))

    def rates(self, module: str = "numpy") -> list:
        """One compiled function per phase returning ``[u_dot, r_dot]``, their
        common subexpressions computed once (1.2-2.2x over :meth:`phases`)."""
        return _lambdify(self, module, ("log_eps_dot", "r_dot"), together=True)

    def laws(self, module: str = "numpy") -> list:
        """Compiled ``(f_speed, f_A_norm)`` per phase, with the signature of
        :meth:`phases`."""
        return _lambdify(self, module, ("speed", "A_norm"))


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


def clear_caches():
    """Forget the compiled reduced systems (they are compiled again on the
    next solve, with the numpy functions then in place)."""
    _lambdify.cache_clear()


@lru_cache(maxsize=256)
def _lambdify(system: StableSystem, module: str, fields: tuple[str, ...],
              together: bool = False):
    _check_concrete(system.scheme)
    return lambdify_phases(system.args, [getattr(system, f) for f in fields],
                           system.breakpoints, module, together=together)
