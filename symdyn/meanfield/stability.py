r"""Layer 2, meanfield: linear stability of the uniform state on S^{d-1}, derived.

The noisy mean-field dynamics (survey, section "Noisy Transformers")::

    d/dt mu = kappa^{-1} Lap mu - div(mu v[mu]),
    v[mu](x) = P_x int e^{beta<x,y>} y dmu(y)            (unnormalized, the SDE's kernel)
    v[mu](x) = P_x int e^{beta<x,y>} y dmu(y) / int e^{beta<x,y>} dmu(y)   (softmax).

The survey prints its Fokker-Planck equation as ``d/dt mu + kappa^{-1} Lap mu
= div(mu int e^{beta<.,y>} y dmu)``: both signs flipped (time reversed). The
SDE ``dX = v dt + sqrt(2/kappa) dW`` has generator ``v.grad + kappa^{-1} Lap``,
so its law solves the equation above; we use that one.

Since ``P_x y e^{beta<x,y>} = grad_x e^{beta<x,y>} / beta``, ``v = grad Phi /
beta`` with ``Phi = K mu`` (unnormalized) or ``log K mu`` (softmax), ``K mu(x)
= int e^{beta<x,y>} dmu(y)``. This module derives, with sympy (:func:`laplacian_eigenvalue`,
:func:`kernel_eigenvalue`, :func:`_rates`, :func:`critical_law`):

1. the Laplace-Beltrami operator on zonal functions ``g(<x, e>)`` from the
   volume element ``sin^{d-2}``; it is triangular on polynomials, so its
   eigenvalue on degree-k harmonics is the t^k coefficient: ``-k(k+d-2)``;
2. the Funk-Hecke eigenvalue of ``K`` on degree-k harmonics, ``a_k = int
   e^{beta t} P_k(t) w(t) dt / int w``, ``w = (1-t^2)^{(d-3)/2}``, by the
   Rodrigues formula of the Gegenbauer polynomial ``P_k`` (``P_k(1) = 1``), k
   integrations by parts and the series of ``e^{beta t}`` summed by sympy:
   ``a_k = Gamma(d/2) (2/beta)^{d/2-1} I_{k+d/2-1}(beta)``;
3. the linearization about the uniform law ``sigma``: ``mu = sigma(1 + eps A
   Y_k)``; ``v[sigma] = 0``, ``grad mu . grad Phi = O(eps^2)``, so ``dA/dt =
   lambda_k A`` with ``lambda_k = k(k+d-2) (phi'(a_0) a_k / beta - 1/kappa)``,
   ``phi'(a_0) = 1`` (unnormalized) or ``1/a_0`` (softmax);
4. ``lambda_k = 0`` at ``kappa_k = beta / (phi'(a_0) a_k)``. ``a_k`` decreases
   in k (``I_{nu+1}(beta) < I_nu(beta)`` for ``beta > 0``, ``nu >= -1/2``:
   Soni 1965), so k = 1 loses stability first: ``kappa_c = kappa_1``. At beta
   -> 0 both kernels give ``kappa_c = d`` (the noisy Kuramoto value; 2 on the
   circle, Bertini et al.).

>>> round(critical_kappa(0.0, 2), 12), round(critical_kappa(1e-9, 3, "unnormalized"), 6)
(2.0, 3.0)
>>> critical_kappa(2.0, 2, symbolic=True)
2*besseli(0, 2)/besseli(1, 2)
"""

from __future__ import annotations

from functools import cache, lru_cache

import mpmath
import numpy as np
import sympy as sp

from symdyn.base.checks import check_attention, integer, inverse_noise, number, shown

K, D = sp.symbols("k d", positive=True, integer=True)
B, KAPPA = sp.symbols("beta kappa", positive=True)


@cache
def laplacian_eigenvalue() -> sp.Expr:
    """Eigenvalue of Laplace-Beltrami on degree-k harmonics of S^{d-1}, derived (step 1)."""
    th, t = sp.symbols("theta t", positive=True)
    inner = sp.sin(th) ** (D - 2) * sp.diff(sp.cos(th) ** K, th)
    zonal = sp.sin(th) ** (2 - D) * sp.diff(inner, th)
    # in t = cos(theta): sin^2 = 1 - t^2; the operator maps degree <= k to degree <= k
    in_t = sp.expand(sp.powsimp(zonal).subs(sp.sin(th), sp.sqrt(1 - t ** 2)).subs(sp.cos(th), t))
    ratio = sp.expand(sp.powsimp(sp.expand(in_t / t ** K), force=True))
    diagonal = ratio.as_independent(t)[0]           # the t^k -> t^k entry
    return sp.factor(diagonal)


@cache
def kernel_eigenvalue() -> sp.Expr:
    """Funk-Hecke eigenvalue a_k of K f(x) = int e^{beta<x,y>} f(y) dsigma(y), derived (step 2)."""
    t, u = sp.symbols("t u", positive=True)
    m = sp.Symbol("m", integer=True, nonnegative=True)
    nu = sp.Symbol("nu", positive=True)
    alpha = D / 2 - 1                                  # Gegenbauer index; w = (1-t^2)^(alpha-1/2)

    def moment(j):       # int_{-1}^1 t^{2j} (1-t^2)^(nu-1/2) dt = (t^2 = u) Euler's Beta integral
        return sp.gamma(j + sp.S.Half) * sp.gamma(nu + sp.S.Half) / sp.gamma(j + nu + 1)

    # J(nu) = int e^{beta t} (1-t^2)^(nu-1/2) dt: odd powers of t integrate to 0
    J = sp.summation(B ** (2 * m) / sp.factorial(2 * m) * moment(m), (m, 0, sp.oo))
    mass = moment(0).subs(nu, alpha)                   # int w dt
    # Rodrigues: P_k = (-1)^k G(alpha+1/2) / (2^k G(k+alpha+1/2))
    #                  * w^{-1} (d/dt)^k (1-t^2)^{k+alpha-1/2};
    # k integrations by parts against e^{beta t} (boundary terms vanish for d >= 2): (-beta)^k
    rodrigues = sp.gamma(alpha + sp.S.Half) / (2 ** K * sp.gamma(K + alpha + sp.S.Half))
    a = rodrigues * B ** K * J.subs(nu, K + alpha) / mass
    return sp.powsimp(sp.gammasimp(a), force=True)


@cache
def _rates() -> dict:
    """lambda_k(beta, kappa, d) of both kernels, from the linearization (step 3)."""
    eps, A, a0, ak, L, kinv = sp.symbols("epsilon A a_0 a_k L kappa_inv", positive=True)
    out = {}
    for attention, phi in (("unnormalized", lambda z: z), ("softmax", sp.log)):
        # K(sigma (1 + eps A Y)) = a0 + eps a_k A Y; Phi = phi(K mu), first order in eps
        dphi = sp.diff(phi(a0 + eps * ak * A), eps).subs(eps, 0)
        # d/dt (eps A) Y = kinv Lap(eps A Y) - div(mu grad Phi)/beta; Lap Y = -L Y
        rhs = -kinv * L * A - (-L * dphi) / B          # coefficient of eps Y
        rate = sp.expand(rhs / A)
        a = kernel_eigenvalue()
        rate = rate.subs({L: -laplacian_eigenvalue(), a0: a.subs(K, 0), ak: a})
        out[attention] = sp.powsimp(rate, force=True), kinv
    return out


@cache
def _expression(attention: str, noisy: bool) -> sp.Expr:
    expr, kinv = _rates()[attention]
    return expr.subs(kinv, 1 / KAPPA if noisy else 0)


@cache
def critical_law(attention: str) -> sp.Expr:
    """kappa_k: the root of lambda_k = 0 in kappa (step 4)."""
    (root,) = sp.solve(sp.Eq(_expression(attention, True), 0), KAPPA)
    return sp.powsimp(sp.factor(root), force=True)


@cache
def _numeric(attention: str, which: str):
    expr = (critical_law(attention) if which == "critical"
            else _expression(attention, which == "noisy"))
    return sp.lambdify((K, D, B, KAPPA), expr, modules="mpmath")


@lru_cache(maxsize=4096)
def _at_zero(attention: str, which: str, kk: int, dd: int):
    """The beta -> 0 limit (sympy) of kappa_k or of the noise-free rate, where
    the Bessel form is 0/0."""
    expr = critical_law(attention) if which == "critical" else _expression(attention, False)
    return float(sp.limit(expr.subs({K: kk, D: dd}), B, 0, "+"))


def _check(beta_, d_, attention, kappa_=None):
    b = number(beta_, "beta", low=0)
    dd = integer(d_, "d", 2)
    check_attention(attention)
    kap = inverse_noise(kappa_)
    return b, dd, kap


def critical_kappa(beta, d, attention="softmax", symbolic=False):
    """The kappa (inverse noise level) above which the uniform law on S^{d-1}
    is linearly unstable: ``beta/a_1`` (unnormalized), ``beta a_0/a_1``
    (softmax), ``a_k`` the Funk-Hecke eigenvalues derived in this module.

    ``beta >= 0``, integer ``d >= 2``. ``symbolic=True``: the sympy expression
    (``beta`` and ``d`` may then be sympy symbols; beta = 0 gives the limit).
    Floats underflow to 0 for the unnormalized kernel at beta >~ 700.
    """
    check_attention(attention)
    if symbolic not in (True, False):
        raise ValueError(f"symbolic must be True or False, got {shown(symbolic)}")
    if symbolic and (isinstance(beta, sp.Basic) or isinstance(d, sp.Basic)):
        return critical_law(attention).subs(K, 1).subs({B: beta, D: d}, simultaneous=True)
    b, dd, _ = _check(beta, d, attention)          # before the derivation: refused at once
    expr = critical_law(attention).subs(K, 1)
    if symbolic:
        e = expr.subs(D, dd)
        return sp.limit(e, B, 0, "+") if b == 0 else sp.powsimp(e.subs(B, sp.nsimplify(b)))
    if b == 0:
        return _at_zero(attention, "critical", 1, dd)
    return float(_numeric(attention, "critical")(1, dd, mpmath.mpf(b), 1))


def growth_rate(k, beta, kappa=None, d=2, attention="softmax", symbolic=False):
    """lambda_k: the linear growth rate of degree-k harmonics about the uniform
    law on S^{d-1}, ``k(k+d-2) (phi'(a_0) a_k/beta - 1/kappa)`` (``kappa=None``
    or ``inf``: no noise). ``k``: an integer >= 0 or an array of them (k = 0 is
    the mass, rate 0). ``symbolic=True``: the sympy expression in k (or at k if given;
    beta = 0 with a symbolic k keeps beta, the limit needs a number k).

    >>> round(growth_rate(1, 0.0, 4.0, d=2), 12)     # noisy Kuramoto: 1/2 - 1/kappa
    0.25
    """
    b, dd, kap = _check(beta, d, attention, kappa)
    if symbolic:
        subs = {D: dd, B: sp.nsimplify(b)} if b else {D: dd}
        if kap is not None:
            subs[KAPPA] = sp.nsimplify(kap)
        e = _expression(attention, kap is not None).subs(subs)
        e = e if isinstance(k, sp.Basic) else e.subs(K, k)
        if b == 0 and isinstance(k, sp.Basic):
            return e                                  # the limit needs a numeric k
        return sp.limit(e, B, 0, "+") if b == 0 else e
    ks = np.asarray(k)
    if ks.dtype.kind not in "iu" or np.any(ks < 0):
        raise ValueError(f"k must be an integer >= 0 or an array of them, got {k!r}")
    f = _numeric(attention, "clean")
    diffusion = _expression(attention, False) - _expression(attention, True)    # L/kappa

    def one(j):
        if j == 0:
            return 0.0
        drift = _at_zero(attention, "clean", j, dd) if b == 0 else float(f(j, dd, mpmath.mpf(b), 1))
        return drift if kap is None else drift - float(diffusion.subs({K: j, D: dd, KAPPA: kap}))

    out = np.array([one(int(j)) for j in ks.ravel()]).reshape(ks.shape)
    return float(out) if out.ndim == 0 else out


def mean_field_rates(k, beta, kappa=None, attention="softmax"):
    """lambda_k on the circle (d = 2): ``k^2 (I_k(beta)/beta - 1/kappa)``
    (unnormalized), ``k^2 (I_k(beta)/(beta I_0(beta)) - 1/kappa)`` (softmax) -
    :func:`growth_rate` at d = 2, derived, not typed in.

    >>> round(mean_field_rates(1, 0.0, 2.0), 12)     # Kuramoto threshold kappa = 2
    0.0
    """
    return growth_rate(k, beta, kappa, 2, attention)
