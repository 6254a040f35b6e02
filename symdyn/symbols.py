"""The symbols of symdyn and the parser for user expressions.

Every formula in the package is written in these symbols:

* ``t`` -- time (depth), ``t >= 0``;
* ``r`` -- token norm, ``r > 0``;
* ``a`` -- :math:`a_k = \\langle A_k, \\theta_k \\rangle`;
* ``A_norm`` -- :math:`|A_k|`;
* ``n`` -- number of tokens; ``beta`` -- inverse temperature;
* ``gamma`` -- the common cosine similarity of an equiangular configuration;
* ``C`` -- the free constant of a terminal law.
"""

from __future__ import annotations

import re

import sympy as sp
from sympy.parsing.sympy_parser import (
    convert_xor,
    parse_expr,
    standard_transformations,
)

t = sp.Symbol("t", nonnegative=True)
r = sp.Symbol("r", positive=True)
a = sp.Symbol("a", real=True)
A_norm = sp.Symbol("A_norm", positive=True)
n = sp.Symbol("n", positive=True)
beta = sp.Symbol("beta", positive=True)
gamma = sp.Symbol("gamma", real=True)
C = sp.Symbol("C", positive=True)

#: The symbols a scheme's speed law and radial rate may use.
SCHEME_SYMBOLS = {s.name: s for s in (t, r, a, A_norm, n, beta)}

_SAFE = re.compile(r"^[A-Za-z0-9_ .+\-*/^(),]*$")


def parse(expr, argument: str, allowed: dict[str, sp.Symbol],
          functions_of_t: bool = False) -> sp.Expr:
    """Parse ``expr`` (a string, number or sympy expression) over ``allowed``.

    Parameters
    ----------
    expr : str, number or sympy.Expr
        The expression; ``^`` means power in strings.
    argument : str
        The argument's name, used in error messages.
    allowed : dict
        Names that may appear, mapped to symbdyn's symbols.
    functions_of_t : bool
        Whether undefined functions of ``t`` (e.g. ``alpha(t)``) are allowed.

    Raises
    ------
    ValueError
        If the string cannot be parsed or uses a symbol outside ``allowed``.
    """
    names = ", ".join(sorted(allowed))
    if isinstance(expr, str):
        if not expr.strip() or not _SAFE.match(expr) or "__" in expr:
            raise ValueError(f"{argument}: cannot parse {expr!r}; write an "
                             f"expression in {names}")
        try:
            value = parse_expr(expr, local_dict=dict(allowed),
                               transformations=standard_transformations
                               + (convert_xor,))
        except Exception as exc:  # sympy raises many types here
            raise ValueError(f"{argument}: cannot parse {expr!r} ({exc})") from None
    else:
        try:
            value = sp.sympify(expr, strict=True)
        except (sp.SympifyError, TypeError):
            raise ValueError(f"{argument}: expected an expression in {names}, "
                             f"got {expr!r}") from None
    if not isinstance(value, sp.Expr):
        raise ValueError(f"{argument}: expected an expression in {names}, "
                         f"got {expr!r}")
    # Symbols by name, so that a user's plain Symbol("r") is ours.
    by_name = {s: allowed[s.name] for s in value.free_symbols
               if s.name in allowed}
    value = value.xreplace(by_name)
    unknown = {s.name for s in value.free_symbols} - set(allowed)
    if unknown:
        raise ValueError(f"{argument}: unknown symbol(s) {sorted(unknown)} in "
                         f"{expr!r}; allowed: {names}")
    undefined = value.atoms(sp.core.function.AppliedUndef)
    if undefined and not (functions_of_t and all(
            f.args == (t,) for f in undefined)):
        raise ValueError(f"{argument}: undefined function(s) "
                         f"{sorted(map(str, undefined))} in {expr!r}")
    if value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise ValueError(f"{argument}: {expr!r} is not finite")
    return value
