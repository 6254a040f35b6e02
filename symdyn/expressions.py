"""The one safe parser: user text and numbers to sympy expressions.

Text is data. :func:`parse` reads it with Python's :mod:`ast` (which only
parses) and builds the sympy expression node by node from a whitelist:

* numbers (integers, decimals), the caller's symbols, ``pi`` and ``E``;
* ``+ - * / ** ^`` (``^`` is power) and unary ``+``/``-``;
* calls, with positional arguments only, of the functions in
  :data:`FUNCTIONS`, and (where the caller allows it) of undefined
  functions of ``t`` such as ``alpha(t)``.

Nothing is ever evaluated by Python: no attribute access, subscripts,
keywords, strings, lambdas, comprehensions or names outside the whitelist.
Limits bound the work before sympy starts (see :data:`LIMITS`).

:func:`number` is the rule for numbers (a float becomes an exact rational
only when a small denominator reproduces it; otherwise it stays a float),
so that no argument carries a rational whose denominator makes sympy's
factoring of ``exp(p/q * beta)`` a polynomial of degree ``q``. The float
exponents of a sympy expression passed in follow the same rule
(:func:`exact_exponents`: ``r**0.5`` becomes ``sqrt(r)``).
"""

from __future__ import annotations

import ast
import math
from fractions import Fraction
from numbers import Integral, Real

import sympy as sp

from .symbols import t

#: What an argument that becomes an expression accepts: text, a number or sympy.
ExprLike = str | float | int | sp.Expr

#: Functions a user expression may call, by the name it uses.
FUNCTIONS = {
    "exp": sp.exp, "log": sp.log, "ln": sp.log, "sqrt": sp.sqrt, "cbrt": sp.cbrt,
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "cot": sp.cot, "sec": sp.sec, "csc": sp.csc,
    "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "atan2": sp.atan2,
    "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
    "asinh": sp.asinh, "acosh": sp.acosh, "atanh": sp.atanh,
    "Abs": sp.Abs, "abs": sp.Abs, "sign": sp.sign, "Max": sp.Max, "Min": sp.Min,
    "floor": sp.floor, "ceiling": sp.ceiling, "factorial": lambda x: _factorial(x),
    "erf": sp.erf, "Heaviside": sp.Heaviside, "gamma": sp.gamma, "Gamma": sp.gamma,
}
def _factorial(x):
    """``x!``: exact for a whole number, else ``gamma(x + 1)`` (what numerics can evaluate)."""
    return sp.factorial(x) if x.is_Integer and x >= 0 else sp.gamma(x + 1)


#: The modules float code is compiled against (``sp.lambdify``): scipy
#: first, for the special functions (erf, gamma, factorial) numpy lacks.
NUMERIC_MODULES = ["scipy", "numpy"]

#: Constants a user expression may name.
CONSTANTS = {"pi": sp.pi, "E": sp.E}

#: Bounds checked before or while the expression is built.
LIMITS = {
    "length": 1000,        # characters of text
    "depth": 60,           # nesting of the syntax tree
    "digits": 50,          # digits of an integer, literal or computed
    "exponent": 64,        # |integer exponent| of a power (t**64)
    "factorial": 100,      # the argument of factorial(number)
    "denominator": 100,    # an exact rational's denominator (see ``number``)
}

_BINARY = {ast.Add: sp.Add, ast.Mult: sp.Mul}


def _limit(argument, what, value):
    return ValueError(f"{argument}: {what} exceeds the limit {LIMITS[_KEY[what]]} "
                      f"(got {value})")


_KEY = {"text length": "length", "nesting depth": "depth", "integer size (digits)": "digits",
        "exponent": "exponent", "factorial argument": "factorial",
        "denominator": "denominator"}


def number(value, argument: str) -> sp.Expr:
    """A real number as sympy: ints exact, floats exact only with a small denominator.

    A float ``x`` becomes the rational ``p/q`` with ``q <= 100`` when
    ``float(p/q) == x`` (``0.5 -> 1/2``, ``0.1 -> 1/10``); otherwise a
    ``Float`` with all its digits. Exact rationals with a larger denominator
    are refused (sympy's factoring would run away on them).
    """
    if isinstance(value, bool) or not isinstance(value, (Real, sp.Basic)):
        raise ValueError(f"{argument}: expected a real number or expression, got {value!r}")
    if isinstance(value, Integral):
        return _integer(int(value), argument)
    if isinstance(value, sp.Basic):
        return _checked_number(value, argument)
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{argument} must be finite, got {value!r}")
    q = Fraction(x).limit_denominator(LIMITS["denominator"])
    if float(q) == x:
        return sp.Rational(q.numerator, q.denominator)
    return sp.Float(x)


def exact_exponents(expr: sp.Basic, argument: str) -> sp.Basic:
    """``expr`` with every float exponent of a power read by :func:`number`.

    A sympy expression built in Python keeps the floats it was given
    (``r**0.5`` is ``Pow(r, Float(0.5))``); text never has them, since its
    numbers go through :func:`number`. Here they do too: ``r**0.5 ->
    sqrt(r)``, ``t**-1.5 -> t**(-3/2)``; an exponent with no small
    denominator (``t**0.3333``) stays a float.

    >>> import sympy as sp
    >>> exact_exponents(sp.Symbol("r")**0.5 + sp.Symbol("t")**-1.5, "speed")
    sqrt(r) + t**(-3/2)
    """
    if not isinstance(expr, sp.Basic) or not expr.has(sp.Float):
        return expr
    return expr.replace(lambda e: e.is_Pow and isinstance(e.exp, sp.Float),
                        lambda e: sp.Pow(e.base, number(float(e.exp), argument)))


def _integer(k: int, argument: str) -> sp.Integer:
    if abs(k) >= 10 ** LIMITS["digits"]:
        raise _limit(argument, "integer size (digits)", f"{len(str(abs(k)))} digits")
    return sp.Integer(k)


def _checked_number(value: sp.Basic, argument: str) -> sp.Expr:
    """Size checks on a sympy value: big integers, big denominators, non-finite."""
    if value.has(sp.nan, sp.zoo, sp.oo, -sp.oo, sp.I):
        raise ValueError(f"{argument}: {value} is not a finite real expression")
    for q in value.atoms(sp.Rational):
        if abs(q.p) >= 10 ** LIMITS["digits"]:
            raise _limit(argument, "integer size (digits)", f"{len(str(abs(q.p)))} digits")
        if q.q > LIMITS["denominator"]:
            raise ValueError(f"{argument}: the exact rational {q} has a denominator above "
                             f"{LIMITS['denominator']}, which sympy cannot simplify in "
                             f"exponents in reasonable time; pass a float instead")
    return value


class _Builder:
    """Builds a sympy expression from a whitelisted ``ast`` tree."""

    def __init__(self, argument, allowed, functions_of_t):
        self.argument = argument
        self.allowed = allowed
        self.functions_of_t = functions_of_t

    def fail(self, why):
        return ValueError(f"{self.argument}: {why}")

    def build(self, node, depth=0):
        if depth > LIMITS["depth"]:
            raise _limit(self.argument, "nesting depth", f"more than {LIMITS['depth']}")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise self.fail(f"{_describe(node)} is not allowed in an expression")
        return method(node, depth + 1)

    def _Constant(self, node, depth):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{_describe(node)} is not allowed in an expression")
        return number(value, self.argument)

    def _Name(self, node, depth):
        if node.id in self.allowed:
            return self.allowed[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        names = ", ".join(sorted(self.allowed))
        raise self.fail(f"unknown symbol(s) ['{node.id}']; allowed: {names}")

    def _UnaryOp(self, node, depth):
        operand = self.build(node.operand, depth)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        raise self.fail(f"operator {type(node.op).__name__} is not allowed")

    def _BinOp(self, node, depth):
        left, right = self.build(node.left, depth), self.build(node.right, depth)
        op = type(node.op)
        if op in _BINARY:
            return self._sized(_BINARY[op](left, right))
        if op is ast.Sub:
            return self._sized(left - right)
        if op is ast.Div:
            if right == 0:
                raise self.fail("division by zero")
            return self._sized(left / right)
        if op is ast.Pow:
            return self._power(left, right)
        raise self.fail(f"operator {type(node.op).__name__} is not allowed")

    def _power(self, base, exponent):
        if exponent.is_Integer and abs(exponent) > LIMITS["exponent"]:
            raise _limit(self.argument, "exponent", exponent)
        if exponent.is_number and not exponent.is_Integer:
            # 2**(10**9/3): a non-integer numeric exponent of a number stays
            # symbolic in sympy unless it simplifies; bound its size too.
            if exponent.is_real and abs(exponent) > LIMITS["exponent"]:
                raise _limit(self.argument, "exponent", exponent)
        if base == 0 and exponent.is_number and exponent.is_negative:
            raise self.fail("division by zero (0 to a negative power)")
        return self._sized(sp.Pow(base, exponent))

    def _Call(self, node, depth):
        if not isinstance(node.func, ast.Name):
            raise self.fail(f"{_describe(node.func)} cannot be called")
        if node.keywords:
            raise self.fail("keyword arguments are not allowed")
        name = node.func.id
        undefined = self.functions_of_t and name not in self.allowed \
            and name not in CONSTANTS and name not in FUNCTIONS
        if name not in FUNCTIONS and not undefined:
            allowed = ", ".join(sorted(FUNCTIONS))
            extra = " or an undefined function of t such as alpha(t)" \
                if self.functions_of_t else ""
            raise self.fail(f"unknown function {name!r}; allowed: {allowed}{extra}")
        args = [self.build(arg, depth) for arg in node.args]
        if name in FUNCTIONS:
            if name == "factorial" and args and args[0].is_number \
                    and abs(args[0]) > LIMITS["factorial"]:
                raise _limit(self.argument, "factorial argument", args[0])
            try:
                return self._sized(FUNCTIONS[name](*args))
            except (TypeError, ValueError) as exc:
                raise self.fail(f"{name}{tuple(args)}: {exc}") from None
        if args != [t]:
            raise self.fail(f"an undefined function takes t alone: write {name}(t)")
        return sp.Function(name)(t)

    def _sized(self, value):
        return _checked_number(value, self.argument) if value.is_number else value


def _describe(node) -> str:
    kinds = {ast.Attribute: "attribute access", ast.Subscript: "a subscript",
             ast.Lambda: "a lambda", ast.Compare: "a comparison",
             ast.BoolOp: "a boolean operator", ast.IfExp: "a conditional"}
    for kind, text in kinds.items():
        if isinstance(node, kind):
            return text
    if isinstance(node, ast.Constant):
        return f"the constant {node.value!r}"
    return type(node).__name__


def parse(expr, argument: str, allowed: dict[str, sp.Symbol],
          functions_of_t: bool = False) -> sp.Expr:
    """Parse ``expr`` (text, a number or a sympy expression) over ``allowed``.

    Parameters
    ----------
    expr : str, number or sympy.Expr
        The expression; ``^`` means power in text.
    argument : str
        The argument's name, used in error messages.
    allowed : dict
        Names that may appear, mapped to symdyn's symbols.
    functions_of_t : bool
        Whether undefined functions of ``t`` (e.g. ``alpha(t)``) are allowed.

    Raises
    ------
    ValueError
        If the text is not an expression of the whitelist, exceeds a limit,
        or uses a symbol outside ``allowed``.

    Examples
    --------
    >>> from symdyn.expressions import parse
    >>> from symdyn.symbols import SCHEME_SYMBOLS
    >>> parse("r*A_norm^2 + 0.5", "speed", SCHEME_SYMBOLS)
    A_norm**2*r + 1/2
    >>> parse("__import__('os')", "speed", SCHEME_SYMBOLS)
    Traceback (most recent call last):
    ...
    ValueError: speed: unknown function '__import__'; allowed: ...
    """
    names = ", ".join(sorted(allowed))
    if isinstance(expr, str):
        value = _from_text(expr, argument, allowed, functions_of_t)
    elif isinstance(expr, sp.Basic) or (isinstance(expr, Real) and not isinstance(expr, bool)):
        value = number(expr, argument) if not isinstance(expr, sp.Basic) \
            else exact_exponents(expr, argument)
    else:
        raise ValueError(f"{argument}: expected an expression in {names}, got {expr!r}")
    if not isinstance(value, sp.Expr):
        raise ValueError(f"{argument}: expected an expression in {names}, got {expr!r}")
    # Symbols by name, so that a user's plain Symbol("r") is ours.
    by_name = {s: allowed[s.name] for s in value.free_symbols if s.name in allowed}
    value = value.xreplace(by_name)
    unknown = {s.name for s in value.free_symbols} - set(allowed)
    if unknown:
        raise ValueError(f"{argument}: unknown symbol(s) {sorted(unknown)} in "
                         f"{expr!r}; allowed: {names}")
    undefined = value.atoms(sp.core.function.AppliedUndef)
    if undefined and not (functions_of_t and all(f.args == (t,) for f in undefined)):
        raise ValueError(f"{argument}: undefined function(s) "
                         f"{sorted(map(str, undefined))} in {expr!r}")
    return _checked_number(value, argument)


def value(expr, argument: str, allowed: dict[str, sp.Symbol]) -> sp.Expr:
    """An argument that may be a number, text or the caller's own sympy object.

    Text goes through :func:`parse` over ``allowed``; numbers through
    :func:`number`; a sympy expression built in Python is the caller's own
    and may use any symbols (e.g. ``beta = c*log(n)``), but is size-checked
    and must be real and finite.
    """
    if isinstance(expr, str):
        return parse(expr, argument, allowed)
    if isinstance(expr, sp.Basic):
        if not isinstance(expr, sp.Expr):
            raise ValueError(f"{argument}: expected an expression, got {expr!r}")
        return _checked_number(exact_exponents(expr, argument), argument)
    return number(expr, argument)


def _from_text(text, argument, allowed, functions_of_t):
    if len(text) > LIMITS["length"]:
        raise _limit(argument, "text length", f"{len(text)} characters")
    if not text.strip():
        raise ValueError(f"{argument}: empty expression")
    try:
        # ``^`` is power, with its precedence (r*A_norm^2 = r*(A_norm**2)):
        # replaced in the text, since Python's ``^`` binds looser than ``*``.
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        why = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise ValueError(f"{argument}: cannot parse {text!r} ({why})") from None
    try:
        return _Builder(argument, dict(allowed), functions_of_t).build(tree.body)
    except RecursionError:
        raise _limit(argument, "nesting depth", "too deep") from None
