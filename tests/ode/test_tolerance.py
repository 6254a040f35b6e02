"""What ``rtol`` of ``sd.solve`` controls, against an mpmath reference at t = 1e4.

Post-LN's reduced ODE is one autonomous equation in u = log(1 - gamma):
u' = F(e^u), F(eps) = -2 x (eps + n(1 - eps)) / (x(n - 1) + 1), x = e^(-beta eps)
(the paper's equiangular ODE, typed here from the model, not from symdyn's
derivation). Its solution is a quadrature: t(u) = int_{u0}^{u} dv / F(e^v),
and since F -> -2 as eps -> 0, for u(T) << -40

    u(T) = u0 - 2 T + 2 C,  C = int_{u0}^{-oo} (1/F(e^v) + 1/2) dv,

to far below a float's resolution. mpmath computes C to 30 digits.

``rtol`` bounds the error of u committed in each step. An error du made at
time s is a shift in time of du / |F(u(s))|, which the end of the run carries
as an error |F(u(T))| du / |F(u(s))| (for one autonomous equation the
variational factor is F(u(T)) / F(u(s)) exactly). So the global error is at
most about rtol * kappa, kappa = |F(u(T))| / min_s |F(u(s))|: rtol itself
for starts that move at once, more for slow starts near the unstable simplex
(large beta, gamma0 < 0), where kappa reaches 1e5-1e7. Measured over 40
members of a 10,000-member grid (n 2-128, beta 0-10, gamma0 down to the
simplex): error / (rtol kappa) at most 1.07.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import symdyn as sd

T = 1e4
RTOL = 1e-11

# (n, beta, gamma0): starts that move at once (kappa ~ 1), then slow ones
MEMBERS = [(35, 6.29, 0.985), (100, 4.77, 0.95), (6, 1.0, 0.76), (127, 8.58, 0.817),
           (104, 5.62, 0.395), (12, 8.38, 0.059),
           (2, 9.43, -0.283), (12, 9.51, -0.0908), (2, 7.48, -0.55), (58, 7.8, -0.0175)]


def _F(eps, n, beta, lib=np):
    x = lib.exp(-beta * eps)
    return -2 * x * (eps + n * (1 - eps)) / (x * (n - 1) + 1)


def _reference(n, beta, gamma0):
    with mp.workdps(30):
        n, beta = mp.mpf(n), mp.mpf(beta)
        u0 = mp.log(1 - mp.mpf(gamma0))
        C = mp.quad(lambda v: 1 / _F(mp.exp(v), n, beta, mp) + mp.mpf(1) / 2,
                    [u0, u0 - 1, u0 - 5, u0 - 20, u0 - 60, -mp.inf])
        return float(u0 - 2 * T + 2 * C)


def _kappa(n, beta, gamma0):
    eps = np.linspace(0, 1 - gamma0, 20001)[1:]
    return 2 / np.abs(_F(eps, n, beta)).min()


@pytest.fixture(scope="module")
def errors():
    n, beta, g0 = (np.array(c, dtype=float) for c in zip(*MEMBERS, strict=True))
    ref = np.array([_reference(*m) for m in MEMBERS])
    assert np.all(ref < -60)                        # the tail of the quadrature is nil
    def error(rtol):
        tr = sd.solve("post-ln", n=n, beta=beta, gamma0=g0, t=[T], rtol=rtol)
        return np.abs(tr.log_epsilon[:, -1] - ref), ref
    return error


def test_global_error_within_rtol_times_the_amplification(errors):
    err, ref = errors(RTOL)
    kappa = np.array([_kappa(*m) for m in MEMBERS])
    floor = 8 * np.spacing(np.abs(ref))            # u's own rounding at |u| ~ 2e4
    assert np.all(err <= 2 * RTOL * kappa + floor), (err, kappa)
    # starts that move at once: the global error is rtol itself
    assert np.all(err[kappa < 10] <= 2 * RTOL + floor[kappa < 10])


def test_control_a_looser_tolerance_breaks_the_bound(errors):
    err, ref = errors(1e-7)
    kappa = np.array([_kappa(*m) for m in MEMBERS])
    floor = 8 * np.spacing(np.abs(ref))
    assert np.any(err > 2 * RTOL * kappa + floor)
