"""Peri-LN: normalize the sublayer's input and its output (Kim et al. 2025).

Layer rule :math:`x \\leftarrow x + hN(A(N(x)))`; the continuous limit is
:math:`\\dot\\theta = P_\\theta A/(r|A|)`, :math:`\\dot r = a/|A|`.

Layer 1, model.
"""

import sympy as sp

from ..entry import Entry, Style
from ..scheme import LayerRule, Scheme, unit
from ..symbols import A_norm, a, r

NAME = "peri-ln"


def rule(s, x, h, tk, A, field):            # x <- x + h N(A(N(x)))
    """One Peri-LN layer."""
    return x + h * unit(A(unit(x)))


def build() -> Scheme:
    return Scheme(NAME, r * A_norm, a / A_norm, sp.Integer(0), layer=LayerRule(NAME, rule))


ENTRY = Entry(NAME, build, Style("#CC79A7", (0, (6, 1.5, 1.5, 1.5)), "Peri-LN", "D"),
              "Kim et al. 2025, Peri-LN: Revisiting Normalization Layer in the Transformer "
              "Architecture, arXiv:2502.02732", order=40)
