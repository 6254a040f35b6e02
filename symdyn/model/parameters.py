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


def number_in_range(value, argument: str, low=0, high=sp.oo) -> sp.Expr:
    """``value`` as an exact sympy number in ``[low, high]``, or a ValueError
    naming ``argument`` and the range (text is refused: numbers only)."""
    try:
        x = number(value, argument) if not isinstance(value, str) else None
    except ValueError as exc:
        if "exceeds the limit" in str(exc):     # 1e300: the digit limit says why
            raise
        x = None
    if x is None or not x.is_number or not (x >= low) or not (x <= high):
        allowed = f">= {low}" if high == sp.oo else f"in [{low}, {high}]"
        raise ValueError(f"{argument} must be a finite number {allowed}, got {shown(value)}")
    return x
