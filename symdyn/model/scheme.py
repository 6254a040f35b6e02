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

from ..base.arithmetic import float_printer, on_floats
from ..base.checks import shown
from .display import formula_table, latex
from .entry import Entry, Parameter, Style  # noqa: F401 (re-exported)
from .guards import NUMERIC_MODULES, SpeedLawError, lambdify, number, substitute
from .parameters import check_free_values
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
                    else:    # a symbolic switch (t_switch="t_switch"): bind it first
                        what = ", ".join(sorted(map(str, rel.free_symbols - {t}))) or "scheme"
                        raise ValueError(f"{what}: cannot evaluate condition {rel}; t < number")
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


# --------------------------------------------------------------------------
# checks of a law over the domain (t from 0 over decades to 1e6, a few r, a,
# A_norm, n, beta): refused when sympy decides it, or when a witness shows it
# --------------------------------------------------------------------------

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
    point, v = witness(speed, argument, lambda v: (v.imag == 0) & (v.real > 0))
    if point is not None:
        what = "not real" if np.isnan(v) or v.imag != 0 else \
            "not finite" if not np.isfinite(v) else f"{v.real:.6g} <= 0"
        raise ValueError(f"{argument}: must be positive for all t >= 0; {speed} is "
                         f"{what} at {point}")


def witness(law: sp.Expr, argument: str, good):
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


def check_temperature(tau: sp.Expr, argument: str) -> None:
    """Refuse a temperature law :math:`\\tau` (the attention runs at inverse
    temperature :math:`\\beta\\tau`) that depends on anything but ``t``
    and free parameters, or is decidably not finite and positive for all ``t >= 0``."""
    if not isinstance(tau, sp.Expr):
        raise ValueError(f"{argument}: a temperature law must be an expression in t, "
                         f"got {tau!r}")
    other = tau.free_symbols & (set(SCHEME_SYMBOLS.values()) - {SCHEME_SYMBOLS["t"]})
    if other:
        raise ValueError(f"{argument}: a temperature law depends on t (and free parameters) "
                         f"only, got {tau} (with {', '.join(sorted(map(str, other)))})")
    if tau.is_positive and tau.is_finite:
        return
    if tau.is_nonpositive:
        raise ValueError(f"{argument}: must be positive, got {tau} (never positive)")
    if tau.atoms(AppliedUndef):
        return
    point, v = witness(tau, argument,
                        lambda v: (v.imag == 0) & (v.real > 0) & np.isfinite(v.real))
    if point is not None:
        what = "not real" if np.isnan(v) or v.imag != 0 else \
            "not finite" if not np.isfinite(v) else f"{v.real:.6g} <= 0"
        raise ValueError(f"{argument}: must be finite and > 0 for all t >= 0; {tau} is "
                         f"{what} at {point}")
