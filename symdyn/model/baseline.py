"""The baseline without normalization, and the look-up that knows it.

:data:`NONE` is pure attention on the raw tokens, :math:`\\dot x_k = A_k(X)`
(speed law :math:`s = r`, radial law :math:`\\rho = a`, layer rule
:math:`x + h A(x)`): the curve every figure compares the schemes with. It is
no entry of the catalog (no reduction, no velocity table), only a reference
the simulator and the plots share.

Layer 1, model.
"""

from __future__ import annotations

import sympy as sp

from ..base.checks import shown
from .registry import SchemeLike
from .registry import scheme as get_scheme
from .scheme import LayerRule, Scheme
from .symbols import a, r

__all__ = ["NONE", "resolve"]

#: The baseline without normalization (attention on the raw tokens).
NONE = Scheme("none", r, a, sp.Integer(0),
              layer=LayerRule("none", lambda s, x, h, tk, A, field: x + h * A(x)))


def resolve(scheme: SchemeLike) -> Scheme:
    """A built-in name, ``"none"`` (no normalization) or a Scheme."""
    if not isinstance(scheme, (str, Scheme)):
        raise ValueError(f"scheme: expected a name or a Scheme, got {shown(scheme)}")
    if scheme == "none":
        return NONE
    return get_scheme(scheme)
