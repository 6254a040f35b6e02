"""The grid of a sweep: its axes, their checks, and its cut into tasks.

Every value is checked before any work starts; a bad one raises
``ValueError`` naming its axis and the allowed range. The grid's size (the
product of the axis lengths, :data:`MAX_POINTS` at most) is checked first,
before any value is. What depends on the kind of run (how a scheme value
resolves, the most output times, the check of a layer step) comes from the
caller (``kinds``: :data:`symdyn.studies.runs.KINDS`, which
:mod:`symdyn.studies.sweeps` also registers in :data:`KINDS` as the
default); the grid imports no runner. :func:`table` assembles the finished
tasks' columns in grid order.

Layer 3, studies.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..base import version  # read at call time: a new version invalidates caches
from ..base.checks import ATTENTIONS, check_gamma0, is_integer, is_real, memory, number, shown

#: Axes of each kind of sweep, with their defaults.
AXES = {
    "simulate": {"scheme": "post-ln", "n": 32, "d": 8, "beta": 1.0, "init": "sphere",
                 "scale": 1.0, "gamma0": 0.0, "weights": "identity", "weight_seed": 0,
                 "heads": 1, "attention": "softmax", "step": None, "precision": "float64"},
    "solve": {"scheme": "post-ln", "n": 32, "beta": 1.0, "gamma0": 0.0, "r0": 1.0,
              "attention": "softmax"},
}
INITS = ("sphere", "gaussian", "equiangular")
WEIGHTS = ("identity", "kaiming", "kaiming-untied")
PRECISIONS = ("float64", "float32")
#: Observables per kind (after the axis, ``seed`` and ``t`` columns).
COLUMNS = {
    "simulate": ("gamma", "epsilon", "min_cosine", "linked", "clusters", "r_mean"),
    "solve": ("gamma", "log_epsilon", "gamma_dot", "r"),
}
#: kind -> what the grid checks of its runs (``resolve``, ``max_times``,
#: ``check_step``): the default ``kinds``, :data:`symdyn.studies.runs.KINDS`,
#: registered by :mod:`symdyn.studies.sweeps` (imported with ``symdyn``).
KINDS: dict = {}
#: Bytes per table row, about: the columns held twice while the table is assembled.
ROW_BYTES = {kind: 8 * (2 * (2 + len(COLUMNS[kind])) + 3 * len(AXES[kind])) for kind in AXES}
#: Bytes per grid point, about (its dict, its task, its part of the table).
POINT_BYTES = 1000
#: The most grid points of one sweep: the grid is built and checked point by
#: point in Python before any work, and each point is a task or a part of one.
MAX_POINTS = 1_000_000


# --------------------------------------------------------------------------
# the grid
# --------------------------------------------------------------------------

def listed(raw) -> list:
    """An axis value or list of values as a list (text and schemes are single values)."""
    if _single(raw):
        return [raw]
    return list(raw)


def _single(raw) -> bool:
    """Text, a scheme, a number, a 0-d array: one axis value, not a list of them."""
    return (isinstance(raw, (str, bytes)) or not hasattr(raw, "__iter__")
            or (isinstance(raw, np.ndarray) and raw.ndim == 0))


def _sized(axis, raw):
    """An axis value or values as something with a length, not yet listed: a
    sequence or array as it is (a billion values cost nothing yet), any other
    iterable (a generator, perhaps endless) read to :data:`MAX_POINTS` values."""
    if _single(raw):
        return [raw]
    if isinstance(raw, (list, tuple, range, np.ndarray)):
        return raw
    values = list(itertools.islice(raw, MAX_POINTS + 1))
    if len(values) > MAX_POINTS:
        raise ValueError(f"grid axis {shown(axis)}: more than {MAX_POINTS:,} values (the most "
                         f"grid points a sweep takes); split it into several sweeps")
    return values


def check_points(axes: dict) -> int:
    """Refuse a grid, from its axis lengths alone (``axes``: axis -> sized
    values), beyond memory (:data:`POINT_BYTES` a point) or beyond
    :data:`MAX_POINTS`; returns the number of points."""
    points = math.prod(len(v) for v in axes.values())
    memory(POINT_BYTES * points, f"the sweep table ({points:,} grid points, before seeds "
                                 f"and times)")
    if points > MAX_POINTS:
        sizes = " x ".join(f"{len(v):,} {a}" for a, v in axes.items() if len(v) > 1)
        raise ValueError(f"grid: {points:,} grid points ({sizes}), more than the "
                         f"{MAX_POINTS:,} a sweep takes; split it into several sweeps")
    return points


def parse_range(text, name="beta"):
    """An axis as text, ``"a:b:k"``: ``k`` evenly spaced values from ``a`` to
    ``b`` (or one number).

    Examples
    --------
    >>> parse_range("0:9:4").tolist(), parse_range("2.5").tolist()
    ([0.0, 3.0, 6.0, 9.0], [2.5])
    """
    parts = str(text).split(":")
    try:
        if len(parts) == 1:
            return np.array([float(parts[0])])
        a, b, k = float(parts[0]), float(parts[1]), int(parts[2])
    except (ValueError, IndexError):
        raise ValueError(f"{name}: expected a:b:k (k values from a to b), "
                         f"got {shown(text)}") from None
    if len(parts) != 3 or k < 1 or not (np.isfinite(a) and np.isfinite(b)) or b < a:
        raise ValueError(f"{name}: expected a:b:k with a <= b and k >= 1, got {shown(text)}")
    return np.linspace(a, b, k)


def _number(axis, v, low, open_=False):
    if not is_real(v):
        raise ValueError(f"grid axis {shown(axis)}: expected numbers, got {shown(v)}")
    return number(v, f"grid axis {shown(axis)}", low, low_open=open_)


def _integer(axis, v, low):
    if not is_integer(v) or v < low:
        raise ValueError(f"grid axis {shown(axis)}: values must be integers >= {low}, "
                         f"got {shown(v)}")
    return int(v)


def _choice(axis, v, allowed):
    if v not in allowed:
        raise ValueError(f"grid axis {shown(axis)}: values must be one of {allowed}, "
                         f"got {shown(v)}")
    return v


def _scheme_value(resolve, v):
    try:
        return resolve(v)
    except ValueError as e:
        raise ValueError(f"grid axis 'scheme': {e}") from None


def _value(resolve, axis, v):
    """One checked axis value (``resolve``: the kind's scheme resolver)."""
    if axis == "scheme":
        return _scheme_value(resolve, v)
    if axis in ("n",):
        return _integer(axis, v, 2)
    if axis in ("d", "heads"):
        return _integer(axis, v, 1)
    if axis == "weight_seed":
        return _integer(axis, v, 0)
    if axis == "beta":
        return _number(axis, v, 0.0)
    if axis in ("scale", "r0"):
        return _number(axis, v, 0.0, open_=True)
    if axis == "gamma0":
        return _number(axis, v, -1.0)
    if axis == "step":
        return None if v is None else _number(axis, v, 0.0, open_=True)
    if axis == "init":
        return _choice(axis, v, INITS)
    if axis == "weights":
        return _choice(axis, v, WEIGHTS)
    if axis == "attention":
        return _choice(axis, v, ATTENTIONS)
    if axis == "precision":
        return _choice(axis, v, PRECISIONS)
    raise AssertionError(axis)


def grid_axes(kind, grid, kinds=None) -> dict:
    """``grid`` checked and completed with defaults: axis -> tuple of values
    (``kinds[kind].resolve`` resolves the scheme axis; default :data:`KINDS`)."""
    if not isinstance(kind, str) or kind not in AXES:
        raise ValueError(f"kind: must be one of {tuple(AXES)}, got {shown(kind)}")
    if not isinstance(grid, dict):
        raise ValueError(f"grid: expected a dict of axis -> values, got {type(grid).__name__}")
    unknown = sorted(set(grid) - set(AXES[kind]))
    if unknown:
        raise ValueError(f"grid: unknown axis {shown(unknown[0])}; {kind} sweeps take "
                         f"{', '.join(AXES[kind])}")
    raw = {axis: _sized(axis, grid.get(axis, default)) for axis, default in AXES[kind].items()}
    check_points(raw)                           # the product first, then the values
    axes = {}
    for axis, values in raw.items():
        values = [_value((kinds or KINDS)[kind].resolve, axis, v) for v in values]
        if not values:
            raise ValueError(f"grid axis {shown(axis)} is empty")
        labels = [label(v) for v in values]
        if len(set(labels)) != len(labels):
            hint = ("; two schemes share a name: rename one with "
                    "dataclasses.replace(scheme, name=...)") if axis == "scheme" else ""
            raise ValueError(f"grid axis {shown(axis)}: repeated values {labels}{hint}")
        axes[axis] = tuple(values)
    return axes


def label(v):
    """The table's value of an axis entry (a scheme by its name)."""
    return getattr(v, "name", v)


def _token(v):
    """A canonical, hashable text of an axis value (schemes by their full law)."""
    from sympy import srepr

    if hasattr(v, "speed"):
        return ["scheme", v.name, srepr(v.speed), srepr(v.radial), srepr(v.sphere_until),
                v.layer]
    return v


# --------------------------------------------------------------------------
# tasks
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """One unit of work: grid ``points`` (dicts) for the ``seeds`` at times ``t``."""

    kind: str
    points: tuple
    seeds: tuple
    t: tuple
    options: tuple

    @cached_property
    def doc(self) -> str:
        """The parameters and the symdyn version, as canonical JSON text."""

        doc = {"version": version.__version__, "kind": self.kind, "seeds": list(self.seeds),
               "t": [float(x) for x in self.t], "options": [list(o) for o in self.options],
               "points": [{k: _token(v) for k, v in p.items()} for p in self.points]}
        return json.dumps(doc, sort_keys=True, default=repr)

    @cached_property
    def key(self) -> str:
        """SHA-256 of :attr:`doc` (its first 32 hex digits)."""
        return hashlib.sha256(self.doc.encode()).hexdigest()[:32]


def _check_point(kind, p, times, check_step):
    """Per-point constraints that involve several axes (before any work)."""
    n = p["n"]
    if kind == "solve" or p["init"] == "equiangular":
        check_gamma0(p["gamma0"], n, "grid axis 'gamma0'")
    if kind == "simulate":
        if p["init"] == "equiangular" and p["d"] < n:
            raise ValueError(f"grid axis 'd': an equiangular start needs d >= n; "
                             f"got d = {p['d']}, n = {n}")
        try:
            check_step(times, p["step"])
        except ValueError as e:
            raise ValueError(f"grid axis 'step': {e}") from None


def _check_points(kind, axes, times, check_step):
    """:func:`_check_point` once per distinct combination of the axes it
    reads, not once per grid point."""
    names = [a for a in ("n", "gamma0", "init", "d", "step") if a in axes]
    for combo in itertools.product(*(axes[a] for a in names)):
        _check_point(kind, dict(zip(names, combo, strict=True)), times, check_step)


def check_size(kind, axes, seeds, times, batch, max_times):
    """Refuse, before the grid's product is built, a table or a task that
    would not fit in memory (``checks.memory``: a ValueError with the estimate).

    The table: :data:`ROW_BYTES` per row and about 1 kB per grid point. The
    largest task takes the largest ``n``, ``d``, ``heads`` and number of
    weight draws: integrator stages on the tokens, attention matrices, the
    recorded observables and the weights. ``max_times``: the most output
    times the kind takes (None: no limit but memory).
    """
    points = math.prod(len(v) for v in axes.values())
    K = len(times)
    if max_times is not None and K > max_times:
        raise ValueError(f"t: {K:,} output times, more than the {max_times:,} a "
                         f"{kind} sweep takes (each costs Python time per member); ask "
                         f"for fewer times")
    S = max(len(seeds), 1)
    memory(points * S * K * ROW_BYTES[kind] + 1000 * points,
           f"the sweep table ({points:,} grid points x {S:,} seeds x {K:,} times)")
    if kind == "solve":
        B = min(points, 256 if batch is None else batch)
        task, what = 8 * B * (10 * K + 40), f"one task ({B:,} points)"
    else:
        B = S if batch is None else min(batch, S)
        n, d, heads = (max(axes[a]) for a in ("n", "d", "heads"))
        draws = 1
        if "kaiming-untied" in axes["weights"]:      # one draw per layer or unit of time
            draws = max(math.ceil(times[-1]), 1,
                        *(round(times[-1] / h) for h in axes["step"] if h is not None))
        task = 8 * B * (20 * n * d + 4 * heads * n * n + 4 * n * K) \
            + 8 * 3 * heads * d * d * draws
        what = (f"one task ({B:,} seeds, n = {n}, d = {d}, heads = {heads}, "
                f"{draws:,} weight draws)")
    memory(task, what)


def tasks_of(kind, axes, seeds, times, options, batch, kinds=None) -> list[Task]:
    """The sweep cut into tasks, in grid order (axes in :data:`AXES` order);
    its size is checked first (:func:`check_size`; ``kinds[kind]`` gives the
    most times and the check of a layer step; default :data:`KINDS`)."""
    kinds = kinds or KINDS
    check_size(kind, axes, seeds, times, batch, kinds[kind].max_times)
    _check_points(kind, axes, times, kinds[kind].check_step)
    names = list(axes)
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes.values())]
    t = tuple(float(x) for x in times)
    if kind == "simulate":
        size = len(seeds) if batch is None else batch
        return [Task(kind, (p,), tuple(seeds[i:i + size]), t, options)
                for p in points for i in range(0, len(seeds), size)]
    size = 256 if batch is None else batch
    groups = {}
    for p in points:                  # one solve call per (scheme, attention) batch
        groups.setdefault((label(p["scheme"]), p["attention"]), []).append(p)
    return [Task(kind, tuple(g[i:i + size]), (), t, options)
            for g in groups.values() for i in range(0, len(g), size)]


def table(kind, axes, tasks, results):
    """The tidy table of a sweep: the finished tasks' columns (``results``, one
    dict per task of :func:`tasks_of`) in grid order, with the axis values."""
    import pandas as pd

    names = list(axes)
    parts = {name: [] for name in names}
    parts.update({c: [] for c in ("seed", "t") + COLUMNS[kind]})
    if kind == "solve":
        del parts["seed"]
    for task, cols in zip(tasks, results, strict=True):
        rows = len(cols["t"])
        if kind == "simulate":
            owner = np.zeros(rows, dtype=int)
        else:
            owner = cols["point"].astype(int)
        for name in names:
            values = [label(p[name]) for p in task.points]
            if name == "step":
                values = [np.nan if v is None else v for v in values]
            parts[name].append(np.asarray(values, dtype=object)[owner])
        for c in parts:
            if c not in names:
                parts[c].append(cols[c])
    frame = {c: np.concatenate(v) for c, v in parts.items()}
    table = pd.DataFrame(frame)
    for name in names:                   # object columns back to their natural dtype
        table[name] = table[name].infer_objects()
        if name in ("scheme", "init", "weights", "attention", "precision"):
            table[name] = table[name].astype(str)
    return table
