"""Layer 3, trained: a Llama decoder (Pre-RMSNorm) in numpy, from a GGUF file.

Tensors are dequantized with ``gguf`` (mixed types: SmolLM2's embedding is
Q8_0, its matrices Q4_1, its norms F32; GGUF lists shapes fastest axis first,
the arrays come out (out, in) as in torch) and cached as float32
(:func:`.files.cached_arrays`). llama.cpp's converter permutes the rows of
Q and K of each head for its RoPE layout (pairs (2i, 2i+1)); they are put back
in Hugging Face's order (pairs (i, i + d_h/2)) on load. With
:math:`N(x) = w\\odot x/\\sqrt{\\overline{x^2}+\\varepsilon}`:

.. math::

    h = x + W_o\\,\\mathrm{Attn}(R\\,W_q N_1(x), R\\,W_k N_1(x), W_v N_1(x)),\\quad
    x^{l+1} = h + W_d\\,(\\mathrm{SiLU}(W_g N_2(h))\\odot W_u N_2(h))

with causal softmax attention, RoPE :math:`R` at base ``llama.rope.freq_base``
(1e5 for SmolLM2), query head j reading key/value head
:math:`j // (n_{head}/n_{kv})`. Reported states are the residual stream; the
final norm is applied only by :meth:`Llama.logits` (tied embedding when the
file has no ``output.weight``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.special import expit

from .bert import softmax
from .files import cached_arrays, need
from .tokenize import gguf_tokenizer
from .trace import Traced

ARCHITECTURES = ("llama",)


def read_fields(reader) -> dict:
    """GGUF metadata as Python values (strings, numbers, lists)."""
    out = {}
    for k, f in reader.fields.items():
        if k.startswith("GGUF."):
            continue
        v = f.contents()
        out[k] = v.tolist() if isinstance(v, np.ndarray) else v
    return out


def dequantize_all(reader) -> dict[str, np.ndarray]:
    """Every tensor of the file as float32, shaped (rows, row length)."""
    gguf = need("gguf")
    out = {}
    for t in reader.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        shape = tuple(int(s) for s in reversed(t.shape.tolist()))
        out[t.name] = np.asarray(a, dtype=np.float32).reshape(shape)
    return out


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's per-head row permutation of Q or K (rows (2i, 2i+1) -> (i, i + d_h/2))."""
    r = w.shape[0]
    return w.reshape(heads, r // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_tables(n: int, dh: int, theta: float):
    """cos, sin (n, dh) of Hugging Face's default RoPE, in float32 as it computes them."""
    inv = (1.0 / (np.float32(theta) ** (np.arange(0, dh, 2, dtype=np.float32) / np.float32(dh))))
    f = np.arange(n, dtype=np.float32)[:, None] * inv.astype(np.float32)[None, :]
    emb = np.concatenate([f, f], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


class Llama(Traced):
    """A Llama-family decoder; ``Llama.from_gguf(path)``."""

    scheme = "Pre-RMSNorm"

    def __init__(self, meta: dict, tensors: dict, tokenizer=None, name="llama", *,
                 permuted: bool = True, kv_map=None, theta=None, mlp=True, norm="rms"):
        arch = meta.get("general.architecture")
        if arch not in ARCHITECTURES:
            raise ValueError(f"general.architecture={arch!r}: supported GGUF architectures are "
                             f"{', '.join(ARCHITECTURES)}")
        g = f"{arch}."
        self.name, self.tokenizer, self.meta = name, tokenizer, meta
        self.L, self.d = int(meta[g + "block_count"]), int(meta[g + "embedding_length"])
        self.heads = int(meta[g + "attention.head_count"])
        self.kv = int(meta.get(g + "attention.head_count_kv", self.heads))
        self.eps = float(meta[g + "attention.layer_norm_rms_epsilon"])
        self.theta = float(meta.get(g + "rope.freq_base", 10000.0)) if theta is None else theta
        self.context = int(meta.get(g + "context_length", 2048))
        self.dh = self.d // self.heads
        rot = int(meta.get(g + "rope.dimension_count", self.dh))
        if rot != self.dh:
            raise ValueError(f"{g}rope.dimension_count={rot}: only full-head RoPE ({self.dh})")
        self.mlp, self.norm_kind = mlp, norm
        # query head j reads key/value head kv_map[j] (Hugging Face: j // (heads / kv))
        self.kv_map = (np.arange(self.heads) // (self.heads // self.kv) if kv_map is None
                       else np.asarray(kv_map))
        t = tensors
        self.emb = t["token_embd.weight"]
        self.vocab = self.emb.shape[0]
        self.pad = 0
        self.out = t.get("output.weight", self.emb)
        self.final = t["output_norm.weight"]
        self.blocks = []
        for i in range(self.L):
            p = f"blk.{i}."
            q, k = t[p + "attn_q.weight"], t[p + "attn_k.weight"]
            if permuted:
                q, k = unpermute(q, self.heads), unpermute(k, self.kv)
            self.blocks.append(dict(
                n1=t[p + "attn_norm.weight"], n2=t[p + "ffn_norm.weight"],
                qkv=np.ascontiguousarray(np.concatenate([q, k, t[p + "attn_v.weight"]]).T),
                o=np.ascontiguousarray(t[p + "attn_output.weight"].T),
                gu=np.ascontiguousarray(np.concatenate([t[p + "ffn_gate.weight"],
                                                        t[p + "ffn_up.weight"]]).T),
                down=np.ascontiguousarray(t[p + "ffn_down.weight"].T)))

    @classmethod
    def from_gguf(cls, path, name=None, **kw) -> Llama:
        gguf = need("gguf")
        path = Path(path)

        def read():
            reader = gguf.GGUFReader(str(path))
            meta = read_fields(reader)
            arch = meta.get("general.architecture")
            if arch not in ARCHITECTURES:
                raise ValueError(f"{path.name}: general.architecture={arch!r}; supported GGUF "
                                 f"architectures are {', '.join(ARCHITECTURES)}")
            return meta, dequantize_all(reader)

        meta, tensors = cached_arrays(path, read)
        arch = meta.get("general.architecture")
        g = f"{arch}."
        tok = gguf_tokenizer(meta, int(meta.get(g + "context_length", 2048)))
        return cls(meta, tensors, tok, name or path.stem, **kw)

    def _norm(self, x, w):
        if self.norm_kind == "projection":       # the idealized projection: x / |x| * sqrt(d)
            return x / np.linalg.norm(x, axis=-1, keepdims=True) * np.float32(np.sqrt(self.d))
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(self.eps)) * w

    def forward(self, ids, lengths):
        """States (embedding + after each block), states after attention, attention probs.

        Right padding needs no mask: a causal query never sees a later (pad) key.
        """
        B, n = ids.shape
        H, G, dh, d = self.heads, self.kv, self.dh, self.d
        cos, sin = rope_tables(n, dh, self.theta)
        causal = np.triu(np.full((n, n), -np.inf, dtype=np.float32), 1)
        x = self.emb[ids].astype(np.float32)
        states, attn_states, probs = [x], [], []
        for blk in self.blocks:
            qkv = self._norm(x, blk["n1"]).reshape(B * n, d) @ blk["qkv"]
            q = qkv[:, :d].reshape(B, n, H, dh).transpose(0, 2, 1, 3)
            k = qkv[:, d:d + G * dh].reshape(B, n, G, dh).transpose(0, 2, 1, 3)
            v = qkv[:, d + G * dh:].reshape(B, n, G, dh).transpose(0, 2, 1, 3)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k, v = k[:, self.kv_map], v[:, self.kv_map]
            s = (q @ k.transpose(0, 1, 3, 2)) * np.float32(dh ** -0.5) + causal
            p = softmax(s)
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B * n, d)
            h = x + (ctx @ blk["o"]).reshape(B, n, d)
            if self.mlp:
                gu = self._norm(h, blk["n2"]).reshape(B * n, d) @ blk["gu"]
                f = gu.shape[1] // 2
                gate = gu[:, :f]
                act = gate * expit(gate) * gu[:, f:]          # SiLU, no overflow
                x = h + (act @ blk["down"]).reshape(B, n, d)
            else:
                x = h
            attn_states.append(h)
            states.append(x)
            probs.append(p)
        return states, attn_states, probs

    def logits(self, token_ids) -> np.ndarray:
        """Next-token logits (n, vocab): final norm, then the output (tied) embedding."""
        ids, lengths = self.batch([self._check_ids(token_ids)])
        x = self.forward(ids, lengths)[0][-1][0]
        return (x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(self.eps))
                * self.final) @ self.out.T
