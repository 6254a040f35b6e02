"""Normalization schemes as speed regulators: the registry and custom schemes.

Every scheme moves the token directions by the same normalized attention
field with its own speed factor :math:`s_k`,

.. math:: \\dot\\theta_k = \\frac{1}{s_k} P_{\\theta_k} A_k,
          \\qquad \\dot r_k = \\rho_k,

with :math:`s_k` and the radial rate :math:`\\rho_k` expressions in
``t, r, a, A_norm, n, beta``. A :class:`Scheme` is the single source of truth
for that law: the symbolic reduction and the particle simulator both read it.

Layer 1, model.
"""

from __future__ import annotations

import builtins
import keyword
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import mpmath
import numpy as np
import scipy.special
import sympy as sp
from sympy.core.function import AppliedUndef

from ..base.arithmetic import float_printer, on_floats
from ..base.checks import shown
from .expressions import (
    CONSTANTS,
    FUNCTIONS,
    NUMERIC_MODULES,
    ExprLike,
    lambdify,
    number,
    parse,
    python_names,
    substitute,
)
from .law_limits import SpeedLawError, law_text
from .symbols import ALL_SYMBOLS, SCHEME_SYMBOLS, A_norm, a, r, t


@dataclass(frozen=True)
class LayerRule:
    """One residual layer of step ``h`` at ``t_k = k h`` (docs/model.md, section 2).

    ``update(s, x, h, t_k, A, field)`` returns the next tokens ``(..., n, d)``
    from ``x``: ``A(y)`` is the attention output on tokens ``y`` and
    ``field(x)`` the continuous ``(d theta/dt, dr/dt)`` of the scheme at ``x``.
    Rules compare and hash by name (the sweep cache keys on it).
    """

    name: str
    update: Callable = field(compare=False, repr=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Scheme:
    """A speed law :math:`(s, \\rho)` for the normalized attention dynamics.

    Attributes
    ----------
    name : str
        Registry name (``"post-ln"``, ...) or the user's name for a custom one.
    speed : sympy.Expr
        :math:`s_k` in ``t, r, a, A_norm, n, beta``.
    radial : sympy.Expr
        :math:`\\dot r_k`; zero for schemes that keep tokens on the sphere.
    sphere_until : sympy.Expr
        Tokens are renormalized to ``r = 1`` while ``t < sphere_until``
        (``oo``: always on the sphere; ``0``: never; Mix-LN: ``t_switch``).
    params : tuple
        The parameters the scheme was built with, as ``(name, value)`` pairs.
    layer : LayerRule
        The discrete layer rule (docs/model.md, section 2); custom schemes get
        :data:`GENERIC`: ``theta <- N(theta + h P A / s)``, ``r <- r + h rho``.
    free : tuple
        Free parameters as ``(symbol, default)`` pairs: the symbols stay in
        the laws (and in everything derived from them); numbers are given
        when solving or simulating (see :func:`free_parameters`, :meth:`bind`).

    Examples
    --------
    >>> import symdyn as sd
    >>> s = sd.scheme("peri-ln")
    >>> s.speed, s.radial, s.starts_on_sphere
    (A_norm*r, a/A_norm, False)
    """

    name: str
    speed: sp.Expr
    radial: sp.Expr
    sphere_until: sp.Expr
    params: tuple = field(default=())
    layer: LayerRule = None  # GENERIC, set below (defined after the rules)
    free: tuple = field(default=())

    def __post_init__(self):
        if self.layer is None:
            object.__setattr__(self, "layer", GENERIC)
        elif not isinstance(self.layer, LayerRule):
            raise ValueError(f"layer: expected a LayerRule, got {shown(self.layer)}")

    @property
    def breakpoints(self) -> tuple[float, ...]:
        """Times ``> 0`` where the speed law switches branch (Mix-LN)."""
        return piecewise_breakpoints((self.speed, self.radial))

    def numeric(self):
        """Numpy ``(speed, radial)`` per phase, each ``f(t, r, a, A_norm, n, beta)``.

        Phase ``i`` lies between the ``i``-th breakpoints; its functions
        carry no ``Piecewise`` (see :func:`phase_branches`).
        """
        return _numeric_laws(self)

    @property
    def on_sphere(self) -> bool:
        """True when the tokens never leave the unit sphere."""
        return self.sphere_until == sp.oo

    @property
    def starts_on_sphere(self) -> bool:
        """True when the tokens are renormalized at ``t = 0`` (so ``r(0) = 1``)."""
        return bool(self.sphere_until > 0)

    @property
    def symbols(self) -> tuple[sp.Symbol, ...]:
        """The free parameters' symbols, in declaration order."""
        return tuple(sym for sym, _ in self.free)

    @property
    def defaults(self) -> dict[str, float]:
        """The free parameters' default values, by name."""
        return {sym.name: float(v) for sym, v in self.free}

    def bind(self, **values) -> Scheme:
        """This scheme with numbers for its free parameters (defaults for the
        ones not given): a concrete scheme whose speed is checked positive.

        Examples
        --------
        >>> import symdyn as sd
        >>> fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})
        >>> fam.bind(c=2).speed
        A_norm/(2*t + 1)
        """
        if not self.free:
            if values:
                raise ValueError(f"{', '.join(values)}: {self.name} has no free parameters")
            return self
        unknown = set(values) - set(self.defaults)
        if unknown:
            raise ValueError(f"{', '.join(sorted(unknown))}: not a parameter of {self.name} "
                             f"(its parameters: {', '.join(self.defaults)})")
        sub = {sym: number(values[sym.name], sym.name) if sym.name in values else v
               for sym, v in self.free}
        names = ", ".join(values) or "params"
        speed = substitute(self.speed, sub, names)
        check_positive(speed, names)
        params = tuple((k, substitute(v, sub, names) if isinstance(v, sp.Basic) else v)
                       for k, v in self.params) + tuple((sym.name, v) for sym, v in sub.items())
        return Scheme(self.name, speed, substitute(self.radial, sub, names),
                      self.sphere_until, params, self.layer)

    def undefined(self, expr: sp.Expr) -> set:
        """What keeps ``expr`` (one of this scheme's laws) from being evaluated:
        undefined functions (``alpha(t)``) and symbols other than the model's
        and this scheme's free parameters."""
        known = set(SCHEME_SYMBOLS.values()) | set(self.symbols)
        return expr.atoms(AppliedUndef) | (expr.free_symbols - known)

    def holding(self, atoms) -> list[str]:
        """The names of this scheme's parameters (``alpha``, ...) whose values contain ``atoms``."""
        return [k for k, v in self.params if isinstance(v, sp.Basic) and v.has(*atoms)]

    def law_of_t(self, name: str) -> Callable[[float], float]:
        """A law of ``t`` alone (``"speed"`` or a parameter such as ``"alpha"``)
        as a float function. It refuses values outside the law's range: a
        speed must be > 0 (``+inf``: velocity 0), a parameter such as nGPT's
        ``alpha`` finite and >= 0 (``alpha = 0``: velocity 0)."""
        return _law_of_t(self, name)

    def __str__(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.params)
        extra += "".join(f", {sym}: default {v}" for sym, v in self.free)
        return f"{self.name}(speed={self.speed}, radial={self.radial}{extra})"

    def _repr_latex_(self) -> str:
        from .display import formula_table, latex

        rows = [("s =", latex(self.speed)), (r"\dot r =", latex(self.radial))]
        rows += [(rf"\text{{{k}}} =", latex(v)) for k, v in self.params
                 if isinstance(v, sp.Basic)]
        rows += [(rf"{latex(sym)} =", rf"{float(v):g}\ \text{{(default)}}") for sym, v in self.free]
        return formula_table(self.name, rows)


# --------------------------------------------------------------------------
# layer rules: x_{k+1} from x_k (N(x) = x/|x|, A the attention, t_k = k h)
# --------------------------------------------------------------------------

def unit(x: np.ndarray) -> np.ndarray:
    """:math:`N(x) = x / |x|` along the last axis."""
    return x / np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]


def _post_ln_rule(s, x, h, tk, A, field):            # x <- N(x + h A(x))
    return unit(x + h * A(x))


def _pre_ln_rule(s, x, h, tk, A, field):             # x <- x + h A(N(x))
    return x + h * A(unit(x))


def _mix_ln_rule(s, x, h, tk, A, field):             # post-ln, then pre-ln
    before = tk < float(dict(s.params)["t_switch"])
    return (_post_ln_rule if before else _pre_ln_rule)(s, x, h, tk, A, field)


def _peri_ln_rule(s, x, h, tk, A, field):            # x <- x + h N(A(N(x)))
    return x + h * unit(A(unit(x)))


def _ngpt_rule(s, x, h, tk, A, field):               # x <- N(x + h alpha (N(A(x)) - x))
    return unit(x + h * s.law_of_t("alpha")(tk) * (unit(A(x)) - x))


def _sphere_rule(s, x, h, tk, A, field):             # x <- N(x + h A(x) / s(t))
    return unit(x + h * A(x) / s.law_of_t("speed")(tk))


def speed_fault(s, value, time, what="s") -> str:
    """Why a speed law cannot be used at ``time`` (``what`` took ``value``)."""
    return (f"the speed law s = {s.speed} of {s.name} fails at t = {float(time):.6g} "
            f"({what} = {value:.6g}; it must be > 0 (or +inf) at every simulated time)")


def radial_fault(s, value, time) -> str:
    """Why a radial law cannot be followed past ``time`` (``r`` reached ``value``)."""
    return (f"the radial law dr/dt = {s.radial} of {s.name} drives r through zero "
            f"(r = {value:.3g} at t = {float(time):.6g})")


def _generic_rule(s, x, h, tk, A, field):
    # theta <- N(theta + h P A / s), r <- r + h rho: explicit Euler on the field
    dtheta, dr = field(x)
    r_next = np.linalg.norm(x, axis=-1) + h * dr
    if np.any(r_next <= 0):
        raise ArithmeticError(f"simulate: {radial_fault(s, r_next.min(), tk + h)}")
    return r_next[..., None] * unit(unit(x) + h * dtheta)


GENERIC = LayerRule("generic", _generic_rule)


def _post_ln() -> Scheme:
    return Scheme("post-ln", sp.Integer(1), sp.Integer(0), sp.oo,
                  layer=LayerRule("post-ln", _post_ln_rule))


def _pre_ln() -> Scheme:
    return Scheme("pre-ln", r, a, sp.Integer(0), layer=LayerRule("pre-ln", _pre_ln_rule))


def _mix_ln(t_switch=1.0) -> Scheme:
    ts = _nonnegative_number(t_switch, "t_switch")
    speed = sp.Piecewise((1, t < ts), (r, True))
    radial = sp.Piecewise((0, t < ts), (a, True))
    return Scheme("mix-ln", speed, radial, ts, (("t_switch", ts),),
                  layer=LayerRule("mix-ln", _mix_ln_rule))


def _peri_ln() -> Scheme:
    return Scheme("peri-ln", r * A_norm, a / A_norm, sp.Integer(0),
                  layer=LayerRule("peri-ln", _peri_ln_rule))


def _ngpt(alpha="1", params=None) -> Scheme:
    free = free_parameters(params)
    alpha_t = parse(alpha, "alpha", {"t": t, **_symbols(free)}, functions_of_t=True)
    _check_used(free, {"alpha": alpha_t})
    check_schedule(_at_defaults(alpha_t, free), "alpha")
    return Scheme("ngpt", A_norm / alpha_t, sp.Integer(0), sp.oo,
                  (("alpha", alpha_t),), layer=LayerRule("ngpt", _ngpt_rule), free=free)


def _sqrt_scaling() -> Scheme:
    # This project's model of a 1/sqrt(depth) residual scale on the sphere:
    # x <- N(x + h A(x) / sqrt(1 + t)).  Swap the speed here to change it.
    return Scheme("sqrt-scaling", sp.sqrt(1 + t), sp.Integer(0), sp.oo,
                  layer=LayerRule("sqrt-scaling", _sphere_rule))


#: nGPT step-size schedules of the paper's Figure 3 (alpha_t as text), used by
#: the figures and the terminal-velocity check.
NGPT_SCHEDULES = {"constant": "1", "root": "sqrt(1 + t)", "linear": "1 + t",
                  "sin/cos mix": "sin(4*t)**2*(1 + t) + cos(4*t)**2"}

_REGISTRY = {
    "post-ln": _post_ln,
    "pre-ln": _pre_ln,
    "mix-ln": _mix_ln,
    "peri-ln": _peri_ln,
    "ngpt": _ngpt,
    "sqrt-scaling": _sqrt_scaling,
}


# --------------------------------------------------------------------------
# free parameters
# --------------------------------------------------------------------------



def _shadowed(name: str) -> str | None:
    """Why ``name`` cannot be a parameter, or None."""
    if not (name.isidentifier() and name.isascii()) or keyword.iskeyword(name) \
            or name.startswith("_"):
        return "not a Python identifier (letters, digits, '_'; no leading '_' or digit)"
    if name in ALL_SYMBOLS or name in ("epsilon", "B", "E", "r_0", "s", "u", "gamma0", "r0"):
        return "a symbol of the model (t, r, a, A_norm, n, beta, gamma, C, epsilon, ...)"
    if name in FUNCTIONS or name in CONSTANTS:
        return "a function or constant of expressions"
    if name in python_names() or any(hasattr(m, name) for m in (
            np, scipy.special, mpmath, math, builtins)):
        return "a name of numpy, scipy, mpmath or Python that compiled laws use"
    return None


def free_parameters(params: Mapping | None) -> tuple:
    """``params`` (``{"c": 0.5}``) as a Scheme's ``free``: ``(symbol, default)``
    pairs, with names checked (:func:`_shadowed`) and finite real defaults."""
    if params is None:
        return ()
    if not isinstance(params, Mapping):
        raise ValueError(f"params: expected a dict of name: default value, got {shown(params)}")
    free = []
    for name, default in params.items():
        why = _shadowed(name) if isinstance(name, str) else "not a string"
        if why:
            raise ValueError(f"params: {shown(name)} cannot name a parameter: {why}")
        free.append((sp.Symbol(name, real=True), number(default, f"params[{shown(name)}]")))
    return tuple(free)


def run_parameters(s: Scheme, params, legacy: dict, entry: str, options) -> dict:
    """The free-parameter values of a run of ``s``: ``params`` (a dict; its
    own namespace) and, for one release, values passed beside the run
    options (``solve(..., c=0.5)``) with a ``DeprecationWarning``. A keyword
    that is neither an option of ``entry`` nor a parameter of ``s`` is a
    mistyped option (``save_X``), said so with the options."""
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ValueError(f"params: expected a dict of parameter name: value, got {shown(params)}")
    stray = [k for k in legacy if k not in s.defaults]
    if stray:
        raise ValueError(f"{law_text(', '.join(stray), 60)}: not an argument of {entry} (its "
                         f"arguments: {', '.join(options)}); free parameters of a scheme "
                         f"go in params={{...}}")
    both = set(params) & set(legacy)
    if both:
        raise ValueError(f"{', '.join(sorted(both))}: given twice (params= and a keyword)")
    if legacy:
        warnings.warn(f"{entry}(..., {', '.join(legacy)}=...): pass a scheme's parameters as "
                      f"params={{...}}; beside the options they go in the next release",
                      DeprecationWarning, stacklevel=3)
    return {**params, **legacy}


def _symbols(free) -> dict:
    return {sym.name: sym for sym, _ in free}


def _at_defaults(expr, free):
    return substitute(expr, dict(free), "params")


def _check_used(free, laws: dict) -> None:
    for sym, _ in free:
        if not any(law.has(sym) for law in laws.values()):
            raise ValueError(f"params: {shown(sym.name)} appears in no law "
                             f"({', '.join(f'{k} = {v}' for k, v in laws.items())})")


def _nonnegative_number(value, argument: str) -> sp.Expr:
    try:
        x = number(value, argument) if not isinstance(value, str) else None
    except ValueError as exc:
        if "exceeds the limit" in str(exc):     # 1e300: the digit limit says why
            raise
        x = None
    if x is None or not x.is_number or x.is_negative:
        raise ValueError(f"{argument} must be a finite number >= 0, got {shown(value)}")
    return x


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
    point, v = _witness(speed, argument, lambda v: (v.imag == 0) & (v.real > 0))
    if point is not None:
        what = "not real" if np.isnan(v) or v.imag != 0 else \
            "not finite" if not np.isfinite(v) else f"{v.real:.6g} <= 0"
        raise ValueError(f"{argument}: must be positive for all t >= 0; {speed} is "
                         f"{what} at {point}")


def check_schedule(alpha: sp.Expr, argument: str) -> None:
    """Refuse a schedule such as nGPT's ``alpha(t)`` (the speed is
    ``A_norm / alpha``) that is decidably negative, infinite, not real, or
    zero throughout. ``alpha >= 0`` with zeros (a warm-up ``alpha = t`` at
    ``t = 0``) is a schedule: where it vanishes the tokens stand still.
    Laws with undefined functions (``alpha(t)``) pass."""
    if alpha.is_zero:
        raise ValueError(f"{argument}: must be >= 0 and not identically 0, got {alpha} "
                         f"(the speed A_norm/{alpha} is not defined)")
    if alpha.is_positive or alpha.atoms(AppliedUndef):
        return
    if alpha.is_negative:
        raise ValueError(f"{argument}: must be >= 0, got {alpha} (negative)")
    point, v = _witness(alpha, argument,
                        lambda v: (v.imag == 0) & (v.real >= 0) & np.isfinite(v.real))
    if point is not None:
        what = "not real" if np.isnan(v) or v.imag != 0 else \
            "not finite" if not np.isfinite(v) else f"{v.real:.6g} < 0"
        raise ValueError(f"{argument}: must be finite and >= 0 for all t >= 0 (zero at "
                         f"instants is fine); {alpha} is {what} at {point}")


def _witness(law: sp.Expr, argument: str, good):
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


#: A scheme argument: a built-in name or a Scheme.
SchemeLike = str | Scheme


def schemes() -> list[str]:
    """The names of the built-in schemes.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.schemes()
    ['post-ln', 'pre-ln', 'mix-ln', 'peri-ln', 'ngpt', 'sqrt-scaling']
    """
    return list(_REGISTRY)


def scheme(name: SchemeLike, **params) -> Scheme:
    """A built-in scheme by name, with its parameters.

    Parameters
    ----------
    name : str or Scheme
        One of :func:`schemes`; a :class:`Scheme` is returned unchanged.
    **params
        ``ngpt``: ``alpha`` (expression in ``t``, default ``"1"``) and
        ``params``, a dict of free parameters of ``alpha`` with their
        defaults (see :func:`custom_scheme`);
        ``mix-ln``: ``t_switch`` (number >= 0, default ``1.0``).

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.scheme("ngpt", alpha="1 + t").speed
    A_norm/(t + 1)
    >>> sd.scheme("ngpt", alpha="a0 + a1*t", params={"a0": 1, "a1": 0.5}).speed
    A_norm/(a0 + a1*t)
    """
    if isinstance(name, Scheme):
        if params:
            raise ValueError("params: cannot re-parametrize a Scheme object")
        return name
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"scheme: unknown scheme {shown(name)}; choose one of "
                         f"{', '.join(_REGISTRY)} (or sd.custom_scheme)")
    if params.get("params") and name != "ngpt":
        raise ValueError(f"params: scheme {shown(name)} has no expression to hold free "
                         f"parameters (nGPT's alpha or sd.custom_scheme do)")
    if "params" in params and name != "ngpt":
        params.pop("params")
    try:
        return _REGISTRY[name](**params)
    except TypeError:
        raise ValueError(f"params: scheme {shown(name)} takes no parameter(s) "
                         f"{sorted(params)}") from None


def custom_scheme(name: str, speed: ExprLike, radial: ExprLike | None = None,
                  params: Mapping | None = None) -> Scheme:
    """A scheme of your own: a speed :math:`s` and optionally a radial rate.

    Parameters
    ----------
    name : str
        A label for reports.
    speed : str or sympy.Expr
        :math:`s_k` in ``t, r, a, A_norm, n, beta``; must be positive.
    radial : str or sympy.Expr, optional
        :math:`\\dot r_k` in the same symbols. ``None`` keeps the tokens on the
        unit sphere (``r = 1``).
    params : dict, optional
        Free parameters of the laws with their default values, e.g.
        ``{"c": 0.5}``: real symbols in every derivation, numbers (scalars
        or batch arrays, keyword arguments named like the parameter) in
        ``solve`` and ``simulate``. A name must be an identifier that is not
        a symbol, function or argument name of symdyn, nor a numpy name.
        The speed must be positive at the defaults.

    Examples
    --------
    >>> import symdyn as sd
    >>> s = sd.custom_scheme("half-peri", speed="sqrt(r*A_norm)", radial="a")
    >>> s.speed
    sqrt(A_norm)*sqrt(r)
    >>> fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})
    >>> fam.speed, fam.defaults
    (A_norm/(c*t + 1), {'c': 0.5})
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, got {shown(name)}")
    free = free_parameters(params)
    allowed = {**SCHEME_SYMBOLS, **_symbols(free)}
    s = parse(speed, "speed", allowed)
    if radial is None:
        s = s.subs(r, 1)
    rho = sp.Integer(0) if radial is None else parse(radial, "radial", allowed)
    _check_used(free, {"speed": s, "radial": rho})
    check_positive(_at_defaults(s, free), "speed")
    return Scheme(name, s, rho, sp.oo if radial is None else sp.Integer(0), free=free)


# --------------------------------------------------------------------------
# piecewise laws in t, phase by phase
# --------------------------------------------------------------------------

def piecewise_breakpoints(exprs) -> tuple[float, ...]:
    """Times ``> 0`` at which a ``Piecewise`` condition ``t < c`` switches."""
    points = set()
    for expr in exprs:
        for pw in expr.atoms(sp.Piecewise):
            for _, cond in pw.args:
                for rel in cond.atoms(sp.core.relational.Relational):
                    if rel.lhs == t and rel.rhs.is_number:
                        points.add(float(rel.rhs))
                    elif rel.rhs == t and rel.lhs.is_number:
                        points.add(float(rel.lhs))
                    else:
                        raise ValueError(f"scheme: cannot evaluate condition {rel}; "
                                         f"write conditions as t < number")
    return tuple(sorted(p for p in points if p > 0))


def branch_at(expr, time):
    """``expr`` with every ``Piecewise`` replaced by its branch that holds at
    ``time`` (a number, or ``oo`` for the branch that holds eventually)."""
    def pick(pw):
        for value, cond in pw.args:
            if cond == True or cond.subs(t, time) == True:  # noqa: E712
                return value
        raise ValueError(f"scheme: no branch of {pw} holds at t = {time}")
    return expr.replace(lambda e: isinstance(e, sp.Piecewise), pick)


def phase_branches(expr, breakpoints) -> list:
    """``expr`` with every ``Piecewise`` resolved, one per phase.

    Phase ``i`` is ``[b_i, b_{i+1})`` with ``b_0 = 0``; a step that ends on a
    breakpoint is evaluated with the branch of the phase it lies in.
    """
    edges = (0.0,) + tuple(breakpoints)
    inside = [(lo + hi) / 2 for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    inside.append(edges[-1] + 1.0)
    return [branch_at(expr, sp.nsimplify(x)) for x in inside]


@lru_cache(maxsize=256)
def _numeric_laws(s: Scheme):
    args = tuple(SCHEME_SYMBOLS[k] for k in ("t", "r", "a", "A_norm", "n", "beta"))
    for law, expr in (("speed", s.speed), ("radial", s.radial)):
        loose = s.undefined(expr)
        if loose:      # alpha(t), a symbol of no value: nothing to compile
            names = ", ".join(s.holding(loose) + [law])
            raise ValueError(f"{names}: the {law} law {expr} of {s.name} contains "
                             f"{', '.join(sorted(map(str, loose)))}, which has no "
                             f"numeric value; give a formula to compute with")
    return lambdify_phases(args, (s.speed, s.radial), s.breakpoints)


def lambdify_phases(args, exprs, breakpoints, module: str = "numpy", *,
                    together: bool = False) -> list:
    """Per phase (see :func:`phase_branches`), ``exprs`` compiled as functions of
    ``args``: arrays against scipy and numpy (``module="numpy"``), the same
    code on Python floats (``"float"``, :func:`symdyn.base.arithmetic.on_floats`:
    the same numpy ufuncs, so the same bits), or ``"mpmath"``. A tuple of
    functions per phase; with ``together``, one function per phase that
    returns the list of values, common subexpressions computed once."""
    if module not in ("numpy", "float", "mpmath"):
        raise ValueError(f"module: must be 'numpy', 'float' or 'mpmath', got {shown(module)}")
    floats = module != "mpmath"
    # expressions.lambdify: no undefined function, no Python builtins
    opts = (dict(modules=NUMERIC_MODULES, printer=float_printer()) if floats
            else dict(modules=module))
    done = on_floats if module == "float" else (lambda f: f)
    branches = [phase_branches(e, breakpoints) for e in exprs]
    if together:
        return [done(lambdify(args, list(phase), "scheme", cse=True, **opts))
                for phase in zip(*branches, strict=True)]
    return [tuple(done(lambdify(args, e, "scheme", **opts)) for e in phase)
            for phase in zip(*branches, strict=True)]


@lru_cache(maxsize=256)
def _law_of_t(s: Scheme, name: str):
    laws = {"speed": s.speed, **{k: v for k, v in s.params if isinstance(v, sp.Basic)}}
    if name not in laws:
        raise ValueError(f"name: {shown(name)} is not a law of {s.name} (its laws: "
                         f"{', '.join(laws)})")
    law = laws[name]
    if law.free_symbols - {t}:
        raise ValueError(f"{name}: the law {law} of {s.name} must depend on t alone")
    f = lambdify(t, law, name)

    def value(tk):
        real = (int, float, np.integer, np.floating)
        if isinstance(tk, (bool, np.bool_)) or not isinstance(tk, real) or not np.isfinite(tk):
            raise ValueError(f"t: a law of t takes one finite real time, not {shown(tk)}")
        with np.errstate(all="ignore"):
            v = float(f(np.float64(tk)))        # numpy division: 1/0 = inf, not an error
        if name == "speed" and not v > 0:       # +inf: velocity 0
            raise SpeedLawError(f"{name}: {speed_fault(s, v, tk, name)}")
        if name != "speed" and not (np.isfinite(v) and v >= 0):   # alpha = 0: velocity 0
            raise SpeedLawError(f"{name}: the law {name} = {law} of {s.name} (speed "
                                  f"s = {s.speed}) is {v:.6g} at t = {float(tk):.6g}; it "
                                  f"must be finite and >= 0 at every simulated time")
        return v
    return value
