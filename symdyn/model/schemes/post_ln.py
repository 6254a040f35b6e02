"""Post-LN: normalize after the residual update (Vaswani et al. 2017).

Layer rule :math:`x \\leftarrow N(x + hA(x))`; on the sphere the continuous
limit is :math:`\\dot\\theta = P_\\theta A`: speed :math:`s = 1`, no radial motion.

Layer 1, model.
"""

import sympy as sp

from ..entry import Entry, Style
from ..scheme import LayerRule, Scheme, unit

NAME = "post-ln"


def rule(s, x, h, tk, A, field):           # x <- N(x + h A(x))
    """One Post-LN layer."""
    return unit(x + h * A(x))


def build() -> Scheme:
    return Scheme(NAME, sp.Integer(1), sp.Integer(0), sp.oo, layer=LayerRule(NAME, rule))


ENTRY = Entry(NAME, build, Style("#0072B2", "-", "Post-LN", "o"),
              "Vaswani et al. 2017, Attention Is All You Need, arXiv:1706.03762", order=10)
