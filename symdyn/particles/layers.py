"""The layer rules (``step=h``): each scheme's ``Scheme.layer`` at ``t_k = k h``.

The rules are the schemes' own (``symdyn/model/schemes/``, docs/model.md,
section 2); this loop hands them ``A(y)``, the attention at ``beta`` (a
rule that rescales its input gets its temperature from that input), and
``field(x)``, the continuous field at ``t_k`` (at ``beta tau(t_k)``), and
records the observables at the output layers.

Layer 2, particles.
"""

from __future__ import annotations

import numpy as np

from ..model.registry import unit
from .attention import attention as _attention
from .attention import of_weights
from .field import Field


def layers(s, w, attention, theta, rad, beta, times, h, rec):
    M, n, d = theta.shape
    layer_of = np.round(times / h).astype(int)
    total = int(layer_of[-1])
    if not w.tied and w.draws < total:
        raise ValueError(f"weights: untied weights hold {w.draws} draws but {total} "
                         f"layers are needed")
    field = Field(s, w, attention, s.breakpoints, None, dtype=theta.dtype)
    x = theta * rad[..., None]
    out = {int(k): i for i, k in enumerate(layer_of)}
    members = np.arange(M)

    def where(k):
        return f"layer {k} (t = {k * h:g}) with step = {h:g}; use a smaller step"

    with np.errstate(all="ignore"):
        for k in range(total + 1):
            if not np.all(np.isfinite(x)):
                raise ArithmeticError("simulate: " + (field.fault or
                                                      f"non-finite tokens at {where(k)}"))
            if k in out:
                rec.observe(field, out[k], members, k * h, unit(x),
                            np.linalg.norm(x, axis=-1), beta, min(k, w.draws - 1), where(k))
            if k == total:
                break
            tk = np.float64(k * h)          # laws divide as numpy does: 1/0 = inf

            def attend(y, k=k):
                qkv, ident = of_weights(w, k)
                return _attention(y, beta, qkv, attention, ident)

            def continuous(y, k=k, tk=tk):
                field.fault = None
                phase = int(field.phase_at(np.array([tk]), side="right")[0])
                return field(np.full(M, tk), unit(y), np.linalg.norm(y, axis=-1), beta,
                             phase, draw=k)

            x = s.layer.update(s, x, h, tk, attend, continuous)
    return total, total, f"{total} layers of step {h:g}"
