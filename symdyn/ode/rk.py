r"""The one stage loop of every explicit Runge-Kutta pair, on arrays and on floats.

A pair is declared by a module (:mod:`symdyn.ode.dop853`, :mod:`symdyn.ode.dp54`)
holding its table: ``N_STAGES`` (``s``), the nodes ``C``, the stage matrix
``A``, the weights ``B``, the error rows named by ``ERRORS`` (weights over
the ``s + 1`` evaluations), ``ORDER``, ``ERROR_ORDER`` and ``NORM``. Its
coefficients are read at every use, so a changed coefficient is seen at once
(the tests' controls change them).

:func:`step` is the loop, first same as last:

.. math::

    k_0 = f(t, y), \quad Y_i = y + h \sum_{j<i} a_{ij} k_j, \quad
    k_i = f(t + c_i h, Y_i), \quad y_1 = y + h \sum_j b_j k_j, \quad
    k_s = f(t + h, y_1),

and the error sums :math:`\sum_j e_j k_j`. Every sum is rounded the same way
whatever does it: :math:`w_0 k_0` first, then :math:`+\, w_j k_j` in
increasing ``j`` (zero weights skipped), each product rounded before it is
added, so a member's result does not depend on its batch, nor on whether it
is stepped on arrays or on Python floats. Three ways of holding the sums
(:class:`AheadSums`, :class:`OnDemandSums`, :class:`FloatSums`) serve the one
loop:

* :class:`AheadSums`: as soon as :math:`k_j` is known, its products with the
  weights of every later sum are added to them (one call per run of rows:
  few numpy calls, for small batches);
* :class:`OnDemandSums`: each sum from the stages when it is needed (no
  buffer beyond the stages, for large batches);
* :class:`FloatSums`: the on-demand sums on lists of Python floats (one
  member: a numpy call on a 1-element array costs more than its arithmetic).

Layer 1, ode.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..base.arithmetic import einsum

#: floats of a stage up to which :class:`AheadSums` holds the sums
FUSED_FLOATS = 1 << 16
_PLANS: dict = {}


def weights(tab: ModuleType) -> np.ndarray:
    """The rows of every sum a step forms, ``(s - 1 + 1 + errors, s + 1)``:
    the stages ``1 .. s-1`` (row ``i - 1`` holds :math:`a_{ij}`), ``B``, then
    the error rows of ``ERRORS``."""
    s = tab.N_STAGES
    rows = [getattr(tab, e) for e in tab.ERRORS]
    W = np.zeros((s + len(rows), s + 1))
    for i in range(1, s):
        W[i - 1, :i] = tab.A[i, :i]
    W[s - 1, :s] = tab.B
    for r, row in enumerate(rows):
        W[s + r, : len(row)] = row
    return W


def _key(tab: ModuleType, dtype: Any) -> tuple:
    arrays = (tab.A, tab.B, tab.C, *(getattr(tab, e) for e in tab.ERRORS))
    return (tab.__name__, tuple(map(id, arrays)), dtype)


def _terms(tab: ModuleType) -> list[Row]:
    """Per row of :func:`weights`: its :class:`Row` (cached per table and its
    arrays)."""
    key = _key(tab, float) + ("terms",)
    if key not in _PLANS:
        _PLANS[key] = [Row(float(row[0]), tuple(j for j in range(1, len(row)) if row[j] != 0),
                           tuple(float(w) for w in row[1:] if w != 0)) for row in weights(tab)]
    return _PLANS[key]


class Row(NamedTuple):
    """One sum :math:`w_0 k_0 + \\sum_j w_j k_j`: ``w0`` and the non-zero
    weights ``ws`` of the evaluations ``js`` (``j >= 1``), in increasing ``j``."""

    w0: float
    js: tuple[int, ...]
    ws: tuple[float, ...]

    @classmethod
    def of(cls, row: Any) -> Row:
        """The :class:`Row` of a weight row (an array or a sequence)."""
        row = row.tolist() if hasattr(row, "tolist") else list(row)
        keep = [j for j in range(1, len(row)) if row[j] != 0]
        return cls(float(row[0]), tuple(keep), tuple(float(row[j]) for j in keep))


def _runs(tab: ModuleType, dtype: Any) -> list:
    """Per evaluation ``j``: the runs ``(lo, hi, w)`` of rows of :func:`weights`
    whose weight of :math:`k_j` is not zero, ``w`` their weights in ``dtype``
    (a scalar for one row); :math:`k_0` enters every row."""
    key = _key(tab, dtype)
    if key not in _PLANS:
        W = weights(tab)
        plans = [[(0, len(W), W[:, 0])]]
        for j in range(1, W.shape[1]):
            rows = np.flatnonzero(W[:, j] != 0)
            cuts = np.flatnonzero(np.diff(rows) != 1) + 1
            plans.append([(int(g[0]), int(g[-1]) + 1, W[g, j]) for g in np.split(rows, cuts)
                          if g.size])
        _PLANS[key] = [[(lo, hi, w.astype(dtype)[0] if hi - lo == 1 else w.astype(dtype))
                        for lo, hi, w in p] for p in plans]
    return _PLANS[key]


def combine(row: Row, K: Any, out: np.ndarray | None = None,
            tmp: np.ndarray | None = None) -> np.ndarray:
    """:math:`w_0 K_0 + \\sum_j w_j K_j` of a :class:`Row`, each product
    rounded, then added left to right, in place in ``out`` with ``tmp`` as
    scratch (both shaped like ``K[0]``; allocated when not given): the
    roundings of ``w0*K0 + w1*K1 + ...`` without a temporary per term.
    Python floats: float32 stays float32."""
    out = np.empty_like(K[0]) if out is None else out
    np.multiply(K[0], row.w0, out=out)
    for j, w in zip(row.js, row.ws, strict=True):
        tmp = np.empty_like(out) if tmp is None else tmp
        np.multiply(K[j], w, out=tmp)
        np.add(out, tmp, out=out)
    return out


def combine_row(row: Any, K: Any, out: np.ndarray | None = None,
                tmp: np.ndarray | None = None) -> np.ndarray:
    """:func:`combine` of a weight row (zero weights of ``j >= 1`` skipped)."""
    return combine(Row.of(row), K, out, tmp)


def combine_floats(row: Any, K: list) -> list:
    """:func:`combine_row` on one member's lists of Python floats (zero
    weights of ``j >= 1`` skipped), the same roundings."""
    return float_sum(Row.of(row), K)


def float_sum(row: Row, K: list, y: list | None = None, h: float = 0.0) -> list:
    """Per component :math:`w_0 k_0 + w_1 k_1 + \\dots` left to right, or, with
    ``y``, the point :math:`y + h (w_0 k_0 + \\dots)` (one pass). Two
    components (the reduced ODE's state) are summed side by side: the same
    operations in the same order, with half the loop's overhead."""
    w0, ws, js = row.w0, row.ws, row.js
    if len(K[0]) == 2:
        k = K[0]
        a, b = w0 * k[0], w0 * k[1]
        for w, j in zip(ws, js):    # noqa: B905 (one length by construction)
            k = K[j]
            a += w * k[0]
            b += w * k[1]
        return [a, b] if y is None else [y[0] + h * a, y[1] + h * b]
    ks = [K[j] for j in js]
    out = []
    for i, k0 in enumerate(K[0]):
        acc = w0 * k0
        for w, k in zip(ws, ks):     # noqa: B905 (one length by construction)
            acc += w * k[i]
        out.append(acc if y is None else y[i] + h * acc)
    return out


class Sums(NamedTuple):
    """A step's results: the new state, the error sums (one per ``ERRORS``
    row) and the last stage's point :math:`Y_{s-1}` (Hairer's stiffness
    estimate compares it with :math:`y_1`: both at ``t + h`` where
    :math:`c_{s-1} = 1`)."""

    y_new: object
    errors: tuple
    y_last: object


def step(tab: ModuleType, f: Callable[..., Any], t: Any, y: Any, fy: Any, h: Any, t_new: Any,
         args: tuple, K: Any, sums: StageSums) -> Sums:
    """One step of the pair ``tab`` (the loop of the module docstring) for
    every row of ``y``, its sums held by ``sums`` (:class:`AheadSums`,
    :class:`OnDemandSums` or :class:`FloatSums`). Fills ``K[0..s]``
    (``K[s] = f(t_new, y_new)``); ``t_new`` is ``t + h`` or, for a step clipped
    onto a stop, the stop itself."""
    s = tab.N_STAGES
    K[0] = fy
    c = sums.bind(tab, y, h).c
    sums.start(tab, K)
    point, ahead = y, sums.ahead
    for i in range(1, s):
        point = sums.point(i - 1, y, h, False)
        K[i] = f(t + c[i] * h, point, *args)
        if ahead:
            sums.add(i, K)
    y_new = sums.point(s - 1, y, h, True)
    K[s] = f(t_new, y_new, *args)
    if ahead:
        sums.add(s, K)
    return Sums(y_new, sums.errors(K), point)


class StageSums(Protocol):
    """How :func:`step` holds its sums (:class:`AheadSums`,
    :class:`OnDemandSums`, :class:`FloatSums`)."""

    c: Any          # the nodes, set by bind
    ahead: bool     # whether add() takes each stage as it comes (else sums are on demand)

    def bind(self, tab: ModuleType, y: Any, h: Any) -> Any: ...
    def start(self, tab: ModuleType, K: Any) -> None: ...
    def point(self, r: int, y: Any, h: Any, fresh: bool) -> Any: ...
    def add(self, j: int, K: Any) -> None: ...
    def errors(self, K: Any) -> tuple: ...


class AheadSums:
    """Every sum in one buffer, :math:`w_j k_j` added to all later sums as
    soon as :math:`k_j` is known (one call per run of rows): a step of ``m``
    members takes its first ``2 rows m dim`` floats as one contiguous block.
    Made once per integration (fresh arrays of megabytes at every step cost
    more than the sums); the views a step of ``m`` members works on are kept
    until ``m`` or the table changes."""

    ahead = True

    def __init__(self, dtype: Any) -> None:
        self.flat = np.empty(0, dtype=dtype)
        self._key: tuple | None = None
        self._views: tuple = ()

    def bind(self, tab: ModuleType, y: Any, h: Any) -> AheadSums:
        """Views for this step's ``m`` members and ``h`` per component."""
        self.c = tab.C
        m, dim = y.shape
        runs = _runs(tab, y.dtype)
        key = (m, dim, id(runs))
        if key != self._key:
            rows = len(runs[0][0][2])
            shape = (2, rows, m, dim)
            if math.prod(shape) > self.flat.size:
                self.flat = np.empty(math.prod(shape), dtype=y.dtype)
            S, tmp = self.flat[: math.prod(shape)].reshape(shape)
            views = [[(S[lo], tmp[0], w, True) if hi - lo == 1
                      else (S[lo:hi], tmp[: hi - lo], w, False) for lo, hi, w in p]
                     for p in runs]
            self._views, self._key = (S, views, runs[0][0][2]), key
        # h spelled out per component: a product of two arrays of one shape
        # skips numpy's broadcasting machinery
        self.hs = h[:, None].astype(y.dtype, copy=False).repeat(dim, axis=1)
        self.n_errors = len(tab.ERRORS)
        return self

    def start(self, tab: ModuleType, K: Any) -> None:
        S, _, w0 = self._views
        einsum("r,md->rmd", w0, K[0], out=S)

    def point(self, r: int, y: Any, h: Any, fresh: bool) -> Any:
        S = self._views[0]
        if fresh:                   # y_new outlives the buffer
            out = np.multiply(self.hs, S[r])
        else:                       # the stage's point, in place of its sum
            out = S[r]
            out *= self.hs
        out += y
        return out

    def add(self, j: int, K: Any) -> None:
        k = K[j]
        for rows, scratch, w, single in self._views[1][j]:   # one rounding each
            if single:
                rows += np.multiply(k, w, out=scratch)
            else:                   # an outer product (numpy's broadcast is slower)
                rows += einsum("r,md->rmd", w, k, out=scratch)

    def errors(self, K: Any) -> tuple:
        S, n = self._views[0], self.n_errors
        return tuple(S[len(S) - n + i] for i in range(n))


class OnDemandSums:
    """Each sum from the stages when the loop needs it (:func:`combine`): no
    buffer beyond the stages and one row of scratch."""

    ahead = False

    def bind(self, tab: ModuleType, y: Any, h: Any) -> OnDemandSums:
        self.c, self.terms = tab.C, _terms(tab)
        self.hs = h[:, None].astype(y.dtype, copy=False)       # float32 stays float32
        self.tmp = np.empty_like(y)
        self.n_errors = len(tab.ERRORS)
        return self

    def start(self, tab: ModuleType, K: Any) -> None:
        self.K = K

    def point(self, r: int, y: Any, h: Any, fresh: bool) -> Any:
        out = combine(self.terms[r], self.K, tmp=self.tmp)
        np.multiply(self.hs, out, out=out)
        np.add(y, out, out=out)
        return out

    def add(self, j: int, K: Any) -> None:
        pass

    def errors(self, K: Any) -> tuple:
        rows = self.terms[len(self.terms) - self.n_errors:]
        return tuple(combine(row, K, tmp=self.tmp) for row in rows)


class FloatSums:
    """:class:`OnDemandSums` on lists of Python floats (one member): per
    component :math:`w_0 k_0 + w_1 k_1 + \\dots` left to right. The table is
    read when it changes (one holder serves an integration)."""

    ahead = False

    def __init__(self) -> None:
        self._tab: ModuleType | None = None

    def bind(self, tab: ModuleType, y: Any, h: Any) -> FloatSums:
        if tab is not self._tab:
            self._tab, self.terms = tab, _terms(tab)
            self.c, self.n_errors = [float(x) for x in tab.C], len(tab.ERRORS)
        self.h = h
        return self

    def start(self, tab: ModuleType, K: Any) -> None:
        self.K = K

    def point(self, r: int, y: Any, h: Any, fresh: bool) -> Any:
        return float_sum(self.terms[r], self.K, y, h)

    def add(self, j: int, K: Any) -> None:
        pass

    def errors(self, K: Any) -> tuple:
        n = len(self.terms)
        return tuple(float_sum(self.terms[n - self.n_errors + i], K)
                     for i in range(self.n_errors))
