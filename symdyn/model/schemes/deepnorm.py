"""DeepNorm: Post-LN with the residual up-weighted by alpha = (2N)^(1/4) (Wang et al. 2022).

The layer :math:`x \\leftarrow N(\\alpha x + hA(x))` of an ``N``-layer
encoder equals :math:`N(x + (h/\\alpha) A(x))` (:math:`N` is scale
invariant, :math:`\\alpha > 0`): Post-LN with the step :math:`h/\\alpha`, so
on the sphere :math:`\\dot\\theta = P_\\theta A/\\alpha`, speed
:math:`s = \\alpha = (2N)^{1/4}`, no radial motion (docs/model.md, section 2).
DeepNet also scales the value and output projections by
:math:`(8N)^{-1/4}` at initialization; that is a choice of weights
(``sd.weights``), not of the update, and is not modelled here.

Layer 1, model.
"""

import sympy as sp

from ..entry import Entry, Parameter, Style
from ..scheme import LayerRule, Scheme, unit

NAME = "deepnorm"


def rule(s, x, h, tk, A, field):           # x <- N(alpha x + h A(x)), literally
    """One DeepNorm layer, with the residual weight ``alpha`` of the scheme."""
    alpha = (2.0 * float(dict(s.params)["layers"])) ** 0.25
    return unit(alpha * x + h * A(x))


def build(layers) -> Scheme:
    alpha = (2 * layers) ** sp.Rational(1, 4)
    return Scheme(NAME, alpha, sp.Integer(0), sp.oo, (("layers", layers),),
                  layer=LayerRule(NAME, rule))


ENTRY = Entry(NAME, build, Style("#117733", (0, (8, 2, 2, 2)), "DeepNorm", "*"),
              "Wang et al. 2022, DeepNet: Scaling Transformers to 1,000 Layers, "
              "arXiv:2203.00555", order=70,
              parameters=(Parameter("layers", 12, low=1, symbol="N", integer=True,
                                    text="N, the encoder's number of layers: alpha = (2N)^(1/4) "
                                         "(an integer, or N: a symbol)"),))
