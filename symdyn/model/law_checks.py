"""Checks of a law over the domain: refused when sympy decides it, or when a
witness shows it.

The sampled domain: ``t`` from 0 over decades to :math:`10^6`, a few
``r > 0``, ``n >= 2``, ``beta >= 0``, and ``a`` a fraction of ``A_norm``
(:math:`|a| \\le A_{norm}`). A speed law must be positive there, a temperature
law finite and positive (``+inf`` speed passes: the velocity is then 0).

Layer 1, model.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef

from .guards import lambdify
from .symbols import SCHEME_SYMBOLS

# Points of the domain (t >= 0, r > 0, |a| <= A_norm, n >= 2, beta >= 0) at
# which a speed law must be positive: t from 0 over decades to 1e6.
_T = np.concatenate([[0.0], np.geomspace(1e-3, 1e6, 271)])
_DOMAIN = {"r": (0.25, 1.0, 4.0), "A_norm": (0.5, 1.0, 2.0), "a": (-0.5, 0.0, 0.5),
           "n": (2.0, 8.0, 1e3), "beta": (0.0, 1.0, 10.0)}


def check_positive(speed: sp.Expr, argument: str) -> None:
    """Refuse a speed law that is decidably not positive for all ``t >= 0``.

    Decided by sympy's assumptions when they can (``-1``, ``0``), else by a
    witness: a point of the domain (``t`` over ``[0, 1e6]``, ``a`` a fraction
    of ``A_norm``, a few ``r, n, beta``) at which the law is ``<= 0``, not
    finite or not real. Laws with undefined functions (``alpha(t)``) pass.
    ``+inf`` passes: the velocity ``P A / s`` is then 0 (a law that outgrows
    floats, ``exp(t)`` at ``t = 1e6``; nGPT's ``A_norm/alpha`` where
    ``alpha = 0``).
    """
    if speed.is_positive:
        return
    if speed.is_nonpositive:
        raise ValueError(f"{argument}: must be positive, got {speed} (never positive)")
    if speed.atoms(AppliedUndef):
        return
    point, v = witness(speed, argument, lambda v: (v.imag == 0) & (v.real > 0))
    if point is not None:
        what = "not real" if np.isnan(v) or v.imag != 0 else \
            "not finite" if not np.isfinite(v) else f"{v.real:.6g} <= 0"
        raise ValueError(f"{argument}: must be positive for all t >= 0; {speed} is "
                         f"{what} at {point}")


def witness(law: sp.Expr, argument: str, good):
    """The first point of the sampled domain where ``good(values)`` fails, as
    text with the law's value there; ``(None, None)`` if there is none."""
    names = ("t", "r", "a", "A_norm", "n", "beta")
    try:
        f = lambdify([SCHEME_SYMBOLS[k] for k in names], law, argument)
        grid = list(np.meshgrid(_T, *(_DOMAIN[k] for k in names[1:]), indexing="ij"))
        grid[2] = grid[2] * grid[3]                      # a within [-A_norm, A_norm]
        with np.errstate(all="ignore"):
            values = np.broadcast_to(np.asarray(f(*grid), dtype=complex), grid[0].shape)
            bad = ~good(values)
    except ValueError:
        raise
    except Exception as exc:  # sympy's printer or scipy lacks a function
        raise ValueError(f"{argument}: {law} cannot be evaluated numerically "
                         f"({type(exc).__name__}: {exc})") from None
    if not bad.any():
        return None, None
    i = np.unravel_index(np.flatnonzero(bad)[0], bad.shape)
    point = ", ".join(f"{k} = {grid[j][i]:.6g}" for j, k in enumerate(names)
                      if law.has(SCHEME_SYMBOLS[k]))
    return point or "every point", values[i]


def check_temperature(tau: sp.Expr, argument: str) -> None:
    """Refuse a temperature law :math:`\\tau` (the attention runs at inverse
    temperature :math:`\\beta\\tau`) that depends on anything but ``t``
    and free parameters, or is decidably not finite and positive for all ``t >= 0``."""
    if not isinstance(tau, sp.Expr):
        raise ValueError(f"{argument}: a temperature law must be an expression in t, "
                         f"got {tau!r}")
    other = tau.free_symbols & (set(SCHEME_SYMBOLS.values()) - {SCHEME_SYMBOLS["t"]})
    if other:
        raise ValueError(f"{argument}: a temperature law depends on t (and free parameters) "
                         f"only, got {tau} (with {', '.join(sorted(map(str, other)))})")
    if tau.is_positive and tau.is_finite:
        return
    if tau.is_nonpositive:
        raise ValueError(f"{argument}: must be positive, got {tau} (never positive)")
    if tau.atoms(AppliedUndef):
        return
    point, v = witness(tau, argument,
                        lambda v: (v.imag == 0) & (v.real > 0) & np.isfinite(v.real))
    if point is not None:
        what = "not real" if np.isnan(v) or v.imag != 0 else \
            "not finite" if not np.isfinite(v) else f"{v.real:.6g} <= 0"
        raise ValueError(f"{argument}: must be finite and > 0 for all t >= 0; {tau} is "
                         f"{what} at {point}")
