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

The rules for numbers, limits, domains and compilation live in
:mod:`symdyn.model.guards` (re-exported here).

Layer 1, model.
"""

from __future__ import annotations

import ast
from numbers import Real

import sympy as sp
from sympy.core.function import AppliedUndef

from .guards import (
    CONSTANTS,
    FUNCTIONS,
    GROWING_NAMES,
    LIMITS,
    check_function_name,
    check_growing,
    check_tree,
    checked_number,
    clipped,
    exact_exponents,
    in_float_range,
    limit_error,
    number,
)
from .symbols import t

_BINARY = {ast.Add: sp.Add, ast.Mult: sp.Mul}


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
            raise limit_error(self.argument, "nesting depth", f"more than {LIMITS['depth']}")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise self.fail(f"{_describe(node)} is not allowed in an expression")
        return method(node, depth + 1)

    def _Constant(self, node, depth):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{_describe(node)} is not allowed in an expression")
        return in_float_range(number(value, self.argument), self.argument)

    def _Name(self, node, depth):
        if node.id in self.allowed:
            return self.allowed[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        names = ", ".join(sorted(self.allowed))
        raise self.fail(f"unknown symbol(s) [{clipped(repr(node.id))}]; allowed: {names}")

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
            raise limit_error(self.argument, "exponent", exponent)
        if exponent.is_number and not exponent.is_Integer:
            # 2**(10**9/3): a non-integer numeric exponent of a number stays
            # symbolic in sympy unless it simplifies; bound its size too.
            if exponent.is_real and abs(exponent) > LIMITS["exponent"]:
                raise limit_error(self.argument, "exponent", exponent)
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
            raise self.fail(f"unknown function {clipped(repr(name))}; allowed: {allowed}{extra}")
        if undefined:
            check_function_name(name, self.argument)
        args = [self.build(arg, depth) for arg in node.args]
        if name in FUNCTIONS:
            if name in GROWING_NAMES:
                check_growing(name, args, self.argument)
            try:
                value = FUNCTIONS[name](*args)
            except (TypeError, ValueError) as exc:
                raise self.fail(f"{name}{clipped(tuple(args))}: {exc}") from None
            return self._sized(value)
        if args != [t]:
            raise self.fail(f"an undefined function takes t alone: write {name}(t)")
        return sp.Function(name)(t)

    def _sized(self, value):
        if not value.is_number:
            return value
        return in_float_range(checked_number(value, self.argument), self.argument)


def _describe(node) -> str:
    kinds = {ast.Attribute: "attribute access", ast.Subscript: "a subscript",
             ast.Lambda: "a lambda", ast.Compare: "a comparison",
             ast.BoolOp: "a boolean operator", ast.IfExp: "a conditional"}
    for kind, text in kinds.items():
        if isinstance(node, kind):
            return text
    if isinstance(node, ast.Constant):
        return f"the constant {clipped(repr(node.value))}"
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
        raise ValueError(f"{argument}: expected an expression in {names}, "
                         f"got {clipped(repr(expr))}")
    if not isinstance(value, sp.Expr):
        raise ValueError(f"{argument}: expected an expression in {names}, "
                         f"got {clipped(repr(expr))}")
    # Symbols by name, so that a user's plain Symbol("r") is ours.
    by_name = {s: allowed[s.name] for s in value.free_symbols if s.name in allowed}
    value = value.xreplace(by_name)
    unknown = {s.name for s in value.free_symbols} - set(allowed)
    if unknown:
        raise ValueError(f"{argument}: unknown symbol(s) {sorted(unknown)} in "
                         f"{clipped(repr(expr))}; allowed: {names}")
    undefined = value.atoms(AppliedUndef)
    if undefined and not (functions_of_t and all(f.args == (t,) for f in undefined)):
        raise ValueError(f"{argument}: undefined function(s) "
                         f"{sorted(map(str, undefined))} in {clipped(repr(expr))}")
    check_tree(value, argument)
    return checked_number(value, argument)


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
            raise ValueError(f"{argument}: expected an expression, got {clipped(repr(expr))}")
        check_tree(expr, argument)
        return checked_number(exact_exponents(expr, argument), argument)
    return number(expr, argument)


def _from_text(text, argument, allowed, functions_of_t):
    if len(text) > LIMITS["length"]:
        raise limit_error(argument, "text length", f"{len(text)} characters")
    if not text.strip():
        raise ValueError(f"{argument}: empty expression")
    try:
        # ``^`` is power, with its precedence (r*A_norm^2 = r*(A_norm**2)):
        # replaced in the text, since Python's ``^`` binds looser than ``*``.
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        why = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise ValueError(f"{argument}: cannot parse {clipped(repr(text))} ({why})") from None
    try:
        return _Builder(argument, dict(allowed), functions_of_t).build(tree.body)
    except RecursionError:
        raise limit_error(argument, "nesting depth", "too deep") from None
