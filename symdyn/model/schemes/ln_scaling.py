"""LayerNorm Scaling: Pre-LN, the normalized input of layer l scaled by 1/sqrt(l) (Sun et al. 2025).

With one layer per unit of time (layer :math:`l = 1 + t`), the layer is
:math:`x \\leftarrow x + hA(c\\,N(x))`, :math:`c = 1/\\sqrt{1+t}`. Softmax
attention on the scaled tokens :math:`c\\theta` is :math:`c` times the
attention on :math:`\\theta` at inverse temperature :math:`\\beta c^2`, so
with :math:`x = r\\theta`: :math:`\\dot\\theta = (c/r) P_\\theta A`,
:math:`\\dot r = c\\,a`, all at :math:`\\beta c^2`: speed
:math:`s = r\\sqrt{1+t}`, radial rate :math:`a/\\sqrt{1+t}`, temperature
:math:`\\tau = 1/(1+t)` (docs/model.md, section 2).

Layer 1, model.
"""

import math

import sympy as sp

from ..entry import Entry, Style
from ..scheme import LayerRule, Scheme, unit
from ..symbols import a, r, t

NAME = "ln-scaling"


def rule(s, x, h, tk, A, field):            # x <- x + h A(N(x) / sqrt(1 + t_k)), literally
    """One LayerNorm-Scaling layer: the attention sees the scaled, normalized tokens."""
    return x + h * A(unit(x) / math.sqrt(1.0 + tk))     # a float: x keeps its dtype


def build() -> Scheme:
    root = sp.sqrt(1 + t)
    return Scheme(NAME, r * root, a / root, sp.Integer(0), layer=LayerRule(NAME, rule),
                  temperature=1 / (1 + t))


ENTRY = Entry(NAME, build, Style("#882255", (0, (1, 1.2)), "LN-Scaling", "X"),
              "Sun et al. 2025, The Curse of Depth in Large Language Models, "
              "arXiv:2502.05795", order=80)
