"""The right-hand side of the variational (forward sensitivity) equations.

For a state :math:`(u, r)` with Jacobian :math:`J` and a parameter :math:`q`,
:math:`\\sigma_q = \\partial (u, r) / \\partial q` obeys
:math:`\\dot\\sigma_q = J \\sigma_q + \\partial_q f`. The Jacobian and the
forcing come compiled from :mod:`symdyn.reduced.forward_sensitivity`; this
module only combines them, for numpy arrays and mpmath numbers alike (the
batched solve and the mpmath path share it).

Layer 2, reduced.
"""

from __future__ import annotations


def rates(values, sigma) -> list[tuple]:
    """:math:`\\dot\\sigma_q = J\\sigma_q + \\partial_q f` per parameter, from
    ``values`` (what :meth:`Sensitivity.phases` returns) and ``sigma`` (pairs
    :math:`(\\sigma_u, \\sigma_r)`): numpy arrays or mpmath numbers alike."""
    juu, jur, jru, jrr = values[:4]
    return [(juu * su + jur * sr + values[4 + 2 * i], jru * su + jrr * sr + values[5 + 2 * i])
            for i, (su, sr) in enumerate(sigma)]
