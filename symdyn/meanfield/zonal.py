r"""Layer 2, meanfield: the mean-field equation on S^{d-1}, d >= 3, for zonal laws.

A law invariant under the rotations fixing a pole ``e`` has a density
``f(t)``, ``t = <x, e>``, with respect to the uniform law ``sigma``; its
moments ``m_k = int P_k(<x, e>) dmu`` (``P_k`` the Gegenbauer polynomial of
index ``d/2 - 1`` with ``P_k(1) = 1``; a particle system's are ``mean_j
P_k(<x_j, e>)``) give ``f = sum_k N_k m_k P_k``, ``N_k`` the dimension of the
degree-k harmonics. Funk-Hecke: ``K mu = sum_k a_k N_k m_k P_k`` with ``a_k``
from :func:`symdyn.meanfield.stability.kernel_eigenvalue`. Testing the
equation against ``P_k`` (``grad P_k . grad Phi = (1 - t^2) P_k' Phi'``)::

    dm_k/dt = -k(k+d-2)/kappa m_k + (1/beta) int (1-t^2) P_k'(t) Phi'(t) f(t) dsigma,

the integral by Gauss-Jacobi quadrature (weight ``(1-t^2)^{(d-3)/2}``,
``2 modes + 2`` nodes), ``Phi = K mu`` or ``log K mu``, the Laplacian's
eigenvalues from :func:`symdyn.meanfield.stability.laplacian_eigenvalue`; in time the circle's
ETDRK4 with step doubling. Zonal laws stay zonal, so this is exact for them.

>>> r = mean_field_zonal(1.0, [0.0, 1.0], [1.0, 0.01], d=3, kappa=6.0, modes=16)
>>> float(round(r.moments[1, 1] / r.moments[0, 1], 3))   # exp(growth_rate(1, 1.0, 6.0, d=3))
1.34
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import mpmath
import numpy as np
import sympy as sp
from scipy.special import eval_gegenbauer, roots_jacobi

from symdyn.base.archive import Archived
from symdyn.base.checks import (
    RTOL_FLOOR,
    check_attention,
    finite_array,
    integer,
    inverse_noise,
    memory,
    number,
    output_times,
    shown,
    tolerance,
)
from symdyn.base.provenance import Provenance

from .circle import MAX_TIME, ETDRK4Stepper
from .stability import (
    B,
    D,
    K,
    dimension,
    evaluate,
    kernel_eigenvalue,
    lambdify_series,
    laplacian_eigenvalue,
)


@cache
def _kernel():
    return lambdify_series((K, D, B), kernel_eigenvalue())


def _dims(d, m):
    """N_k: the dimension of the degree-k harmonics on S^{d-1}, k = 0..m:
    ``(2k+d-2)/k Gamma(k+d-2)/(Gamma(k) Gamma(d-1))``, the Gamma ratio as the
    product ``prod_{j<k} (d-2+j)/j`` (each factor exact to rounding; a
    difference of ``gammaln`` loses ``log10(d)`` digits)."""
    k = np.arange(1, m + 1)
    binom = np.cumprod(np.concatenate([[1.0], (d - 2 + k[:-1]) / k[:-1]]))
    return np.concatenate([[1.0], (2 * k + d - 2) / k * binom])


def _largest_dim(d: int, m: int) -> float:
    """``log10 N_m`` (N_k increases in k for d >= 3), in mpmath: a size estimate before work."""
    with mpmath.workprec(64 + int(d).bit_length()):
        dd = mpmath.mpf(d)
        logn = (mpmath.log((2 * m + dd - 2) / m) + mpmath.loggamma(m + dd - 2)
                - mpmath.loggamma(m) - mpmath.loggamma(dd - 1))
        return float(logn / mpmath.log(10))


@dataclass(frozen=True, repr=False, kw_only=True)
class ZonalMeanField(Archived):
    """A zonal solution: ``moments[i, k] = int P_k(<x, e>) dmu_{t[i]}``, k = 0..modes.

    ``m0``: the starting moments (normalized, ``m_0 = 1``; ``sd.rerun`` starts
    from them); ``provenance``: what made it, which ``str`` prints above the
    first moment ``m_1`` (the mean of ``<x, e>``) at a few times."""

    t: np.ndarray
    moments: np.ndarray
    d: int
    beta: float
    kappa: float | None
    attention: str
    steps: int
    provenance: Provenance | None = None
    m0: np.ndarray | None = None

    DIMS = {"t": ("time",), "moments": ("time", "mode"), "m0": ("mode",)}

    def __str__(self) -> str:
        rows = [*(self.provenance.summary() if self.provenance else []), ("steps", self.steps)]
        width = max(len(k) for k, _ in rows)
        pick = np.unique(np.linspace(0, len(self.t) - 1, min(6, len(self.t))).astype(int))
        return "\n".join(["ZonalMeanField (sd.mean_field_zonal)",
                          *(f"  {k:<{width}}  {v}" for k, v in rows),
                          f"  {'t':>12}  m_1 = mean <x, e>",
                          *(f"  {self.t[i]:>12.6g}  {self.moments[i, 1]:.10g}" for i in pick)])

    def density(self, s) -> np.ndarray:
        """f(s, t) (density against the uniform law) at ``s = <x, e>``, one row per time."""
        s = np.asarray(s, dtype=float)
        m = self.moments.shape[1] - 1
        alpha = self.d / 2 - 1
        p = np.array([eval_gegenbauer(k, alpha, s) / eval_gegenbauer(k, alpha, 1.0)
                      for k in range(m + 1)])
        return (self.moments * _dims(self.d, m)) @ p


GRAM_TOL = 1e-8


@dataclass(frozen=True, slots=True)
class _Tables:
    """Gauss-Jacobi nodes ``t`` and normalized weights ``w`` of
    ``(1-t^2)^{(d-3)/2}`` (``2m + 2`` of them), ``P_k`` (``p``) and ``P_k'``
    (``dp``) at the nodes."""

    t: np.ndarray
    w: np.ndarray
    p: np.ndarray
    dp: np.ndarray


def _tables(d: int, m: int) -> _Tables:
    """The :class:`_Tables` of ``m`` modes at ``d``."""
    alpha = d / 2 - 1
    with np.errstate(all="ignore"):
        t, w = roots_jacobi(2 * m + 2, (d - 3) / 2, (d - 3) / 2)
        ks = range(m + 1)
        norm = np.array([eval_gegenbauer(k, alpha, 1.0) for k in ks])
        p = np.array([eval_gegenbauer(k, alpha, t) for k in ks]) / norm[:, None]
        dp = np.array([2 * alpha * eval_gegenbauer(k - 1, alpha + 1, t) if k else 0 * t
                       for k in ks]) / norm[:, None]
        return _Tables(t=t, w=w / w.sum(), p=p, dp=dp)


def _gram_error(d: int, m: int, tables=None) -> float:
    """``max |G - I|``, ``G_jk = sqrt(N_j N_k) sum_i w_i P_j(t_i) P_k(t_i)``: the
    quadrature must integrate the orthonormal harmonics' products exactly
    (degree <= 2 modes < 2 (2 modes + 2)); ``inf`` when a node is not a number."""
    tab = _tables(d, m) if tables is None else tables
    w, p = tab.w, tab.p
    s = np.sqrt(_dims(d, m))
    with np.errstate(all="ignore"):
        G = (p * w) @ p.T * np.outer(s, s)
        err = np.abs(G - np.eye(m + 1)).max()
    return float(err) if np.isfinite(err) else float("inf")


def _resolved(d: int, m: int) -> bool:
    """``m`` modes at ``d`` fit in floats: ``N_m <= 1e300`` and orthonormal on the nodes."""
    return _largest_dim(d, m) <= 300 and _gram_error(d, m) <= GRAM_TOL


def _most_modes(d: int, m: int) -> int:
    """The largest number of modes ``<= m`` resolved at ``d`` (bisection), 0 if none."""
    lo, hi = 0, m
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _resolved(d, mid) else (lo, mid - 1)
    return lo


class _ZonalField:
    def __init__(self, beta, d, attention, modes, tables=None):
        tab = _tables(d, modes) if tables is None else tables
        t, self.w, self.p, self.dp = tab.t, tab.w, tab.p, tab.dp
        ks = range(modes + 1)
        # a_k e^{-beta} (scaled), from the derived Funk-Hecke eigenvalue
        a = np.array([float(evaluate(_kernel(), k, d, beta) * mpmath.exp(-beta)) for k in ks])
        self.dims = _dims(d, modes)
        self.a = a * self.dims
        self.scale = (np.exp(beta) if attention == "unnormalized" else 1.0) / beta
        self.softmax = attention == "softmax"
        self.tt = 1 - t ** 2

    def __call__(self, m):
        m = m.real
        f = (self.dims * m) @ self.p
        dphi = (self.a * m) @ self.dp
        if self.softmax:
            dphi = dphi / ((self.a * m) @ self.p)
        return self.dp @ (self.w * self.tt * dphi * f) * self.scale


def mean_field_zonal(beta, t, mu0, d, kappa=None, attention="softmax", modes=64, tol=1e-10):
    """Solve the mean-field equation on S^{d-1} (d >= 3) for a zonal law.

    ``mu0``: the moments ``m_0..m_K`` (``m_0 > 0`` normalizes; the density
    they give must be >= 0 at the quadrature nodes). ``beta > 0``;
    ``kappa=None`` or ``inf``: no noise. Returns a :class:`ZonalMeanField`.
    """
    b = number(beta, "beta", low=0, low_open=True)
    dd = dimension(d, 3)
    attention = check_attention(attention)
    kap = inverse_noise(kappa)
    mm = integer(modes, "modes", 1)
    tol = tolerance(tol, "tol", RTOL_FLOOR)      # below, rounding: the steps shrink for ever
    if attention == "unnormalized" and b > 700:
        raise ValueError(f"beta must be in (0, 700] with the unnormalized kernel, got {b}")
    times = output_times(t)
    if times[-1] > MAX_TIME:
        raise ValueError(f"t: mean_field_zonal runs to t <= {MAX_TIME:g} (beyond, its "
                         f"doubling steps overflow), got {times[-1]:g}")
    memory(8 * (mm + 1) * (2 * mm + 2) * 6, f"modes: {mm:,} (mean_field_zonal's "
           f"Gegenbauer tables, (modes + 1) x (2 modes + 2))")
    top = _largest_dim(dd, mm)
    if top > 300:
        fit = _most_modes(dd, mm)
        raise ValueError(f"d: at d = {dd:.6g} the dimension of the degree-{mm} harmonics is "
                         f"1e{top:.0f}, beyond floats (the moments' tables): "
                         + (f"at most modes = {fit} at this d" if fit else "no mode fits"))
    try:
        c = None if callable(mu0) else finite_array(mu0, "mu0")
    except ValueError:
        c = None
    if c is None or c.ndim != 1 or not 1 <= c.size <= mm + 1 or not np.all(np.isfinite(c)) \
            or not c[0] > 0:
        raise ValueError(f"mu0: expected 1-D finite moments m_0..m_K, m_0 > 0, K <= modes; "
                         f"got {shown(mu0)}")
    tables = _tables(dd, mm)
    error = _gram_error(dd, mm, tables)
    if error > GRAM_TOL:
        fit = _most_modes(dd, mm)
        raise ValueError(f"d: at d = {dd:.6g} the Gauss-Jacobi nodes of {mm} modes are not "
                         f"resolved in floats (the harmonics are not orthonormal on them: "
                         f"error {error:.2g}); "
                         + (f"at most modes = {fit} at this d" if fit else "no mode fits"))
    field = _ZonalField(b, dd, attention, mm, tables)
    m = np.zeros(mm + 1)
    m[:c.size] = c / c[0]
    if ((field.dims * m) @ field.p).min() < -1e-9:
        raise ValueError("mu0: these moments are not a density (negative somewhere)")
    lap = sp.lambdify(K, laplacian_eigenvalue().subs(D, dd), modules="numpy")   # derived
    lin = np.zeros(mm + 1) if kap is None else lap(np.arange(mm + 1.0)) / kap
    stepper = ETDRK4Stepper(field, lin)
    moments, steps = stepper.advance(m, times, tol, lambda now, tries, h: ValueError(
        f"mean_field_zonal: the flow is not resolved at t = {now:.4g} "
        f"({tries:,} steps, the last {h:.3g}); ask for earlier times, more modes or a larger tol"))
    made = Provenance.of("mean_field_zonal", None, {"modes": mm, "tol": tol}, beta=b,
                         kappa=kap, attention=attention, d=dd)
    return ZonalMeanField(t=times, moments=moments, d=dd, beta=b, kappa=kap, attention=attention,
                          steps=steps, provenance=made, m0=m.copy())
