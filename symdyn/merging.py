"""Coincident tokens become one weighted token.

Two tokens with the same state (direction and norm) move identically
forever: the field is Lipschitz, so solutions are unique, and for softmax
attention a group of ``k`` identical tokens acts on every token exactly as
one token of mass ``k`` (:mod:`symdyn.attention`; the unnormalized kernel
alike, with :math:`Z = n` kept). Merging them removes the fast modes inside
a cluster, which otherwise limit an explicit integrator to steps of a few
time units for as long as the cluster lives.

A token ``j`` joins token ``i`` when
:math:`|\\theta_i - \\theta_j| \\le \\delta` and
:math:`|r_i - r_j| \\le \\delta \\max(r_i, r_j)`: the group takes the
lowest index as its representative, the sum of the masses, and the group's
centre of mass (directions averaged with the masses and normalized, norms
averaged); the others are frozen with mass 0 and report the representative's
state and speed. Groups are the connected components of
"within delta", so a group of ``k`` spans at most ``(k - 1) delta``.

The threshold. Inside a cluster, tokens contract towards each other (rate
~1), but an explicit integrator at relative tolerance ``rtol`` resolves
their differences only down to its own error: measured, Post-LN tokens of
one cluster hover at distances 1e-10 to 6e-9 at ``rtol = 1e-10`` instead of
reaching rounding. The default ``delta`` is therefore ``100 rtol``
(:data:`PER_RTOL`), just above that floor, at most 1e-6 in float64 and 1e-4
in float32 (:data:`LARGEST`; measured in float32, n = 32, d = 128: merging
at 1e-4 changes no observable beyond float32's own error, 4e-5 in gamma
against float64, and cuts the evaluations 7x). The group continues from its
centre of mass, which the flow inside a cluster keeps to first order, so the
change is of order ``delta^2`` there (measured: 1e-11 in cosines and speeds
at ``delta = 1e-10``, ``tests/test_merging.py``, which checks every
observable); where a group does not contract it can grow at most like
:math:`e^{Lt}` (``L`` the field's Lipschitz constant).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

#: The default threshold is this many times the integrator's rtol.
PER_RTOL = 100
#: The largest threshold accepted per precision (merging stays at the level
#: the integration resolves; float32 resolves ~1e-7, runs at rtol >= 1e-6).
LARGEST = {"float64": 1e-6, "float32": 1e-4}


class Coalescence:
    """Masses and representatives of a batch of ``M`` runs of ``n`` tokens.

    ``mass[m, j]``: how many original tokens token ``j`` stands for (0 once
    merged into another); ``rep[m, j]``: the token that carries token ``j``.
    """

    def __init__(self, M: int, n: int, distance: float, log_norm: bool = False):
        self.mass = np.ones((M, n))
        self.rep = np.tile(np.arange(n), (M, 1))
        self.distance = distance
        self.log_norm = log_norm        # rad holds log r - tau (symdyn.log_clock)
        self.merges = 0

    def merge(self, members, theta, rad):
        """Merge coincident live tokens of ``members`` (states ``theta`` (m, n,
        d), ``rad`` (m, n), changed in place: each group's representative moves
        to the group's centre of mass); returns the bool mask of members that
        changed."""
        changed = np.zeros(len(members), dtype=bool)
        if not self.distance:
            return changed
        live = self.mass[members] > 0
        G = theta @ np.swapaxes(theta, -1, -2)
        # a cheap filter: within delta means cos >= 1 - delta^2/2, less the Gram
        # matrix's rounding (d products, each to eps of theta's precision); the
        # distance itself is then computed from differences
        d = theta.shape[-1]
        floor = 1 - (self.distance**2 / 2 + 4 * d * np.finfo(theta.dtype).eps)
        close = (G >= floor) & live[:, :, None] & live[:, None, :]
        n = theta.shape[1]
        close[:, np.arange(n), np.arange(n)] = False
        for i in np.flatnonzero(close.any(axis=(1, 2))):
            changed[i] = self._join(members[i], theta[i], rad[i], close[i])
        return changed

    def _join(self, m, theta, rad, close):
        a, b = np.nonzero(np.triu(close))
        gap = np.abs(rad[a] - rad[b])
        near = (np.linalg.norm(theta[a] - theta[b], axis=-1) <= self.distance) & (
            gap <= self.distance * (1 if self.log_norm else np.maximum(rad[a], rad[b])))
        if not near.any():
            return False
        n = len(rad)
        graph = np.zeros((n, n), dtype=bool)
        graph[a[near], b[near]] = True
        _, label = connected_components(graph, directed=False)
        mass, rep = self.mass[m], self.rep[m]
        for group in np.unique(label[a[near]]):
            tokens = np.flatnonzero(label == group)
            head, weight = tokens[0], mass[tokens]
            # the group's centre of mass: to first order the intra-cluster flow
            # keeps it, so it is where the group would have met (error O(delta^2))
            centre = weight @ theta[tokens]
            theta[head] = centre / np.linalg.norm(centre)
            rad[head] = weight @ rad[tokens] / weight.sum()
            mass[head] = weight.sum()
            mass[tokens[1:]] = 0.0
            rep[np.isin(rep, tokens)] = head
            self.merges += len(tokens) - 1
        return True

    def live_dims(self, members, per_token):
        """Components that still move: ``per_token`` for each live token."""
        return (self.mass[members] > 0).sum(axis=1) * per_token

    def expand(self, members, *arrays):
        """Per original token: each array (m, n, ...) read at the representatives."""
        rep = self.rep[members]
        rows = np.arange(len(members))[:, None]
        return tuple(x[rows, rep] for x in arrays)
