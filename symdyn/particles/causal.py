"""Merging under the causal mask: exact where the state cannot tell the members apart.

Under ``mask="causal"`` token ``i`` attends to ``j <= i``. Two coincident
tokens ``a < b`` are both seen by every query ``i >= b``, but a query ``a <=
i < b`` sees only ``a``: a merged group cannot attend as one token of mass
``k`` at its head (what full attention's merging does). It attends exactly
here: the field of a merged state is the unmerged field evaluated on the
*expanded* state (every original token at its representative's position,
plain causal attention), so query ``i`` sees group ``g`` with the visible
mass :math:`\\#\\{j \\in g : j \\le i\\}` and nothing the mask hides. The
group's representative moves with the mean of its members' velocities
(the centre of mass's velocity); frozen members report it.

**When coincident tokens stay coincident.** The members' own visible sets
differ (``b`` sees the tokens in ``(a, b]`` that ``a`` does not), so their
velocities :math:`v_k` at the shared position differ in general (even when
every token in between sits there too: the softmax normalizer grows, the
projected numerator does not). Inside a cluster that drift is balanced by
the cluster's contraction at rate :math:`\\lambda`: the members sit
:math:`|v_k - \\bar v|/\\lambda` from their centre. A group merges only when
that separation and its diameter are at most ``delta`` (``merge=``); its
members' offsets (:mod:`symdyn.particles.merging`) grow by the *allowance*,
twice the larger of the two (at most ``delta``), and every pairwise
observable must stay exact with them, as under full attention. :math:`\\lambda`
is measured by the field (one evaluation with the members displaced by
``1e-7`` in tangent directions of mean zero):
:math:`\\lambda = \\min_k -\\langle \\Delta v_k - \\overline{\\Delta v},
\\delta_k\\rangle/|\\delta_k|^2`. Every refresh re-evaluates
:math:`|v_k - \\bar v|` for the merged groups (one evaluation) and *splits* a
group whose separation exceeds its allowance (when another cluster comes
within reach): its members continue unmerged from the shared position,
which is their state up to the allowance. Only schemes on the sphere in
the clock ``t`` merge (the norms' own drift is not covered), and only with
``merge=`` given: the default under the mask is 0, because merging did not
save evaluations (``benchmarks/causal_long_run.py`` counts both; the
CHANGELOG keeps the figures). Inside the plateau the members sit ``1e-10``
to ``4e-8`` apart (their velocities genuinely differ, by the tokens only the later member
sees), so few groups qualify, and those that do split again when the
separation drifts past its allowance; the remaining intra-cluster modes
(rate ~0.5) keep the explicit steps short.

Layer 2, particles.
"""

from __future__ import annotations

import numpy as np

from . import merging

#: The tangent displacement that measures a group's contraction rate.
PROBE = 1e-7


class CausalCoalescence(merging.Coalescence):
    """:class:`~symdyn.particles.merging.Coalescence` under the causal mask.

    ``velocity(m, theta, rad) -> (n, d)``: the plain causal field of member
    ``m`` at an expanded state (set by the caller, counted in ``evaluations``).
    """

    def __init__(self, M, n, distance, threshold=0.999):
        super().__init__(M, n, distance, threshold=threshold)
        self.velocity = None
        self.rate_of = np.zeros((M, n))          # each head's contraction rate
        self.allow = np.zeros((M, n))            # and the separation it allows

    def merge(self, members, theta, rad):
        changed = self.split(members, theta, rad)
        return changed | super().merge(members, theta, rad)

    def _join(self, m, theta, rad, close):
        """Merge the admitted groups (:meth:`admit`) at their centres of mass
        where every pairwise observable stays exact (merging's ``_exact``)."""
        joined = False
        for tokens in self._groups(theta, rad, close):
            head, weight = tokens[0], self.mass[m, tokens]
            centre = weight @ theta[tokens]
            centre = centre / np.linalg.norm(centre)
            members = np.isin(self.rep[m], tokens)
            if not self.admit(m, theta, rad, tokens):
                continue
            offset = self.offset[m].copy()          # within the allowance, always
            offset[members] += self.allow[m, head]
            if not self._exact(m, theta, centre, head, members, offset):
                continue
            theta[head], rad[head] = centre, weight @ rad[tokens] / weight.sum()
            self.mass[m, head] = weight.sum()
            self.mass[m, tokens[1:]] = 0.0
            self.rep[m, members] = head
            self.offset[m] = offset
            self.merges += len(tokens) - 1
            joined = True
        return joined

    def admit(self, m, theta, rad, tokens) -> bool:
        """May ``tokens`` (live tokens of member ``m``) move as one? Their
        diameter and their members' steady separation at most ``delta``; the
        allowance, twice the larger (at most ``delta``), is what their offsets
        grow by and what a refresh lets the separation reach."""
        diameter = np.linalg.norm(theta[tokens, None] - theta[None, tokens], axis=-1).max()
        if diameter > self.distance:
            return False
        rep = self.rep[m].copy()
        rep[np.isin(rep, tokens)] = tokens[0]
        group = np.flatnonzero(rep == tokens[0])
        x = theta[rep]
        v = self._field(m, x, rad[rep])
        rate = self._rate_at(m, x, rad[rep], group, v)
        if not rate > 0 or _apart(v, group) > self.distance * rate:
            return False
        self.rate_of[m, tokens[0]] = rate
        self.allow[m, tokens[0]] = min(2 * max(diameter, _apart(v, group) / rate),
                                       self.distance)
        return True

    def _rate_at(self, m, x, r, group, v):
        rng = np.random.default_rng(len(group))
        delta = rng.normal(size=(len(group), x.shape[-1]))
        delta -= np.einsum("kd,kd->k", delta, x[group])[:, None] * x[group]
        delta -= delta.mean(axis=0)
        delta *= PROBE / np.linalg.norm(delta, axis=-1, keepdims=True)
        y = x.copy()
        y[group] += delta
        y[group] /= np.linalg.norm(y[group], axis=-1, keepdims=True)
        w = self._field(m, y, r)[group] - v[group]
        w -= w.mean(axis=0)
        d = y[group] - x[group]
        return float((-np.einsum("kd,kd->k", w, d) / np.einsum("kd,kd->k", d, d)).min())

    def _field(self, m, x, r):
        self.evaluations += 1
        return self.velocity(m, x, r)

    def split(self, members, theta, rad):
        """Unmerge the groups whose members would part by more than their allowance."""
        changed = np.zeros(len(members), dtype=bool)
        for i, m in enumerate(members):
            heads = np.flatnonzero(self.mass[m] > 1)
            if not heads.size:
                continue
            rep = self.rep[m]
            v = self._field(m, theta[i][rep], rad[i][rep])
            for h in heads:
                group = np.flatnonzero(rep == h)
                if _apart(v, group) > self.allow[m, h] * self.rate_of[m, h]:
                    theta[i, group], rad[i, group] = theta[i, h], rad[i, h]
                    self.mass[m, group], self.rep[m, group] = 1.0, group
                    self.merges -= len(group) - 1
                    changed[i] = True
        return changed


def _apart(v, group) -> float:
    """The largest deviation of a group's velocities from their mean."""
    return float(np.linalg.norm(v[group] - v[group].mean(axis=0), axis=-1).max())


def group_field(field, merged, member, tm, theta, rad, beta, phase, draw=None):
    """The direction field of merged states under the causal mask: the plain
    field of the expanded state, each group's mean at its head, 0 elsewhere."""
    rows = np.arange(len(member))[:, None]
    rep = merged.rep[member]
    v, rho = field.grouped(tm, theta[rows, rep], rad[rows, rep], beta, phase, draw)
    n = rep.shape[1]
    onehot = (rep[:, None, :] == np.arange(n)[None, :, None]).astype(v.dtype)  # (m, head, k)
    mass = merged.mass[member]
    scale = np.divide(1.0, mass, out=np.zeros_like(mass), where=mass > 0)
    v = np.matmul(onehot, v) * scale[..., None]
    rho = np.einsum("mhk,mk->mh", onehot, rho) * scale
    return v, rho


class Grouped:
    """A field whose ``grouped`` is :func:`group_field` for ``member`` (what
    :meth:`~symdyn.particles.result.Recorder.observe` evaluates)."""

    def __init__(self, field, merged, member):
        self.field, self.merged, self.member = field, merged, member

    def __getattr__(self, name):
        return getattr(self.field, name)

    def __setattr__(self, name, value):
        if name in ("field", "merged", "member"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.field, name, value)

    def grouped(self, tm, theta, rad, beta, phase, draw=None, mass=None, normalizers=None):
        if normalizers is not None:     # a masked field never shares them (Field)
            raise ValueError("normalizers: the causal field has none to share")
        return group_field(self.field, self.merged, self.member, tm, theta, rad, beta,
                           phase, draw)
