"""Powers of products in a derived law, split as the built-ins' laws read.

A custom speed such as ``sqrt(r*A_norm)`` puts ``|A| = sqrt(P)/Q`` under a
root, so the reduced ODE's denominator holds ``sqrt(sqrt(P)/Q)``, a nested
root of nine terms, where Peri-LN's reads ``sqrt(P)``. Every base there is
positive (a norm, a sum of exponentials with positive weights, ``r``), so
``(x y)^e = x^e y^e`` and ``(x^a)^e = x^(a e)``: :func:`split_power` gives
``P^(1/4) / sqrt(Q)``. sympy does this only for bases it knows to be
positive (``Q = (n - 1) e^(beta gamma) + e^beta`` is not, to sympy), so the
split is forced, then checked against the unsplit power at points of the
domain (:data:`DOMAIN`); a split that differs anywhere is not used.

Layer 1, model.
"""

from __future__ import annotations

import random

import sympy as sp

from .symbols import beta, gamma, n, r, t

#: symbol -> (low, high) of the points that check a split; gamma in [0, 0.9]
#: lies in (-1/(n - 1), 1) for every n >= 2; any other symbol (a free
#: parameter, A_norm, a) is drawn from (0.2, 2).
DOMAIN = {n: (2.0, 64.0), beta: (0.1, 4.0), gamma: (0.0, 0.9), r: (0.5, 2.0), t: (0.0, 3.0)}
OTHER = (0.2, 2.0)
POINTS = 4


def split_power(f: sp.Expr) -> sp.Expr:
    """``f = (x_1 ... x_k)^e`` or ``(x^a)^e`` as ``x_1^e ... x_k^e`` (``x^(a e)``),
    recursively and in each factor of a product, if that equals ``f`` at
    :data:`POINTS` points of the domain (relative 1e-9); else ``f`` unchanged.

    >>> import sympy as sp
    >>> from symdyn.model.symbols import n, gamma
    >>> Q = (n - 1) * sp.exp(gamma) + 1
    >>> split_power(sp.sqrt(sp.sqrt(n) / Q))
    n**(1/4)/sqrt((n - 1)*exp(gamma) + 1)
    """
    split = split_formally(f)
    if split == f or not equal_on_domain(f, split):
        return f
    return split


def split_formally(f: sp.Expr) -> sp.Expr:
    """The forced split, recursively: ``(x y)^e -> x^e y^e``, ``(x^a)^e -> x^(a e)``
    (in each factor of a product)."""
    if f.is_Mul:
        return sp.Mul(*(split_formally(x) for x in f.args))
    if f.is_Pow and not f.exp.is_Integer:
        base, e = f.base, f.exp
        if base.is_Mul:
            return sp.Mul(*(split_formally(sp.Pow(x, e)) for x in base.args))
        if base.is_Pow:
            return split_formally(sp.Pow(base.base, base.exp * e))
    return f


def equal_on_domain(f: sp.Expr, g: sp.Expr) -> bool:
    """``f`` and ``g`` agree (real, finite, relative 1e-9) at seeded points of the domain."""
    rng = random.Random(0)
    symbols = sorted(f.free_symbols | g.free_symbols, key=sp.default_sort_key)
    for _ in range(POINTS):
        at = {s: sp.Float(rng.uniform(*DOMAIN.get(s, OTHER)), 30) for s in symbols}
        u, v = (complex(h.evalf(30, subs=at)) for h in (f, g))
        if not (abs(u.imag) <= 1e-20 * abs(u) and abs(v.imag) <= 1e-20 * abs(v)
                and abs(u.real) < float("inf") and abs(u - v) <= 1e-9 * abs(u)):
            return False
    return True
