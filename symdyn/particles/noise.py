"""The noise of the noisy layers (``kappa=``, ``seed=``, ``step=h``).

The survey's noisy transformer (Rigollet, arXiv:2512.01868, section 7) is

.. math:: dX_i = P_{X_i}\\Big(\\frac{1}{n}\\sum_j e^{\\beta\\langle X_i, X_j\\rangle}
          X_j\\Big) dt + \\sqrt{2/\\kappa}\\, dW_i

with :math:`W_i` independent Brownian motions on the sphere: the generator of
the noise is :math:`\\kappa^{-1}\\Delta_{S^{d-1}}`. Each noisy layer applies the
scheme's deterministic rule and then kicks the *direction*,

.. math:: \\theta \\leftarrow N\\big(\\theta + \\sqrt{2h/\\kappa}\\,\\xi\\big),
          \\qquad \\xi \\sim \\mathcal{N}(0, I_d),

keeping the norm (radial schemes: the noise acts on the directions). Its
expansion, :math:`E[\\Delta\\theta] = -(d-1)(h/\\kappa)\\theta + O(h^2)` and
tangential covariance :math:`(2h/\\kappa) P_\\theta`, is the Ito form of the
spherical Brownian motion: an Euler-Maruyama step, weak order 1 and strong
order 1/2 (docs/model.md, section 6).

Streams: member ``m`` of a batch draws from
``Generator(SFC64(SeedSequence(seed).spawn(M)[m]))``; layer ``k`` uses its
normals ``k n d .. (k+1) n d - 1`` (drawn in blocks of layers; the blocks do
not change the values).

Layer 2, particles.
"""

from __future__ import annotations

import math

import numpy as np

from ..base.checks import number, shown

#: floats drawn at once (all members, a block of layers)
BLOCK_FLOATS = 1 << 18


def check(kappa, seed, step):
    """``kappa`` (None or a finite number > 0) and ``seed`` (None or an integer >= 0)."""
    if kappa is None:
        if seed is not None:
            raise ValueError(f"seed: only the noisy dynamics draws random numbers; give "
                             f"kappa=... with it (got seed={shown(seed)}, kappa=None)")
        return None, None
    kappa = number(kappa, "kappa", 0, low_open=True)
    if step is None:
        raise ValueError("step: the noisy path needs a step (step=h, the Euler-Maruyama "
                         "layers); the continuous integrator (step=None) is deterministic")
    if seed is not None and (isinstance(seed, (bool, np.bool_))
                             or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed must be None or an integer >= 0, got {shown(seed)}")
    return kappa, None if seed is None else int(seed)


class Noise:
    """Gaussian kicks ``sqrt(2h/kappa) xi`` of the directions, a stream per member.

    A block of layers' normals is drawn per member at once and scaled there (the
    product ``sqrt(2h/kappa) xi`` the kick adds, one call per member and block);
    :meth:`limit` cuts the last block to the layers the run uses. The kick writes
    into one output buffer and norm buffers made once: the array it returns is
    overwritten by the next kick (the layer loop hands it to the next rule, which
    returns a new array)."""

    def __init__(self, kappa, seed, h, shape, dtype):
        M, n, d = shape
        self.scale = math.sqrt(2.0 * h / kappa)
        self.rngs = [np.random.Generator(np.random.SFC64(s))
                     for s in np.random.SeedSequence(seed).spawn(M)]
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.block = max(1, min(256, BLOCK_FLOATS // (M * n * d)))
        self.left = None            # layers still to draw (None: no limit)
        self.buffer = None          # (M, block, n, d), made at the first draw
        self.used = self.filled = 0
        self.out = np.empty(shape, dtype=self.dtype)
        self.norm, self.radius = np.empty((2, M, n, 1), dtype=self.dtype)

    def limit(self, layers):
        """Draw the normals of ``layers`` more layers only (the blocks are cut to
        them; the values do not change)."""
        self.left = max(0, int(layers) - (self.filled - self.used))

    def draw(self):
        """The scaled normals ``sqrt(2h/kappa) xi`` of the next layer, (M, n, d)
        (a view of the block)."""
        if self.used == self.filled:
            count = min(self.block, self.left) if self.left else self.block
            if self.buffer is None or self.buffer.shape[1] < count:
                self.buffer = np.empty((self.shape[0], count) + self.shape[1:], self.dtype)
            for m, rng in enumerate(self.rngs):
                part = self.buffer[m, :count]
                rng.standard_normal(out=part, dtype=self.dtype)
                part *= self.scale
            self.used, self.filled = 0, count
            if self.left:
                self.left -= count
        z = self.buffer[:, self.used]
        self.used += 1
        return z

    def kick(self, x, on_sphere=False):
        """``r N(theta + sqrt(2h/kappa) xi)`` of the tokens ``x = r theta``
        (``on_sphere``: ``|x| = 1``, ``N(x + sqrt(2h/kappa) xi)``), into the
        output buffer; ``x`` has the run's shape and dtype (the layer loop casts
        what a rule returns)."""
        y, norm = self.out, self.norm
        if on_sphere:
            np.add(x, self.draw(), out=y)
        else:
            r = self.radius
            np.einsum("mnd,mnd->mn", x, x, out=r[..., 0])
            np.sqrt(r, out=r)
            np.divide(x, r, out=y)
            y += self.draw()
        np.einsum("mnd,mnd->mn", y, y, out=norm[..., 0])
        np.sqrt(norm, out=norm)
        if on_sphere:
            y /= norm
        else:
            y *= np.divide(r, norm, out=norm)
        return y
