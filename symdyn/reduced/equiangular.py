"""The symbolic reduction of the dynamics to an equiangular configuration.

Procedure (``n`` stays a symbol throughout):

1. Split the tokens into the classes ``{1}``, ``{2}`` and ``rest``
   (``n - 2`` tokens). A vector is a combination of the class sums
   :math:`S_c = \\sum_{j \\in c} \\theta_j`; their Gram matrix follows from
   :math:`\\langle\\theta_i, \\theta_j\\rangle = \\gamma` (``i != j``) and ``1``.
2. The attention of token ``k`` sums the kernel over classes: every member of
   a class ``c`` has the inner product :math:`\\langle\\theta_k, S_c\\rangle/|c|`
   with :math:`\\theta_k`, so
   :math:`A_k = \\sum_c \\kappa(\\langle\\theta_k,S_c\\rangle/|c|)\\,S_c / Z_k`
   with :math:`\\kappa(u) = e^{\\beta\\tau(t) u}` (:math:`\\tau` the scheme's
   temperature law, ``1`` for most) and :math:`Z_k = \\sum_c |c|\\,\\kappa`
   (softmax) or :math:`Z_k = n` (unnormalized kernel).
3. :math:`a_k = \\langle A_k,\\theta_k\\rangle`, :math:`|A_k|`, the speed
   :math:`s_k` and the radial rate come from the scheme at these values, and
   :math:`\\dot\\theta_k = (A_k - a_k\\theta_k)/s_k`.
4. :math:`\\dot\\gamma = \\langle\\dot\\theta_1,\\theta_2\\rangle
   + \\langle\\theta_1,\\dot\\theta_2\\rangle` and :math:`\\dot r = \\rho`.

Nothing here knows which scheme it reduces: custom schemes work unchanged.

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from ..base.budget import complete_cache, time_limit, within
from ..base.checks import check_attention
from ..model.display import formula_table, formula_text, latex
from ..model.expressions import value
from ..model.guards import LIMITS, ExprLike, in_domain, substitute
from ..model.powers import split_power
from ..model.registry import SchemeLike
from ..model.registry import scheme as get_scheme
from ..model.scheme import Scheme
from ..model.symbols import ALL_SYMBOLS, A_norm, a, gamma, n
from ..model.symbols import beta as BETA


@dataclass(frozen=True, kw_only=True)
class Reduction:
    """The closed ODE of an equiangular configuration.

    Attributes
    ----------
    scheme : Scheme
    attention : str
    gamma_dot, r_dot : sympy.Expr
        :math:`\\dot\\gamma` and :math:`\\dot r` in ``gamma, r, t, n, beta``.
    a, A_norm : sympy.Expr
        :math:`a_k` and :math:`|A_k|` of the equiangular configuration.
    token_speed : sympy.Expr
        :math:`|\\dot\\theta_k|`.
    beta : sympy.Expr
        The inverse temperature used (the symbol ``beta`` unless given).

    Examples
    --------
    >>> import symdyn as sd
    >>> red = sd.reduce("pre-ln")
    >>> red.r_dot.has(sd.symbols.gamma), red.at(gamma=1).gamma_dot
    (True, 0)
    """

    scheme: Scheme
    attention: str
    gamma_dot: sp.Expr
    r_dot: sp.Expr
    a: sp.Expr
    A_norm: sp.Expr
    token_speed: sp.Expr
    beta: sp.Expr

    def at(self, **values) -> Reduction:
        """This reduction with numbers (or expressions) for its symbols:
        ``red.at(n=8, beta=1)``. Names are those of :mod:`symdyn.model.symbols` and
        the scheme's free parameters; values go through the safe parser.

        (``red.gamma_dot.subs({Symbol("n"): 8})`` does nothing: symdyn's
        symbols carry assumptions, so a bare ``Symbol("n")`` is another
        symbol. Use this method, or the symbols in :mod:`symdyn.model.symbols`.)

        Examples
        --------
        >>> import symdyn as sd
        >>> sd.reduce("post-ln").at(n=2, beta=0).gamma_dot
        1 - gamma**2
        """
        known = {**ALL_SYMBOLS, **{s.name: s for s in self.scheme.symbols}}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a symbol of the reduction "
                             f"(choose among {', '.join(known)})")
        sub = {known[k]: in_domain(value(v, k, ALL_SYMBOLS), k) for k, v in values.items()}
        if n in sub and gamma in sub and (sub[gamma] + 1 / (sub[n] - 1)).is_negative:
            raise ValueError(f"gamma must lie in [-1/(n-1), 1] = [{-1 / (sub[n] - 1)}, 1] "
                             f"for n = {sub[n]}, got {sub[gamma]}")
        names = ", ".join(values)
        fields = ("gamma_dot", "r_dot", "a", "A_norm", "token_speed", "beta")
        # Substituted within the parser's limits; simplified, in order, while
        # budget.SECONDS["tidy"] lasts; the rest left as substituted (equal).
        laws = {f: substitute(getattr(self, f), sub, names) for f in fields}
        tidy = dict(laws)

        def simplify_all():
            for f in fields:
                tidy[f] = sp.simplify(laws[f])
        within(simplify_all, otherwise=None)
        return replace(self, **tidy)

    def __str__(self) -> str:
        return formula_text(f"Reduction of {self.scheme.name} ({self.attention} attention)", [
            ("d gamma/dt =", self.gamma_dot), ("d r/dt =", self.r_dot), ("a_k =", self.a),
            ("|A_k| =", self.A_norm), ("|d theta_k/dt| =", self.token_speed)])

    def _repr_latex_(self) -> str:
        return formula_table(f"{self.scheme.name}, {self.attention} attention", [
            (r"\dot\gamma =", latex(self.gamma_dot)), (r"\dot r =", latex(self.r_dot)),
            ("a_k =", latex(self.a)), (r"\lvert A_k\rvert =", latex(self.A_norm)),
            (r"\lvert\dot\theta_k\rvert =", latex(self.token_speed))])


class Frame:
    """Class sums :math:`S_c` of a symmetric configuration and their inner products.

    ``size[c]`` is the number of tokens in class ``c`` and ``gram(c, c2)`` is
    :math:`\\langle S_c, S_{c2}\\rangle`; every member of a class must have the
    same cosine with a token whose class is a single point (a class of size 1,
    or coincident tokens). The default is the equiangular configuration:
    classes ``{1}``, ``{2}``, ``rest`` and
    :math:`\\langle S_c, S_c\\rangle = m + m(m-1)\\gamma`,
    :math:`\\langle S_c, S_{c2}\\rangle = m\\,m_2\\,\\gamma`.
    """

    def __init__(self, size: dict | None = None, gram=None):
        self.size = size or {"1": sp.Integer(1), "2": sp.Integer(1), "rest": n - 2}
        self.gram = gram or self._equiangular

    def _equiangular(self, c, c2):
        m = self.size[c]
        return m + m * (m - 1) * gamma if c == c2 else m * self.size[c2] * gamma

    def point(self, k: str) -> dict:
        """The direction :math:`\\theta_k = S_k / |k|` of a token of the point class ``k``."""
        return {k: sp.Integer(1) / self.size[k]}

    def dot(self, u: dict, v: dict) -> sp.Expr:
        total = sp.Integer(0)
        for c, x in u.items():
            for c2, y in v.items():
                total += x * y * self.gram(c, c2)
        return total

    def attention(self, k: str, kind: str, beta) -> tuple[dict, sp.Expr]:
        """Unnormalized weights ``W`` (per class sum) and ``Z``: A_k = W / Z."""
        theta_k = self.point(k)
        weight = {c: sp.exp(beta * sp.cancel(self.dot(theta_k, {c: 1}) / m))
                  for c, m in self.size.items()}
        if kind == "softmax":
            Z = tidy(sp.Add(*(self.size[c] * w for c, w in weight.items())))
        else:
            Z = n
        return weight, Z


def tidy(expr: sp.Expr) -> sp.Expr:
    """Collect a polynomial in the kernel values ``exp(.)``, factor coefficients."""
    expr = sp.expand(expr)
    kernels = sorted(expr.atoms(sp.exp), key=sp.default_sort_key)
    if not kernels:
        return sp.factor(expr)
    try:
        poly = sp.Poly(expr, *kernels)
    except sp.PolynomialError:
        return sp.factor(expr)
    return sp.Add(*(sp.factor(coeff) * sp.Mul(*(k**e for k, e in zip(kernels, monom, strict=True)))
                    for monom, coeff in poly.terms()))


def tidy_factors(expr: sp.Expr) -> sp.Expr:
    """:func:`tidy` applied to each factor (and square-root base) of a product;
    a power of a product is split first (:func:`~symdyn.model.powers.split_power`)."""
    def one(f):
        if f.is_Pow:
            return tidy(f.base) ** f.exp
        return tidy(f) if f.atoms(sp.exp) else f
    return sp.Mul(*(one(g) for f in sp.Mul.make_args(expr)
                    for g in sp.Mul.make_args(split_power(f))))


def combine(x: dict, y: dict, cx=1, cy=1) -> dict:
    keys = set(x) | set(y)
    return {k: cx * x.get(k, 0) + cy * y.get(k, 0) for k in keys}


def reduce(scheme: SchemeLike, attention: str = "softmax",
           beta: ExprLike = BETA) -> Reduction:
    """Derive the closed ODE for ``(gamma, r)`` under a symmetric start.

    Parameters
    ----------
    scheme : str or Scheme
        A built-in name or a :class:`~symdyn.model.scheme.Scheme`.
    attention : {"softmax", "unnormalized"}
        Softmax attention, or the kernel with denominator ``n``.
    beta : sympy.Expr, optional
        The inverse temperature; an expression in ``n`` (e.g. ``c*log(n)``)
        is allowed.

    Examples
    --------
    >>> import symdyn as sd
    >>> red = sd.reduce("post-ln", attention="unnormalized")
    >>> sp = __import__("sympy")
    >>> sp.factor(red.gamma_dot)
    -2*(gamma - 1)*(gamma*n - gamma + 1)*exp(beta*gamma)/n
    """
    s = get_scheme(scheme)
    check_attention(attention)
    beta = in_domain(value(beta, "beta", ALL_SYMBOLS), "beta")
    with time_limit(f"reduce {s.name}"):
        if large_exact(beta):
            return _reduce(s, attention, BETA).at(beta=beta)
        return _reduce(s, attention, beta)


def large_exact(beta) -> bool:
    """A numeric beta beyond ``LIMITS["exponent"]``: ``exp(1000*gamma)`` is a
    polynomial of degree 1000 in ``exp(gamma)`` to sympy's factoring, so such
    a beta is put in after the derivation (``beta = 1000`` takes 0.3 s so,
    and more than a minute otherwise)."""
    return bool(beta.is_number and beta.is_comparable and abs(beta) > LIMITS["exponent"])


@complete_cache(maxsize=256)
def _reduce(s: Scheme, attention: str, beta: sp.Expr) -> Reduction:
    frame = Frame()
    theta = {k: frame.point(k) for k in ("1", "2")}
    law = {k: token_law(frame, k, s, attention, beta) for k in ("1", "2")}
    gamma_dot = (frame.dot(law["1"].velocity, theta["2"])
                 + frame.dot(theta["1"], law["2"].velocity))
    numer, denom = sp.fraction(sp.factor(sp.cancel(gamma_dot)))
    gamma_dot = sp.factor(numer) / tidy_factors(denom)
    one = law["1"]
    return Reduction(scheme=s, attention=attention, gamma_dot=gamma_dot, r_dot=one.r_dot,
                     a=one.a, A_norm=one.A_norm, token_speed=one.token_speed, beta=beta)


@dataclass(frozen=True, kw_only=True)
class TokenLaw:
    """The field at a token of a point class of a :class:`Frame`:
    :math:`\\dot\\theta_k` (per class sum), :math:`a_k`, :math:`|A_k|`,
    :math:`\\dot r_k` and :math:`|\\dot\\theta_k|` (the speed law's ``r`` is
    the token's norm)."""

    velocity: dict
    a: sp.Expr
    A_norm: sp.Expr
    r_dot: sp.Expr
    token_speed: sp.Expr


def token_law(frame: Frame, k: str, s: Scheme, attention: str, beta) -> TokenLaw:
    """:math:`\\dot\\theta_k = P_{\\theta_k} A_k / s_k` at a token of the point
    class ``k`` of ``frame``, with ``A_k`` at :math:`\\beta\\tau(t)`."""
    theta = frame.point(k)
    # A_k = W / Z with Z > 0 a sum of positive kernel values (or n), so
    # |A_k| = sqrt(<W, W>) / Z and |P A_k| = sqrt(<W,W> - <W,theta>^2) / Z.
    W, Z = frame.attention(k, attention, beta * s.temperature)
    w_theta = tidy(frame.dot(W, theta))
    a_k = w_theta / Z
    norm_k = sp.sqrt(tidy(frame.dot(W, W))) / Z
    values = {a: a_k, A_norm: norm_k}
    speed = s.speed.subs(values)
    tangent = combine(W, theta, 1, -w_theta)       # Z * P A_k
    velocity = {c: v / (Z * speed) for c, v in tangent.items()}
    tangent_norm = sp.sqrt(sp.factor(sp.expand(frame.dot(tangent, tangent))))
    return TokenLaw(velocity=velocity, a=a_k, A_norm=norm_k, r_dot=s.radial.subs(values),
                    token_speed=tangent_norm / (Z * speed))


def one_layer_cosine(attention: str = "softmax", beta: ExprLike = BETA) -> sp.Expr:
    """Cosine of two outputs of one attention layer, normalized, on equiangular inputs.

    :math:`\\langle A_1, A_2\\rangle / (|A_1|\\,|A_2|)` in ``gamma`` (the input
    cosine), ``n`` and ``beta``, from the same class-sum algebra as
    :func:`reduce` (the normalizations ``Z`` cancel).

    Examples
    --------
    >>> from symdyn.reduced.equiangular import one_layer_cosine
    >>> from symdyn.model.symbols import beta, gamma, n
    >>> float(one_layer_cosine().subs({gamma: 0, n: 3, beta: 0}))    # uniform weights
    1.0
    """
    check_attention(attention)
    frame = Frame()
    beta = in_domain(value(beta, "beta", ALL_SYMBOLS), "beta")
    exact = beta if large_exact(beta) else None
    beta = BETA if exact is not None else beta
    W1, _ = frame.attention("1", attention, beta)
    W2, _ = frame.attention("2", attention, beta)
    cosine = (tidy(frame.dot(W1, W2))
              / sp.sqrt(tidy(frame.dot(W1, W1)) * tidy(frame.dot(W2, W2))))
    return cosine if exact is None else substitute(cosine, {BETA: exact}, "beta")
