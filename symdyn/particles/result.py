"""The result of a particle simulation and the observables recorded at the output times.

:class:`Simulation` holds the observables (batch axes first, time last);
:class:`Recorder` computes them from the state at each output time (a new
observable goes in both).

Layer 2, particles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..base.archive import Archived
from ..base.arithmetic import all_finite, einsum, row_norms
from ..base.checks import memory, shown
from ..base.provenance import Provenance
from ..model.display import simulation_rows, summary_html, summary_text
from ..ode import outputs
from . import merging
from .clusters import ClusterViews, graph_labels
from .field import FRAME_FLOOR

#: What ``simulate(..., save=)`` may name, and the fields each one fills.
SAVES = {"gamma": ("gamma",), "epsilon": ("epsilon",), "min_cosine": ("min_cosine",),
         "linked": ("linked",), "clusters": ("clusters",), "labels": ("labels",),
         "r": ("r",), "speed": ("speed",), "energy": ("energy",),
         "bounds": ("bound", "spread", "offset", "floor"), "tokens": ("X",)}
#: The default record: every observable (the tokens only with ``save_x=True``).
COMPLETE = tuple(k for k in SAVES if k != "tokens")
#: The observables made from the Gram matrices of the directions.
PAIRWISE = frozenset({"gamma", "epsilon", "min_cosine", "linked", "clusters", "labels",
                      "energy", "bounds"})


#: What every run recorded before ``save=`` (a file without ``recorded``).
_ALWAYS = ["gamma", "epsilon", "min_cosine", "linked", "clusters", "r", "speed"]


class NotSaved(AttributeError):
    """An observable the run did not record (``simulate(..., save=)``)."""


def _absent() -> None:
    """The default of an observable's field: not recorded."""
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStats:
    """What the integration of a run did: ``steps`` taken over the batch,
    ``nfev`` field evaluations, its ``message``, tokens ``merged``, and the
    ``stiff_steps`` taken with the Rosenbrock-W method."""
    steps: int
    nfev: int
    message: str
    merged: int = 0
    stiff_steps: int = 0


@dataclass(frozen=True, repr=False, kw_only=True)
class Simulation(ClusterViews, Archived):
    """Observables of a particle simulation; batch axes first, time last.

    Built by keyword only. An observable the run did not record
    (``simulate(..., save=)``, :attr:`recorded`) is absent: reading it raises
    :class:`NotSaved` (an ``AttributeError``) naming ``save=``.

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
        Tokens, only with ``save_x=True`` (or ``"tokens"`` in ``save``); with
        ``clock="log"`` their directions (the tokens are :math:`e^r X`, ``r``
        holding :math:`\\log r`, which floats could not hold as :math:`r`).
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
    recorded : tuple of str
        What the run recorded (the names of :data:`SAVES`; default every
        observable of :data:`COMPLETE`, and ``"tokens"`` with ``X``).
    values : ndarray batch + (K, ...) or None
        What a function given as ``save=`` returned at each output time.

    Examples
    --------
    >>> import symdyn as sd
    >>> sim = sd.simulate("post-ln", sd.init.sphere(6, 3, batch=2, seed=0), beta=1.0,
    ...                   t=[0.0, 50.0])
    >>> sim.gamma.shape, sim.clusters[:, -1].tolist()       # one cluster each
    ((2, 2), [1, 1])
    """

    t: np.ndarray
    gamma: np.ndarray | None = dataclasses.field(default_factory=_absent)
    epsilon: np.ndarray | None = dataclasses.field(default_factory=_absent)
    min_cosine: np.ndarray | None = dataclasses.field(default_factory=_absent)
    clusters: np.ndarray | None = dataclasses.field(default_factory=_absent)
    linked: np.ndarray | None = dataclasses.field(default_factory=_absent)
    r: np.ndarray | None = dataclasses.field(default_factory=_absent)
    speed: np.ndarray | None = dataclasses.field(default_factory=_absent)
    X: np.ndarray | None = None
    cluster_threshold: float
    steps: int
    nfev: int
    message: str
    merged: int = 0
    clock: str = "t"
    stiff_steps: int = 0
    bound: dict | None = dataclasses.field(default_factory=_absent)
    spread: np.ndarray | None = dataclasses.field(default_factory=_absent)
    offset: np.ndarray | None = dataclasses.field(default_factory=_absent)
    labels: np.ndarray | None = dataclasses.field(default_factory=_absent)
    energy: np.ndarray | None = dataclasses.field(default_factory=_absent)
    provenance: Provenance | None = None
    x0: np.ndarray | None = None
    floor: np.ndarray | None = dataclasses.field(default_factory=_absent)
    recorded: tuple = COMPLETE
    values: np.ndarray | None = None

    def __post_init__(self) -> None:
        recorded = self.recorded
        if not isinstance(recorded, (list, tuple)) or not all(
                isinstance(k, str) and k in SAVES for k in recorded):
            raise ValueError(f"recorded must name observables among {', '.join(SAVES)}, "
                             f"got {shown(recorded)}")
        object.__setattr__(self, "recorded", tuple(recorded))
        # an observable not recorded is absent (__getattr__ names save=); the
        # tokens keep their meaning of old: None without save_x
        for name, fields in SAVES.items():
            if name != "tokens" and name not in recorded:
                for f in fields:
                    if self.__dict__.get(f, 0) is None:
                        object.__delattr__(self, f)

    def __getattr__(self, name: str) -> Any:
        # only reached for a name the instance does not hold, or for a
        # property that raised an AttributeError (NotSaved): raise that again
        view = getattr(type(self), name, None)
        if isinstance(view, property) and view.fget is not None:
            return view.fget(self)
        fields = {f: k for k, fs in SAVES.items() for f in fs}
        if name in fields and "recorded" in self.__dict__:
            raise NotSaved(f"{name}: this run did not record {fields[name]!r} (it recorded "
                           f"{', '.join(self.recorded) or 'nothing'}); simulate with save= "
                           f"naming {fields[name]!r}, or compute it from the tokens "
                           f"(save='tokens')")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def has(self, name: str) -> bool:
        """Whether the run recorded the observable ``name`` (a key of :data:`SAVES`)."""
        return name in self.recorded

    DIMS = {"t": ("time",), "gamma": ("time",), "epsilon": ("time",),
            "min_cosine": ("time",), "clusters": ("time",), "linked": ("time",),
            "r": ("token", "time"), "speed": ("token", "time"), "X": ("time", "token", "dim"),
            "bound": ("time",), "spread": ("time",), "offset": ("token", "time"),
            "labels": ("time", "token"), "energy": ("time",), "x0": ("token", "dim"),
            "floor": ("time",)}

    def _dims(self, name: str, a: np.ndarray) -> tuple[str, ...]:
        if name == "values":        # batch + (time, value_0, ...): the batch from x0
            x0 = None if isinstance(self, type) else self.__dict__.get("x0")
            lead = 0 if x0 is None else np.ndim(x0) - 2
            return value_dims(a.ndim, lead)
        return Archived._dims(self, name, a)

    @classmethod
    def check_parts(cls, arrays: dict, dims: dict, attrs: dict) -> None:
        """:meth:`Archived.check_parts`, and ``values`` laid out as
        :func:`value_dims` says."""
        arrays = dict(arrays)
        values = arrays.pop("values", None)
        super().check_parts(arrays, dims, attrs)
        # what the run recorded is present (a file without `recorded`, saved
        # before save= existed: the observables every run recorded then)
        recorded = attrs.get("recorded", _ALWAYS)
        if not isinstance(recorded, list) or not all(k in SAVES for k in recorded):
            raise ValueError(f"recorded must name observables among {', '.join(SAVES)}, "
                             f"got {shown(recorded)}")
        for name in recorded:
            for f in SAVES[name]:
                if f not in arrays and f"{f}:keys" not in attrs:
                    raise ValueError(f"{f} is missing (the run recorded {name!r})")
        if values is not None:
            if not isinstance(values, np.ndarray) or values.dtype.kind not in "biuf":
                raise ValueError(f"variable values must hold real numbers, got {shown(values)}")
            given = tuple(dims.get("values", ()))
            lead = 1 if given[:1] == (Archived.BATCH,) else 0
            if given != value_dims(values.ndim, lead):
                raise ValueError(f"variable values has dimensions {given}, expected "
                                 f"{value_dims(values.ndim, lead)}")

    def _rows(self) -> list:
        rows = [*(self.provenance.summary() if self.provenance else [])]
        if self.has("gamma") and self.has("clusters"):
            return rows + simulation_rows(self)
        return rows + [("t", f"{len(self.t)} times in [{self.t[0]:g}, {self.t[-1]:g}]"),
                       ("recorded", ", ".join(self.recorded) or "nothing")]

    def _curve(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        return (self.gamma if self.has("gamma") else None,
                self.epsilon if self.has("epsilon") and self.has("gamma") else None)

    def _repr_html_(self) -> str:
        return summary_html("Simulation (sd.simulate)", self._rows(), self.t, self._curve()[0])

    def __str__(self) -> str:
        gamma, epsilon = self._curve()
        return summary_text("Simulation (sd.simulate)", self._rows(), self.t, gamma,
                            epsilon=epsilon)


def value_dims(ndim: int, lead: int) -> tuple[str, ...]:
    """The dimensions of ``values`` (``ndim`` axes, ``lead`` of them the
    batch's): the batch's, ``time``, then ``value_0``, ``value_1``, ..."""
    batch = (Archived.BATCH,) if lead == 1 else tuple(f"batch{i}" for i in range(lead))
    return batch + ("time",) + tuple(f"value_{i}" for i in range(ndim - lead - 1))


#: Bytes a member records per output time, per observable (``n`` tokens in ``d``
#: dimensions); ``r`` is always recorded (the underflow check reads it).
def _bytes(name: str, n: int, d: int) -> int:
    per = {"labels": 8 * n, "r": 8 * n, "speed": 8 * n, "bounds": 5 + 16 + 8 * n,
           "tokens": 8 * n * d}
    return per.get(name, 8)


def check_outputs(t, M: int, n: int, d: int, save) -> None:
    """Refuse, before ``t`` is converted, output times whose recorded
    observables (``save``: names of :data:`SAVES`) would not fit in memory
    (:func:`~symdyn.base.checks.memory`: half of this machine's memory): per
    member and output time what each records (``r``'s ``n`` floats always),
    twice (the arrays and the result's copies). Output times cost no steps,
    so their count has no other limit."""
    K = outputs.count(t)
    save = set(save)
    per = sum(_bytes(k, n, d) for k in save | {"r"})
    what = ("every observable" if save >= set(COMPLETE)
            else ", ".join(sorted(save - {"tokens"})) or "the norms")
    memory(2 * M * K * per, f"t: {K:,} output times x {M:,} member(s) of {n} tokens "
                            f"(the recorded observables: {what}"
                            f"{'; save_x or save=tokens: the tokens' if 'tokens' in save else ''})")


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
    """(1, n) ones: ``_ones(n) @ theta`` sums the tokens (a matrix product;
    ``theta.mean(axis=1)`` reduces over a middle axis, which numpy does slowly)."""
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
    """The observables named in ``save`` (:data:`SAVES`) at the output times;
    NaN (clusters, labels: -1) until recorded, None where not recorded. The
    norms ``r`` are always recorded (the underflow check and the test that
    every output was reached read them). ``fn``: a function of the output
    time and the tokens (:func:`~symdyn.particles.simulation.simulate`'s
    ``save=``), its values in :attr:`values`; ``basis`` (M, d, n): the run
    holds the tokens in these coordinates of their span (the function is
    handed them in the caller's). ``log_norms``: the run's norms are
    :math:`\\log r` (the log clock): the tokens recorded and handed to ``fn``
    are then the directions."""

    def __init__(self, M: int, n: int, d: int, K: int, threshold: float, save: Iterable[str],
                 fn: Callable | None = None, basis: np.ndarray | None = None, *,
                 log_norms: bool = False) -> None:
        save = frozenset(save)
        self.save, self.fn, self.basis, self.log_norms = save, fn, basis, log_norms

        def full(name: str, shape: tuple, value: float = np.nan,
                 dtype: type = float) -> np.ndarray | None:
            return np.full(shape, value, dtype=dtype) if name in save else None

        self.gamma = full("gamma", (M, K))
        self.epsilon = full("epsilon", (M, K))
        self.min_cos = full("min_cosine", (M, K))
        self.linked = full("linked", (M, K))
        self.clusters = full("clusters", (M, K), -1, int)
        self.labels = full("labels", (M, K, n), -1, int)
        self.energy = full("energy", (M, K))
        self.r = np.full((M, n, K), np.nan)
        self.speed = full("speed", (M, n, K))
        self.X = full("tokens", (M, K, n, d))
        self.bounds = "bounds" in save
        self.bound = ({k: np.zeros((M, K), dtype=bool) for k in merging.PAIRWISE}
                      if self.bounds else None)
        self.spread = full("bounds", (M, K), 0.0)
        self.offset = full("bounds", (M, n, K), 0.0)
        self.floor = full("bounds", (M, K), 0.0)
        self.values: np.ndarray | None = None       # fn's, made at its first call
        self.threshold = threshold
        #: the speeds need an evaluation of the field at each output
        self.needs_field = "speed" in save
        #: the Gram matrices of the directions, and the graph of links
        self.pairwise = bool(save & PAIRWISE)
        self.graph = bool(save & {"linked", "clusters", "labels"})
        #: epsilon below this is not resolved by directions stored as unit
        #: vectors (set by the run: :func:`resolution`)
        self.resolution = 0.0
        self._work = None

    def observe(self, field, k, members, tk, theta, rad, beta, draw, where, merged=None,
                shift=0.0, frame=None):
        """Record row ``i`` as output ``k[i]`` (or ``k``) of member ``members[i]``
        at time ``tk[i]`` (or ``tk``), every row at once: directions ``theta``
        (m, n, d), ``rad`` (m, n); the speeds, where recorded, are the field's
        there, one batched evaluation for all rows (``r`` is recorded as ``rad +
        shift``: the log clock's ``u + tau``; ``shift`` a scalar or one per row).

        ``merged`` (a :class:`~symdyn.particles.merging.Coalescence`): every original
        token reports its representative's state and speed, and the pairwise
        observables that are only bounds are flagged. A non-finite
        token or speed, or a law the field refused, is an ``ArithmeticError``
        (``where``, a str or a callable giving one, tells the reader what to
        change). ``frame``: ``(scale (m,), deviations (m, n, d), speed (m, n) or
        None)`` of a run in the cluster's frame (:mod:`symdyn.particles.continuous`):
        ``theta = c + scale * deviations``, and the speeds already computed
        (None where not recorded).
        """
        sums = speed = dev = None
        if frame is None:
            if self.needs_field:
                tm = np.broadcast_to(np.asarray(tk, dtype=float), (len(members),))
                field.fault = None
                mass = None if merged is None else merged.mass[members]
                # the energy's kernel sums from the field's softmax where it has them
                Z = (np.empty(rad.shape) if field.shares_normalizers and self.energy is not None
                     else None)
                dth, _ = field.grouped(tm, theta, rad, beta, field.phase_at(tm), draw, mass, Z)
                speed = row_norms(dth)
                # sum_ij e^{beta(<x_i, x_j> - 1)} over the original tokens: sum_k m_k Z_k
                sums = None if Z is None else (Z.sum(axis=-1) if mass is None
                                               else einsum("mn,mn->m", Z, mass))
        else:
            scale, dev, speed = frame
        if merged is not None and merged.merges:
            if speed is None:
                theta, rad = merged.expand(members, theta, rad)
            else:
                theta, rad, speed = merged.expand(members, theta, rad, speed)
            if dev is not None and self.pairwise:
                (dev,) = merged.expand(members, dev)
        if not (all_finite(theta) and (speed is None or all_finite(speed))):
            raise ArithmeticError("simulate: " + (
                field.fault or f"non-finite tokens or velocities at "
                               f"{where if isinstance(where, str) else where()}"))
        rad = rad + np.asarray(shift)[..., None]
        if self.fn is not None:
            self._values(k, members, tk, theta, rad)
        G, eps = self(k, members, theta, rad, speed, np.reshape(beta, -1), sums,
                      None if dev is None else (scale, dev))
        if not self.bounds:
            return
        if merged is not None:
            flags, self.spread[members, k] = merged.bounds(members, theta, G, eps)
            self.offset[members, :, k] = merged.offset[members]
            for name, flag in flags.items():
                self.bound[name][members, k] = flag
        self.resolve(k, members, eps, None if frame is None else FRAME_FLOOR)

    def _values(self, k: np.ndarray | int, members: np.ndarray, tk: np.ndarray | float,
                theta: np.ndarray, rad: np.ndarray) -> None:
        """Record what ``fn`` returns for the rows' times and tokens (in the
        caller's coordinates): an array whose first axis is the rows'."""
        fn = self.fn
        if fn is None:
            return
        X = theta if self.log_norms else theta * rad[..., None]
        if self.basis is not None:
            X = X @ np.swapaxes(self.basis[members], -1, -2)
        tm = np.broadcast_to(np.asarray(tk, dtype=float), (len(members),))
        try:
            v = np.asarray(fn(tm.copy(), X), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"save: the function {_name(fn)} must return real numbers, "
                             f"one row per token set ({exc})") from None
        if v.ndim < 1 or v.shape[0] != len(members):
            raise ValueError(f"save: the function {_name(fn)} gets the times (m,) and "
                             f"tokens (m, n, d) of m = {len(members)} rows and must return an "
                             f"array of m rows, got shape {v.shape}")
        if self.values is None:
            M, K = self.r.shape[0], self.r.shape[-1]
            self.values = np.full((M, K) + v.shape[1:], np.nan)
        elif v.shape[1:] != self.values.shape[2:]:
            raise ValueError(f"save: the function {_name(fn)} returned rows of shape "
                             f"{v.shape[1:]}, earlier {self.values.shape[2:]}")
        self.values[members, k] = v

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
        bounds (None, None where no pairwise observable is recorded)."""
        self.r[members, :, k] = rad
        if self.speed is not None:
            self.speed[members, :, k] = speed
        if self.X is not None:
            self.X[members, k] = theta if self.log_norms else theta * rad[..., None]
        if not self.pairwise:
            return None, None
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
        if beta is not None and self.energy is not None:
            # E_beta = sum_ij e^{beta <x_i, x_j>} / (2 beta n^2)
            b = np.broadcast_to(beta, (m,))
            if sums is None:
                sums = self._kernel_sums(G, b)
            with np.errstate(over="ignore", divide="ignore"):
                self.energy[members, k] = sums * np.exp(b) / (2 * b * n * n)
        diagonal = G.reshape(m, n * n)[:, ::n + 1]          # a view of each G's diagonal
        if frame is None:
            gamma = (G.sum(axis=(-1, -2)) - diagonal.sum(-1)) / (n * (n - 1))
            dev = theta - _ones(n, theta.dtype) @ theta / n      # the mean by one matmul each
            eps = einsum("mnd,mnd->m", dev, dev) / (n - 1)
        else:           # 1 - gamma = epsilon exactly for unit vectors
            eps = frame
            gamma = 1.0 - eps
        if self.gamma is not None:
            self.gamma[members, k] = gamma
        if self.epsilon is not None:
            self.epsilon[members, k] = eps
        if self.min_cos is not None:
            diagonal[...] = np.inf
            self.min_cos[members, k] = G.min(axis=(-1, -2))
        diagonal[...] = 1.0
        if self.graph:
            linked = G >= self.threshold
            links = np.count_nonzero(linked, axis=(-1, -2))
            if self.linked is not None:
                self.linked[members, k] = (links - n) / (n * (n - 1))
            if self.labels is not None or self.clusters is not None:
                labels = graph_labels(linked, links)
                if self.labels is not None:
                    self.labels[members, k] = labels
                if self.clusters is not None:
                    self.clusters[members, k] = labels.max(-1) + 1
        return G, eps


def _name(fn: Callable) -> str:
    return shown(getattr(fn, "__qualname__", None) or repr(fn), 60)
