"""sqrt-scaling: a 1/sqrt(depth) residual scale on the sphere (Karagodin et al. 2025).

This project's model of the scaling: :math:`x \\leftarrow N(x + hA(x)/\\sqrt{1+t})`,
so :math:`s = \\sqrt{1+t}` on the sphere. Swap the speed here to change it.

Layer 1, model.
"""

import sympy as sp

from ..entry import Entry, Style
from ..scheme import LayerRule, Scheme, unit
from ..symbols import t

NAME = "sqrt-scaling"


def rule(s, x, h, tk, A, field):             # x <- N(x + h A(x) / s(t))
    """One layer on the sphere slowed by the speed law of t."""
    return unit(x + h * A(x) / s.law_of_t("speed")(tk))


def build() -> Scheme:
    return Scheme(NAME, sp.sqrt(1 + t), sp.Integer(0), sp.oo, layer=LayerRule(NAME, rule))


ENTRY = Entry(NAME, build, Style("#56B4E9", (0, (3, 1, 1, 1, 1, 1)), r"$\sqrt{t}$-scaling", "P"),
              "Karagodin, Ge, Polyanskiy, Rigollet 2025, Normalization in Attention "
              "Dynamics, arXiv:2510.22026", order=60)
