"""Sympy expressions as Arb functions, never through floats.

:func:`compile_ball` turns an expression into a tree of Python closures that
calls python-flint on whatever it is given: ``arb`` (real balls), ``acb``
(complex balls, with the ``analytic`` flag of :func:`flint.acb.integral`
forwarded to the functions with branch cuts) or ``arb_series`` (truncated
Taylor series with ball coefficients). Numbers are exact: an integer or a
rational of the expression is an exact ball quotient, a sympy ``Float`` its
binary value, ``pi`` and ``E`` Arb's constants at the working precision.
Nothing is ``eval``ed; an expression with a function Arb cannot evaluate
analytically (``Abs``, ``Max``, ``floor``, an undefined ``alpha(t)``, ...)
is refused with its name.

Layer 3, certify.
"""

from __future__ import annotations

import sympy as sp
from flint import acb, arb, arb_series

#: sympy function -> the flint method name (every one analytic off its cuts).
FUNCTIONS = {sp.exp: "exp", sp.log: "log", sp.sin: "sin", sp.cos: "cos", sp.tan: "tan",
             sp.atan: "atan", sp.asin: "asin", sp.acos: "acos", sp.erf: "erf"}
_HYPERBOLIC = {sp.sinh, sp.cosh, sp.tanh}
_CUT = {"log", "sqrt", "asin", "acos"}          # branch cuts: acb needs the analytic flag


class NotCertifiable(ValueError):
    """An expression that Arb cannot evaluate as an analytic function."""


def _const(expr: sp.Expr) -> arb:
    """A closed number as a ball at the current precision (no float on the way)."""
    if expr.is_Integer:
        return arb(int(expr))
    if expr.is_Rational:
        return arb(int(expr.p)) / int(expr.q)
    if expr.is_Float:
        q = sp.Rational(expr)                      # the binary value, exactly
        return arb(int(q.p)) / int(q.q)
    if expr is sp.pi:
        return arb.pi()
    if expr is sp.E:
        return arb.const_e()
    raise NotCertifiable(f"the number {expr} has no exact ball")


def _call(x, method: str, analytic: bool):
    if isinstance(x, acb) and method in _CUT:
        return getattr(x, method)(analytic=analytic)
    if method == "sqrt" and isinstance(x, arb_series):
        return x.sqrt()
    return getattr(x, method)()


def _pow(base, e: sp.Expr, analytic: bool):
    if e.is_Integer:
        k = int(e)
        return base ** k if k >= 0 else 1 / base ** (-k)
    if e == sp.Rational(1, 2):
        return _call(base, "sqrt", analytic)
    if e == -sp.Rational(1, 2):
        return 1 / _call(base, "sqrt", analytic)
    return None


def _node(expr: sp.Expr, index: dict):
    """A closure ``(values, analytic) -> ball`` for ``expr``."""
    if expr in index:
        k = index[expr]
        return lambda v, an: v[k]
    if expr.is_Add or expr.is_Mul:
        parts = [_node(a, index) for a in expr.args]
        if expr.is_Add:
            def add(v, an):
                out = parts[0](v, an)
                for p in parts[1:]:
                    out = out + p(v, an)
                return out
            return add

        def mul(v, an):
            out = parts[0](v, an)
            for p in parts[1:]:
                out = out * p(v, an)
            return out
        return mul
    if expr.is_Pow:
        base, e = _node(expr.base, index), expr.exp
        if e.is_Rational and (e.is_Integer or e.q == 2 and abs(e.p) == 1):
            return lambda v, an: _pow(base(v, an), e, an)
        ex = _node(e, index)
        return lambda v, an: _call(ex(v, an) * _call(base(v, an), "log", an), "exp", an)
    if expr.is_Atom:
        if expr.is_Symbol:
            raise NotCertifiable(f"{expr}: a symbol without a value")
        return lambda v, an, c=expr: _const(c)
    if expr.func in FUNCTIONS:
        arg, method = _node(expr.args[0], index), FUNCTIONS[expr.func]
        return lambda v, an: _call(arg(v, an), method, an)
    if expr.func in _HYPERBOLIC:               # through exp: arb_series has no sinh
        x = sp.Dummy("x")
        u = {sp.sinh: (sp.exp(x) - sp.exp(-x)) / 2, sp.cosh: (sp.exp(x) + sp.exp(-x)) / 2,
             sp.tanh: (1 - 2 / (sp.exp(2 * x) + 1))}[expr.func]
        return _node(u.subs(x, expr.args[0]), index)
    raise NotCertifiable(f"{expr.func.__name__} in {sp.sstr(expr)[:80]}: not a function Arb "
                         f"evaluates analytically (allowed: exp, log, sqrt, powers, "
                         f"sin, cos, tan, sinh, cosh, tanh, asin, acos, atan, erf)")


def compile_ball(expr, symbols) -> callable:
    """``f(*values, analytic=False)``: ``expr`` (or a list of expressions, then a
    list of balls) at the balls (or series) ``values`` of ``symbols``, in Arb;
    common subexpressions are evaluated once (``sympy.cse``). Raises
    :class:`NotCertifiable` for what Arb cannot evaluate.

    >>> import sympy as sp
    >>> from flint import arb
    >>> x = sp.Symbol("x")
    >>> f = compile_ball(sp.exp(x) / 3 + sp.sqrt(x), [x])
    >>> f(arb(4)).contains(arb(4).exp() / 3 + 2)
    True
    """
    symbols = list(symbols)
    many = isinstance(expr, (list, tuple))
    exprs = list(expr) if many else [expr]
    extra = set().union(*(e.free_symbols for e in exprs)) - set(symbols)
    if extra:
        raise NotCertifiable(f"{', '.join(sorted(map(str, extra)))}: no value given")
    pairs, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_cse"))
    index = {s: k for k, s in enumerate(symbols)}
    steps = []
    for k, (sym, sub) in enumerate(pairs):
        steps.append(_node(sub, index))
        index[sym] = len(symbols) + k
    outs = [_node(e, index) for e in reduced]

    def f(*values, analytic=False):
        v = list(values)
        for step in steps:
            v.append(step(v, analytic))
        res = [o(v, analytic) for o in outs]
        return res if many else res[0]
    return f
