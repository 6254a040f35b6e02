"""The result of a particle simulation and the observables recorded at the output times.

:class:`Simulation` holds the observables (batch axes first, time last);
:class:`Recorder` computes them from the state at each output time (a new
observable goes in both).

Layer 2, particles.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..base.archive import Archived
from ..base.arithmetic import all_finite, einsum, row_norms
from ..base.checks import memory
from ..base.provenance import Provenance
from ..model.display import simulation_rows, summary_html, summary_text
from ..ode import outputs
from . import merging
from .clusters import ClusterViews, graph_labels
from .field import FRAME_FLOOR


@dataclass(frozen=True, repr=False)
class Simulation(ClusterViews, Archived):
    """Observables of a particle simulation; batch axes first, time last.

    Attributes
    ----------
    t : ndarray (K,)
    gamma : ndarray batch + (K,)
        Mean over pairs ``i != j`` of :math:`\\langle\\theta_i, \\theta_j\\rangle`.
    epsilon : ndarray batch + (K,)
        :math:`1 - \\gamma = \\sum_k |\\theta_k - \\bar\\theta|^2/(n-1)`, computed
        from the deviations, so it keeps its relative precision near a cluster
        down to ``floor`` (flagged in ``bound["epsilon"]`` below it).
    min_cosine : ndarray batch + (K,)
        Smallest pairwise cosine.
    clusters : ndarray batch + (K,)
        Connected components of the graph ``cos >= cluster_threshold``.
    linked : ndarray batch + (K,)
        Fraction of the pairs ``i < j`` with ``cos >= cluster_threshold`` (the
        colour of the clustering phase diagram).
    r : ndarray batch + (n, K)
        Token norms.
    speed : ndarray batch + (n, K)
        Token speeds :math:`|\\dot\\theta_k|` of the continuous field.
    X : ndarray batch + (K, n, d) or None
        Tokens, only with ``save_x=True``.
    merged : int
        Tokens merged into a coincident one over the whole batch
        (:mod:`symdyn.particles.merging`; continuous dynamics only). A merged token
        reports its group's ``r``, ``speed`` and ``X``.
    bound : dict of str to ndarray of bool, each batch + (K,)
        Keys ``"gamma"``, ``"epsilon"``, ``"min_cosine"``, ``"linked"``,
        ``"clusters"``: ``True`` where, after a merge, the value is only a
        bound (that of the merged state; :mod:`symdyn.particles.merging` gives the
        interval), ``False`` where a merge changed it by less than the merge
        distance relative (all ``False`` without merging).
    spread : ndarray batch + (K,)
        The most ``epsilon`` can lack through merged tokens,
        ``(offset**2).sum(-2) / (n - 1)``, or ``floor`` where ``epsilon`` lies
        below it otherwise: where ``bound["epsilon"]`` is set, the true value
        is at most ``epsilon + spread``.
    floor : ndarray batch + (K,)
        The least ``epsilon`` the run resolves: below it the value is
        rounding or integration noise, flagged in ``bound["epsilon"]`` (the
        truth at most ``floor``). A continuous run in the cluster's frame
        (identity weights, no mask, float64: :mod:`symdyn.particles.continuous`)
        keeps ``epsilon``'s relative precision down to 1e-280; otherwise the
        directions, stored as unit vectors, resolve it to
        :math:`(10^3 \\max(\\mathrm{rtol}, \\mathrm{atol}, \\delta_{res}))^2` (layers:
        :math:`(10^3 \\delta_{res})^2`, :math:`\\delta_{res} = 8\\sqrt d\\,\\varepsilon_{mach}`):
        1e-14 at the default tolerances.
    offset : ndarray batch + (n, K)
        How far each token's direction lay from the one it reports (its
        group's representative) when it was merged; 0 for a token never merged.
    labels : ndarray batch + (K, n)
        Canonical cluster labels of the graph of ``clusters`` (cluster ``c`` is
        the ``c``-th by its earliest token; :mod:`symdyn.particles.clusters`):
        ``cluster_labels()``, ``events``, ``plateaus``, ``leaders`` read them.
    energy : ndarray batch + (K,)
        :math:`E_\\beta = \\frac{1}{2\\beta n^2}\\sum_{ij} e^{\\beta\\langle\\theta_i,
        \\theta_j\\rangle}` of the directions at the run's beta (inf at beta = 0 and
        where it overflows, beta > ~700).
    provenance : Provenance
        What made the run (:mod:`symdyn.base.provenance`): ``str(sim)`` prints
        it, ``sd.rerun(sim)`` runs it again.
    x0 : ndarray batch + (n, d)
        The starting tokens as given (``sd.rerun`` starts from them).
    stiff_steps : int
        Steps taken with the Rosenbrock-W method over the whole batch
        (``method="auto"``; the rest are DOP853 steps).
    clock : {"t", "log"}
        ``"log"``: ``t`` holds :math:`\\tau = \\log(1 + t)`, ``r`` holds
        :math:`\\log r` and ``speed`` is :math:`|d\\theta/d\\tau|`
        (:mod:`symdyn.model.log_clock`).

    Examples
    --------
    >>> import symdyn as sd
    >>> sim = sd.simulate("post-ln", sd.init.sphere(6, 3, batch=2, seed=0), beta=1.0,
    ...                   t=[0.0, 50.0])
    >>> sim.gamma.shape, sim.clusters[:, -1].tolist()       # one cluster each
    ((2, 2), [1, 1])
    """

    t: np.ndarray
    gamma: np.ndarray
    epsilon: np.ndarray
    min_cosine: np.ndarray
    clusters: np.ndarray
    linked: np.ndarray
    r: np.ndarray
    speed: np.ndarray
    X: np.ndarray | None
    cluster_threshold: float
    steps: int
    nfev: int
    message: str
    merged: int = 0
    clock: str = "t"
    stiff_steps: int = 0
    bound: dict = dataclasses.field(default_factory=dict)
    spread: np.ndarray | None = None
    offset: np.ndarray | None = None
    labels: np.ndarray | None = None
    energy: np.ndarray | None = None
    provenance: Provenance | None = None
    x0: np.ndarray | None = None
    floor: np.ndarray | None = None

    DIMS = {"t": ("time",), "gamma": ("time",), "epsilon": ("time",),
            "min_cosine": ("time",), "clusters": ("time",), "linked": ("time",),
            "r": ("token", "time"), "speed": ("token", "time"), "X": ("time", "token", "dim"),
            "bound": ("time",), "spread": ("time",), "offset": ("token", "time"),
            "labels": ("time", "token"), "energy": ("time",), "x0": ("token", "dim"),
            "floor": ("time",)}

    def _rows(self):
        return [*(self.provenance.summary() if self.provenance else []), *simulation_rows(self)]

    def _repr_html_(self) -> str:
        return summary_html("Simulation (sd.simulate)", self._rows(), self.t, self.gamma)

    def __str__(self) -> str:
        return summary_text("Simulation (sd.simulate)", self._rows(), self.t, self.gamma,
                            epsilon=self.epsilon)


def check_outputs(t, M, n, d, save_x):
    """Refuse, before ``t`` is converted, output times whose recorded
    observables would not fit in memory (:func:`~symdyn.base.checks.memory`:
    half of this machine's memory): per member and output time 6 floats,
    5 flags and ``3 n`` floats (``r``, ``speed``, ``offset``), and ``n d``
    more with ``save_x``; twice that (the arrays and the result's copies).
    Output times cost no steps, so their count has no other limit."""
    K = outputs.count(t)
    per = 8 * (7 + 4 * n + (n * d if save_x else 0)) + 5
    memory(2 * M * K * per, f"t: {K:,} output times x {M:,} member(s) of {n} tokens "
                            f"(the recorded observables{', save_x' if save_x else ''})")


def resolution(d, dtype, rtol=None, atol=None) -> float:
    """The least ``epsilon`` that directions stored as unit vectors resolve
    (``Simulation.floor``): the square of 1e3 times the larger of the
    tolerances (continuous runs, ``rtol``, ``atol``) and of the separation the
    stored vectors resolve (:func:`~symdyn.particles.merging.resolution`). The
    integration holds a collapsed configuration at its own noise, ``epsilon``
    of 1e-23 to 1e-21 at ``rtol = 1e-10``, ``atol = 1e-12``, where the truth
    is far below (Post-LN, ``n = 8``, ``t = 40 ... 100``)."""
    noise = max(rtol or 0.0, atol or 0.0, merging.resolution(d, dtype))
    return (1e3 * noise) ** 2


@lru_cache(maxsize=16)
def _ones(n, dtype):
    """(1, n) ones: ``_ones(n) @ theta`` sums the tokens (``theta.mean(axis=1)`` is
    a reduction over a middle axis, 6x slower)."""
    out = np.ones((1, n), dtype=dtype)
    out.flags.writeable = False
    return out


@lru_cache(maxsize=16)
def _upper_flat(n):
    """Flat indices ``i n + j`` of the strict upper triangle ``i < j`` of (n, n)."""
    i, j = np.triu_indices(n, 1)
    out = i * n + j
    out.flags.writeable = False
    return out


class Recorder:
    """Observables at the output times; NaN (clusters: -1) until recorded."""

    def __init__(self, M, n, d, K, threshold, save_x):
        self.gamma, self.epsilon, self.min_cos, self.linked = np.full((4, M, K), np.nan)
        self.clusters = np.full((M, K), -1)
        self.r, self.speed = np.full((2, M, n, K), np.nan)
        self.X = np.full((M, K, n, d), np.nan) if save_x else None
        self.threshold = threshold
        self.bound = {k: np.zeros((M, K), dtype=bool) for k in merging.PAIRWISE}
        self.spread = np.zeros((M, K))
        self.offset = np.zeros((M, n, K))
        self.labels = np.full((M, K, n), -1)
        self.energy = np.full((M, K), np.nan)
        self.floor = np.zeros((M, K))
        #: epsilon below this is not resolved by directions stored as unit
        #: vectors (set by the run: :func:`resolution`)
        self.resolution = 0.0
        self._work = None

    def observe(self, field, k, members, tk, theta, rad, beta, draw, where, merged=None,
                shift=0.0, frame=None):
        """Record row ``i`` as output ``k[i]`` (or ``k``) of member ``members[i]``
        at time ``tk[i]`` (or ``tk``), every row at once: directions ``theta``
        (m, n, d), ``rad`` (m, n); the speeds are the field's there, one
        batched evaluation for all rows (``r`` is recorded as ``rad + shift``:
        the log clock's ``u + tau``; ``shift`` a scalar or one per row).

        ``merged`` (a :class:`~symdyn.particles.merging.Coalescence`): every original
        token reports its representative's state and speed, and the pairwise
        observables that are only bounds are flagged. A non-finite
        token or speed, or a law the field refused, is an ``ArithmeticError``
        (``where``, a str or a callable giving one, tells the reader what to
        change). ``frame``: ``(scale (m,), deviations (m, n, d), speed (m, n))``
        of a run in the cluster's frame (:mod:`symdyn.particles.continuous`):
        ``theta = c + scale * deviations``, and the speeds already computed.
        """
        sums = None
        if frame is None:
            tm = np.broadcast_to(np.asarray(tk, dtype=float), (len(members),))
            field.fault = None
            mass = None if merged is None else merged.mass[members]
            # the energy's kernel sums from the field's softmax where it has them
            Z = np.empty(rad.shape) if field.shares_normalizers else None
            dth, _ = field.grouped(tm, theta, rad, beta, field.phase_at(tm), draw, mass, Z)
            speed = row_norms(dth)
            # sum_ij e^{beta(<x_i, x_j> - 1)} over the original tokens: sum_k m_k Z_k
            sums = None if Z is None else (Z.sum(axis=-1) if mass is None
                                           else einsum("mn,mn->m", Z, mass))
            dev = None
        else:
            scale, dev, speed = frame
        if merged is not None:
            theta, rad, speed = merged.expand(members, theta, rad, speed)
            if dev is not None:
                (dev,) = merged.expand(members, dev)
        if not (all_finite(theta) and all_finite(speed)):
            raise ArithmeticError("simulate: " + (
                field.fault or f"non-finite tokens or velocities at "
                               f"{where if isinstance(where, str) else where()}"))
        G, eps = self(k, members, theta, rad + np.asarray(shift)[..., None], speed,
                      np.reshape(beta, -1), sums, None if dev is None else (scale, dev))
        if merged is not None:
            flags, self.spread[members, k] = merged.bounds(members, theta, G, eps)
            self.offset[members, :, k] = merged.offset[members]
            for name, flag in flags.items():
                self.bound[name][members, k] = flag
        self.resolve(k, members, eps, None if frame is None else FRAME_FLOOR)

    def resolve(self, k, members, eps, floor=None):
        """Flag ``epsilon`` below the state's resolution ``floor`` (default
        :attr:`resolution`; a run in the cluster's frame:
        :data:`~symdyn.particles.field.FRAME_FLOOR`) as a bound: the
        truth is then at most the floor, and ``spread`` is the floor (a value
        already a bound of merged tokens keeps their spread)."""
        floor = self.resolution if floor is None else floor
        self.floor[members, k] = floor
        low = eps < floor
        if low.any():
            rows, at = members[low], np.broadcast_to(k, members.shape)[low]
            # a bound of merged tokens keeps its spread (merging.bounds)
            merged = self.bound["epsilon"][rows, at]
            self.bound["epsilon"][rows, at] = True
            self.spread[rows, at] = np.where(merged, self.spread[rows, at], floor)

    def _kernel_sums(self, G, b):
        """:math:`\\sum_{ij} e^{\\beta(\\min(G_{ij}, 1) - 1)}` per row: twice the
        strict upper triangle (``G`` is symmetric: half the exponentials, the
        cost of an output) plus the diagonal, in a reused buffer (fresh
        temporaries of a chunk's size cost more than the arithmetic)."""
        m, n, _ = G.shape
        upper = _upper_flat(n)
        if self._work is None or self._work.shape != (m, len(upper)):
            self._work = np.empty((m, len(upper)), dtype=np.result_type(G, b))
        flat = G.reshape(m, n * n)
        K = np.minimum(np.take(flat, upper, axis=1), 1.0, out=self._work)
        K -= 1.0
        K *= b[:, None]
        np.exp(K, out=K)
        own = np.exp(b[:, None] * (np.minimum(flat[:, ::n + 1], 1.0) - 1.0))
        return 2.0 * K.sum(axis=-1) + own.sum(axis=-1)

    def __call__(self, k, members, theta, rad, speed, beta=None, sums=None, frame=None):
        """Record the rows (``sums``: the kernel sums of :meth:`_kernel_sums`
        when the field gave them, :meth:`observe`; ``frame``: ``(scale,
        deviations)`` of a run in the cluster's frame, from which the Gram
        matrices and ``epsilon`` are computed, :math:`1 - \\langle\\theta_i,
        \\theta_j\\rangle = e^{2\\ell}|u_i - u_j|^2/2`). Returns the rows' Gram
        matrices (their diagonal set to 1) and ``epsilon``, for the merging
        bounds."""
        m, n = theta.shape[:2]
        if frame is not None:
            scale, dev = frame
            cen = dev - _ones(n, dev.dtype) @ dev / n
            sq = einsum("mnd,mnd->mn", cen, cen)
            D2 = cen @ np.swapaxes(cen, -1, -2)
            D2 *= -2.0
            D2 += sq[:, :, None] + sq[:, None, :]
            e2 = (scale * scale)[:, None, None]
            G = 1.0 - np.maximum(D2, 0.0) * e2 / 2
            frame = e2[:, 0, 0] * sq.sum(axis=-1) / (n - 1)
        else:
            G = theta @ np.swapaxes(theta, -1, -2)
        if beta is not None:        # E_beta = sum_ij e^{beta <x_i, x_j>} / (2 beta n^2)
            b = np.broadcast_to(beta, (m,))
            if sums is None:
                sums = self._kernel_sums(G, b)
            with np.errstate(over="ignore", divide="ignore"):
                self.energy[members, k] = sums * np.exp(b) / (2 * b * n * n)
        diagonal = G.reshape(m, n * n)[:, ::n + 1]          # a view of each G's diagonal
        if frame is None:
            self.gamma[members, k] = (G.sum(axis=(-1, -2)) - diagonal.sum(-1)) / (n * (n - 1))
            dev = theta - _ones(n, theta.dtype) @ theta / n      # the mean by one matmul each
            eps = einsum("mnd,mnd->m", dev, dev) / (n - 1)
        else:           # 1 - gamma = epsilon exactly for unit vectors
            eps = frame
            self.gamma[members, k] = 1.0 - eps
        self.epsilon[members, k] = eps
        diagonal[...] = np.inf
        self.min_cos[members, k] = G.min(axis=(-1, -2))
        diagonal[...] = 1.0
        linked = G >= self.threshold
        links = np.count_nonzero(linked, axis=(-1, -2))
        self.linked[members, k] = (links - n) / (n * (n - 1))
        labels = graph_labels(linked, links)
        self.labels[members, k] = labels
        self.clusters[members, k] = labels.max(-1) + 1
        self.r[members, :, k] = rad
        self.speed[members, :, k] = speed
        if self.X is not None:
            self.X[members, k] = theta * rad[..., None]
        return G, eps
