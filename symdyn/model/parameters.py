"""Free parameters of a scheme: their names, defaults and values in a run.

A free parameter (``params={"c": 0.5}``) is a real symbol in every law and
derivation, and a number (a scalar or a batch array) when solving or
simulating. Its name may be anything that does not shadow a model symbol or
a name compiled laws use (:func:`free_parameters`); run options and
parameters live in separate namespaces (:func:`run_parameters`).

Layer 1, model.
"""

from __future__ import annotations

import builtins
import difflib
import keyword
import math
import warnings
from collections.abc import Mapping

import mpmath
import numpy as np
import scipy.special
import sympy as sp

from ..base.checks import shown
from .expressions import parse
from .guards import CONSTANTS, FUNCTIONS, law_text, number, python_names, substitute
from .symbols import ALL_SYMBOLS


def _shadowed(name: str) -> str | None:
    """Why ``name`` cannot be a parameter, or None."""
    if not (name.isidentifier() and name.isascii()) or keyword.iskeyword(name) \
            or name.startswith("_"):
        return "not a Python identifier (letters, digits, '_'; no leading '_' or digit)"
    if name in ALL_SYMBOLS or name in ("epsilon", "B", "E", "r_0", "s", "u", "gamma0", "r0"):
        return "a symbol of the model (t, r, a, A_norm, n, beta, gamma, C, epsilon, ...)"
    if name in FUNCTIONS or name in CONSTANTS:
        return "a function or constant of expressions"
    if name in python_names() or any(hasattr(m, name) for m in (
            np, scipy.special, mpmath, math, builtins)):
        return "a name of numpy, scipy, mpmath or Python that compiled laws use"
    return None


def free_parameters(params: Mapping | None) -> tuple:
    """``params`` (``{"c": 0.5}``) as a Scheme's ``free``: ``(symbol, default)``
    pairs, with names checked (:func:`_shadowed`) and finite real defaults."""
    if params is None:
        return ()
    if not isinstance(params, Mapping):
        raise ValueError(f"params: expected a dict of name: default value, got {shown(params)}")
    free = []
    for name, default in params.items():
        why = _shadowed(name) if isinstance(name, str) else "not a string"
        if why:
            raise ValueError(f"params: {shown(name)} cannot name a parameter: {why}")
        free.append((sp.Symbol(name, real=True), number(default, f"params[{shown(name)}]")))
    return tuple(free)


def run_parameters(s, params, legacy: dict, entry: str, options) -> dict:
    """The free-parameter values of a run of ``s``: ``params`` (a dict; its
    own namespace) and, for one release, values passed beside the run
    options (``solve(..., c=0.5)``) with a ``DeprecationWarning``. A keyword
    that is neither an option of ``entry`` nor a parameter of ``s`` is a
    mistyped option (``save_X``), said so with the options."""
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ValueError(f"params: expected a dict of parameter name: value, got {shown(params)}")
    stray = [k for k in legacy if k not in s.defaults]
    if stray:
        folded = {o.lower(): o for o in options}
        close = difflib.get_close_matches(stray[0].lower(), list(folded), n=1)
        hint = f" (did you mean {folded[close[0]]!r}?)" if close else ""
        raise ValueError(f"{law_text(', '.join(stray), 60)}: not an argument of {entry}{hint}; "
                         f"its arguments: {', '.join(options)}; free parameters of a "
                         f"scheme go in params={{...}}")
    both = set(params) & set(legacy)
    if both:
        raise ValueError(f"{', '.join(sorted(both))}: given twice (params= and a keyword)")
    if legacy:
        warnings.warn(f"{entry}(..., {', '.join(legacy)}=...): pass a scheme's parameters as "
                      f"params={{...}}; beside the options they go in the next release",
                      DeprecationWarning, stacklevel=3)
    return {**params, **legacy}


def symbols_of(free) -> dict:
    return {sym.name: sym for sym, _ in free}


def at_defaults(expr, free):
    return substitute(expr, dict(free), "params")


def check_used(free, laws: dict) -> None:
    for sym, _ in free:
        if not any(law.has(sym) for law in laws.values()):
            raise ValueError(f"params: {shown(sym.name)} appears in no law "
                             f"({', '.join(f'{k} = {v}' for k, v in laws.items())})")


def number_in_range(value, argument: str, low=0, high=sp.oo, integer: bool = False) -> sp.Expr:
    """``value`` as an exact sympy number in ``[low, high]`` (an integer with
    ``integer``), or a ValueError naming ``argument`` and the range (text is
    refused: numbers only)."""
    try:
        x = number(value, argument) if not isinstance(value, str) else None
    except ValueError as exc:
        if "exceeds the limit" in str(exc):     # 1e300: the digit limit says why
            raise
        x = None
    if x is None or not x.is_number or not (x >= low) or not (x <= high) \
            or (integer and not x.is_integer):
        what = "an integer" if integer else "a finite number"
        allowed = f">= {low}" if high == sp.oo else f"in [{low}, {high}]"
        raise ValueError(f"{argument} must be {what} {allowed}, got {shown(value)}")
    return x


def parameter_symbol(p) -> sp.Symbol | None:
    """The sympy symbol an entry's number parameter ``p`` may be (``Parameter.symbol``):
    positive (a range starting at 0 means a switch that may vanish: the
    symbol stands for a positive one), integer where ``p.integer``."""
    if p.symbol is None:
        return None
    return sp.Symbol(p.symbol, positive=True, integer=True if p.integer else None)


def entry_number(p, value) -> tuple[sp.Expr, tuple]:
    """An entry's number parameter ``p`` from ``value``: ``(number, ())`` for a
    number or the text of one (read by the safe parser), checked in range
    (and integer); ``(symbol, ((symbol, default),))`` for the text of its
    symbol (``layers="N"``): a free parameter with the entry's default."""
    sym = parameter_symbol(p)
    if isinstance(value, str):
        allowed = {} if sym is None else {sym.name: sym}
        what = "an integer" if p.integer else "a number"
        choices = f"{what} >= {p.low}" + (f" or the symbol {sym.name}" if sym else "")
        try:
            expr = parse(value, p.name, allowed)
        except ValueError as exc:
            raise ValueError(f"{p.name}: expected {choices}, got {shown(value)} ({exc})") from None
        if expr.free_symbols:
            if expr != sym:
                raise ValueError(f"{p.name}: expected {choices}, got {shown(value)} "
                                 f"(the symbol alone, not an expression in it)")
            return sym, ((sym, number_in_range(p.default, p.name, p.low, p.high, p.integer)),)
        try:
            return number_in_range(expr, p.name, p.low, p.high, p.integer), ()
        except ValueError as exc:
            raise ValueError(str(exc).rsplit(", got ", 1)[0] + f", got {shown(value)}") from None
    return number_in_range(value, p.name, p.low, p.high, p.integer), ()


def check_free_values(sym: sp.Symbol, values, argument: str) -> None:
    """Values given to a free parameter (a number or a batch array) that the
    symbol's assumptions allow: integers for an integer symbol (DeepNorm's
    ``N``), positive numbers for a positive one."""
    v = np.asarray(values, dtype=float)
    if sym.is_integer and not np.all(v == np.round(v)):
        bad = v.ravel()[np.flatnonzero(v.ravel() != np.round(v.ravel()))[0]]
        raise ValueError(f"{argument} must be an integer >= 1 (the symbol {sym.name} is), "
                         f"got {bad:g}")
    if sym.is_positive and not np.all(v > 0):
        bad = v.ravel()[np.flatnonzero(~(v.ravel() > 0))[0]]
        raise ValueError(f"{argument} must be > 0 (the symbol {sym.name} is), got {bad:g}")
