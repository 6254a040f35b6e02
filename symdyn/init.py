"""Starting configurations ``X0`` of shape ``(n, d)`` or ``(batch, n, d)``.

All draws come from ``numpy.random.default_rng(seed)``: the same seed gives
bit-identical arrays.
"""

from __future__ import annotations

import numpy as np

from .checks import integer


def _check(n, d, batch):
    integer(n, "n", 2)
    integer(d, "d", 1)
    batch = integer(batch, "batch", 1, optional=True)
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
    shape = _check(n, d, batch)
    if d < n:
        raise ValueError(f"d must be >= n for an equiangular start, got d = {d}, n = {n}")
    g = float(gamma0)
    if not (np.isfinite(g) and -1 / (n - 1) <= g <= 1):
        raise ValueError(f"gamma0 must lie in [-1/(n-1), 1] = [{-1 / (n - 1):.6g}, 1], "
                         f"got {gamma0!r}")
    if not (np.isfinite(r0) and r0 > 0):
        raise ValueError(f"r0 must be a finite number > 0, got {r0!r}")
    alpha = np.sqrt(1 - g)
    c = (np.sqrt(max(1 + (n - 1) * g, 0.0)) - alpha) / n
    base = np.zeros((n, d))
    base[:, :n] = alpha * np.eye(n) + c
    rng = np.random.default_rng(seed)
    X = base @ np.swapaxes(random_rotation(d, rng, shape), -1, -2)
    return r0 * X


def sphere(n: int, d: int, batch=None, seed=None) -> np.ndarray:
    """Independent uniform points on the unit sphere of ``R^d``."""
    shape = _check(n, d, batch)
    X = np.random.default_rng(seed).standard_normal(shape + (n, d))
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def gaussian(n: int, d: int, scale: float = 1.0, batch=None, seed=None) -> np.ndarray:
    """Independent ``N(0, scale^2 I_d)`` tokens (``scale = 1``: Theorem 3.1's start;
    ``scale = 1/sqrt(d)``: norms near 1)."""
    shape = _check(n, d, batch)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
    return scale * np.random.default_rng(seed).standard_normal(shape + (n, d))
