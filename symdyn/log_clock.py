"""The radial schemes in logarithmic time: ``tau = log(1 + t)``, ``ell = log r``.

Pre-LN, Mix-LN and Peri-LN grow their norms like ``t``, so directions move at
speeds of order ``1/t``: in the clock ``t`` a run to the clustering time
needs ``t`` far beyond any float. In ``tau`` the same dynamics reads

.. math:: \\frac{d\\theta_k}{d\\tau} = \\frac{P_{\\theta_k} A_k}{s_\\tau}, \\qquad
          \\frac{d\\ell_k}{d\\tau} = \\rho_\\tau, \\qquad
          s_\\tau = s\\,e^{-\\tau}, \\quad \\rho_\\tau = \\rho\\,e^{\\tau - \\ell}

(``dt/dtau = 1 + t = e^tau``, ``d ell/dt = rho/r``), with ``s`` and ``rho``
read at ``t = e^tau - 1`` and ``r = e^ell``. sympy derives both per phase and
combines the exponentials (``powsimp``), so Pre-LN's laws become
``s_tau = exp(ell - tau)`` and ``rho_tau = a exp(tau - ell)``: ``O(1)`` numbers
whatever ``tau`` is, where ``t`` and ``r`` themselves would overflow past
``tau ~ 709``. Breakpoints move to ``log(1 + t_b)``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy as sp

from .expressions import NUMERIC_MODULES
from .registry import Scheme, phase_branches
from .symbols import A_norm, a, beta, n, r, t

TAU, ELL = sp.symbols("tau ell", real=True)
ARGS = (TAU, ELL, a, A_norm, n, beta)


def _in_log_clock(expr, factor):
    moved = expr.subs({t: sp.exp(TAU) - 1, r: sp.exp(ELL)}, simultaneous=True) * factor
    return sp.powsimp(sp.expand_power_exp(moved), combine="exp")


def laws(s: Scheme) -> list[tuple[sp.Expr, sp.Expr]]:
    """``(s_tau, rho_tau)`` per phase of ``s`` (no ``Piecewise``).

    Examples
    --------
    >>> import symdyn as sd
    >>> from symdyn import log_clock
    >>> log_clock.laws(sd.scheme("pre-ln"))
    [(exp(ell - tau), a*exp(-ell + tau))]
    """
    speeds = phase_branches(s.speed, s.breakpoints)
    radials = phase_branches(s.radial, s.breakpoints)
    return [(_in_log_clock(sp_, sp.exp(-TAU)), _in_log_clock(rho, sp.exp(TAU - ELL)))
            for sp_, rho in zip(speeds, radials, strict=True)]


@lru_cache(maxsize=64)
def numeric(s: Scheme) -> list:
    """Numpy ``(s_tau, rho_tau)`` per phase, each ``f(tau, ell, a, A_norm, n, beta)``."""
    return [tuple(sp.lambdify(ARGS, e, NUMERIC_MODULES) for e in phase)
            for phase in laws(s)]


def breakpoints(s: Scheme) -> np.ndarray:
    """The scheme's breakpoints in ``tau``."""
    return np.log1p(np.asarray(s.breakpoints, dtype=float))
