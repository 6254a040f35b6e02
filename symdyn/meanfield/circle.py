r"""Layer 2, meanfield: the mean-field (Fokker-Planck) equation on the circle, in Fourier modes.

On S^1 (``x = (cos theta, sin theta)``, ``<x, y> = cos(theta - phi)``) the
law ``mu_t = rho(theta, t) dtheta`` solves::

    d/dt rho = -d/dtheta (rho v) + kappa^{-1} d^2/dtheta^2 rho,        v = U'/beta or U'/(beta U),
    U(theta) = int e^{beta cos(theta - phi)} rho(phi) dphi = sum_m I_m(beta) c_m e^{i m theta},

unnormalized or softmax, with the moments ``c_k = int e^{-i k theta} dmu``
(``c_0 = 1``; ``rho = (1/2pi) sum_k c_k e^{i k theta}``; a particle system's
are ``mean_j e^{-i k theta_j}``) and ``U'/beta = sum_m i (I_{m-1} - I_{m+1})/2
c_m e^{i m theta}`` (finite at beta = 0). So ``dc_k/dt = -i k F_k - (k^2/kappa)
c_k``, ``F_k`` the moments of the flux ``rho v``. The flux is evaluated on a
grid of 4 x modes points (products of band-limited factors without
aliasing); time: exponential Runge-Kutta ETDRK4 (Cox-Matthews; its phi
functions in closed form, by Taylor series near 0), the diffusion exact,
the step chosen by step doubling to an absolute error ``tol`` on the moments.

The moments beyond ``modes`` are dropped (Galerkin). With noise the solution
is analytic and 256 modes are exact to rounding for moderate beta*kappa;
without noise the dynamics concentrate (clusters become Dirac masses) and
every truncation is eventually under-resolved: :class:`MeanField`.tail says
how much the top tenth of the modes carries (a RuntimeWarning above 1e-6).

>>> import numpy as np
>>> r = mean_field(1.0, [0.0, 1.0], lambda th: 1 + 0.1 * np.cos(th), kappa=4.0, modes=32)
>>> float(round(r.order[1] / r.order[0], 3))    # exp(lambda_1), lambda_1 = I_1/I_0(1) - 1/4
1.216
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import ive

from symdyn.base.archive import Archived
from symdyn.base.checks import (
    RTOL_FLOOR,
    check_attention,
    has_bool,
    integer,
    inverse_noise,
    memory,
    number,
    output_times,
    shown,
    tolerance,
)
from symdyn.base.provenance import Provenance
from symdyn.ode.control import Controller


@dataclass(frozen=True, repr=False, kw_only=True)
class MeanField(Archived):
    """A mean-field solution: ``moments[i, k] = int e^{-i k theta} dmu_{t[i]}``, k = 0..modes.

    ``c0``: the starting moments (``sd.rerun`` starts from them); ``provenance``:
    what made it (:mod:`symdyn.base.provenance`), which ``str`` prints above the
    order parameter :math:`|c_1|` at a few times."""

    t: np.ndarray
    moments: np.ndarray
    beta: float
    kappa: float | None
    attention: str
    steps: int
    tail: float
    provenance: Provenance | None = None
    c0: np.ndarray | None = None

    DIMS = {"t": ("time",), "moments": ("time", "mode"), "c0": ("mode",)}

    def __str__(self) -> str:
        rows = [*(self.provenance.summary() if self.provenance else []),
                ("steps", self.steps), ("top tenth of the modes", f"{self.tail:.2g}")]
        width = max(len(k) for k, _ in rows)
        pick = np.unique(np.linspace(0, len(self.t) - 1, min(6, len(self.t))).astype(int))
        return "\n".join(["MeanField (sd.mean_field)",
                          *(f"  {k:<{width}}  {v}" for k, v in rows),
                          f"  {'t':>12}  order |c_1|",
                          *(f"  {self.t[i]:>12.6g}  {self.order[i]:.10g}" for i in pick)])

    def density(self, theta) -> np.ndarray:
        """rho(theta, t) for each output time (rows) at the angles ``theta``."""
        th = np.asarray(theta, dtype=float)
        ks = np.arange(1, self.moments.shape[1])
        waves = np.exp(1j * np.multiply.outer(th, ks))                # (len theta, modes)
        return (1 + 2 * (waves @ self.moments[:, 1:].T).real.T) / (2 * np.pi)

    @property
    def order(self) -> np.ndarray:
        """|c_1(t)|: the Kuramoto order parameter r of the law."""
        return np.abs(self.moments[:, 1])


class _FourierFlux:
    """The moments' right-hand side ``c -> -i k F_k`` (the flux part, no diffusion),
    evaluated by FFT on ``points = 4 modes`` grid points of the circle."""

    def __init__(self, beta, attention, modes):
        self.modes = modes
        self.points = 4 * modes
        m = np.arange(modes + 2)
        scaled = ive(m, beta)                                 # I_m e^{-beta}
        scale = np.exp(beta) if attention == "unnormalized" else 1.0
        self.u = scaled[:modes + 1] * self.points
        lower = np.concatenate([[scaled[1]], scaled[:modes]])         # I_{m-1}, I_{-1} = I_1
        self.v = 1j * (lower - scaled[1:modes + 2]) / 2 * self.points * scale
        self.softmax = attention == "softmax"
        self.ik = 1j * np.arange(modes + 1)

    def __call__(self, c):
        points, m = self.points, self.modes
        rho = np.fft.irfft(c * (points / (2 * np.pi)), points)
        vel = np.fft.irfft(c * self.v, points)
        if self.softmax:
            vel = vel / np.fft.irfft(c * self.u, points)
        flux = np.fft.rfft(rho * vel)[:m + 1] * (2 * np.pi / points)
        return -self.ik * flux


_J = np.arange(20)
_FACT = np.cumprod(np.concatenate([[1.0], np.arange(1.0, 24.0)]))       # 0! .. 23!
#: Taylor coefficients of ETDRK4's functions (phi_n(z) = sum z^j/(j+n)!): q = phi_1(z/2)/2,
#: f1 = phi_1 - 3 phi_2 + 4 phi_3, f2 = phi_2 - 2 phi_3, f3 = -phi_2 + 4 phi_3
_SERIES = np.array([0.5 ** (_J + 1) / _FACT[_J + 1], (_J + 1) ** 2 / _FACT[_J + 3],
                    (_J + 1) / _FACT[_J + 3], (1 - _J) / _FACT[_J + 3]])


def _phi(hl):
    """ETDRK4's coefficients at the real diagonal z = h*L (Cox-Matthews): closed
    forms for |z| >= 1, their Taylor series (20 terms) below, where the closed
    forms cancel."""
    z = np.asarray(hl, dtype=float)
    small = np.abs(z) < 1
    zb = np.where(small, -2.0, z)
    ez = np.exp(zb)
    out = [(np.exp(zb / 2) - 1) / zb, (-4 - zb + ez * (4 - 3 * zb + zb ** 2)) / zb ** 3,
           (2 + zb + ez * (zb - 2)) / zb ** 3, (-4 - 3 * zb - zb ** 2 + ez * (4 - zb)) / zb ** 3]
    if small.any():
        powers = z[small, None] ** _J[None, :]
        for i in range(4):
            out[i][small] = powers @ _SERIES[i]
    return (np.exp(z), np.exp(z / 2), *out)


class ETDRK4Stepper:
    """Cox-Matthews ETDRK4 for ``c' = L c + N(c)`` with ``L`` diagonal (``lin``)
    and ``N = field``: one step of size ``h`` (its coefficients cached per ``h``)."""

    def __init__(self, field, lin):
        self.field, self.lin, self.cache = field, lin, {}

    def step(self, c, h, nc=None):
        if h not in self.cache:
            if len(self.cache) > 64:
                self.cache.clear()
            e, e2, q, f1, f2, f3 = _phi(h * self.lin)
            self.cache[h] = (e, e2, h * q, h * f1, h * f2, h * f3)
        e, e2, q, f1, f2, f3 = self.cache[h]
        f = self.field
        nc = f(c) if nc is None else nc
        a = e2 * c + q * nc
        na = f(a)
        b = e2 * c + q * na
        nb = f(b)
        cc = e2 * a + q * (2 * nb - nc)
        return e * c + f1 * nc + 2 * f2 * (na + nb) + f3 * f(cc)

    def advance(self, c, times, tol, unresolved):
        """Step doubling from ``t = 0`` to each of ``times``: the states there
        and the accepted steps.

        A step ``h`` against two of ``h/2``: ETDRK4 is of order 4, so their
        difference / 15 estimates the error of the pair (Richardson); accepted
        below ``tol``; the next step is ``h`` times :data:`DOUBLING`'s factor
        at exponent -1/5 (:math:`\\mathrm{clip}(0.9\\,(\\mathrm{tol}/
        \\mathrm{err})^{1/5}, 0.2, 2)`, the integrators' one rule), on a
        ladder of powers of :math:`2^{1/8}` (``_phi``'s cache hits). A pair that
        overflows counts as a rejection (the step shrinks 5x);
        ``unresolved(now, tries, h)`` is raised after :data:`MAX_STEPS`
        attempts or at a step below :math:`10^{-15}\\max(1, t)`.
        """
        out, now, h, steps, tries = [], 0.0, 1e-2, 0, 0
        with np.errstate(over="ignore", invalid="ignore"):    # a step too long: shortened
            for target in times:
                while now < target:
                    h = min(h, target - now)
                    nc = self.field(c)
                    one = self.step(c, h, nc)
                    two = self.step(self.step(c, h / 2, nc), h / 2)
                    err = float(np.max(np.abs(two - one))) / 15 / tol
                    tries += 1
                    if tries > MAX_STEPS or h < 1e-15 * max(1.0, now):
                        raise unresolved(now, tries, h)
                    accept, factor = DOUBLING.factor(err, math.isfinite(err), False, 0.0,
                                                     -1 / 5)
                    if accept:
                        now, c, steps = (target if h >= target - now else now + h), two, steps + 1
                    h *= factor
                    h = 2.0 ** (np.floor(8 * np.log2(h)) / 8)
                out.append(c.copy())
        return np.array(out), steps


def _initial(mu0, modes):
    points = 4 * modes
    grid = 2 * np.pi * np.arange(points) / points
    if callable(mu0):
        vals = _density_values(mu0, grid)
        mass = vals.mean() * 2 * np.pi
        if not mass > 0:
            raise ValueError("mu0: the density has zero mass; it cannot be normalized")
        c = np.fft.rfft(vals / mass)[:modes + 1] * (2 * np.pi / points)
        c[0] = 1.0
        return c
    if isinstance(mu0, (list, tuple)) and has_bool(mu0):      # numpy reads True as 1
        raise ValueError(f"mu0: expected Fourier moments (numbers), got booleans: "
                         f"{shown(mu0)}")
    c = np.asarray(mu0)
    if c.ndim != 1 or c.size < 1 or c.dtype.kind not in "iufc" or not np.all(np.isfinite(c)):
        raise ValueError("mu0: expected a density function of theta or a 1-D array of finite "
                         "Fourier moments c_0..c_K (c_k = int e^(-ik theta) dmu), "
                         f"got {shown(mu0)}")
    if c.size > modes + 1:
        raise ValueError(f"mu0: {c.size - 1} moments, more than modes = {modes}{_SAMPLES}")
    if not (abs(c[0].imag) < 1e-12 and c[0].real > 0):
        raise ValueError(f"mu0: c_0 (the mass) must be real and > 0, got {c[0]!r}{_SAMPLES}")
    big = np.abs(c) > c[0].real * (1 + 1e-12)
    if big.any():                    # |int e^{-ik theta} dmu| <= int dmu for every measure
        k = int(np.argmax(big))
        raise ValueError(f"mu0: |c_{k}| = {abs(c[k]):.3g} exceeds c_0 = {c[0].real:.3g}, "
                         f"so these are not the moments of a measure{_SAMPLES}")
    out = np.zeros(modes + 1, complex)
    out[:c.size] = c / c[0].real
    rho = np.fft.irfft(out * (points / (2 * np.pi)), points)
    if rho.min() < -1e-9 * max(1.0, rho.max()):
        raise ValueError(f"mu0: these moments are not a density (min {rho.min():.3g} < 0)"
                         f"{_SAMPLES}")
    return out


#: What the moments' errors add: an array of angles is not read as samples.
_SAMPLES = ("; mu0 takes moments c_0..c_K, not sampled angles (smooth their moments "
            "mean(exp(-1j*k*theta)) first)")


def _density_values(mu0, grid):
    """``mu0(grid)``: real, finite and >= 0, one value per angle (or one number)."""
    try:
        raw = np.asarray(mu0(grid))
    except Exception as exc:            # the caller's function: say which argument failed
        raise ValueError(f"mu0: the density function failed on an array of {grid.size} "
                         f"angles: {type(exc).__name__}: {shown(str(exc), 120)}") from exc
    if raw.dtype.kind not in "iuf":
        raise ValueError(f"mu0: a density function must return real numbers, got "
                         f"dtype {raw.dtype} ({shown(raw)})")
    if raw.shape not in ((), grid.shape):
        raise ValueError(f"mu0: a density function must return one value per angle (shape "
                         f"{grid.shape} for {grid.size} angles) or one number, got shape "
                         f"{raw.shape}")
    vals = np.broadcast_to(raw.astype(float), grid.shape)
    bad = ~np.isfinite(vals)
    if bad.any():
        raise ValueError(f"mu0: a density must be finite on [0, 2pi); it is {vals[bad][0]} "
                         f"at theta = {grid[bad][0]:.4g} ({bad.sum()} of {grid.size} points)")
    if np.any(vals < 0):
        raise ValueError("mu0: a density must be >= 0 on [0, 2pi); "
                         f"min {vals.min():.3g} on the grid of {grid.size} points")
    return vals


#: The largest beta of :func:`mean_field` (softmax; it ran finite there, and not at 1e10).
MAX_SOFTMAX_BETA = 1e8
#: The last output time (the steps double up to it; at 1e152 they overflowed).
MAX_TIME = 1e150
#: Steps (accepted or not) one :func:`mean_field` may take.
MAX_STEPS = 200_000

#: The step-doubling controller: the integrators' rule (``symdyn.ode.control``),
#: a step growing at most 2x.
DOUBLING = Controller(factor_max=2.0)


def _unresolved(beta, attention, now, tries, h):
    """Why the steps stopped: too many, or too short for the clock to advance."""
    fast = (f"; with the unnormalized kernel velocities grow like e^beta = {np.exp(beta):.3g}: "
            f"use a smaller beta or softmax" if attention == "unnormalized" else
            "; ask for earlier times, more modes or a larger tol")
    what = (f"more than {MAX_STEPS:,} steps" if tries > MAX_STEPS else
            f"steps below {h:.3g}")
    return f"beta: the flow is not resolved at t = {now:.4g} ({what}){fast}"


def mean_field(beta, t, mu0, kappa=None, attention="softmax", modes=256, tol=1e-10):
    """Solve the mean-field equation on the circle to the output times ``t``.

    ``mu0``: a density function of theta on [0, 2pi) (normalized here; values
    < 0 or no mass: ValueError), or a 1-D array of moments ``c_0..c_K``
    (``c_0`` > 0 normalizes; their truncated density must be >= 0). Samples
    are not accepted: an empirical measure has no density (use its moments
    after smoothing, or the particles). ``kappa=None`` or ``inf``: no noise. ``tol``:
    absolute error per step on the moments, at least 100 float64 epsilons. A
    flow no step resolves (the unnormalized kernel's velocities grow like
    ``e^beta``) is a ValueError after at most :data:`MAX_STEPS` steps.
    Returns a :class:`MeanField`.
    """
    b = number(beta, "beta", low=0)
    attention = check_attention(attention)
    kap = inverse_noise(kappa)
    m = integer(modes, "modes", 1)
    tol = tolerance(tol, "tol", RTOL_FLOOR)      # below, rounding: the steps shrink for ever
    if attention == "unnormalized" and b > 700:
        raise ValueError("beta must be in [0, 700] with the unnormalized kernel "
                         f"(e^beta overflows), got {b}")
    if b > MAX_SOFTMAX_BETA:
        raise ValueError(f"beta must be in [0, {MAX_SOFTMAX_BETA:g}] (beyond, the velocity's "
                         f"coefficients I_(m-1) - I_(m+1) = 2m I_m/beta are lost to "
                         f"rounding), got {b:g}")
    times = output_times(t)
    if times[-1] > MAX_TIME:
        raise ValueError(f"t: mean_field runs to t <= {MAX_TIME:g} (beyond, its doubling steps "
                         f"overflow the exponentials of the diffusion), got {times[-1]:g}")
    memory(8 * 4 * m * 40, f"modes: {m:,} (mean_field's grid of 4 x modes points)")
    c = _initial(mu0, m)
    lin = np.zeros(m + 1) if kap is None else -np.arange(m + 1) ** 2 / kap
    stepper = ETDRK4Stepper(_FourierFlux(b, attention, m), lin)
    moments, steps = stepper.advance(
        c, times, tol, lambda now, tries, h: ValueError(_unresolved(b, attention, now, tries, h)))
    tail = float(np.max(np.abs(moments[:, m - m // 10:]))) if m >= 10 else 0.0
    if tail > 1e-6:
        warnings.warn(f"mean_field: the top tenth of the {m} modes carries {tail:.2g}: "
                      "under-resolved, use more modes", RuntimeWarning, stacklevel=2)
    made = Provenance.of("mean_field", None, {"modes": m, "tol": tol}, beta=b, kappa=kap,
                         attention=attention, d=2)
    return replace(MeanField(t=times, moments=moments, beta=b, kappa=kap, attention=attention,
                             steps=steps, tail=tail), provenance=made, c0=_initial(mu0, m))
