"""The layer rules (``step=h``): each scheme's ``Scheme.layer`` at ``t_k = k h``.

The rules are the schemes' own (``symdyn/model/schemes/``, docs/model.md,
section 2); this loop hands them ``A(y)``, the attention at ``beta`` (a
rule that rescales its input gets its temperature from that input), and
``field(x)``, the continuous field at ``t_k`` (at ``beta tau(t_k)``), and
records the observables at the output layers only. With noise
(:mod:`symdyn.particles.noise`) each layer's rule is followed by a Gaussian
kick of the directions; ``speed`` records the drift's.

The loop around the rules allocates nothing per layer: ``A`` writes into
buffers made once (the scores, and one output per call within a layer; a
rule that returns such a buffer gets a copy), the layer's ``t_k`` and draw
are set on two callables made once, and the finiteness check is one dot
product (the full test only when it overflows or fails).

Layer 2, particles.
"""

from __future__ import annotations

import numpy as np

from ..base.arithmetic import all_finite
from ..model.scheme import unit
from .attention import attention as _attention
from .attention import of_weights
from .field import Field
from .result import RunStats


class Attend:
    """``A(y)`` of layer ``k``: the attention at ``beta`` of draw ``k``, into
    reused buffers (the ``i``-th call of a layer writes the ``i``-th one)."""

    def __init__(self, w, beta, attention, shape, dtype, causal=False):
        self.w, self.attention, self.shape, self.dtype = w, attention, shape, dtype
        self.causal = causal
        self.beta = np.asarray(beta, dtype=float).reshape(-1, 1, 1)
        self.work = np.empty(shape[:2] + shape[1:2], dtype=dtype)       # (M, n, n)
        self.pool = []
        self.used = 0
        self.qkv, self.ident = of_weights(w, 0)

    def layer(self, k):
        self.used = 0
        if not self.w.tied:
            self.qkv, self.ident = of_weights(self.w, k)

    def __call__(self, y):
        if y.shape != self.shape or y.dtype != self.dtype:      # a rule of other shapes
            return _attention(y, self.beta, self.qkv, self.attention, self.ident,
                              causal=self.causal)
        if self.used == len(self.pool):
            self.pool.append(np.empty(self.shape, dtype=self.dtype))
        out = self.pool[self.used]
        self.used += 1
        if not self.ident:
            out[...] = _attention(y, self.beta, self.qkv, self.attention, False,
                                  causal=self.causal)
            return out
        return _attention(y, self.beta, None, self.attention, True, out=out, work=self.work,
                          causal=self.causal)

    def holds(self, x):
        """Does ``x`` live in one of the buffers (a rule that returned ``A(y)`` or a
        view of it: numpy keeps the owner as the view's ``base``)?"""
        owner = x if getattr(x, "base", None) is None else x.base
        return any(owner is b for b in self.pool)


class _FieldAt:
    """``field(x)`` of layer ``k``: the continuous field at ``t_k`` (its phase: the
    one that starts at ``t_k``), for the rules that step along it."""

    def __init__(self, field, beta):
        self.field, self.beta = field, beta
        self.k, self.tk = 0, 0.0

    def __call__(self, y):
        field, M = self.field, len(self.beta)
        field.fault = None
        phase = int(field.phase_at(np.array([self.tk]), side="right")[0])
        return field(np.full(M, self.tk), unit(y), np.linalg.norm(y, axis=-1), self.beta,
                     phase, draw=self.k)


def layers(s, w, attention, theta, rad, beta, times, h, rec, causal=False,
           noise=None) -> RunStats:
    """Run the layers; ``noise`` (:class:`~symdyn.particles.noise.Noise`) kicks the
    directions after each layer's rule (the noisy Euler-Maruyama layers)."""
    M, n, d = theta.shape
    layer_of = np.round(times / h).astype(int)
    total = int(layer_of[-1])
    if not w.tied and w.draws < total:
        raise ValueError(f"weights: untied weights hold {w.draws} draws but {total} "
                         f"layers are needed")
    field = Field(s, w, attention, None, None, dtype=theta.dtype, causal=causal)
    x = theta * rad[..., None]
    out = {int(k): i for i, k in enumerate(layer_of)}
    members = np.arange(M)
    attend = Attend(w, beta, attention, theta.shape, theta.dtype, causal)
    at = _FieldAt(field, beta)
    update = s.layer.update
    on_sphere = bool(s.on_sphere)       # the rule returns unit tokens
    if noise is not None:
        noise.limit(total)              # no normals drawn past the last layer

    def where(k):
        return f"layer {k} (t = {k * h:g}) with step = {h:g}; use a smaller step"

    with np.errstate(all="ignore"):
        for k in range(total + 1):
            if not all_finite(x):
                raise ArithmeticError("simulate: " + (field.fault or
                                                      f"non-finite tokens at {where(k)}"))
            if k in out:
                rec.observe(field, out[k], members, k * h, unit(x),
                            np.linalg.norm(x, axis=-1), beta, min(k, w.draws - 1), where(k))
            if k == total:
                break
            tk = np.float64(k * h)          # laws divide as numpy does: 1/0 = inf
            attend.layer(k)
            at.k, at.tk = k, tk
            x = update(s, x, h, tk, attend, at)
            if x.dtype != theta.dtype:  # a (custom) rule that computed in another dtype
                x = x.astype(theta.dtype)
            if noise is not None:       # the kick's buffer: never one of attend's
                x = noise.kick(x, on_sphere)
            elif attend.holds(x):         # the next layer's A would overwrite it
                x = x.copy()
    return RunStats(steps=total, nfev=total, message=f"{total} layers of step {h:g}")
