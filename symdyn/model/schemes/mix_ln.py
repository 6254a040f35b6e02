"""Mix-LN: Post-LN layers up to ``t_switch``, Pre-LN layers after (Li et al. 2024).

Speed and radial laws switch branch at ``t_switch``: :math:`s = 1, \\dot r = 0`
before, :math:`s = r, \\dot r = a` after; tokens stay on the sphere until then.

Layer 1, model.
"""

import sympy as sp

from ..entry import Entry, Parameter, Style
from ..scheme import LayerRule, Scheme
from ..symbols import a, r, t
from .post_ln import rule as post_ln_rule
from .pre_ln import rule as pre_ln_rule

NAME = "mix-ln"


def rule(s, x, h, tk, A, field):             # post-ln layers, then pre-ln layers
    """One Mix-LN layer: the Post-LN rule before ``t_switch``, Pre-LN after."""
    before = tk < float(dict(s.params)["t_switch"])
    return (post_ln_rule if before else pre_ln_rule)(s, x, h, tk, A, field)


def build(t_switch) -> Scheme:
    speed = sp.Piecewise((1, t < t_switch), (r, True))
    radial = sp.Piecewise((0, t < t_switch), (a, True))
    return Scheme(NAME, speed, radial, t_switch, (("t_switch", t_switch),),
                  layer=LayerRule(NAME, rule))


ENTRY = Entry(NAME, build, Style("#009E73", (0, (2, 1.5)), "Mix-LN", "^"),
              "Li et al. 2024, Mix-LN: Unleashing the Power of Deeper Layers by Combining "
              "Pre-LN and Post-LN, arXiv:2412.13795", order=30,
              parameters=(Parameter("t_switch", 1.0, low=0, symbol="t_switch",
                                    text="time of the switch from Post-LN to Pre-LN "
                                         "(a number, or t_switch: a symbol)"),))
