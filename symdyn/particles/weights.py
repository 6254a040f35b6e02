"""Query, key and value weights ``(Q, K, V)`` for the particle simulator.

A :class:`Weights` holds ``L`` draws of ``(Q, K, V)``, each of shape
``(heads, d, d)``: ``L = 1`` is *tied* (the same weights at every depth);
``L > 1`` is *untied*: draw ``k`` serves layer ``k`` (``step=h``) or the time
interval ``[k, k+1)`` (continuous dynamics).

Layer 2, particles.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field

import numpy as np

from ..base.checks import integer, memory, number, real_array, rng


@dataclass(frozen=True)
class Weights:
    """``Q, K, V`` of shape ``(L, heads, d, d)`` (the three matrices by
    position, as a ``(Q, K, V)`` tuple reads; the flag by keyword)."""

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    _: KW_ONLY
    identity: bool = False
    _scores: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def tied(self) -> bool:
        return self.Q.shape[0] == 1

    @property
    def draws(self) -> int:
        return self.Q.shape[0]

    @property
    def d(self) -> int:
        return self.Q.shape[-1]

    def astype(self, dtype) -> Weights:
        """The same weights in ``dtype`` (itself when they already are)."""
        if self.Q.dtype == dtype:
            return self
        return Weights(*(m.astype(dtype) for m in (self.Q, self.K, self.V)),
                       identity=self.identity)

    def scores(self, k: int):
        """``(Q^T K, V)`` of draw ``k``: the score matrices
        :math:`\\langle Q y, K y'\\rangle = y^T (Q^T K) y'` formed once per draw
        (kept for the last few draws), one product per head less per evaluation."""
        Q, K, V = self.at(k)
        key = 0 if self.tied else int(k)
        if key not in self._scores:
            if len(self._scores) > 4:
                self._scores.clear()
            self._scores[key] = np.swapaxes(Q, -1, -2) @ K
        return self._scores[key], V

    def at(self, k: int):
        """``(Q, K, V)`` of draw ``k`` (draw 0 when tied)."""
        k = 0 if self.tied else int(k)
        if k >= self.draws:
            raise ValueError(f"weights: untied weights hold {self.draws} draws, "
                             f"draw {k} was needed; draw more layers")
        return self.Q[k], self.K[k], self.V[k]


def _check(d, heads, layers, matrices):
    integer(d, "d", 1)
    integer(heads, "heads", 1)
    layers = integer(layers, "layers", 1, optional=True, none_means=" (tied)")
    L = 1 if layers is None else layers
    memory(8 * matrices * L * heads * d * d, f"weights: {matrices} x layers x heads x d x d")
    return L


def identity(d: int, heads: int = 1) -> Weights:
    """``Q = K = V = I_d`` (Theorem 3.1's setting).

    Examples
    --------
    >>> import symdyn as sd
    >>> w = sd.weights.identity(4, heads=2)
    >>> w.Q.shape, w.identity
    ((1, 2, 4, 4), True)
    """
    L = _check(d, heads, None, 2)     # np.eye(d) and its copies
    eye = np.broadcast_to(np.eye(d), (L, heads, d, d)).copy()
    return Weights(eye, eye, eye, identity=True)


def kaiming(d: int, heads: int = 1, layers=None, seed=None, std=None) -> Weights:
    """Kaiming-normal weights: independent ``N(0, std^2)`` entries, ``std = 1/sqrt(d)``.

    ``layers=None`` draws one set (tied); ``layers=L`` draws ``L`` (untied).

    Examples
    --------
    >>> import symdyn as sd
    >>> w = sd.weights.kaiming(64, heads=4, layers=8, seed=0)
    >>> w.Q.shape, round(float(w.Q.std() * 8), 1)        # std = 1/sqrt(d) = 1/8
    ((8, 4, 64, 64), 1.0)
    """
    L = _check(d, heads, layers, 4)   # Q, K, V and one draw in flight
    std = 1 / np.sqrt(d) if std is None else number(std, "std", 0, low_open=True)
    draw = rng(seed).standard_normal
    Q, K, V = (std * draw((L, heads, d, d)) for _ in range(3))
    return Weights(Q, K, V)


#: Weights by name (as :func:`~symdyn.sweep`'s ``weights`` axis names them):
#: ``"kaiming"`` is :func:`kaiming` with ``seed=0``, like the sweep's default
#: ``weight_seed``.
NAMED = ("identity", "kaiming")


def as_weights(weights, d: int) -> Weights:
    """``None`` or ``"identity"`` (identity), ``"kaiming"`` (``kaiming(d, seed=0)``),
    a ``(Q, K, V)`` tuple or :class:`Weights`, checked against ``d``."""
    if isinstance(weights, str):
        if weights not in NAMED:
            raise ValueError(f"weights: expected one of {', '.join(NAMED)}, None, (Q, K, V) or "
                             f"sd.weights.Weights, got {weights[:40]!r}")
        return identity(d) if weights == "identity" else kaiming(d, seed=0)
    if weights is None:
        return identity(d)
    if isinstance(weights, Weights):
        w = Weights(*(real_array(M, f"weights: {name}") for name, M in
                      (("Q", weights.Q), ("K", weights.K), ("V", weights.V))),
                    identity=weights.identity)
    else:
        try:
            Q, K, V = weights
        except (TypeError, ValueError):
            raise ValueError("weights: expected None, 'identity', 'kaiming', (Q, K, V) or "
                             "sd.weights.Weights") from None
        mats = []
        for name, M in (("Q", Q), ("K", K), ("V", V)):
            M = real_array(M, f"weights: {name}")
            if M.ndim == 2:
                M = M[None]
            if M.ndim != 3 or M.shape[-1] != M.shape[-2]:
                raise ValueError(f"weights: {name} must be (d, d) or (heads, d, d), "
                                 f"got shape {np.shape(M)}")
            mats.append(M[None])
        if len({m.shape for m in mats}) != 1:
            raise ValueError(f"weights: Q, K, V shapes differ: {[m.shape[1:] for m in mats]}")
        w = Weights(*mats)
    if w.d != d:
        raise ValueError(f"weights: matrices are {w.d} x {w.d} but X0 has d = {d}")
    return w
