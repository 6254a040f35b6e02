"""Starting configurations ``X0`` of shape ``(n, d)`` or ``(batch, n, d)``.

All draws come from ``numpy.random.default_rng(seed)``: the same seed gives
bit-identical arrays.

Layer 2, particles.
"""

from __future__ import annotations

import numpy as np

from ..base.checks import integer, memory, number, rng


def _check(n, d, batch, what, per_token=1):
    """The batch shape; refuses ``batch x n x d x per_token`` floats beyond memory."""
    integer(n, "n", 2)
    integer(d, "d", 1)
    batch = integer(batch, "batch", 1, optional=True)
    memory(16 * (batch or 1) * n * d * per_token, f"sd.init.{what}: batch x n x d tokens")
    return () if batch is None else (batch,)


def random_rotation(d: int, rng: np.random.Generator, batch=()) -> np.ndarray:
    """Haar-distributed orthogonal matrices (QR of a Gaussian, signs fixed)."""
    G = rng.standard_normal(tuple(batch) + (d, d))
    Qm, R = np.linalg.qr(G)
    return Qm * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[..., None, :]


def equiangular(n: int, d: int, gamma0: float, r0: float = 1.0, batch=None,
                seed=None) -> np.ndarray:
    """Tokens with ``<theta_i, theta_j> = gamma0`` (``i != j``) and norm ``r0``.

    Exact construction in ``R^n``: :math:`\\theta_k = \\sqrt{1-\\gamma_0}\\,e_k
    + c\\,\\mathbf 1` with :math:`c = (\\sqrt{1+(n-1)\\gamma_0} -
    \\sqrt{1-\\gamma_0})/n`, padded to ``R^d`` and turned by a random rotation.

    Examples
    --------
    >>> import symdyn as sd
    >>> X = sd.init.equiangular(4, 6, 0.25, seed=0)
    >>> bool(abs(X[0] @ X[1] - 0.25) < 1e-15)
    True
    """
    if integer(d, "d", 1) < integer(n, "n", 2):
        raise ValueError(f"d must be >= n for an equiangular start, got d = {d}, n = {n}")
    shape = _check(n, d, batch, "equiangular", per_token=d / n)   # a rotation per member
    g = number(gamma0, "gamma0", -1 / (n - 1), 1)
    r0 = number(r0, "r0", 0, low_open=True)
    alpha = np.sqrt(1 - g)
    c = (np.sqrt(max(1 + (n - 1) * g, 0.0)) - alpha) / n
    base = np.zeros((n, d))
    base[:, :n] = alpha * np.eye(n) + c
    X = base @ np.swapaxes(random_rotation(d, rng(seed), shape), -1, -2)
    return r0 * X


def sphere(n: int, d: int, batch=None, seed=None) -> np.ndarray:
    """Independent uniform points on the unit sphere of ``R^d``.

    Examples
    --------
    >>> import numpy as np
    >>> import symdyn as sd
    >>> X = sd.init.sphere(8, 3, batch=2, seed=0)
    >>> X.shape, bool(np.allclose(np.linalg.norm(X, axis=-1), 1))
    ((2, 8, 3), True)
    """
    shape = _check(n, d, batch, "sphere")
    X = rng(seed).standard_normal(shape + (n, d))
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def gaussian(n: int, d: int, scale: float = 1.0, batch=None, seed=None) -> np.ndarray:
    """Independent ``N(0, scale^2 I_d)`` tokens (``scale = 1``: Theorem 3.1's start;
    ``scale = 1/sqrt(d)``: norms near 1).

    Examples
    --------
    >>> import numpy as np
    >>> import symdyn as sd
    >>> X = sd.init.gaussian(1000, 64, scale=64**-0.5, seed=0)
    >>> round(float(np.linalg.norm(X, axis=-1).mean()), 1)
    1.0
    """
    shape = _check(n, d, batch, "gaussian")
    scale = number(scale, "scale", 0, low_open=True)
    return scale * rng(seed).standard_normal(shape + (n, d))
