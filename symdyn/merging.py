"""Coincident tokens become one weighted token, where no reported value changes.

Two tokens with the same state (direction and norm) move identically
forever: the field is Lipschitz, so solutions are unique, and for softmax
attention a group of ``k`` identical tokens acts on every token exactly as
one token of mass ``k`` (:mod:`symdyn.attention`; the unnormalized kernel
alike, with :math:`Z = n` kept). Merging them removes the fast modes inside
a cluster, which otherwise limit an explicit integrator to steps of a few
time units for as long as the cluster lives.

**Candidates.** Tokens ``i, j`` are candidates when
:math:`|\\theta_i - \\theta_j| \\le \\delta` and
:math:`|r_i - r_j| \\le \\delta \\max(r_i, r_j)` (``delta`` = ``merge=``,
default ``100 rtol``, :data:`PER_RTOL`, at most :data:`LARGEST`); a group is
a connected component of candidate pairs. A group continues as its lowest
index with the sum of the masses at the centre of mass (directions averaged
with the masses and normalized, norms averaged), which the flow inside a
cluster keeps to first order; the others are frozen with mass 0 and report
the representative's state and speed.

**Why an absolute distance is not enough.** Whether a separation of
``1e-8`` is resolved depends on the dynamics, not on ``rtol``. Inside a
contracting Post-LN cluster the explicit steps are stability-limited and
the integration error keeps the tokens hovering at ``rtol``-level distances
(1e-10 to 6e-9 at ``rtol = 1e-10``): there they are noise. In the Pre-LN
collapse the whole configuration contracts like ``1/t``, the steps are set
by that slow motion, and separations of ``1e-10`` are integrated with full
relative precision: :math:`\\epsilon = C/t^2` is right to ``1e-20`` and
below. Merging the Pre-LN tokens at ``1e-8`` replaced
:math:`\\epsilon(10^{10}) = 1.25 \\cdot 10^{-20}` by rounding (8e-33).

**The rule: merge where it changes no pairwise observable.** Each original
token ``k`` carries its *offset* :math:`\\rho_k`, the distance from its own
direction to its representative's when it was merged (summed over nested
merges; 0 for a token never merged). Write the true directions as
:math:`\\theta_k = c_{g(k)} + \\delta_k`, :math:`|\\delta_k| \\le \\rho_k`,
:math:`\\sum_{k \\in g} \\delta_k = 0` (the centre of mass). Then

- ``epsilon``: :math:`(n - 1)\\,\\epsilon = \\sum_k |\\theta_k - \\bar\\theta|^2`
  splits (parallel axes) into the spread of the representatives plus the
  groups' internal spreads :math:`\\sum_{k \\in g} |\\delta_k|^2`, so the true
  value lies in :math:`[\\epsilon, \\epsilon + \\sigma]` with
  :math:`\\sigma = \\sum_k \\rho_k^2 / (n - 1)` (``Simulation.spread``);
  ``gamma`` = 1 - epsilon in :math:`[\\gamma - \\sigma, \\gamma]`;
- every pairwise cosine: :math:`1 - \\cos = |\\theta_i - \\theta_j|^2/2` with
  :math:`|\\theta_i - \\theta_j|` within :math:`s_{ij} = \\rho_i + \\rho_j` of the
  representatives' distance :math:`D_{ij}`, so
  :math:`|\\Delta \\cos_{ij}| \\le u_{ij} = D_{ij} s_{ij} + s_{ij}^2/2`;
  ``min_cosine`` lies in :math:`[\\min(\\cos - u), \\min(\\cos + u)]`, a pair
  of ``linked`` is undecided when ``cluster_threshold`` lies between
  :math:`\\cos - u` and :math:`\\cos + u`, and ``clusters`` when the graphs
  with all undecided pairs linked and with none have different component
  counts (the count is monotone in the edges).

A value is *exact* when its interval is within ``delta`` relative of what it
measures: :math:`\\sigma \\le \\delta\\,\\epsilon`; for the cosines (``gamma``,
``min_cosine``) an uncertainty at most :math:`\\delta (1 - c) + 4 d\\,
\\varepsilon_{mach}` (the last term is the Gram matrix's own rounding);
``linked``, ``clusters``: no undecided pair / count. A candidate group is
merged only if every value stays exact after it (checked on the merged
state, group by group), so ``delta`` is both the largest distance merged and
the largest relative change a merge makes to any of these observables.

The test is relative to the configuration, which is what separates the two
cases above. A sub-cluster of diameter ``D`` in a configuration whose other
tokens are ``l`` away changes ``epsilon`` by a fraction of order
:math:`n (D/l)^2` and ``1 - min_cosine`` by :math:`\\sim 2 D/l`: metastable
Post-LN clusters (``D ~ 1e-10``, ``l ~ 1``) merge. A configuration contracting
self-similarly (Pre-LN) has ``D ~ l`` for every pair, and a group holding
every live token has no outside scale at all (its internal spread is all of
``epsilon``): neither ever passes, whatever ``delta``.

**Below the state's resolution.** A group whose diameter is at most
:math:`8 \\sqrt{d}\\,\\varepsilon_{mach}` (:data:`RESOLUTION`; 2e-15 in
float64 at ``d = 4``) is merged regardless: the stored unit vectors differ
there by a few roundings (each component to :math:`\\varepsilon_{mach}/2`),
so the state no longer resolves the separation, the unmerged run reports
rounding for everything it contributes, and its own velocity is rounding
noise that caps explicit steps (Post-LN after the last two clusters met:
unmerged, ``n = 8``, ``d = 4``, ``beta = 9`` stops after 200,000 steps at
``t = 6e10``). This is the only merge that can make a value a bound.

**Bounds in the result.** At every output the same intervals are computed
on the recorded (merged) state; ``Simulation.bound[name]`` is ``True``
where a value is not exact, and the reported value is then the merged
state's, the end of the interval named above (``epsilon``: the lower end,
``epsilon + spread`` the upper). A value exact when merged can become a bound
later, when the configuration contracts past the offsets its groups carry.
The intervals assume a merged group does not expand after it was merged
(true inside a cluster, which contracts; in general a group can grow like
:math:`e^{L t}`, ``L`` the field's Lipschitz constant). ``r``, ``speed`` and
``X`` of a merged token are its group's: its direction lay within
:math:`\\rho_k` of the representative's, its norm within ``delta`` relative,
and its speed differs from the group's by its motion relative to the
group's centre (at most ``L`` times the offset).

Measured (``tests/test_merging.py``): Pre-LN, Mix-LN, Peri-LN from a uniform
start (``n = 8``, ``d = 16``, ``beta = 0.5``) to ``t = 1e12`` never merge and
equal the unmerged run bit for bit; Post-LN, nGPT and sqrt-scaling at
``beta = 9`` merge and agree with the unmerged run within the intervals.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

#: The default threshold is this many times the integrator's rtol.
PER_RTOL = 100
#: The largest threshold accepted per precision (merging stays at the level
#: the integration resolves; float32 resolves ~1e-7, runs at rtol >= 1e-6).
LARGEST = {"float64": 1e-6, "float32": 1e-4}
#: Groups with a diameter of at most RESOLUTION sqrt(d) eps are below the
#: state's resolution and merge regardless of the observables.
RESOLUTION = 8
#: The observables that ``bounds`` decides, each batch + (K,) in a Simulation.
PAIRWISE = ("gamma", "epsilon", "min_cosine", "linked", "clusters")


def resolution(d: int, dtype) -> float:
    """The separation unit vectors in ``d`` dimensions no longer resolve."""
    return RESOLUTION * np.sqrt(d) * float(np.finfo(dtype).eps)


def bounds(theta, offset, threshold: float, tol: float):
    """Which pairwise observables of merged states are exact (module docstring).

    ``theta`` (m, n, d): every original token's direction (its representative's);
    ``offset`` (m, n): how far each lay from it. Returns ``(flags, spread)``:
    ``flags[name]`` (m,) is True where the value is only a bound, ``spread``
    (m,) the most that ``epsilon`` can lack.
    """
    m, n, d = theta.shape
    floor = 4 * d * float(np.finfo(theta.dtype).eps)
    dev = theta - theta.mean(axis=1, keepdims=True)
    eps = np.einsum("mnd,mnd->m", dev, dev) / (n - 1)
    spread = np.einsum("mn,mn->m", offset, offset) / (n - 1)
    G = theta @ np.swapaxes(theta, -1, -2)
    D = np.sqrt(np.maximum(2 - 2 * G, 0.0))
    s = offset[:, :, None] + offset[:, None, :]
    u = D * s + s * s / 2
    off = ~np.eye(n, dtype=bool)
    cos, u = G[:, off], u[:, off]                       # (m, n (n - 1))
    c_min = cos.min(axis=1)
    unc = np.maximum(c_min - (cos - u).min(axis=1), (cos + u).min(axis=1) - c_min)
    linked = cos >= threshold
    undecided = np.where(linked, cos - u < threshold, cos + u >= threshold) & (u > 0)
    rel = 2 * tol + tol * tol               # squared distances, distances to tol
    flags = {"gamma": spread > rel * eps + floor, "epsilon": spread > rel * eps,
             "min_cosine": unc > rel * (1 - c_min) + floor,
             "linked": undecided.any(axis=1), "clusters": np.zeros(m, dtype=bool)}
    for i in np.flatnonzero(flags["linked"]):
        low, high = np.zeros((2, n, n), dtype=bool)
        low[off], high[off] = linked[i] & ~undecided[i], linked[i] | undecided[i]
        flags["clusters"][i] = (connected_components(low, directed=False)[0]
                                != connected_components(high, directed=False)[0])
    return flags, spread


class Coalescence:
    """Masses, representatives and offsets of a batch of ``M`` runs of ``n`` tokens.

    ``mass[m, j]``: how many original tokens token ``j`` stands for (0 once
    merged into another); ``rep[m, j]``: the token that carries token ``j``;
    ``offset[m, j]``: how far token ``j``'s direction lay from its
    representative's when merged. ``threshold`` is the cluster threshold
    whose ``linked`` a merge must not change; ``tol`` the relative change
    allowed (default ``distance``).
    """

    def __init__(self, M: int, n: int, distance: float, log_norm: bool = False,
                 threshold: float = 0.999, tol: float | None = None):
        self.mass = np.ones((M, n))
        self.rep = np.tile(np.arange(n), (M, 1))
        self.offset = np.zeros((M, n))
        self.distance = distance
        self.tol = distance if tol is None else tol
        self.threshold = threshold
        self.log_norm = log_norm        # rad holds log r - tau (symdyn.log_clock)
        self.merges = 0

    def merge(self, members, theta, rad):
        """Merge coincident live tokens of ``members`` (states ``theta`` (m, n,
        d), ``rad`` (m, n), changed in place: each group's representative moves
        to the group's centre of mass) where no observable changes (module
        docstring); returns the bool mask of members that changed."""
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

    def _groups(self, theta, rad, close):
        """Connected components of the candidate pairs (token index arrays)."""
        a, b = np.nonzero(np.triu(close))
        gap = np.abs(rad[a] - rad[b])
        near = (np.linalg.norm(theta[a] - theta[b], axis=-1) <= self.distance) & (
            gap <= self.distance * (1 if self.log_norm else np.maximum(rad[a], rad[b])))
        if not near.any():
            return []
        n = len(rad)
        graph = np.zeros((n, n), dtype=bool)
        graph[a[near], b[near]] = True
        _, label = connected_components(graph, directed=False)
        return [np.flatnonzero(label == g) for g in np.unique(label[a[near]])]

    def _join(self, m, theta, rad, close):
        joined = False
        smallest = resolution(theta.shape[-1], theta.dtype)
        for tokens in self._groups(theta, rad, close):
            head, weight = tokens[0], self.mass[m, tokens]
            # the group's centre of mass: to first order the intra-cluster flow
            # keeps it, so it is where the group would have met (error O(delta^2))
            centre = weight @ theta[tokens]
            centre = centre / np.linalg.norm(centre)
            members = np.isin(self.rep[m], tokens)
            offset = self.offset[m].copy()
            offset[members] += np.linalg.norm(theta[self.rep[m, members]] - centre, axis=-1)
            diameter = np.linalg.norm(theta[tokens, None] - theta[None, tokens], axis=-1).max()
            if diameter > smallest and not self._exact(m, theta, centre, head, members,
                                                       offset):
                continue
            theta[head] = centre
            rad[head] = weight @ rad[tokens] / weight.sum()
            self.mass[m, head] = weight.sum()
            self.mass[m, tokens[1:]] = 0.0
            self.rep[m, members] = head
            self.offset[m] = offset
            self.merges += len(tokens) - 1
            joined = True
        return joined

    def _exact(self, m, theta, centre, head, members, offset):
        """Would every pairwise observable stay exact after this merge?"""
        trial = theta.copy()
        trial[head] = centre
        rep = self.rep[m].copy()
        rep[members] = head
        flags, _ = bounds(trial[rep][None], offset[None], self.threshold, self.tol)
        return not any(f[0] for f in flags.values())

    def live_dims(self, members, per_token):
        """Components that still move: ``per_token`` for each live token."""
        return (self.mass[members] > 0).sum(axis=1) * per_token

    def expand(self, members, *arrays):
        """Per original token: each array (m, n, ...) read at the representatives."""
        rep = self.rep[members]
        rows = np.arange(len(members))[:, None]
        return tuple(x[rows, rep] for x in arrays)

    def bounds(self, members, theta):
        """``bounds`` of the expanded directions ``theta`` (m, n, d) of
        ``members``; members whose tokens carry no offset are exact."""
        m = len(members)
        flags = {k: np.zeros(m, dtype=bool) for k in PAIRWISE}
        spread = np.zeros(m)
        some = np.flatnonzero((self.offset[members] > 0).any(axis=1))
        if some.size:
            f, spread[some] = bounds(theta[some], self.offset[members[some]],
                                     self.threshold, self.tol)
            for k in PAIRWISE:
                flags[k][some] = f[k]
        return flags, spread
