"""nGPT's step-size families, the designable schedules, with their bounds.

A family is a scheme with free parameters (:attr:`Scheme.free`);
:data:`ALPHA_FAMILIES` holds nGPT's (constant, affine, power, two-piece)
with defaults and bounds, :func:`alpha_family` builds one, and
:func:`bounds_of` gives a family's bounds, recognizing nGPT's by their laws.

Layer 3, studies.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..base.checks import number, shown
from ..model.registry import Scheme
from ..model.registry import scheme as get_scheme
from ..model.symbols import t as t_sym

#: nGPT step-size families: alpha(t) with free parameters, their defaults and bounds.
ALPHA_FAMILIES = {
    "constant": ("a0", {"a0": 1.0}, {"a0": (1e-3, 1e3)}),
    "affine": ("a0 + a1*t", {"a0": 1.0, "a1": 0.0}, {"a0": (1e-3, 1e3), "a1": (0.0, 1e3)}),
    "power": ("a0*(1 + t)**p", {"a0": 1.0, "p": 0.0}, {"a0": (1e-3, 1e3), "p": (-3.0, 3.0)}),
    "two-piece": (None, {"a0": 1.0, "a1": 1.0}, {"a0": (1e-3, 1e3), "a1": (1e-3, 1e3)}),
}


def alpha_family(name: str, depth: float | None = None) -> Scheme:
    """nGPT with a step-size family :math:`\\alpha_t` (see :data:`ALPHA_FAMILIES`):
    ``constant`` :math:`a_0`, ``affine`` :math:`a_0 + a_1 t`, ``power``
    :math:`a_0 (1 + t)^p`, ``two-piece`` :math:`a_0` before ``depth/2`` and
    :math:`a_1` after it.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.alpha_family("affine").bind(a1=0.5).law_of_t("alpha")(2.0)
    2.0
    >>> sd.alpha_family("two-piece", depth=4.0).breakpoints
    (2.0,)
    """
    if name not in ALPHA_FAMILIES:
        raise ValueError(f"name: expected one of {', '.join(ALPHA_FAMILIES)}, got {shown(name)}")
    alpha, defaults, _ = ALPHA_FAMILIES[name]
    if alpha is None:
        if depth is None:
            raise ValueError("depth: the two-piece family switches at depth/2; give depth > 0")
        half = sp.nsimplify(number(depth, "depth", 0, low_open=True) / 2)
        a0, a1 = (sp.Symbol(k, real=True) for k in ("a0", "a1"))
        alpha = sp.Piecewise((a0, t_sym < half), (a1, True))
    return get_scheme("ngpt", alpha=alpha, params=defaults)


def same_laws(a: Scheme, b: Scheme) -> bool:
    """True when two schemes move tokens alike: the same speed, radial,
    sphere and temperature laws and the same layer rule (names, defaults and
    styles aside).

    Examples
    --------
    >>> import symdyn as sd
    >>> same_laws(alpha_family("affine"), sd.scheme("ngpt", alpha="a0 + a1*t",
    ...                                              params={"a0": 2.0, "a1": 1.0}))
    True
    >>> same_laws(alpha_family("constant"), sd.custom_scheme("c", speed="A_norm/a0",
    ...                                                       params={"a0": 1.0}))
    False
    """
    def laws(s):
        return s.speed, s.radial, s.sphere_until, s.temperature, s.layer

    return laws(a) == laws(b)


def bounds_of(s: Scheme, bounds, depth):
    """``(low, high)`` per parameter: those of ``bounds``, and for the others
    the nGPT family's own (recognized by its laws, :func:`same_laws`), else
    unbounded."""
    names = list(s.defaults)
    own = next((v[2] for k, v in ALPHA_FAMILIES.items()
                if same_laws(alpha_family(k, depth), s)), {})
    if bounds is None:
        bounds = {}
    if not isinstance(bounds, dict) or set(bounds) - set(names):
        raise ValueError(f"bounds: expected a dict of (low, high) by parameter among "
                         f"{', '.join(names)}, got {shown(bounds)}")
    out = []
    for k in names:
        pair = bounds.get(k, own.get(k, (-np.inf, np.inf)))
        try:
            lo, hi = pair
            lo, hi = (-np.inf if lo is None else float(lo)), (np.inf if hi is None else float(hi))
        except (TypeError, ValueError):
            raise ValueError(f"bounds[{shown(k)}]: expected (low, high), numbers or None, got "
                             f"{shown(pair)}") from None
        if not lo < hi:
            raise ValueError(f"bounds[{shown(k)}]: low must be < high, got {shown((lo, hi))}")
        out.append((lo, hi))
    return out
