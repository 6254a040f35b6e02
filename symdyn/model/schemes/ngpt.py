"""nGPT: tokens on the sphere, moved toward the normalized attention (Loshchilov et al. 2024).

Layer rule :math:`x \\leftarrow N(x + h\\alpha_t(N(A(x)) - x))`; the
continuous limit is :math:`\\dot\\theta = \\alpha_t P_\\theta A/|A|`: speed
:math:`s = |A|/\\alpha_t` with a step-size schedule :math:`\\alpha_t \\ge 0`
(text in ``t``, optionally with free parameters).

Layer 1, model.
"""

import sympy as sp

from ..expressions import parse
from ..law_checks import check_schedule
from ..parameters import at_defaults, check_used, free_parameters, symbols_of
from ..scheme import Entry, LayerRule, Parameter, Scheme, Style, unit
from ..symbols import A_norm, t

NAME = "ngpt"

#: Step-size schedules of the paper's Figure 3 (alpha_t as text).
SCHEDULES = {"constant": "1", "root": "sqrt(1 + t)", "linear": "1 + t",
             "sin/cos mix": "sin(4*t)**2*(1 + t) + cos(4*t)**2"}


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


ENTRY = Entry(NAME, build, Style("#E69F00", "-", "nGPT"),
              "Loshchilov et al. 2024, nGPT: Normalized Transformer with Representation "
              "Learning on the Hypersphere, arXiv:2410.01131", order=50,
              parameters=(Parameter("alpha", "1", kind="law",
                                    text="step-size schedule alpha_t >= 0, text in t"),
                          Parameter("params", None, kind="free",
                                    text="free parameters of alpha with their defaults")),
              extra={"schedules": SCHEDULES})
