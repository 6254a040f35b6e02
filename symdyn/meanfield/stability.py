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

Numbers, for any ``d`` in ``[2, 1e300]`` (:func:`dimension`): each law is put in
its :func:`series_form` (``I_nu`` as ``0F1(; nu+1; beta^2/4)``, the Gamma
functions cancelled: softmax ``kappa_c = d 0F1(; d/2; beta^2/4) / 0F1(; d/2+1;
beta^2/4) ~ d + beta^2/d``) and evaluated in mpmath with ``d`` exact
(:func:`evaluate`: in floats ``d/2 - 1 == d/2`` from ``d = 2**54`` on); at
``beta = 0`` the limit is a closed form in ``d`` (:func:`zero_limit`), never a
sympy limit at a given ``d``.

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


#: the largest dimension d: kappa_c is about d and must be a float
MAX_D = 10 ** 300


def dimension(d, low: int = 2) -> int:
    """``d`` as an integer in ``[low, 10**300]``, else a ValueError naming ``d``."""
    dd = integer(d, "d", low)
    if dd > MAX_D:
        raise ValueError(f"d must be an integer in [{low}, 1e300] (the critical kappa, about d, "
                         f"and the rates, about d/kappa times k(k+d-2), are floats), got "
                         f"{shown(d)}")
    return dd


def series_form(expr: sp.Expr) -> sp.Expr:
    """``expr`` with each ``I_nu(beta)`` written as its series,
    ``(beta/2)^nu / Gamma(nu+1) 0F1(; nu+1; beta^2/4)``, and each
    ``Gamma(d/2 + c)`` as ``Gamma(d/2) (d/2)_c``: sympy cancels the powers
    ``beta^{d/2}`` and the Gamma functions, leaving rising factorials and
    ``0F1`` of order about ``d/2``, cheap in mpmath at any ``d`` (softmax
    ``kappa_c = d 0F1(; d/2; beta^2/4) / 0F1(; d/2+1; beta^2/4)``,
    unnormalized ``d / 0F1(; d/2+1; beta^2/4)``)."""
    out = expr.replace(sp.besseli, lambda nu, x: (x / 2) ** nu / sp.gamma(nu + 1)
                       * sp.hyper([], [nu + 1], x ** 2 / 4))
    out = sp.gammasimp(sp.powsimp(out, force=True))
    out = out.replace(lambda e: isinstance(e, sp.gamma) and not (e.args[0] - D / 2).has(D),
                      lambda e: sp.gamma(D / 2) * sp.rf(D / 2, e.args[0] - D / 2))
    out = sp.factor(sp.powsimp(sp.powsimp(out, force=True, combine="exp"), force=True))
    if out.has(sp.gamma, sp.besseli):
        raise ValueError(f"no series form without Gamma functions: {out}")
    return out


def _hyper(a, b, z):
    """mpmath's ``hyper``, summing the series where its terms fall by 4x from the start
    (``0F1(; b; z)``, ``b > 4|z|``: mpmath would take its expansion in ``1/z``, slow
    at ``b = 5e299``; ``benchmarks/meanfield.py``)."""
    if not a and len(b) == 1 and b[0] > 4 * abs(z):
        return mpmath.hyper(a, b, z, force_series=True)
    return mpmath.hyper(a, b, z)


def lambdify_series(args, expr):
    """:func:`series_form` of ``expr`` as an mpmath function of ``args``."""
    return sp.lambdify(args, series_form(expr), modules=[{"hyper": _hyper}, "mpmath"])


@cache
def _numeric(attention: str, which: str):
    expr = (critical_law(attention).subs(K, 1) if which == "critical"
            else _expression(attention, which == "noisy"))
    return lambdify_series((K, D, B, KAPPA), expr)


def evaluate(f, k: int, d: int, *args):
    """``f(k, d, *args)`` (a function lambdified for mpmath) at a working
    precision of 64 bits beyond ``d``'s and ``k``'s lengths: the Bessel
    orders ``k + d/2 - 1`` are then exact (in floats ``d/2 - 1 == d/2`` from
    ``d = 2**54`` on, and ``a_0/a_1`` came out 1 at ``d = 1e17``)."""
    bits = 64 + max(53, int(d).bit_length() + int(k).bit_length())
    with mpmath.workprec(bits):
        return f(mpmath.mpf(k), mpmath.mpf(d), *(mpmath.mpf(a) for a in args))


def _leading(expr: sp.Expr) -> sp.Expr:
    """``expr`` with each ``I_nu(beta)`` replaced by its leading term
    ``(beta/2)^nu / Gamma(nu + 1)`` (the first term of its series)."""
    return expr.replace(sp.besseli, lambda nu, x: (x / 2) ** nu / sp.gamma(nu + 1))


@lru_cache(maxsize=256)
def zero_limit(attention: str, which: str, kk: int) -> sp.Expr:
    """The beta -> 0 limit of kappa_k (``which="critical"``) or of the
    noise-free rate (``"clean"``) at degree ``kk``, a closed form in ``d``.

    Both are products of powers of ``beta``, Gamma functions and Bessel
    functions ``I_nu(beta)``, ``nu >= 0``; each ``I_nu(beta)`` is its leading
    term times ``1 + O(beta^2)``, so the limit is that of the product with the
    leading terms, taken by sympy with ``d`` a symbol (never a sympy limit at
    a given ``d``, which sympy cannot do at large ``d``). Softmax and
    unnormalized kappa_1: ``d``; rate of ``k = 1``: ``(d - 1)/d``, ``k >= 2``: 0."""
    expr = critical_law(attention) if which == "critical" else _expression(attention, False)
    expr = expr.subs(K, kk)
    factors = sp.Mul.make_args(sp.powsimp(expr, force=True))
    if any(f.is_Add and f.has(sp.besseli) for f in factors):
        raise ValueError("the law is not a product of Bessel functions: no term-wise limit")
    lead = sp.gammasimp(sp.powsimp(_leading(expr), force=True))
    out = sp.limit(lead, B, 0, "+")
    return sp.factor(sp.simplify(sp.powsimp(sp.expand_power_base(out, force=True), force=True)))


@lru_cache(maxsize=256)
def _zero_numeric(attention: str, which: str, kk: int):
    return sp.lambdify((K, D), zero_limit(attention, which, kk), modules="mpmath")


def _at_zero(attention: str, which: str, kk: int, dd: int) -> float:
    """:func:`zero_limit` at ``d = dd``, evaluated in mpmath (exactly for any ``d``)."""
    return float(evaluate(_zero_numeric(attention, which, kk), kk, dd))


def _at_d(expr: sp.Expr, dd: int) -> sp.Expr:
    """``expr`` at ``d = dd``; above ``d = 1000`` a law with ``2**(d/2)`` or
    ``Gamma(d/2)`` is left unevaluated (sympy would expand them into exact
    integers of ``d`` digits)."""
    grows = expr.has(sp.gamma) or any(p.exp.has(D) for p in expr.atoms(sp.Pow))
    if dd <= 1000 or not grows:
        return expr.subs(D, dd)
    with sp.evaluate(False):
        return expr.subs(D, sp.Integer(dd))


def _check(beta_, d_, attention, kappa_=None):
    b = number(beta_, "beta", low=0)
    dd = dimension(d_)
    check_attention(attention)
    kap = inverse_noise(kappa_)
    return b, dd, kap


def critical_kappa(beta, d, attention="softmax", symbolic=False):
    """The kappa (inverse noise level) above which the uniform law on S^{d-1}
    is linearly unstable: ``beta/a_1`` (unnormalized), ``beta a_0/a_1``
    (softmax), ``a_k`` the Funk-Hecke eigenvalues derived in this module.

    ``beta >= 0``, integer ``2 <= d <= 1e300`` (``critical_kappa(1, 10**17)``
    is ``1e17``: softmax ``kappa_c = d + beta I_{d/2+1}/I_{d/2} ~ d + beta^2/d``),
    evaluated in mpmath with ``d`` exact; ``beta = 0``: the limit, ``d``, in
    closed form (:func:`zero_limit`). ``symbolic=True``: the sympy expression
    (``beta`` and ``d`` may then be sympy symbols; beta = 0 gives the limit;
    above ``d = 1000`` the expression is left unevaluated).
    Floats underflow to 0 for the unnormalized kernel at beta >~ 700.
    """
    check_attention(attention)
    if symbolic not in (True, False):
        raise ValueError(f"symbolic must be True or False, got {shown(symbolic)}")
    if symbolic and (isinstance(beta, sp.Basic) or isinstance(d, sp.Basic)):
        return critical_law(attention).subs(K, 1).subs({B: beta, D: d}, simultaneous=True)
    b, dd, _ = _check(beta, d, attention)          # before the derivation: refused at once
    if symbolic:
        if b == 0:
            return _at_d(zero_limit(attention, "critical", 1), dd)
        return sp.powsimp(_at_d(critical_law(attention).subs(K, 1), dd).subs(
            B, sp.nsimplify(b)))
    if b == 0:
        return _at_zero(attention, "critical", 1, dd)
    return float(evaluate(_numeric(attention, "critical"), 1, dd, b, 1))


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
        subs = {B: sp.nsimplify(b)} if b else {}
        if kap is not None:
            subs[KAPPA] = sp.nsimplify(kap)
        if b == 0 and not isinstance(k, sp.Basic):
            kk = integer(k, "k", 0)
            drift = zero_limit(attention, "clean", kk) if kk else sp.Integer(0)
            noise = (_expression(attention, False) - _expression(attention, True)).subs(K, kk)
            e = drift - (noise.subs(subs) if kap is not None else 0)
            return sp.simplify(_at_d(e, dd))
        e = _at_d(_expression(attention, kap is not None), dd).subs(subs)
        return e if isinstance(k, sp.Basic) else e.subs(K, k)   # beta = 0, symbolic k: kept
    ks = np.asarray(k)
    if ks.dtype.kind not in "iu" or np.any(ks < 0):
        raise ValueError(f"k must be an integer >= 0 or an array of them, got {k!r}")
    f = _numeric(attention, "clean")
    diffusion = sp.lambdify((K, D, KAPPA), _expression(attention, False)
                            - _expression(attention, True), modules="mpmath")   # L/kappa

    def one(j):
        if j == 0:
            return 0.0
        drift = _at_zero(attention, "clean", j, dd) if b == 0 else float(evaluate(f, j, dd, b, 1))
        return drift if kap is None else drift - float(evaluate(diffusion, j, dd, kap))

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
