"""A scheme: the speed law, radial law, temperature law and layer rule of one normalization.

Every scheme moves the token directions by the same normalized attention
field with its own speed factor :math:`s_k`,

.. math:: \\dot\\theta_k = \\frac{1}{s_k} P_{\\theta_k} A_k^{\\beta\\tau(t)},
          \\qquad \\dot r_k = \\rho_k,

with :math:`s_k` and the radial rate :math:`\\rho_k` expressions in
``t, r, a, A_norm, n, beta`` and :math:`\\tau(t)` the temperature law (``1``
unless the scheme rescales the attention's input: the attention then runs at
the inverse temperature :math:`\\beta\\tau(t)`). A :class:`Scheme` is the
single source of truth for these laws: the symbolic reduction and the
particle simulator both read it. An :class:`Entry` is a built-in scheme's
declaration (``symdyn/model/schemes/``, one module each); this module knows no
scheme by name.

Layer 1, model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef

from ..base.checks import shown
from .display import formula_table, latex
from .entry import Style
from .guards import SpeedLawError, lambdify, number, substitute
from .law_checks import check_positive, check_temperature
from .parameters import check_free_values
from .piecewise import lambdify_phases, piecewise_breakpoints
from .symbols import SCHEME_SYMBOLS, t


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
    temperature : sympy.Expr
        :math:`\\tau(t) > 0`: the attention runs at inverse temperature
        :math:`\\beta\\tau(t)` (``1`` unless the scheme rescales the
        attention's input, as LayerNorm Scaling does).
    style, citation
        How figures draw it and where it was published (built-ins: from the
        :class:`Entry`); they do not enter comparisons.

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
    temperature: sp.Expr = sp.Integer(1)
    style: Style | None = field(default=None, compare=False, repr=False)
    citation: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        if self.layer is None:
            object.__setattr__(self, "layer", GENERIC)
        elif not isinstance(self.layer, LayerRule):
            raise ValueError(f"layer: expected a LayerRule, got {shown(self.layer)}")
        if not isinstance(self.temperature, sp.Basic):     # a number; text goes through parse
            object.__setattr__(self, "temperature", number(self.temperature, "temperature"))

    @property
    def tempered(self) -> bool:
        """True when the attention's temperature changes with time (:math:`\\tau \\ne 1`)."""
        return self.temperature != 1

    @property
    def breakpoints(self) -> tuple[float, ...]:
        """Times ``> 0`` where the speed law switches branch (Mix-LN)."""
        return piecewise_breakpoints((self.speed, self.radial))

    def numeric(self):
        """Numpy ``(speed, radial)`` per phase, each ``f(t, r, a, A_norm, n, beta)``.

        Phase ``i`` lies between the ``i``-th breakpoints; its functions
        carry no ``Piecewise`` (see :func:`~symdyn.model.piecewise.phase_branches`).
        """
        return _numeric_laws(self)

    @property
    def on_sphere(self) -> bool:
        """True when the tokens never leave the unit sphere."""
        return self.sphere_until == sp.oo

    @property
    def starts_on_sphere(self) -> bool:
        """True when the tokens are renormalized at ``t = 0`` (so ``r(0) = 1``)."""
        return _positive(self.sphere_until)

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
        [check_free_values(sym, float(sub[sym]), sym.name) for sym in sub]   # N an integer
        names = ", ".join(values) or "params"
        speed = substitute(self.speed, sub, names)
        check_positive(speed, names)
        temperature = substitute(self.temperature, sub, names)
        check_temperature(temperature, names)
        params = tuple((k, substitute(v, sub, names) if isinstance(v, sp.Basic) else v)
                       for k, v in self.params)          # a symbol held (layers=N): not again
        params += tuple((x.name, v) for x, v in sub.items() if x not in dict(self.params).values())
        return replace(self, speed=speed, radial=substitute(self.radial, sub, names),
                       params=params, free=(), temperature=temperature)

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
        """A law of ``t`` alone (``"speed"``, ``"temperature"`` or a parameter such as ``"alpha"``)
        as a float function. It refuses values outside the law's range: a
        speed must be > 0 (``+inf``: velocity 0), a parameter such as nGPT's
        ``alpha`` finite and >= 0 (``alpha = 0``: velocity 0)."""
        return _law_of_t(self, name)

    def __str__(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.params)
        extra += "".join(f", {sym}: default {v}" for sym, v in self.free)
        extra += f", temperature={self.temperature}" if self.tempered else ""
        return f"{self.name}(speed={self.speed}, radial={self.radial}{extra})"

    def _repr_latex_(self) -> str:
        rows = [("s =", latex(self.speed)), (r"\dot r =", latex(self.radial))]
        rows += [(r"\tau =", latex(self.temperature))] if self.tempered else []
        rows += [(rf"\text{{{k}}} =", latex(v)) for k, v in self.params
                 if isinstance(v, sp.Basic)]
        rows += [(rf"{latex(sym)} =", rf"{float(v):g}\ \text{{(default)}}") for sym, v in self.free]
        return formula_table(self.name, rows)


# --------------------------------------------------------------------------
# the generic layer rule
# --------------------------------------------------------------------------

def unit(x: np.ndarray) -> np.ndarray:
    """:math:`N(x) = x / |x|` along the last axis."""
    return x / np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]


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


@lru_cache(maxsize=256)
def _positive(expr: sp.Expr) -> bool:
    """``expr > 0``, decided by sympy once per expression (every solve asks)."""
    return bool(expr > 0)


def clear_caches():
    """Forget the compiled laws of every scheme (:meth:`Scheme.numeric`,
    :meth:`Scheme.law_of_t`): they are compiled again on the next call, with
    the numpy functions then in place."""
    _numeric_laws.cache_clear()
    _law_of_t.cache_clear()


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


@lru_cache(maxsize=256)
def _law_of_t(s: Scheme, name: str):
    laws = {"speed": s.speed, "temperature": s.temperature,
            **{k: v for k, v in s.params if isinstance(v, sp.Basic)}}
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
        if name == "temperature" and not (np.isfinite(v) and v > 0):
            raise SpeedLawError(f"temperature: the law tau = {law} of {s.name} is {v:.6g} "
                                f"at t = {float(tk):.6g}; it must be finite and > 0")
        # a parameter law: alpha = 0 is velocity 0
        if name not in ("speed", "temperature") and not (np.isfinite(v) and v >= 0):
            raise SpeedLawError(f"{name}: the law {name} = {law} of {s.name} (speed "
                                  f"s = {s.speed}) is {v:.6g} at t = {float(tk):.6g}; it "
                                  f"must be finite and >= 0 at every simulated time")
        return v
    return value
