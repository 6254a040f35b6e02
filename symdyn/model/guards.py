"""What a sympy expression from user text may hold, and how it is compiled.

The rules the parser (:mod:`symdyn.model.expressions`) and every later step
share: :func:`number` (a float becomes an exact rational only when a small
denominator reproduces it, so no argument makes sympy factor
``exp(p/q * beta)`` as a polynomial of degree ``q``; :func:`exact_exponents`:
``r**0.5`` becomes ``sqrt(r)``), the work limits (:data:`LIMITS`, checked
again when numbers are put in by :func:`substitute`), the domains of the
model's symbols (:func:`in_domain`), the whitelisted functions
(:data:`FUNCTIONS`), and :func:`lambdify`, which refuses undefined functions
and names that are not sympy's and runs compiled code without Python's
builtins (:data:`SEALED`).

Layer 1, model.
"""

from __future__ import annotations

import builtins
import keyword
import math
from fractions import Fraction
from functools import cache
from numbers import Integral, Real

import sympy as sp
from sympy.core.function import AppliedUndef

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



def limit_error(argument, what, value):
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
                         f"got {clipped(repr(value))}")
    if isinstance(value, Integral):
        return _integer(int(value), argument)
    if isinstance(value, sp.Basic):
        return checked_number(value, argument)
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{argument} must be finite, got {clipped(repr(value))}")
    if abs(x) >= 10.0 ** LIMITS["digits"]:      # 1e300 is a 301-digit integer
        raise limit_error(argument, "integer size (digits)",
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
        raise ValueError(f"{argument or name} must be {span}, got {clipped(x)}")
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
        raise limit_error(argument, "integer size (digits)", f"{len(str(abs(k)))} digits")
    return sp.Integer(k)


def checked_number(value: sp.Basic, argument: str) -> sp.Expr:
    """Size checks on a sympy value: big integers, big denominators, non-finite."""
    if value.has(sp.nan, sp.zoo, sp.oo, -sp.oo, sp.I):
        raise ValueError(f"{argument}: {value} is not a finite real expression")
    for x in value.atoms(sp.Float):
        if abs(x) >= 10 ** LIMITS["digits"]:
            raise limit_error(argument, "integer size (digits)", f"the float {x:.3g}")
    for q in value.atoms(sp.Rational):
        if abs(q.p) >= 10 ** LIMITS["digits"]:
            raise limit_error(argument, "integer size (digits)", f"{len(str(abs(q.p)))} digits")
        if q.q > LIMITS["denominator"]:
            raise ValueError(f"{argument}: the exact rational {q} has a denominator above "
                             f"{LIMITS['denominator']}, which sympy cannot simplify in "
                             f"exponents in reasonable time; pass a float instead")
    return value


#: Nonzero constants of a law lie in floats' normal range: ``exp(10**8)``
#: would be a 43-million-digit number for sympy and ``inf`` for numpy.
FLOAT_RANGE = (1e-300, 1e300)


def in_float_range(value: sp.Expr, argument: str) -> sp.Expr:
    size = sp.Abs(value).evalf(8)
    if size.is_Number and size != 0 and not FLOAT_RANGE[0] <= size <= FLOAT_RANGE[1]:
        raise ValueError(f"{argument}: the constant {clipped(value)} = {clipped(size)} is "
                         f"outside floats' range: a nonzero constant must lie within "
                         f"{FLOAT_RANGE[0]:g} .. {FLOAT_RANGE[1]:g} in size")
    return value


GROWING_NAMES = {"factorial", "gamma", "Gamma"}


class SpeedLawError(ValueError, ArithmeticError):
    """A speed law that is not positive on ``[0, T]``, found before the work:
    a ``ValueError`` (the argument is wrong) that is also the
    ``ArithmeticError`` ``simulate`` raises when it meets such a law along
    the trajectory."""


def law_text(expr, limit: int = 80) -> str:
    """``str(expr)``, cut to ``limit`` characters (for error messages)."""
    text = str(expr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def clipped(x) -> str:
    text = str(x)
    return text if len(text) <= 60 else text[:57] + "..."


def check_growing(name: str, args, argument: str) -> None:
    """Refuse ``name(*args)`` (a function of :data:`GROWING`) when an argument,
    or its constant term (``t + 10**8``), exceeds ``LIMITS["factorial"]``."""
    for x in args:
        c = x if x.is_number else x.as_coeff_Add()[0]
        if c.is_number and c.is_comparable and abs(c) > LIMITS["factorial"]:
            raise limit_error(argument, "argument of a factorial or gamma",
                         clipped(f"{name}({', '.join(map(str, args))})"))


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
        raise ValueError(f"{argument}: {clipped(repr(name))} is a name of Python, numpy, scipy or "
                         f"sympy, not a function of expressions "
                         f"(symdyn.model.guards.FUNCTIONS); an undefined function of t "
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
        raise limit_error(argument, "exponent", clipped(f"{base}**{exponent}"))
    if base.is_Rational and exponent.is_Rational and base not in (0, 1, -1):
        digits = float(abs(exponent)) * math.log10(max(abs(base.p), base.q))
        if digits > LIMITS["digits"]:
            raise limit_error(argument, "integer size (digits)",
                         clipped(f"{base}**{exponent}, about {digits:.3g} digits"))


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
        raise limit_error(argument, "nesting depth", "too deep") from None


def compilable(expr: sp.Basic, argument: str) -> None:
    """Refuse what must not be compiled: undefined functions (``alpha(t)``,
    which have no numeric value: compiled, their name would be looked up in
    Python) and functions that are not sympy's."""
    undefined = sorted(map(str, expr.atoms(AppliedUndef)))
    if undefined:
        raise ValueError(f"{argument}: {clipped(', '.join(undefined))} is an undefined "
                         f"function, with no numeric value; give a formula (functions: "
                         f"symdyn.model.guards.FUNCTIONS)")
    foreign = sorted({type(f).__name__ for f in expr.atoms(sp.Function)
                      if not type(f).__module__.startswith("sympy.")})
    if foreign:
        raise ValueError(f"{argument}: {clipped(', '.join(foreign))} is not a sympy "
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

