"""Multi-head attention of a batch of token configurations.

For inputs :math:`y_k` (the directions :math:`\\theta_k`, or the raw tokens
for the unnormalized baseline), head ``h`` scores
:math:`\\beta\\langle Q_h y_k, K_h y_j\\rangle` and averages the values
:math:`V_h y_j`:

.. math:: A_k = \\frac{1}{H}\\sum_h \\frac{\\sum_j w^h_{kj} V_h y_j}{Z^h_k},
          \\quad w^h_{kj} = e^{\\beta\\langle Q_h y_k, K_h y_j\\rangle}

with :math:`Z^h_k = \\sum_j w^h_{kj}` (softmax, computed after subtracting
each row's maximum score, so no overflow at large ``beta``) or
:math:`Z = n` (unnormalized kernel).

Weighted tokens: with masses :math:`m_j` (a token of mass ``k`` stands for
``k`` coincident tokens), :math:`w^h_{kj}` becomes :math:`m_j w^h_{kj}` and the
unnormalized :math:`Z` stays the number of original tokens :math:`\\sum_j m_j`:
exactly the attention of the tokens the masses stand for.

The causal mask (``causal=True``, decoders): token ``k`` attends only to
``j <= k``, i.e. :math:`w^h_{kj} = 0` for ``j > k``; then
:math:`Z^h_k = \\sum_{j \\le k} w^h_{kj}` (softmax) or ``k`` (unnormalized kernel:
the mean over the tokens seen). Token 1 attends to itself alone.

Layer 2, particles.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .weights import Weights


def attention(Y: np.ndarray, beta: np.ndarray, qkv, attention: str = "softmax",
              identity: bool = False, out=None, work=None, mass=None,
              split_self: bool = False, causal: bool = False, unit: bool = False,
              row_sums=None):
    """``A`` of shape ``(m, n, d)`` for inputs ``Y`` of shape ``(m, n, d)``.

    Parameters
    ----------
    Y : array (m, n, d)
    beta : array (m,) or (m, 1, 1)
    qkv : tuple of arrays (heads, d, d)
        ``(Q, K, V)``, or ``(Q^T K, V)`` (:meth:`~symdyn.particles.weights.Weights.scores`);
        ignored when ``identity``.
    attention : {"softmax", "unnormalized"}
    identity : bool
        ``Q = K = V = I``: skip the projections.
    out, work : arrays (m, n, d) and (m, n, n), optional
        Buffers for the result and the scores (reusing them spares the
        allocator; the result then lives in ``out``).
    mass : array (m, n), optional
        Token masses ``>= 0`` (default 1 each); a token of mass 0 is ignored.
    split_self : bool
        With ``identity``: return ``(A_off, c)``, ``A = A_off + c * Y`` with
        ``A_off`` the sum over ``j != k`` and ``c`` (m, n) the weight of the
        token's own value. A token whose neighbours are far (a merged cluster)
        has ``A_k`` within ~1e-12 of ``c y_k``; forming ``A`` and then removing
        its component along ``y_k`` left rounding noise of 1e-16 in a velocity
        of 1e-12, which alone held explicit steps at ~2e5 time units.
    causal : bool
        The causal mask: token ``k`` attends to ``j <= k`` only (with masses,
        the unnormalized ``Z_k`` is the mass seen, :math:`\\sum_{j \\le k} m_j`).
    unit : bool
        With ``identity`` and softmax: the rows of ``Y`` are unit vectors, so the
        largest score of row ``k`` is its own, ``beta`` (Cauchy-Schwarz; a token
        always sees itself). The scores are shifted by it,
        :math:`\\beta(\\langle y_k, y_j\\rangle - 1) \\le 0` up to rounding, instead
        of by each row's maximum (one reduction fewer); masses then weigh the
        exponentials, :math:`m_j e^{S_{kj}}` (a token of mass 0 does not bound
        its row: ``Z`` is kept above the smallest normal float).
    row_sums : array (m, n), optional
        With ``identity`` and ``unit``, unmasked softmax: receives
        :math:`Z_k = \\sum_j m_j e^{\\beta(\\langle y_k, y_j\\rangle - 1)}`, the
        energy's kernel sums (:class:`~symdyn.particles.result.Recorder`).
    """
    b = (beta if isinstance(beta, np.ndarray) and beta.ndim == 3     # shaped by a caller
         else np.asarray(beta, dtype=float).reshape(-1, 1, 1))
    if row_sums is not None and not (identity and unit and attention == "softmax"
                                     and not causal):
        raise ValueError("row_sums: only the unmasked softmax of unit tokens with identity "
                         "weights has them (identity=True, unit=True, causal=False)")
    if identity:
        S = np.matmul(Y, Y.swapaxes(-1, -2), out=work)
        shifted = unit and attention == "softmax"
        if shifted:             # beta (<y_k, y_j> - 1): G - 1 has no cancellation to lose
            S -= 1.0
        S *= b
        return _weigh(S, Y, attention, out, mass, split_self, causal, shifted, row_sums)
    if len(qkv) == 3:
        Q, K, V = qkv
        QK = np.swapaxes(Q, -1, -2) @ K
    else:
        QK, V = qkv
    heads = QK.shape[0]
    A = np.zeros_like(Y)
    for h in range(heads):
        v = Y @ V[h].T
        S = (Y @ QK[h]) @ np.swapaxes(Y, -1, -2)        # <Q y_k, K y_j> = y_k^T Q^T K y_j
        S *= b
        A += _weigh(S, v, attention, mass=mass, causal=causal)
    if heads > 1:
        A /= heads
    return A


_TINY = np.finfo(float).tiny


def _weigh(S, values, attention, out=None, mass=None, split_self=False, causal=False,
           shifted=False, row_sums=None):
    if causal:
        # masked scores are -inf: e^-inf = 0, and the row maximum is a seen token's
        np.copyto(S, -np.inf, where=_upper(S.shape[-1]))
    if attention == "softmax" and shifted:     # scores <= 0: e^S <= 1, no maximum
        np.exp(S, out=S)
        if mass is not None:
            S *= mass[:, None, :]
        Z = np.add.reduce(S, axis=-1, keepdims=True)    # S.sum without its wrapper
        if mass is not None:    # a token of mass 0 whose seen tokens all underflow
            np.maximum(Z, _TINY, out=Z)
        if row_sums is not None:
            row_sums[...] = Z[..., 0]
    elif attention == "softmax":
        if mass is not None:        # m_j e^{S_kj} = e^{S_kj + log m_j}; mass 0: -inf
            with np.errstate(divide="ignore"):
                S += np.log(mass)[:, None, :]
        S -= np.maximum.reduce(S, axis=-1, keepdims=True)
        np.exp(S, out=S)
        Z = np.add.reduce(S, axis=-1, keepdims=True)
    else:
        with np.errstate(over="ignore"):
            np.exp(S, out=S)
        Z = (_seen(S.shape[-1]).copy() if causal
             else np.full((1, 1, 1), float(S.shape[-1])))
        if mass is not None:
            S *= mass[:, None, :]
            Z = (np.cumsum(mass, axis=-1)[..., None] if causal
                 else mass.sum(axis=-1)[:, None, None])
    if split_self:
        n = S.shape[-1]                             # a view: the own weights
        diagonal = (S.reshape(-1, n * n)[:, ::n + 1] if S.flags.c_contiguous
                    else np.einsum("mkk->mk", S))
        own = diagonal / Z[..., 0]
        diagonal[...] = 0.0
    out = np.matmul(S, values, out=out)
    out *= np.divide(1.0, Z, out=Z)                 # Z is ours: 1/Z in place
    return (out, own) if split_self else out


@lru_cache(maxsize=32)
def _upper(n):
    """The masked entries j > k of an (n, n) score matrix (read-only)."""
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    upper.flags.writeable = False
    return upper


@lru_cache(maxsize=32)
def _seen(n):
    """(1, n, 1): how many tokens token k sees under the causal mask, k + 1."""
    seen = np.arange(1.0, n + 1.0).reshape(1, n, 1)
    seen.flags.writeable = False
    return seen


def of_weights(w: Weights, k: int):
    """Arguments ``(qkv, identity)`` of :func:`attention` for draw ``k``."""
    return (None, True) if w.identity else (w.scores(k), False)
