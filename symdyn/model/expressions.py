"""The one safe parser: user text and numbers to sympy expressions.

Text is data. :func:`parse` reads it with Python's :mod:`ast` (which only
parses) and builds the sympy expression node by node from a whitelist:

* numbers (integers, decimals), the caller's symbols, ``pi`` and ``E``;
* ``+ - * / ** ^`` (``^`` is power) and unary ``+``/``-``;
* calls, with positional arguments only, of the functions in
  :data:`FUNCTIONS`, and (where the caller allows it) of undefined
  functions of ``t`` such as ``alpha(t)``, whose name is no name of Python,
  numpy, scipy, mpmath or sympy (``exit(t)``, ``info(t)`` are refused).

Nothing is ever evaluated by Python: no attribute access, subscripts,
keywords, strings, lambdas, comprehensions or names outside the whitelist.
Limits bound the work before sympy starts (see :data:`LIMITS`), and again
when numbers are put into an expression (:func:`substitute`).

No name of user text reaches Python when an expression is compiled either:
:func:`lambdify` refuses undefined functions (they have no numeric value)
and functions that are not sympy's, and runs the compiled code without
Python's builtins (:data:`SEALED`).

:func:`number` is the rule for numbers (a float becomes an exact rational
only when a small denominator reproduces it; otherwise it stays a float),
so that no argument carries a rational whose denominator makes sympy's
factoring of ``exp(p/q * beta)`` a polynomial of degree ``q``. The float
exponents of a sympy expression passed in follow the same rule
(:func:`exact_exponents`: ``r**0.5`` becomes ``sqrt(r)``).

Layer 1, model.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import math
from fractions import Fraction
from functools import cache
from numbers import Integral, Real

import sympy as sp
from sympy.core.function import AppliedUndef

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


#: The modules float code is compiled against (:func:`lambdify`): scipy
#: first, for the special functions (erf, gamma, factorial) numpy lacks.
NUMERIC_MODULES = ["scipy", "numpy"]

#: The builtins compiled code may use (mpmath's printer writes ``abs``, ...):
#: first in every namespace of :func:`lambdify`, so that no name in compiled
#: code resolves to ``exit``, ``open``, ``print`` or ``__import__``.
SEALED = {"__builtins__": {"abs": abs, "min": min, "max": max, "range": range,
                           "float": float, "int": int}}

#: sympy functions whose value at a number is computed exactly (a factorial,
#: a harmonic number, ...): their numeric arguments are bounded by
#: ``LIMITS["factorial"]`` (``gamma(10**8)`` would run for hours).
GROWING = (sp.factorial, sp.factorial2, sp.subfactorial, sp.gamma, sp.loggamma,
           sp.polygamma, sp.digamma, sp.trigamma, sp.uppergamma, sp.lowergamma,
           sp.RisingFactorial, sp.FallingFactorial, sp.binomial, sp.harmonic,
           sp.fibonacci, sp.lucas, sp.bernoulli, sp.euler, sp.catalan, sp.bell,
           sp.genocchi, sp.partition, sp.motzkin)

#: Constants a user expression may name.
CONSTANTS = {"pi": sp.pi, "E": sp.E}

#: Bounds checked before or while the expression is built.
LIMITS = {
    "length": 1000,        # characters of text
    "depth": 60,           # nesting of the syntax tree
    "digits": 50,          # digits of an integer, literal or computed
    "exponent": 64,        # |integer exponent| of a power (t**64)
    "factorial": 100,      # |argument| (or |constant term|) of factorial, gamma, ...
    "denominator": 100,    # an exact rational's denominator (see ``number``)
}

_BINARY = {ast.Add: sp.Add, ast.Mult: sp.Mul}


def _limit(argument, what, value):
    return ValueError(f"{argument}: {what} exceeds the limit {LIMITS[_KEY[what]]} "
                      f"(got {value})")


_KEY = {"text length": "length", "nesting depth": "depth", "integer size (digits)": "digits",
        "exponent": "exponent", "factorial argument": "factorial",
        "denominator": "denominator", "argument of a factorial or gamma": "factorial"}


def number(value, argument: str) -> sp.Expr:
    """A real number as sympy: ints exact, floats exact only with a small denominator.

    A float ``x`` becomes the rational ``p/q`` with ``q <= 100`` when
    ``float(p/q) == x`` (``0.5 -> 1/2``, ``0.1 -> 1/10``); otherwise a
    ``Float`` with all its digits. Exact rationals with a larger denominator
    are refused (sympy's factoring would run away on them).
    """
    if isinstance(value, bool) or not isinstance(value, (Real, sp.Basic)):
        raise ValueError(f"{argument}: expected a real number or expression, "
                         f"got {_short(repr(value))}")
    if isinstance(value, Integral):
        return _integer(int(value), argument)
    if isinstance(value, sp.Basic):
        return _checked_number(value, argument)
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{argument} must be finite, got {_short(repr(value))}")
    if abs(x) >= 10.0 ** LIMITS["digits"]:      # 1e300 is a 301-digit integer
        raise _limit(argument, "integer size (digits)",
                     f"{x:g}, {len(str(int(abs(x))))} digits")
    q = Fraction(x).limit_denominator(LIMITS["denominator"])
    if float(q) == x:
        return sp.Rational(q.numerator, q.denominator)
    return sp.Float(x)


#: The model's domain (:mod:`symdyn.model.symbols`): ``(low, open)`` per symbol; a
#: value given for the symbol (``.at(n=...)``, ``initial_velocity(beta=...)``)
#: must be ``>= low`` (``> low`` if open), and ``gamma`` also ``<= 1``.
DOMAIN = {"t": (0, False), "r": (0, True), "A_norm": (0, True), "n": (2, False),
          "beta": (0, False), "C": (0, True), "gamma": (-1, False)}


def in_domain(x: sp.Expr, name: str, argument: str | None = None) -> sp.Expr:
    """``x`` if it may be a value of the symbol ``name`` (see :data:`DOMAIN`):
    a number inside the domain, or an expression not decidably outside it.
    The error names ``argument`` (default ``name``)."""
    if name not in DOMAIN:
        return x
    low, open_ = DOMAIN[name]
    below = (x - low).is_negative or (open_ and (x - low).is_zero)
    if below or (name == "gamma" and (x - 1).is_positive):
        span = "in [-1, 1]" if name == "gamma" else f"{'>' if open_ else '>='} {low}"
        raise ValueError(f"{argument or name} must be {span}, got {_short(x)}")
    return x


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
    for x in value.atoms(sp.Float):
        if abs(x) >= 10 ** LIMITS["digits"]:
            raise _limit(argument, "integer size (digits)", f"the float {x:.3g}")
    for q in value.atoms(sp.Rational):
        if abs(q.p) >= 10 ** LIMITS["digits"]:
            raise _limit(argument, "integer size (digits)", f"{len(str(abs(q.p)))} digits")
        if q.q > LIMITS["denominator"]:
            raise ValueError(f"{argument}: the exact rational {q} has a denominator above "
                             f"{LIMITS['denominator']}, which sympy cannot simplify in "
                             f"exponents in reasonable time; pass a float instead")
    return value


#: Nonzero constants of a law lie in floats' normal range: ``exp(10**8)``
#: would be a 43-million-digit number for sympy and ``inf`` for numpy.
FLOAT_RANGE = (1e-300, 1e300)


def _in_float_range(value: sp.Expr, argument: str) -> sp.Expr:
    size = sp.Abs(value).evalf(8)
    if size.is_Number and size != 0 and not FLOAT_RANGE[0] <= size <= FLOAT_RANGE[1]:
        raise ValueError(f"{argument}: the constant {_short(value)} = {_short(size)} is "
                         f"outside floats' range: a nonzero constant must lie within "
                         f"{FLOAT_RANGE[0]:g} .. {FLOAT_RANGE[1]:g} in size")
    return value


_GROWING_NAMES = {"factorial", "gamma", "Gamma"}


def _short(x) -> str:
    text = str(x)
    return text if len(text) <= 60 else text[:57] + "..."


def check_growing(name: str, args, argument: str) -> None:
    """Refuse ``name(*args)`` (a function of :data:`GROWING`) when an argument,
    or its constant term (``t + 10**8``), exceeds ``LIMITS["factorial"]``."""
    for x in args:
        c = x if x.is_number else x.as_coeff_Add()[0]
        if c.is_number and c.is_comparable and abs(c) > LIMITS["factorial"]:
            raise _limit(argument, "argument of a factorial or gamma",
                         _short(f"{name}({', '.join(map(str, args))})"))


@cache
def python_names() -> frozenset:
    """Every name compiled code could resolve: builtins, the namespaces that
    ``sp.lambdify`` builds for numpy, scipy, mpmath and math, and sympy's."""
    names = set(dir(builtins)) | set(dir(sp)) | {"numpy", "scipy", "mpmath", "sympy"}
    for modules in (NUMERIC_MODULES, "mpmath", "math"):
        names |= set(sp.lambdify([], sp.Integer(0), modules).__globals__)
    return frozenset(names)


def check_function_name(name: str, argument: str) -> None:
    """Refuse an undefined function's name that Python, numpy, scipy, mpmath or
    sympy already gives a meaning (``exit``, ``info``, ``loggamma``)."""
    if not (name.isidentifier() and name.isascii()) or name.startswith("_") \
            or keyword.iskeyword(name) or name in python_names():
        raise ValueError(f"{argument}: {_short(repr(name))} is a name of Python, numpy, scipy or "
                         f"sympy, not a function of expressions "
                         f"(symdyn.model.expressions.FUNCTIONS); an undefined function of t "
                         f"needs a name of its own, such as alpha(t)")


def check_tree(expr: sp.Basic, argument: str) -> None:
    """The parser's checks on a sympy expression built in Python: names of
    undefined functions, and the arguments of :data:`GROWING` functions."""
    for f in expr.atoms(AppliedUndef):
        check_function_name(f.func.__name__, argument)
    for f in expr.atoms(*GROWING):
        check_growing(f.func.__name__, f.args, argument)


def _check_power(base, exponent, argument):
    """Before ``base**exponent`` is built: the parser's exponent limit, and no
    exact number of more than ``LIMITS["digits"]`` digits."""
    if exponent.is_Integer and abs(exponent) > LIMITS["exponent"]:
        raise _limit(argument, "exponent", _short(f"{base}**{exponent}"))
    if base.is_Rational and exponent.is_Rational and base not in (0, 1, -1):
        digits = float(abs(exponent)) * math.log10(max(abs(base.p), base.q))
        if digits > LIMITS["digits"]:
            raise _limit(argument, "integer size (digits)",
                         _short(f"{base}**{exponent}, about {digits:.3g} digits"))


def _rebuilt(func, args, argument):
    if func is sp.Pow:
        _check_power(*args, argument)
    elif isinstance(func, type) and issubclass(func, GROWING):
        check_growing(func.__name__, args, argument)
    return func(*args)


def substitute(expr: sp.Basic, sub: dict, argument: str) -> sp.Basic:
    """``expr.xreplace(sub)`` within the parser's limits.

    sympy evaluates as it rebuilds: ``gamma(n).xreplace({n: 10**8})`` computes
    a factorial of 10**8 digits, ``n**n`` at ``n = 10**40`` never ends. Here
    every node is checked before it is built (:func:`_check_power`,
    :func:`check_growing`), so such a substitution is a ``ValueError`` naming
    ``argument`` and the limit, at once.
    """
    done = {}

    def build(e):
        if e in sub:
            return sub[e]
        if not e.args:
            return e
        if e not in done:
            args = tuple(build(x) for x in e.args)
            done[e] = e if args == e.args else _rebuilt(e.func, args, argument)
        return done[e]
    if not sub:
        return expr
    try:
        return build(expr)
    except RecursionError:
        raise _limit(argument, "nesting depth", "too deep") from None


def compilable(expr: sp.Basic, argument: str) -> None:
    """Refuse what must not be compiled: undefined functions (``alpha(t)``,
    which have no numeric value: compiled, their name would be looked up in
    Python) and functions that are not sympy's."""
    undefined = sorted(map(str, expr.atoms(AppliedUndef)))
    if undefined:
        raise ValueError(f"{argument}: {_short(', '.join(undefined))} is an undefined "
                         f"function, with no numeric value; give a formula (functions: "
                         f"symdyn.model.expressions.FUNCTIONS)")
    foreign = sorted({type(f).__name__ for f in expr.atoms(sp.Function)
                      if not type(f).__module__.startswith("sympy.")})
    if foreign:
        raise ValueError(f"{argument}: {_short(', '.join(foreign))} is not a sympy "
                         f"function and cannot be compiled")


def lambdify(args, expr, argument: str, modules=None, **options):
    """``sp.lambdify`` of checked expressions (:func:`compilable`) in a sealed
    namespace: :data:`SEALED` first, then ``modules`` (default
    :data:`NUMERIC_MODULES`), so no name resolves to Python's builtins."""
    for e in expr if isinstance(expr, (list, tuple)) else [expr]:
        if isinstance(e, sp.Basic):
            compilable(e, argument)
    modules = NUMERIC_MODULES if modules is None else modules
    spaces = [SEALED, *([modules] if isinstance(modules, (str, dict)) else modules)]
    return sp.lambdify(args, expr, spaces, **options)


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
        return _in_float_range(number(value, self.argument), self.argument)

    def _Name(self, node, depth):
        if node.id in self.allowed:
            return self.allowed[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        names = ", ".join(sorted(self.allowed))
        raise self.fail(f"unknown symbol(s) [{_short(repr(node.id))}]; allowed: {names}")

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
            raise self.fail(f"unknown function {_short(repr(name))}; allowed: {allowed}{extra}")
        if undefined:
            check_function_name(name, self.argument)
        args = [self.build(arg, depth) for arg in node.args]
        if name in FUNCTIONS:
            if name in _GROWING_NAMES:
                check_growing(name, args, self.argument)
            try:
                value = FUNCTIONS[name](*args)
            except (TypeError, ValueError) as exc:
                raise self.fail(f"{name}{_short(tuple(args))}: {exc}") from None
            return self._sized(value)
        if args != [t]:
            raise self.fail(f"an undefined function takes t alone: write {name}(t)")
        return sp.Function(name)(t)

    def _sized(self, value):
        if not value.is_number:
            return value
        return _in_float_range(_checked_number(value, self.argument), self.argument)


def _describe(node) -> str:
    kinds = {ast.Attribute: "attribute access", ast.Subscript: "a subscript",
             ast.Lambda: "a lambda", ast.Compare: "a comparison",
             ast.BoolOp: "a boolean operator", ast.IfExp: "a conditional"}
    for kind, text in kinds.items():
        if isinstance(node, kind):
            return text
    if isinstance(node, ast.Constant):
        return f"the constant {_short(repr(node.value))}"
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
    >>> from symdyn.model.expressions import parse
    >>> from symdyn.model.symbols import SCHEME_SYMBOLS
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
        raise ValueError(f"{argument}: expected an expression in {names}, got {_short(repr(expr))}")
    if not isinstance(value, sp.Expr):
        raise ValueError(f"{argument}: expected an expression in {names}, got {_short(repr(expr))}")
    # Symbols by name, so that a user's plain Symbol("r") is ours.
    by_name = {s: allowed[s.name] for s in value.free_symbols if s.name in allowed}
    value = value.xreplace(by_name)
    unknown = {s.name for s in value.free_symbols} - set(allowed)
    if unknown:
        raise ValueError(f"{argument}: unknown symbol(s) {sorted(unknown)} in "
                         f"{_short(repr(expr))}; allowed: {names}")
    undefined = value.atoms(AppliedUndef)
    if undefined and not (functions_of_t and all(f.args == (t,) for f in undefined)):
        raise ValueError(f"{argument}: undefined function(s) "
                         f"{sorted(map(str, undefined))} in {_short(repr(expr))}")
    check_tree(value, argument)
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
            raise ValueError(f"{argument}: expected an expression, got {_short(repr(expr))}")
        check_tree(expr, argument)
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
        raise ValueError(f"{argument}: cannot parse {_short(repr(text))} ({why})") from None
    try:
        return _Builder(argument, dict(allowed), functions_of_t).build(tree.body)
    except RecursionError:
        raise _limit(argument, "nesting depth", "too deep") from None
