"""Cluster structure of token configurations: labels, sizes, centres, leaders,
merge events and plateaus (as ``pandas.DataFrame`` tables), Rényi centres and
the interaction energy.

Pure functions of positions (batch axes first, tokens ``(..., n, d)``; the
directions ``x/|x|`` are used). Two tokens are *linked* when their cosine is
at least ``threshold``: the rule of ``Simulation.clusters``
(:class:`~symdyn.particles.result.Recorder`, default 0.999), so the number of
labels here equals that count. A *cluster* is a connected component of the
link graph (single linkage). Labels are canonical: cluster ``c`` is the
``c``-th cluster in the order of its earliest token, so two configurations
have the same partition exactly when their labels are equal, and the leader
(earliest token) of cluster ``c`` is the first token labelled ``c``.

Layer 2, particles.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..base.checks import number

#: Graphs of at most this many tokens are labelled by a few numpy calls for the
#: batch; larger ones by scipy, one at a time.
SMALL_GRAPH = 64
#: Graphs of at most this many tokens are labelled by :func:`closure_leaders`.
CLOSURE_GRAPH = 16

#: The default threshold: that of ``sd.simulate(cluster_threshold=0.999)``.
THRESHOLD = 0.999


def directions(X) -> np.ndarray:
    """``X / |X|`` along the last axis, as floats (a zero token is refused)."""
    X = np.asarray(X, dtype=float)
    if X.ndim < 2:
        raise ValueError(f"X must have shape (..., n, d), got shape {X.shape}")
    norms = np.linalg.norm(X, axis=-1, keepdims=True)
    if not np.all(norms > 0) or not np.all(np.isfinite(X)):
        raise ValueError("X: every token must be finite and non-zero")
    return X / norms


def _leader_labels(linked: np.ndarray) -> np.ndarray:
    """Each token's label = the smallest token index of its component (m, n)."""
    m, n, _ = linked.shape
    if n <= CLOSURE_GRAPH:
        return closure_leaders(linked)
    if n > SMALL_GRAPH:
        from scipy.sparse.csgraph import connected_components
        out = np.empty((m, n), dtype=np.int64)
        for i, g in enumerate(linked):
            lab = connected_components(g, directed=False)[1]
            first = np.full(lab.max() + 1, n)
            np.minimum.at(first, lab, np.arange(n))
            out[i] = first[lab]
        return out
    return propagated_leaders(linked)


def propagated_leaders(linked):
    """:func:`_leader_labels` by label propagation: every token takes the
    smallest label among its neighbours and itself, then the label of that
    label, until no label changes (labels only decrease and stay within the
    component; a chain of n tokens takes about log2 n rounds)."""
    m, n, _ = linked.shape
    label = np.broadcast_to(np.arange(n), (m, n)).copy()
    rows = np.arange(m)[:, None]
    while True:          # the minimum over neighbours, then pointer jumping
        least = np.where(linked, label[:, None, :], n).min(axis=-1)
        if np.array_equal(least, label):
            return label
        label = least[rows, least]


def closure_leaders(linked, squarings=None):
    """:func:`_leader_labels` by the transitive closure: ``R <- [R R > 0]``
    ``ceil(log2(n - 1))`` times joins every pair a path of at most ``n - 1``
    links joins (products of 0/1 float32 matrices: counts up to ``n``,
    exact); each token's leader is then the first token its row reaches.
    Up to :data:`CLOSURE_GRAPH` tokens a third of the propagation's cost."""
    n = linked.shape[-1]
    if squarings is None:
        squarings = math.ceil(math.log2(n - 1)) if n > 2 else 0
    R = linked.astype(np.float32)
    for _ in range(squarings):
        R = np.greater(R @ R, 0).astype(np.float32)
    return R.argmax(axis=-1)


@lru_cache(maxsize=16)
def pairs(n):
    """The index arrays ``(i, j)`` of the pairs ``i != j`` of ``n`` tokens, row
    by row (the order of a boolean mask, as index arrays: ``np.take`` gathers
    with them faster than a mask selects)."""
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    i.flags.writeable = j.flags.writeable = False
    return i, j


def pair_components(links, n):
    """The number of components of each undirected graph on ``n`` tokens whose
    pairs (:func:`pairs`) are ``links`` (k, n (n - 1)), all at once: an edge
    where either direction is linked (a Gram matrix need not be symmetric to
    the last bit)."""
    i, j = pairs(n)
    graph = np.zeros((len(links), n, n), dtype=bool)
    graph[:, i, j] = links
    graph |= np.swapaxes(graph, 1, 2)
    graph[:, np.arange(n), np.arange(n)] = True
    return count(linked_labels(graph))


def cluster_labels(X, threshold: float = THRESHOLD) -> np.ndarray:
    """Canonical single-linkage labels (..., n) of the graph ``cos >= threshold``.

    ``labels[..., i] = c``: token ``i`` lies in the ``c``-th cluster, counted
    in the order of the clusters' earliest tokens (``labels.max(-1) + 1`` is
    ``Simulation.clusters`` at the same threshold).

    >>> import numpy as np
    >>> X = np.array([[1, 0], [0, 1], [1, 1e-3], [0, -1]])
    >>> cluster_labels(X).tolist()
    [0, 1, 0, 2]
    """
    th = number(threshold, "threshold", -1, 1)
    theta = directions(X)
    lead = theta.shape[:-2]
    n, d = theta.shape[-2:]
    flat = theta.reshape(-1, n, d)
    linked = flat @ np.swapaxes(flat, -1, -2) >= th
    idx = np.arange(n)
    linked[:, idx, idx] = True
    return linked_labels(linked).reshape(*lead, n)


def graph_labels(linked: np.ndarray, links: np.ndarray | None = None) -> np.ndarray:
    """:func:`linked_labels`, with the recorder's shortcuts: a complete graph
    is one cluster, one without edges ``n`` (``links``: the count of True)."""
    m, n, _ = linked.shape
    if links is None:
        links = np.count_nonzero(linked, axis=(-1, -2))
    out = np.where((links == n * n)[:, None], 0, np.arange(n))
    rest = np.flatnonzero((links != n * n) & (links != n))
    if rest.size:
        out[rest] = linked_labels(linked[rest])
    return out


def linked_labels(linked: np.ndarray) -> np.ndarray:
    """Canonical labels (m, n) of the components of graphs ``linked`` (m, n, n),
    symmetric with their diagonal set (the recorder's graphs)."""
    n = linked.shape[-1]
    leader = _leader_labels(linked)
    rank = np.cumsum(leader == np.arange(n), axis=-1) - 1   # clusters before each leader
    return np.take_along_axis(rank, leader, axis=-1)


def count(labels) -> np.ndarray:
    """The number of clusters (...) of labels (..., n)."""
    return np.asarray(labels).max(axis=-1) + 1


def sizes(labels) -> np.ndarray:
    """Cluster sizes (..., n): ``sizes[..., c]`` tokens in cluster ``c``, 0 beyond the count."""
    labels = np.asarray(labels)
    n = labels.shape[-1]
    flat = labels.reshape(-1, n)
    offset = (np.arange(len(flat)) * n)[:, None]
    return np.bincount((flat + offset).ravel(), minlength=flat.size).reshape(labels.shape)


def centres(X, labels) -> np.ndarray:
    """Cluster centres (..., n, d): the normalized mean direction of each
    cluster's tokens, :math:`\\sum_{i \\in c} \\theta_i / |\\sum_{i \\in c} \\theta_i|`;
    NaN beyond the count."""
    theta = directions(X)
    labels = np.asarray(labels)
    n, d = theta.shape[-2:]
    flat = labels.reshape(-1, n)
    idx = (flat + (np.arange(len(flat)) * n)[:, None]).ravel()
    sums = np.zeros((flat.size, d))
    np.add.at(sums, idx, theta.reshape(-1, d))
    norm = np.linalg.norm(sums, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(norm > 0, sums / norm, np.nan)
    return out.reshape(*labels.shape, d)


def leaders(labels) -> np.ndarray:
    """The earliest token of each cluster (..., n); -1 beyond the count.

    With canonical labels, token ``i`` leads its cluster exactly when its
    label exceeds every earlier token's."""
    labels = np.asarray(labels)
    n = labels.shape[-1]
    flat = labels.reshape(-1, n)
    before = np.concatenate([np.full((len(flat), 1), -1),
                             np.maximum.accumulate(flat, axis=-1)[:, :-1]], axis=-1)
    rows, cols = np.nonzero(flat > before)
    out = np.full(flat.shape, -1)
    out[rows, flat[rows, cols]] = cols
    return out.reshape(labels.shape)


#: The columns of an event table (:func:`events`) after the member's, with their dtypes.
EVENT_COLUMNS = {"kind": "category", "t_lo": "float64", "t_hi": "float64",
                 "clusters_before": "int64", "clusters_after": "int64", "size": "int64",
                 "parts": "object", "into": "int64", "sizes": "object", "leaders": "object",
                 "tokens": "object", "energy_before": "float64", "energy_after": "float64"}
#: The columns of a plateau table (:func:`plateaus`) after the member's.
PLATEAU_COLUMNS = {"clusters": "int64", "t_start": "float64", "t_end": "float64",
                   "start_after": "float64", "end_before": "float64", "length": "float64",
                   "energy_start": "float64", "energy_end": "float64"}


def member_columns(ndim: int) -> list[str]:
    """The columns naming a row's batch member: none for an unbatched run,
    ``member`` for one batch axis, ``batch0, batch1, ...`` for several (the
    dimension names of ``to_xarray``)."""
    return [] if ndim == 0 else ["member"] if ndim == 1 else [f"batch{i}" for i in range(ndim)]


def _table(rows: list, lead: tuple, columns: dict, order: list):
    """A DataFrame of ``rows`` (dicts) with typed columns, the members' first,
    sorted by ``order`` then by member (stable), on a fresh 0..N-1 index."""
    import pandas as pd

    names = member_columns(len(lead))
    data = {c: pd.Series([r[c] for r in rows], dtype="int64") for c in names}
    for c, dtype in columns.items():
        values = [r[c] for r in rows]
        data[c] = (pd.Series(values, dtype="object") if dtype == "object" else
                   pd.Series(pd.Categorical(values, categories=["merge", "split"]))
                   if dtype == "category" else pd.Series(values, dtype=dtype))
    table = pd.DataFrame(data)
    return table.sort_values(order + names, kind="stable").reset_index(drop=True)


def _member(m, lead) -> dict:
    """``{column: index}`` of flat member ``m`` of a batch of shape ``lead``."""
    return dict(zip(member_columns(len(lead)),
                    (int(i) for i in np.unravel_index(m, lead)), strict=True)) if lead else {}


def changes(a, b, t0, t1, member=None, energy=(np.nan, np.nan)) -> list[dict]:
    """The events between two label vectors ``a`` (at t0) and ``b`` (at t1), as
    rows of :func:`events` (``member``: the member's columns, a dict)."""
    n = len(a)
    pairs = np.unique(a * n + b)
    old, new = pairs // n, pairs % n
    size_a, size_b = sizes(a), sizes(b)
    lead_a, lead_b = leaders(a), leaders(b)
    common = {**(member or {}), "t_lo": float(t0), "t_hi": float(t1),
              "clusters_before": int(a.max()) + 1, "clusters_after": int(b.max()) + 1,
              "energy_before": float(energy[0]), "energy_after": float(energy[1])}
    out = []
    for kind, whole, split, size, lead in (("merge", new, old, size_a, lead_a),
                                           ("split", old, new, size_b, lead_b)):
        for c in np.unique(whole):
            parts = split[whole == c]
            if len(parts) < 2:
                continue
            inside = (b == c) & np.isin(a, parts) if kind == "merge" else \
                (a == c) & np.isin(b, parts)
            tokens = tuple(int(i) for i in np.flatnonzero(inside))
            out.append({**common, "kind": kind, "size": len(tokens),
                        "parts": tuple(map(int, parts)), "into": int(c),
                        "sizes": tuple(int(size[p]) for p in parts),
                        "leaders": tuple(int(lead[p]) for p in parts), "tokens": tokens})
    return out


def events(labels, t, energy=None):
    """Every merge and split between consecutive output times: a
    ``pandas.DataFrame``, one row per event, sorted by ``t_hi`` (then member).

    ``labels`` (..., K, n) at the output times ``t`` (K,); ``energy`` (..., K)
    optional (``Simulation.energy``). Columns: the member's (:func:`member_columns`),
    then :data:`EVENT_COLUMNS`: ``kind`` (``"merge"``: the clusters ``parts``
    of ``t_lo`` all lie in cluster ``into`` at ``t_hi``; ``"split"``: cluster
    ``into`` of ``t_lo`` has tokens in each of ``parts`` at ``t_hi``); the event
    happened in ``(t_lo, t_hi]``; the member's cluster counts at ``t_lo`` and
    ``t_hi``; ``tokens`` (``size`` of them) the tokens that moved together;
    ``sizes`` and ``leaders`` (earliest tokens) belong to ``parts``; the
    energy at ``t_lo`` and ``t_hi`` (NaN without ``energy``). Tuples are
    Python tuples of ints. Rows: ``for e in table.itertuples(): e.kind, e.t_hi, ...``.

    With ``E`` edges of the bipartite graph "old cluster shares a token with
    new cluster", the count changes by ``(E - #old) - (E - #new)``: the sum
    over splits of ``len(parts) - 1`` minus the sum over merges of
    ``len(parts) - 1``. Labels are canonical, so a partition changed exactly
    where the label vectors differ; only those pairs of times are examined.
    ``sd.locate_events`` (:mod:`symdyn.studies.event_times`) narrows each
    bracket on the dense output.
    """
    labels = np.asarray(labels)
    t = np.asarray(t, dtype=float)
    K, n = labels.shape[-2:]
    if t.shape != (K,):
        raise ValueError(f"t must have shape ({K},) to match labels, got {t.shape}")
    lead = labels.shape[:-2]
    flat = labels.reshape(-1, K, n)
    E = (np.full(flat.shape[:2], np.nan) if energy is None
         else np.broadcast_to(np.asarray(energy, dtype=float), lead + (K,)).reshape(-1, K))
    changed = np.any(flat[:, 1:] != flat[:, :-1], axis=-1)
    rows = []
    for m, k in zip(*np.nonzero(changed), strict=True):
        rows += changes(flat[m, k], flat[m, k + 1], t[k], t[k + 1], _member(m, lead),
                        (E[m, k], E[m, k + 1]))
    return _table(rows, lead, EVENT_COLUMNS, ["t_hi", "t_lo"])


def plateaus(counts, t, energy=None):
    """The maximal runs of constant cluster count (..., K) over the output
    times ``t`` seen at two output times or more: a ``pandas.DataFrame``, one
    row per plateau, sorted by ``t_start`` (then member).

    Columns: the member's (:func:`member_columns`), then :data:`PLATEAU_COLUMNS`:
    ``clusters`` observed from ``t_start`` to ``t_end`` (``length = t_end -
    t_start > 0``); the count changed in ``(start_after, t_start]`` and
    changes in ``(t_end, end_before]`` (NaN at the run's ends), so the
    plateau's true length lies in ``[length, end_before - start_after]``; the
    energy (``energy`` (..., K), optional) at ``t_start`` and ``t_end``. A
    count seen at one output time only (a transient between two changes)
    is no plateau.
    """
    counts = np.asarray(counts)
    t = np.asarray(t, dtype=float)
    K = counts.shape[-1]
    if t.shape != (K,):
        raise ValueError(f"t must have shape ({K},) to match counts, got {t.shape}")
    lead = counts.shape[:-1]
    flat = counts.reshape(-1, K)
    E = (np.full(flat.shape, np.nan) if energy is None
         else np.broadcast_to(np.asarray(energy, dtype=float), counts.shape).reshape(-1, K))
    rows = []
    for m, row in enumerate(flat):
        cuts = np.flatnonzero(np.diff(row)) + 1
        starts, ends = np.r_[0, cuts], np.r_[cuts - 1, K - 1]
        for a, b in zip(starts, ends, strict=True):
            if t[b] > t[a]:
                rows.append({**_member(m, lead), "clusters": int(row[a]),
                             "t_start": float(t[a]), "t_end": float(t[b]),
                             "start_after": float(t[a - 1]) if a else np.nan,
                             "end_before": float(t[b + 1]) if b + 1 < K else np.nan,
                             "length": float(t[b] - t[a]), "energy_start": float(E[m, a]),
                             "energy_end": float(E[m, b])})
    return _table(rows, lead, PLATEAU_COLUMNS, ["t_start"])


def to_text(table):
    """An event or plateau table with its tuples as space-separated ints and
    its categories as text (what a CSV file or a netCDF variable holds)."""
    out = table.copy()
    for c in out.columns:
        if out[c].dtype == object:
            out[c] = [" ".join(map(str, v)) for v in out[c]]
        elif str(out[c].dtype) == "category":
            out[c] = out[c].astype(str)
    return out


def renyi_centres(X0, delta: float, strong: bool = True) -> np.ndarray:
    """Rényi centres of a start (Karagodin, Polyanskiy, Rigollet, arXiv:2411.04990,
    section 5), as a boolean mask (..., n), in geodesic distance
    :math:`d(x, y) = \\arccos\\langle x, y\\rangle` on the sphere.

    ``strong=True``: token ``k`` is a *strong* Rényi centre iff every earlier
    token is farther than ``delta``: :math:`d(x_j, x_k) > \\delta` for all
    ``j < k`` (strict). ``strong=False``: the Rényi parking process, token
    ``k`` is a centre iff it is farther than ``delta`` from every earlier
    *centre*. Token 0 is always a centre; strong centres are centres.
    ``delta`` in ``[0, pi]``.
    """
    dl = number(delta, "delta", 0, np.pi)
    theta = directions(X0)
    n, d = theta.shape[-2:]
    flat = theta.reshape(-1, n, d)
    out = np.empty(flat.shape[:-1], dtype=bool)
    step = max(1, CHUNK // (n * n))                     # members per (m, n, n) block
    for i in range(0, len(flat), step):
        out[i:i + step] = _centres(flat[i:i + step], dl, strong)
    return out.reshape(theta.shape[:-1])


#: Pairwise blocks of at most this many entries (renyi_centres and energy go by chunks).
CHUNK = 2**24


def _centres(theta, delta, strong):
    n = theta.shape[-2]
    G = theta @ np.swapaxes(theta, -1, -2)
    near = np.arccos(np.clip(G, -1.0, 1.0)) <= delta   # within delta: no centre
    if strong:
        return ~np.any(near & np.tri(n, k=-1, dtype=bool), axis=-1)   # [k, j]: j < k
    centre = np.zeros(theta.shape[:-1], dtype=bool)
    for k in range(n):
        centre[:, k] = ~np.any(near[:, k, :k] & centre[:, :k], axis=-1)
    return centre


def energy(X, beta, normalized: bool = False) -> np.ndarray:
    """The interaction energy :math:`E_\\beta = \\frac{1}{2\\beta n^2}\\sum_{i,j}
    e^{\\beta\\langle x_i, x_j\\rangle}` of the directions (...), ``beta > 0``
    (a number, or an array broadcasting against the batch axes).

    ``normalized=True``: :math:`2\\beta e^{-\\beta} E_\\beta = \\frac{1}{n^2}
    \\sum_{i,j} e^{-\\beta(1 - \\langle x_i, x_j\\rangle)}` in ``(0, 1]``, which
    never overflows and equals 1 exactly at one cluster and about
    :math:`\\sum_c (n_c/n)^2` (``1/k`` for ``k`` equal clusters) when the
    clusters are far apart at large beta.
    """
    b = np.asarray(beta, dtype=float)
    if not np.all(np.isfinite(b)) or not np.all(b > 0):
        raise ValueError(f"beta must be finite and > 0, got {beta!r}")
    theta = directions(X)
    n, d = theta.shape[-2:]
    flat = theta.reshape(-1, n, d)
    bf = np.broadcast_to(b, theta.shape[:-2]).reshape(-1)
    scaled = np.empty(len(flat))
    step = max(1, CHUNK // (n * n))
    for i in range(0, len(flat), step):
        G = flat[i:i + step] @ np.swapaxes(flat[i:i + step], -1, -2)
        scaled[i:i + step] = np.exp(bf[i:i + step, None, None] * (np.minimum(G, 1.0) - 1.0)
                                    ).sum(axis=(-1, -2)) / n**2
    scaled = scaled.reshape(theta.shape[:-2])
    if normalized:
        return scaled
    with np.errstate(over="ignore"):
        return scaled * np.exp(b) / (2 * b)


class ClusterViews:
    """The cluster structure of a :class:`~symdyn.particles.result.Simulation`
    (a base class: it reads ``t``, ``clusters``, ``cluster_threshold``, ``X``
    and, where the run recorded them, ``labels`` and ``energy``)."""

    def cluster_labels(self, threshold: float | None = None) -> np.ndarray:
        """Canonical labels batch + (K, n) at each output time: those recorded
        during the run at the count's threshold, or (``threshold=`` another
        value, or a run that recorded none) computed from ``X`` (``save_x=True``)."""
        own = threshold is None or threshold == self.cluster_threshold
        labels = getattr(self, "labels", None)         # None: not recorded
        if own and labels is not None:
            return labels
        if self.X is None:
            if own:
                raise ValueError("labels: the run recorded neither the cluster labels nor the "
                                 "tokens; simulate with save= naming 'labels' or 'tokens' "
                                 "(or save_x=True)")
            raise ValueError("threshold: labels at another threshold need the tokens "
                             "(simulate with save_x=True or save= naming 'tokens')")
        return cluster_labels(self.X, self.cluster_threshold if threshold is None
                              else threshold)

    @property
    def events(self):
        """Every merge and split between consecutive output times, a
        ``pandas.DataFrame`` sorted by time (:func:`events`: bracket ``(t_lo,
        t_hi]``, counts before and after, sizes, tokens, energy where the run
        recorded it). Rows: ``for e in sim.events.itertuples(): ...``."""
        return events(self.cluster_labels(), self.t, getattr(self, "energy", None))

    @property
    def plateaus(self):
        """The runs of constant cluster count seen at two output times or more,
        a ``pandas.DataFrame`` sorted by time (:func:`plateaus`)."""
        return plateaus(self.clusters, self.t, getattr(self, "energy", None))

    def to_xarray(self):
        """The result's ``to_xarray``, with the event and plateau tables as
        variables ``events.<column>`` (dimension ``event``) and
        ``plateaus.<column>`` (dimension ``plateau``); tuples as
        space-separated ints (:func:`to_text`). Events only where the run has
        labels (recorded, or ``X``), plateaus only where it recorded ``clusters``."""
        ds = super().to_xarray()
        tables = {}
        if getattr(self, "clusters", None) is not None:     # None: not recorded
            tables["plateau"] = self.plateaus
        if getattr(self, "labels", None) is not None or self.X is not None:
            tables["event"] = self.events
        for dim, table in tables.items():
            text = to_text(table)
            for c in text.columns:
                ds[f"{dim}s.{c}"] = ((dim,), text[c].to_numpy())
        return ds

    @property
    def leaders(self) -> np.ndarray:
        """The earliest token of each cluster, batch + (K, n), -1 beyond the count."""
        return leaders(self.cluster_labels())

    @property
    def cluster_sizes(self) -> np.ndarray:
        """Tokens per cluster, batch + (K, n), 0 beyond the count."""
        return sizes(self.cluster_labels())

    @property
    def cluster_centres(self) -> np.ndarray:
        """Normalized mean direction of each cluster, batch + (K, n, d) (needs ``X``)."""
        if self.X is None:
            raise ValueError("cluster_centres needs the tokens (simulate with save_x=True)")
        return centres(self.X, self.cluster_labels())
