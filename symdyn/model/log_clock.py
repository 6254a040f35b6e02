"""The radial schemes in logarithmic time: ``tau = log(1 + t)``, ``u = log r - tau``.

Pre-LN, Mix-LN and Peri-LN grow their norms like ``t``, so directions move at
speeds of order ``1/t``: in the clock ``t`` a run to the clustering time
needs ``t`` far beyond any float. In ``tau`` the same dynamics reads

.. math:: \\frac{d\\theta_k}{d\\tau} = \\frac{P_{\\theta_k} A_k}{s_\\tau}, \\qquad
          \\frac{du_k}{d\\tau} = \\rho\\,e^{-u_k} - 1, \\qquad
          s_\\tau = s\\,e^{-\\tau}

(``dt/dtau = 1 + t = e^tau``, ``d log r/dt = rho/r``), with ``s`` and ``rho``
read at ``t = e^tau - 1`` and ``r = e^(u + tau)``. The state is the excess
``u = log(r/(1 + t))``, not ``log r`` itself: ``log r`` grows like ``tau`` and
would carry an absolute rounding of ``tau * 1e-16``, through which the
relaxation of ``log r - tau`` (rate ``rho e^-u``, ~1) would be seen, by an
error test and by a difference quotient alike, only to ``1e-12``; ``u`` stays
``O(1)``. sympy derives both laws per phase and combines the exponentials
(``powsimp``), so Pre-LN's become ``s_tau = exp(u)`` and
``du/dtau = a exp(-u) - 1``: no ``tau`` left, where ``t`` and ``r``
themselves would overflow past ``tau ~ 709``. Breakpoints move to
``log(1 + t_b)``; results report ``log r = u + tau``.

Layer 1, model.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy as sp

from .guards import lambdify
from .piecewise import phase_branches
from .scheme import Scheme
from .symbols import A_norm, a, beta, n, r, t

TAU, U = sp.symbols("tau u", real=True)
ARGS = (TAU, U, a, A_norm, n, beta)


def _in_log_clock(expr, factor, shift=0):
    moved = expr.subs({t: sp.exp(TAU) - 1, r: sp.exp(U + TAU)}, simultaneous=True) * factor
    return sp.powsimp(sp.expand_power_exp(moved), combine="exp") + shift


def laws(s: Scheme) -> list[tuple[sp.Expr, sp.Expr]]:
    """``(s_tau, du/dtau)`` per phase of ``s`` (no ``Piecewise``).

    Examples
    --------
    >>> import symdyn as sd
    >>> from symdyn.model import log_clock
    >>> log_clock.laws(sd.scheme("pre-ln"))
    [(exp(u), a*exp(-u) - 1)]
    """
    speeds = phase_branches(s.speed, s.breakpoints)
    radials = phase_branches(s.radial, s.breakpoints)
    return [(_in_log_clock(sp_, sp.exp(-TAU)), _in_log_clock(rho, sp.exp(-U), -1))
            for sp_, rho in zip(speeds, radials, strict=True)]


@lru_cache(maxsize=64)
def numeric(s: Scheme) -> list:
    """Numpy ``(s_tau, du/dtau)`` per phase, each ``f(tau, u, a, A_norm, n, beta)``."""
    return [tuple(lambdify(ARGS, e, "scheme") for e in phase)
            for phase in laws(s)]


def breakpoints(s: Scheme) -> np.ndarray:
    """The scheme's breakpoints in ``tau``."""
    return np.log1p(np.asarray(s.breakpoints, dtype=float))
