"""Claim 6: the long-context phase transition of one attention layer.

Equiangular inputs with cosine rho, ``beta = c log n``, outputs normalized:
as ``n -> oo`` the output cosine tends to 1 if ``c < 1/(1-rho)``, to
``4 rho/(1+3 rho)`` at ``c = 1/(1-rho)``, and to ``rho`` if ``c > 1/(1-rho)``.

Two methods: a sympy limit of the derived closed form, and exact evaluation
(mpmath, 50 digits) at n up to 1e12 (class sums: no n-by-n matrix).
"""

from __future__ import annotations

import mpmath
import sympy as sp

from symdyn.model.symbols import beta, gamma, n
from symdyn.reduced.equiangular import one_layer_cosine

from .result import Result

NAME = "phase-transition"
STATEMENT = ("One attention layer with beta = c log n on equiangular inputs rho: the "
             "output cosine tends to 1, 4 rho/(1+3 rho), rho for c below, at, above "
             "1/(1-rho)")


def published_limit(rho, c):
    critical = 1 / (1 - rho)
    if c < critical:
        return sp.Integer(1)
    if c == critical:
        return 4 * rho / (1 + 3 * rho)
    return rho


def check(quick: bool = True, limit_formula=published_limit) -> Result:
    """Check the three regimes; ``limit_formula(rho, c)`` is the claim under test."""
    rhos = [sp.Rational(1, 4), sp.Rational(1, 2)] if quick else \
        [sp.Rational(1, 10), sp.Rational(1, 4), sp.Rational(1, 2), sp.Rational(3, 4)]
    ns = [10**3, 10**6, 10**9, 10**12]
    res = Result(NAME, STATEMENT, {"rho": [str(x) for x in rhos],
                                   "c": "critical x {1/2, 1, 3/2}", "n": ns},
                 "sympy limit equal to the claim; |finite-n - claim| decreasing in n "
                 "and < 1e-3 at n = 1e12", ["sympy-limit", "finite-n"])
    cosine = one_layer_cosine()
    for rho in rhos:
        critical = 1 / (1 - rho)
        for factor in (sp.Rational(1, 2), sp.Integer(1), sp.Rational(3, 2)):
            cv = critical * factor
            claim = limit_formula(rho, cv)
            expr = cosine.subs({gamma: rho, beta: cv * sp.log(n)})
            expr = sp.powsimp(sp.expand_power_exp(expr.rewrite(sp.exp)), force=True)
            lim = sp.limit(expr, n, sp.oo)
            res.row("sympy-limit", sp.simplify(lim - claim) == 0, rho=str(rho),
                    c=str(cv), limit=str(lim), claim=str(claim))
            f = sp.lambdify(n, expr, "mpmath")
            with mpmath.workdps(50):
                values = [f(mpmath.mpf(k)) for k in ns]
                gaps = [float(abs(v - mpmath.mpf(sp.N(claim, 50)))) for v in values]
            ok = gaps[-1] < 1e-3 and all(b <= a * (1 + 1e-12) for a, b in
                                          zip(gaps[:-1], gaps[1:], strict=True))
            res.row("finite-n", ok, rho=str(rho), c=str(cv),
                    **{f"n=1e{len(str(k)) - 1}": float(v) for k, v in zip(ns, values,
                                                                           strict=True)},
                    gap_at_1e12=gaps[-1])
    res.key_figures = f"{len(rhos) * 3} (rho, c) pairs, n up to 1e12"
    return res
