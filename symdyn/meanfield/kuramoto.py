r"""Layer 2, meanfield: the noisy Kuramoto model (beta = 0), its stationary order parameter.

At ``beta = 0`` both kernels give the field ``v[mu](x) = P_x m``, ``m = int y
dmu(y)`` (the mean of the law), and ``P_x m = grad_x <m, x>``. A stationary law
of ``d/dt mu = kappa^{-1} Lap mu - div(mu v[mu])`` is therefore the
von Mises-Fisher law ``rho(x) ~ exp(kappa <m, x>)`` on ``S^{d-1}``, and its own
mean must be ``m``. Its mean is ``A_d(kappa |m|) m/|m|`` with

    A_d(s) = int_{-1}^1 t e^{s t} (1-t^2)^{(d-3)/2} dt / int_{-1}^1 e^{s t} (1-t^2)^{(d-3)/2} dt
           = I_{d/2}(s) / I_{d/2-1}(s)

(the integral form is the mean of ``<x, e>`` under ``e^{s<x, e>}``, the
Bessel form is its closed form: the denominator is ``Gamma((d-1)/2)
Gamma(1/2) (2/s)^{d/2-1} I_{d/2-1}(s)`` and the numerator its derivative in
``s``, with ``(s^{-nu} I_nu)' = s^{-nu} I_{nu+1}``). So ``r = |m|`` solves

    r = A_d(kappa r).

``A_d(s) = s/d - s^3/(d^2(d+2)) + O(s^5)``, and ``A_d < 1``. ``r = 0`` is always
a root. A root ``r > 0`` solves ``kappa r / A_d(kappa r) = kappa``, and the
recurrence ``I_{nu-1}(s) - I_{nu+1}(s) = (2 nu/s) I_nu(s)`` (at ``nu = d/2``) gives
``s / A_d(s) = d + s A_{d+2}(s)``: with ``s = kappa r``,

    s A_{d+2}(s) = kappa - d,      r = s / kappa.

The left side increases from 0 (like ``s^2/(d+2)``) to infinity (like ``s``),
since ``A_d(s)/s`` decreases (Amos 1974, Math. Comp. 28; ``tests/meanfield/test_kuramoto.py``
checks it on a grid): one positive root exactly when ``kappa > d``. In this form
nothing cancels near the threshold (the naive ``A_d(kappa r)/r - 1`` loses
``log10(1/r^2)`` digits there); ``max(c, sqrt(c (d+2))) <= s <= c + d + 2``,
``c = kappa - d``, brackets the root.

``kappa_c = d`` is the threshold of :func:`symdyn.meanfield.stability.critical_kappa`
at beta = 0, a supercritical pitchfork: near it
``r^2 = d (d+2) (kappa - d) / kappa^3 + O((kappa - d)^2)``; for large ``kappa``,
``r = 1 - (d-1)/(2 kappa) + O(kappa^{-2})``. Above the threshold the uniform law
(``r = 0``) is unstable and the branch is the stationary state the particles
settle to (finite ``n`` adds fluctuations of order ``n^{-1/2}``;
``notebooks/noise_bifurcation.ipynb``).

>>> kuramoto_order(4.0, 2) > 0.8, kuramoto_order(2.0, 2), kuramoto_order(1.0, 3)
(True, 0.0, 0.0)
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy.optimize import brentq
from scipy.special import ive

from ..base.checks import finite_array
from .stability import dimension

SERIES_TERMS = 20000


def bessel_ratio(s: float, d: int) -> float:
    """``A_d(s) = I_{d/2}(s)/I_{d/2-1}(s)``, ``s > 0``: scipy's scaled Bessel
    functions where they are normal floats, else mpmath (they underflow for
    large ``d`` at small ``s`` and are NaN beyond ``s ~ 1e9``)."""
    if d <= 2 ** 52:                      # d/2 - 1 exact in floats
        num, den = ive(d / 2, s), ive(d / 2 - 1, s)
        if np.isfinite(num) and np.isfinite(den) and min(num, den) > 1e-290:
            return float(num / den)
    # the series sum_j (s^2/4)^j / (j! Gamma(nu + j + 1)) peaks at j = (sqrt(nu^2 + s^2) - nu)/2;
    # mpmath gives up beyond some thousands of terms, unless s >> nu^2 (its expansion in 1/s):
    # refused before the work
    peak = (math.hypot(d / 2, s) - d / 2) / 2
    if peak > SERIES_TERMS and s < (d / 2) ** 2:
        raise ValueError(f"d: I_(d/2)(s)/I_(d/2-1)(s) at d = {d:.6g}, s = {s:.6g} needs the "
                         f"Bessel series to about {peak:.2g} terms (at most {SERIES_TERMS:,}; "
                         f"no large-d form here): kuramoto_order runs to d ~ 1e4 at "
                         f"kappa ~ 3 d")
    with mpmath.workprec(64 + max(53, int(d).bit_length())):     # the orders exact
        nu = mpmath.mpf(d) / 2
        try:
            return float(mpmath.besseli(nu, s) / mpmath.besseli(nu - 1, s))
        except mpmath.libmp.NoConvergence:
            raise ValueError(f"d: I_(d/2)(s)/I_(d/2-1)(s) at d = {d:.6g}, s = {s:.6g}: "
                             f"mpmath's Bessel series did not converge (no large-d form "
                             f"here): kuramoto_order runs to d ~ 1e4 at kappa ~ 3 d") from None


def _one(kappa: float, d: int) -> float:
    """The root ``r = s/kappa``, ``s A_{d+2}(s) = kappa - d`` (module docstring)."""
    c = kappa - d
    if c <= 0:
        return 0.0
    lo, hi = (c if c >= d + 2 else math.sqrt(c * (d + 2))), c + d + 2
    s = brentq(lambda x: x * bessel_ratio(x, d + 2) - c, lo, hi, xtol=1e-300,
               rtol=4 * np.finfo(float).eps, maxiter=500) if lo < hi else lo
    return min(1.0, s / kappa)


def kuramoto_order(kappa, d):
    """The order parameter ``r = |int x dmu|`` of the stationary noisy Kuramoto
    law on ``S^{d-1}`` (beta = 0): the largest root of
    ``r = I_{d/2}(kappa r) / I_{d/2-1}(kappa r)``, 0 for ``kappa <= d`` (the
    uniform law), positive above (module docstring: the derivation).

    ``kappa``: the inverse noise level, a number > 0 or an array of them (the
    result has its shape; ``inf``, no noise: ``r = 1``, the limit of
    ``1 - (d-1)/(2 kappa)``); ``d >= 2`` an integer. Relative accuracy near
    machine precision, also close to the threshold where ``r`` is small.

    >>> round(kuramoto_order(3.0, 2), 6), kuramoto_order([1.0, 6.0], 3).round(4).tolist()
    (0.724159, [0.0, 0.7889])
    """
    k = finite_array(kappa, "kappa", low=0, low_open=True, inf=True)
    dd = dimension(d)
    out = np.array([1.0 if x == np.inf else _one(float(x), dd)
                    for x in k.ravel()]).reshape(k.shape)
    return float(out) if out.ndim == 0 else out
