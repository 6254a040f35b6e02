"""nGPT: tokens on the sphere, moved toward the normalized attention (Loshchilov et al. 2024).

Layer rule :math:`x \\leftarrow N(x + h\\alpha_t(N(A(x)) - x))`; the
continuous limit is :math:`\\dot\\theta = \\alpha_t P_\\theta A/|A|`: speed
:math:`s = |A|/\\alpha_t` with a step-size schedule :math:`\\alpha_t \\ge 0`
(text in ``t``, optionally with free parameters).

Layer 1, model.
"""

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef

from ..entry import Entry, Parameter, Style
from ..expressions import parse
from ..law_checks import witness
from ..parameters import at_defaults, check_used, free_parameters, symbols_of
from ..scheme import LayerRule, Scheme, unit
from ..symbols import A_norm, t

NAME = "ngpt"

#: Step-size schedules of the paper's Figure 3 (alpha_t as text).
SCHEDULES = {"constant": "1", "root": "sqrt(1 + t)", "linear": "1 + t",
             "sin/cos mix": "sin(4*t)**2*(1 + t) + cos(4*t)**2"}


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
    point, v = witness(alpha, argument,
                        lambda v: (v.imag == 0) & (v.real >= 0) & np.isfinite(v.real))
    if point is not None:
        what = "not real" if np.isnan(v) or v.imag != 0 else \
            "not finite" if not np.isfinite(v) else f"{v.real:.6g} < 0"
        raise ValueError(f"{argument}: must be finite and >= 0 for all t >= 0 (zero at "
                         f"instants is fine); {alpha} is {what} at {point}")


def rule(s, x, h, tk, A, field):              # x <- N(x + h alpha (N(A(x)) - x))
    """One nGPT layer."""
    return unit(x + h * s.law_of_t("alpha")(tk) * (unit(A(x)) - x))


def build(alpha="1", params=None) -> Scheme:
    free = free_parameters(params)
    alpha_t = parse(alpha, "alpha", {"t": t, **symbols_of(free)}, functions_of_t=True)
    check_used(free, {"alpha": alpha_t})
    check_schedule(at_defaults(alpha_t, free), "alpha")
    return Scheme(NAME, A_norm / alpha_t, sp.Integer(0), sp.oo, (("alpha", alpha_t),),
                  layer=LayerRule(NAME, rule), free=free)


ENTRY = Entry(NAME, build, Style("#E69F00", "-", "nGPT", "v"),
              "Loshchilov et al. 2024, nGPT: Normalized Transformer with Representation "
              "Learning on the Hypersphere, arXiv:2410.01131", order=50,
              parameters=(Parameter("alpha", "1", kind="law",
                                    text="step-size schedule alpha_t >= 0, text in t"),
                          Parameter("params", None, kind="free",
                                    text="free parameters of alpha with their defaults")),
              schedules=SCHEDULES)
