"""Pre-LN: normalize the sublayer's input only (Xiong et al. 2020).

Layer rule :math:`x \\leftarrow x + hA(N(x))`; with :math:`x = r\\theta` the
continuous limit is :math:`\\dot\\theta = P_\\theta A / r`,
:math:`\\dot r = a`: speed :math:`s = r`, radial rate :math:`a`.

Layer 1, model.
"""

import sympy as sp

from ..entry import Entry, Style
from ..scheme import LayerRule, Scheme, unit
from ..symbols import a, r

NAME = "pre-ln"


def rule(s, x, h, tk, A, field):            # x <- x + h A(N(x))
    """One Pre-LN layer."""
    return x + h * A(unit(x))


def build() -> Scheme:
    return Scheme(NAME, r, a, sp.Integer(0), layer=LayerRule(NAME, rule))


ENTRY = Entry(NAME, build, Style("#D55E00", (0, (6, 2)), "Pre-LN", "s"),
              "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture, "
              "arXiv:2002.04745", order=20)
