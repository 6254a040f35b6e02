"""Coincident tokens become one weighted token, where no reported value changes.

Two tokens with the same state (direction and norm) move identically
forever: the field is Lipschitz, so solutions are unique, and for softmax
attention a group of ``k`` identical tokens acts on every token exactly as
one token of mass ``k`` (:mod:`symdyn.particles.attention`; the unnormalized kernel
alike, with :math:`Z = n` kept). Merging them removes the fast modes inside
a cluster, which otherwise limit an explicit integrator to steps of a few
time units for as long as the cluster lives.

**Candidates.** Tokens ``i, j`` are candidates when
:math:`|\\theta_i - \\theta_j| \\le \\delta` and
:math:`|r_i - r_j| \\le \\delta \\max(r_i, r_j)` (``delta`` = ``merge=``,
default ``100 rtol``, :data:`PER_RTOL`, at most :data:`LARGEST`); a group is
a connected component of candidate pairs. A merged group continues as its
lowest index with the sum of the masses at the centre of mass (directions
averaged with the masses and normalized, norms averaged), which the flow
inside a cluster keeps to first order; the others are frozen with mass 0
and report the representative's state and speed.

**Why a fixed distance is not enough.** Whether a separation of ``1e-8``
is resolved depends on the dynamics, not on ``rtol``. Inside a contracting
Post-LN cluster the explicit steps are stability-limited and the
integration error keeps the tokens hovering at ``rtol``-level distances
(1e-10 to 6e-9 at ``rtol = 1e-10``): there they are noise. In the Pre-LN
collapse the whole configuration contracts like ``1/t``, the steps follow
that slow motion, and separations far below ``rtol`` keep their relative
precision: :math:`\\epsilon = C/t^2` is right to ``1e-24`` at ``t = 1e12``
(``n = 8``, ``d = 16``, ``beta = 0.5``). Merging every pair closer than
``1e-8``, as this module once did, replaced
:math:`\\epsilon(10^{10}) = 1.25 \\cdot 10^{-20}` by rounding, 8e-33.

**The rule: merge where no pairwise observable changes.** Each original
token ``k`` carries its *offset* :math:`\\rho_k`, the distance from its own
direction to its representative's when it was merged (summed over nested
merges; 0 for a token never merged; ``Simulation.offset``). Write the true
directions as :math:`\\theta_k = c_{g(k)} + \\delta_k`,
:math:`|\\delta_k| \\le \\rho_k`, :math:`\\sum_{k \\in g} \\delta_k = 0` (the
centre of mass), ``c`` the representatives. Then

- ``epsilon``: :math:`(n - 1)\\,\\epsilon = \\sum_k |\\theta_k - \\bar\\theta|^2`
  splits (parallel axes) into the spread of the representatives plus the
  internal spreads :math:`\\sum_{k \\in g} |\\delta_k|^2`, so the merged state
  lacks at most :math:`\\sigma = \\sum_k \\rho_k^2/(n - 1)`
  (``Simulation.spread``); ``gamma`` :math:`= 1 - \\epsilon` exceeds the true
  value by at most :math:`\\sigma`;
- every pairwise distance :math:`|\\theta_i - \\theta_j|` lies within
  :math:`s_{ij} = \\rho_i + \\rho_j` of the representatives' :math:`D_{ij}`,
  so each cosine (:math:`1 - \\cos = |\\theta_i - \\theta_j|^2/2`) is off by
  at most :math:`u_{ij} = D_{ij} s_{ij} + s_{ij}^2/2`; ``min_cosine`` lies in
  :math:`[\\min(\\cos - u), \\min(\\cos + u)]`; a pair is undecided for
  ``linked`` when ``cluster_threshold`` lies between :math:`\\cos - u` and
  :math:`\\cos + u`, and ``clusters`` is undecided when the graphs with all
  undecided pairs linked and with none differ in their number of components
  (the number is monotone in the edges, so every graph between agrees
  otherwise).

A value is *exact* when these intervals are what a change of every distance
by ``delta`` relative allows: for the squared distances that ``epsilon``,
``1 - gamma`` and ``1 - min_cosine`` are made of, a relative change of
:math:`\\eta = (1 + \\delta)^2 - 1 = 2\\delta + \\delta^2`, i.e.
:math:`\\sigma \\le \\eta\\,\\epsilon`, :math:`\\sigma \\le \\eta (1 - \\gamma) +
f` and an uncertainty of ``min_cosine`` at most :math:`\\eta (1 - c) + f`,
with :math:`f = 4 d\\,\\varepsilon_{mach}` the Gram matrix's own rounding;
``linked`` and ``clusters``: nothing undecided. A candidate group merges
only if every value stays exact (checked on the merged state, group after
group), so ``delta`` is both the largest distance merged and the largest
relative change of any distance these observables are made of.

The test is relative to the configuration, which separates the two cases
above. A sub-cluster of diameter ``D`` whose other tokens are ``l`` away
changes ``epsilon`` by a fraction of order :math:`n (D/l)^2` and the
distances across it by :math:`D/l`: metastable Post-LN clusters
(``D ~ 1e-10``, ``l ~ 1``) merge. A configuration contracting as a whole
(Pre-LN) has ``D ~ l`` for every pair, and a group holding every live token
has no outside scale at all (its internal spread is all of ``epsilon``):
neither passes, whatever ``delta``. Such a group merges only in one of two
ways, and its values are then bounds:

**Offsets relax.** An offset is a snapshot: it bounds the deviation when
the group merged, and the group has contracted since. At a merge the field
(one evaluation of the unmerged state, the same as for the pace below) gives
each token's rate towards the group's centre,
:math:`\\lambda_k = -\\langle v_k - \\bar v, \\theta_k - \\bar\\theta\\rangle /
|\\theta_k - \\bar\\theta|^2` (:math:`\\mathrm d \\ln|\\theta_k - \\bar\\theta|/\\mathrm d t`
exactly); the group's :math:`\\lambda = \\min_k \\lambda_k`, kept only if
positive. Its tokens' offsets then count as
:math:`\\rho\\,e^{-\\lambda w/2}`, :math:`w = \\min(t - t_m, t_m)`, ``t_m``
the merge time. The window and the half rate make this a lower bound of
the contraction when the rate changes only through a speed law like a
power :math:`t^{-p}`, :math:`p \\le 1` (the built-ins: ``p`` = 0 or 1/2):
over :math:`[t_m, 2 t_m]` the rate stays above :math:`\\lambda/2`; later
no further decay is credited (the offsets keep their value, the assumption
made without relaxation too). The rate inside a tight cluster is the share
of its tokens' attention that stays in it, which changes only when another
cluster comes within reach, and that cluster then merges with it anew. A nested merge adds the
representative's distance to the new centre to its tokens' relaxed offsets
and restarts the relaxation at the slower of the two rates. The log clock
(no time at hand in the refresh) and runs without a field do not relax,
nor does a group of every live token (below): its truth contracts to
nothing, but an unmerged integration holds its tokens at its own noise
(``epsilon`` 1e-30 to 1e-25 where the truth is far below), which only the
unrelaxed ``spread`` covers.
Without relaxation, offsets summed over nested merges (Post-LN's clusters
of clusters, 1.3e-8 at ``delta = 1e-8``) blocked the merge of a pair that
had met at ``t = 1162`` (``n = 32``, ``d = 8``, ``beta = 9``, seed 3) for
the ``min_cosine`` of clusters ``1.69`` apart; meanwhile the hovering pair
held DOP853 at its stability limit, the member switched to ROS34PW2 and
stepped ``h ~ 25`` for 12,000 time units: 24,080 evaluations instead of 7,548.

**Below the state's resolution.** A group whose diameter is at most
:math:`8 \\sqrt{d}\\,\\varepsilon_{mach}` (:data:`RESOLUTION`; 3e-15 at
``d = 3``, 5e-15 at ``d = 8`` in float64) merges regardless: the stored
unit vectors then differ by a few roundings (each component is rounded to
:math:`\\varepsilon_{mach}/2`), so the state no longer resolves the
separation, and the remaining motion is rounding noise that caps explicit
steps (Post-LN after its last clusters met: unmerged, ``n = 8``, ``d = 4``,
``beta = 9`` ran out of its 200,000 steps at ``t = 6e10``).

**Faster than the clock.** A group of every live token within ``delta``
merges when the field contracts it at least :data:`FAST` = 1e3 e-folds per
e-fold of time: with :math:`\\lambda_k = -\\langle v_k - \\bar v,
\\theta_k - \\bar\\theta\\rangle / |\\theta_k - \\bar\\theta|^2` each
token's rate towards the centre (from one evaluation of the field, not
from the recent motion, which integration noise can hold still), :math:`t
\\min_k \\lambda_k \\ge 10^3` (log clock: :math:`\\min_k \\lambda_k \\ge
10^3` per unit of :math:`\\tau`). The two regimes are far apart. Where the
spread decays like a power of ``t``, :math:`\\epsilon = C t^{-2p}`, the
pace is exactly ``p``: measured 0.88 to 1.0 for Pre-LN, Mix-LN and Peri-LN
(``t`` and log clock, ``d = 2`` and 16, up to ``tau = 1e4``), and such a
collapse is resolved, so it never merges. Where it decays exponentially
(Post-LN, nGPT, sqrt-scaling after their last clusters met) the pace grows
with ``t`` (``t`` times a rate of order 1; sqrt-scaling
:math:`\\sqrt{t}`): measured 1e5 to 7e5 where they merged. There the true
spread falls below any output's resolution within a fraction
:math:`\\ln(\\delta/\\delta_{res}) / 10^3 \\approx 1.5\\%` of the time
reached, while the integration holds the tokens at its own noise
(``rtol``-level distances; an unmerged float64 run reports ``epsilon`` of
1e-18 to 1e-27 there where the truth is far below, and float32, which has
no stiff method, hovers until the end: 5,180 evaluations instead of 1,198
for ``n = 6`` to ``t = 5e3``). Merging reports the truth as a bound:
``epsilon`` at most ``spread``.

**In the cluster's frame.** A continuous run that integrates each member
in its own frame (:mod:`symdyn.particles.continuous`: the deviations from a
centre at their own scale) resolves a collapse to ``epsilon = 1e-280``, so
there (``Coalescence(whole=False)``) a group of every live token never
merges by the two rules above; the tokens are read as directions for the
other merges only while ``sqrt(epsilon) >= 1e-3``, and all tokens of a member
whose ``epsilon`` fell below 1e-280 become one (:meth:`Coalescence.collapse`,
offsets from the frame's deviations; the values bounds).

**Bounds in the result.** At every output the same intervals are computed
on the recorded (merged) state, and ``Simulation.bound[name]`` is ``True``
where a value is not exact; the value reported is the merged state's, and
the true ``epsilon`` is then at most ``epsilon + spread``. A value exact
when its tokens merged can become a bound later, when the configuration
contracts past the offsets its groups carry. The intervals assume that a
merged group does not expand afterwards (true inside a cluster, which
contracts; in general a group can grow like :math:`e^{L t}`, ``L`` the
field's Lipschitz constant), and they add nothing for the integration's own
error. ``r``, ``speed`` and ``X`` of a merged token are its group's: its
direction lay within its offset of the reported one, its norm within
``delta`` relative, and its speed differs from the group's by its motion
relative to the group's centre, at most ``L`` times the offsets.

**Under the causal mask** a group does not attend as one token of mass
``k`` (a query between its members sees only some of them):
:mod:`symdyn.particles.causal` merges there, exactly.

Measured (``tests/particles/test_merging.py``): Pre-LN, Mix-LN and Peri-LN from a
uniform start (``n = 8``, ``d = 16``, ``beta = 0.5``) to ``t = 1e12``, in
``t`` and in the log clock, never merge and report what the unmerged run
reports, bit for bit; Post-LN, nGPT and sqrt-scaling at ``beta = 9`` to
``t = 1e12`` merge and agree with the unmerged run within these intervals.
The cost (``benchmarks/long_horizon.py`` part a): Post-LN, ``n = 32``,
``d = 8``, ``beta = 9``, ``t = [0, 1e3, 1e6, 1e9, 1e12]``: batch 2 seed 3
7,647 evaluations (before relaxation 25,651), batch 1 seed 3 7,593 (24,080),
batch 1 seed 0 6,655 (6,661); with outputs only at the ends 7,569, 7,548,
6,610, the same steps. Against ``merge=0`` to ``t = 1e5``: ``epsilon`` within 3.3e-11
relative where exact, the unmerged value within ``epsilon + spread`` after
the last collapse, the same cluster counts. Unmerged, ``t = 1e6`` alone
takes 187,122. The field at a
check costs one evaluation (only where some group is a candidate), counted
in ``Simulation.nfev``.

Layer 2, particles.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

from .clusters import pair_components, pairs

#: The default threshold is this many times the integrator's rtol.
PER_RTOL = 100
#: The largest threshold accepted per precision (merging stays at the level
#: the integration resolves; float32 resolves ~1e-7, runs at rtol >= 1e-6).
LARGEST = {"float64": 1e-6, "float32": 1e-4}
#: Groups with a diameter of at most RESOLUTION sqrt(d) eps are below the
#: state's resolution and merge regardless of the observables.
RESOLUTION = 8
#: A group of every live token contracting this many e-folds per e-fold of the
#: clock (rate times t; the log clock: rate per unit tau) merges, its values
#: flagged as bounds: its outputs would resolve it for at most ~15/FAST of t.
FAST = 1e3
#: The observables that ``bounds`` decides, each batch + (K,) in a Simulation.
PAIRWISE = ("gamma", "epsilon", "min_cosine", "linked", "clusters")


def resolution(d: int, dtype) -> float:
    """The separation unit vectors in ``d`` dimensions no longer resolve."""
    return RESOLUTION * np.sqrt(d) * float(np.finfo(dtype).eps)


def bounds(theta, offset, threshold: float, tol: float, G=None, eps=None):
    """Which pairwise observables of merged states are exact (module docstring).

    ``theta`` (m, n, d): every original token's direction (its representative's);
    ``offset`` (m, n): how far each lay from it. Returns ``(flags, spread)``:
    ``flags[name]`` (m,) is True where the value is only a bound, ``spread``
    (m,) the most that ``epsilon`` can lack. ``G`` (m, n, n; its off-diagonal
    read) and ``eps`` (m,): the Gram matrices and the spread ``epsilon`` of
    ``theta`` where the caller has them (the recorder).
    """
    m, n, d = theta.shape
    floor = 4 * d * float(np.finfo(theta.dtype).eps)
    if eps is None:
        dev = theta - theta.mean(axis=1, keepdims=True)
        eps = np.einsum("mnd,mnd->m", dev, dev) / (n - 1)
    spread = np.einsum("mn,mn->m", offset, offset) / (n - 1)
    if G is None:
        G = theta @ np.swapaxes(theta, -1, -2)
    i, j = pairs(n)                                     # the pairs i != j, row by row
    cos = np.take(G.reshape(m, n * n), i * n + j, axis=1)          # (m, n (n - 1))
    D = np.sqrt(np.maximum(2 - 2 * cos, 0.0))
    s = np.take(offset, i, axis=1) + np.take(offset, j, axis=1)
    u = D * s + s * s / 2
    c_min = cos.min(axis=1)
    unc = np.maximum(c_min - (cos - u).min(axis=1), (cos + u).min(axis=1) - c_min)
    linked = cos >= threshold
    undecided = np.where(linked, cos - u < threshold, cos + u >= threshold) & (u > 0)
    rel = 2 * tol + tol * tol               # squared distances, distances to tol
    flags = {"gamma": spread > rel * eps + floor, "epsilon": spread > rel * eps,
             "min_cosine": unc > rel * (1 - c_min) + floor,
             "linked": undecided.any(axis=1), "clusters": np.zeros(m, dtype=bool)}
    rows = np.flatnonzero(flags["linked"])
    if rows.size:       # clusters counted with the undecided links cut and kept
        flags["clusters"][rows] = (pair_components(linked[rows] & ~undecided[rows], n)
                                   != pair_components(linked[rows] | undecided[rows], n))
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
                 threshold: float = 0.999, tol: float | None = None, whole: bool = True):
        self.mass = np.ones((M, n))
        self.rep = np.tile(np.arange(n), (M, 1))
        self.offset = np.zeros((M, n))
        # the offset as merged, the group's contraction rate then and the time
        # (module docstring, "Offsets relax"): offset = start e^(-rate window / 2)
        self.start, self.rate, self.since = np.zeros((3, M, n))
        self.distance = distance
        self.tol = distance if tol is None else tol
        self.threshold = threshold
        self.log_norm = log_norm        # rad holds log r - tau (symdyn.model.log_clock)
        self.merges = 0
        # False: a group of every live token never merges (a run in the cluster's
        # frame resolves its collapse: symdyn.particles.continuous), see collapse
        self.whole = whole
        #: ``pace(m, theta, rad) -> (velocity (n, d), clock scale)`` of member
        #: ``m`` (set by the caller; None: groups of every token wait for the
        #: state's resolution); ``evaluations`` counts its calls
        self.pace = None
        self.evaluations = 0

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
        groups = self._groups(theta, rad, close)
        if not groups:
            return False
        velocity, now = self._velocity(m, theta, rad)
        if now is not None:
            self._relax(m, now)
        joined = False
        smallest = resolution(theta.shape[-1], theta.dtype)
        for tokens in groups:
            diameter = np.linalg.norm(theta[tokens, None] - theta[None, tokens], axis=-1).max()
            # a group of every live token leaves epsilon nothing but its own spread:
            # merged (a bound) only when it contracts much faster than the clock
            everything = len(tokens) == np.count_nonzero(self.mass[m])
            if everything and not self.whole:
                continue
            rate = self._rate(m, theta, tokens, velocity)
            if diameter > smallest and everything and not self._fast(rate, now, velocity):
                continue
            head, weight = tokens[0], self.mass[m, tokens]
            # the group's centre of mass: to first order the intra-cluster flow
            # keeps it, so it is where the group would have met (error O(delta^2))
            centre = weight @ theta[tokens]
            centre = centre / np.linalg.norm(centre)
            members = np.isin(self.rep[m], tokens)
            offset = self.offset[m].copy()
            offset[members] += np.linalg.norm(theta[self.rep[m, members]] - centre, axis=-1)
            if diameter > smallest and not everything and not self._exact(
                    m, theta, centre, head, members, offset):
                continue
            theta[head] = centre
            rad[head] = weight @ rad[tokens] / weight.sum()
            self.mass[m, head] = weight.sum()
            self.mass[m, tokens[1:]] = 0.0
            self.rep[m, members] = head
            self.offset[m] = offset
            # a whole configuration's offsets stay: the unmerged run holds its
            # tokens at its own noise, which the spread of the merge still bounds
            self._anchor(m, members, 0.0 if everything else rate, now)
            self.merges += len(tokens) - 1
            joined = True
        return joined

    def _velocity(self, m, theta, rad):
        """The field of member ``m`` (one evaluation, counted) and its time
        (None: no field, or the log clock, whose offsets do not relax)."""
        if self.pace is None:
            return None, None
        velocity, scale = self.pace(m, theta, rad)
        self.evaluations += 1
        return velocity, None if self.log_norm else scale

    def _rate(self, m, theta, tokens, velocity):
        """The slowest rate at which the group's tokens approach its centre,
        :math:`\\min_k -\\langle v_k - \\bar v, \\theta_k - \\bar\\theta\\rangle /
        |\\theta_k - \\bar\\theta|^2` (0 without a field or when none approaches)."""
        if velocity is None:
            return 0.0
        weight = self.mass[m, tokens]
        x = theta[tokens] - weight @ theta[tokens] / weight.sum()
        w = velocity[tokens] - weight @ velocity[tokens] / weight.sum()
        d2 = np.einsum("kd,kd->k", x, x)
        rate = -np.einsum("kd,kd->k", w, x)[d2 > 0] / d2[d2 > 0]
        return max(float(rate.min()), 0.0) if rate.size else 0.0

    def _fast(self, rate, now, velocity):
        """Does the group contract at least FAST e-folds per e-fold of the clock
        (rate times t; the log clock: per unit tau)? The rate from the field, not
        from the recent motion, which integration noise can hold still."""
        return velocity is not None and rate * (1.0 if now is None else now) >= FAST

    def _relax(self, m, now):
        """Offsets at time ``now``: each decays at half the rate its group
        contracted at when merged, over at most as long again as its merge time."""
        window = np.minimum(np.maximum(now - self.since[m], 0.0), self.since[m])
        self.offset[m] = self.start[m] * np.exp(-self.rate[m] * window / 2)

    def _anchor(self, m, members, rate, now):
        """A merge at ``now`` restarts its tokens' offsets' relaxation at the
        group's rate (the slower of it and theirs where they carried offsets)."""
        if now is None:
            rate = 0.0
        old = np.where(self.start[m, members] > 0, self.rate[m, members], rate)
        self.start[m, members] = self.offset[m, members]
        self.rate[m, members] = np.minimum(old, rate)
        self.since[m, members] = 0.0 if now is None else now

    def _exact(self, m, theta, centre, head, members, offset):
        """Would every pairwise observable stay exact after this merge?"""
        trial = theta.copy()
        trial[head] = centre
        rep = self.rep[m].copy()
        rep[members] = head
        flags, _ = bounds(trial[rep][None], offset[None], self.threshold, self.tol)
        return not any(f[0] for f in flags.values())

    def collapse(self, m, distance, rad):
        """Merge every live token of member ``m`` into its first (a frame
        whose spread fell below what it resolves): ``distance`` (n,) of each
        token from the group's centre of mass adds to the offsets of the
        tokens it carries (kept from then on); ``rad`` changed in place.
        Returns the head."""
        live = np.flatnonzero(self.mass[m] > 0)
        head, weight = live[0], self.mass[m, live]
        self.offset[m] += distance[self.rep[m]]
        rad[head] = weight @ rad[live] / weight.sum()
        self.mass[m, head] = weight.sum()
        self.mass[m, live[1:]] = 0.0
        self.rep[m] = head
        self._anchor(m, np.ones(len(self.rep[m]), dtype=bool), 0.0, None)
        self.merges += len(live) - 1
        return head

    def live_dims(self, members, per_token):
        """Components that still move: ``per_token`` for each live token."""
        return (self.mass[members] > 0).sum(axis=1) * per_token

    def expand(self, members, *arrays):
        """Per original token: each array (m, n, ...) read at the representatives
        (the arrays themselves while no token has merged)."""
        if not self.merges:
            return arrays
        rep = self.rep[members]
        rows = np.arange(len(members))[:, None]
        return tuple(x[rows, rep] for x in arrays)

    def bounds(self, members, theta, G=None, eps=None):
        """``bounds`` of the expanded directions ``theta`` (m, n, d) of
        ``members`` (``G``, ``eps``: their Gram matrices and spread, if known);
        members whose tokens carry no offset are exact."""
        m = len(members)
        flags = {k: np.zeros(m, dtype=bool) for k in PAIRWISE}
        spread = np.zeros(m)
        some = np.flatnonzero((self.offset[members] > 0).any(axis=1))
        if some.size:
            f, spread[some] = bounds(theta[some], self.offset[members[some]],
                                     self.threshold, self.tol,
                                     None if G is None else G[some],
                                     None if eps is None else eps[some])
            for k in PAIRWISE:
                flags[k][some] = f[k]
        return flags, spread
