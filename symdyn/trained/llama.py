"""Layer 3, trained: a Llama decoder (Pre-RMSNorm) in numpy, from a GGUF file.

Tensors are dequantized with ``gguf`` (mixed types: SmolLM2's embedding is
Q8_0, its matrices Q4_1, its norms F32; GGUF lists shapes fastest axis first,
the arrays come out (out, in) as in torch) and cached as float32
(:func:`.files.cached_arrays`, written one tensor at a time), then used as
views of the memory-mapped cache: a layer's matrices are read when it runs.
llama.cpp's converter permutes the rows of Q and K of each head for its RoPE
layout (pairs (2i, 2i+1)); they are put back in Hugging Face's order (pairs
(i, i + d_h/2)) as they are read. With
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

from collections import deque
from pathlib import Path

import numpy as np
from scipy.special import expit

from ..base.checks import is_integer, is_real, shown
from .bert import softmax
from .files import Block, cached_arrays, need
from .tokenize import gguf_tokenizer
from .trace import Traced, choice, flag, positive

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


def dequantize_all(reader, rows: int = 4096):
    """(name, float32 array (rows, row length)) for every tensor of the file, one at a
    time, each dequantized ``rows`` rows at a time (no full-size temporaries)."""
    gguf = need("gguf")
    for t in reader.tensors:
        shape = tuple(int(s) for s in reversed(t.shape.tolist()))
        out = np.empty(shape, dtype=np.float32)
        flat = out.reshape(len(t.data), -1) if t.data.ndim > 1 else out.reshape(1, -1)
        data = t.data if t.data.ndim > 1 else t.data[None]
        for i in range(0, len(data), rows):
            flat[i:i + rows] = gguf.quants.dequantize(data[i:i + rows], t.tensor_type).reshape(
                len(data[i:i + rows]), -1)
        yield t.name, out


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


#: short name -> tensor of block i (``blk.{i}.`` + name)
BLOCK = {"n1": "attn_norm.weight", "n2": "ffn_norm.weight", "q": "attn_q.weight",
         "k": "attn_k.weight", "v": "attn_v.weight", "o": "attn_output.weight",
         "gate": "ffn_gate.weight", "up": "ffn_up.weight", "down": "ffn_down.weight"}


def kv_heads(value, name):
    """None or a sequence of integers (checked against the heads on load)."""
    if value is not None:
        a = np.asarray(value)
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{name} must be None or a sequence of integers (query head j "
                             f"reads key/value head {name}[j]), got {shown(value)}")
    return value


def check_meta(meta: dict, g: str) -> None:
    """The GGUF metadata checked as the API checks its arguments: the sizes
    integers >= 1, the heads dividing the width and the key/value heads the
    heads, the RMS epsilon and the RoPE base finite numbers > 0."""
    sizes = {"block_count": True, "embedding_length": True, "attention.head_count": True,
             "attention.head_count_kv": False, "context_length": False}
    for key, required in sizes.items():
        value = meta.get(g + key)
        if value is None and not required:
            continue
        if not (is_integer(value) and value >= 1):
            raise ValueError(f"{g}{key} must be an integer >= 1, got {shown(value)}")
    d, heads = meta[g + "embedding_length"], meta[g + "attention.head_count"]
    kv = meta.get(g + "attention.head_count_kv", heads)
    if d % heads or heads % kv:
        raise ValueError(f"{g}attention.head_count ({heads}) must divide embedding_length "
                         f"({d}), and attention.head_count_kv ({kv}) the heads")
    for key, default in (("attention.layer_norm_rms_epsilon", None), ("rope.freq_base", 1.0)):
        value = meta.get(g + key, default)
        if not (is_real(value) and np.isfinite(value) and value > 0):
            raise ValueError(f"{g}{key} must be a finite number > 0, got {shown(value)}")


class Llama(Traced):
    """A Llama-family decoder; ``Llama.from_gguf(path)``. Options (:data:`OPTIONS`):
    ``mlp`` (bool), ``norm`` (``"rms"`` or ``"projection"``: x/|x|·sqrt(d)),
    ``permuted`` (bool: the file's Q/K rows are in llama.cpp's order), ``theta``
    (None: the file's RoPE base), ``kv_map`` (None: head j reads j // (H/G))."""

    scheme = "pre-ln"                #: its family, a registry name (sd.scheme)
    scheme_display = "Pre-RMSNorm"
    first_token_sink = True          #: a decoder's first token: a massive activation
    OPTIONS = {"mlp": (True, flag), "norm": ("rms", choice("rms", "projection")),
               "permuted": (True, flag), "theta": (None, positive), "kv_map": (None, kv_heads)}

    def __init__(self, meta: dict, tensors: dict, tokenizer=None, name="llama", **options):
        o = self.given = self.options(options)
        arch = meta.get("general.architecture")
        if arch not in ARCHITECTURES:
            raise ValueError(f"general.architecture={arch!r}: supported GGUF architectures are "
                             f"{', '.join(ARCHITECTURES)}")
        g = f"{arch}."
        check_meta(meta, g)
        self.name, self.tokenizer, self.meta, self.source_meta = name, tokenizer, meta, meta
        self.L, self.d = int(meta[g + "block_count"]), int(meta[g + "embedding_length"])
        self.heads = int(meta[g + "attention.head_count"])
        self.kv = int(meta.get(g + "attention.head_count_kv", self.heads))
        self.eps = float(meta[g + "attention.layer_norm_rms_epsilon"])
        self.theta = (float(meta.get(g + "rope.freq_base", 10000.0)) if o["theta"] is None
                      else o["theta"])
        self.context = int(meta.get(g + "context_length", 2048))
        self.dh = self.d // self.heads
        rot = int(meta.get(g + "rope.dimension_count", self.dh))
        if rot != self.dh:
            raise ValueError(f"{g}rope.dimension_count={rot}: only full-head RoPE ({self.dh})")
        self.mlp, self.norm_kind, self.permuted = o["mlp"], o["norm"], o["permuted"]
        # query head j reads key/value head kv_map[j] (Hugging Face: j // (heads / kv))
        self.kv_map = (np.arange(self.heads) // (self.heads // self.kv) if o["kv_map"] is None
                       else np.asarray(o["kv_map"]))
        if len(self.kv_map) != self.heads or not 0 <= self.kv_map.min() <= self.kv_map.max() \
                < self.kv:
            raise ValueError(f"kv_map must be None or {self.heads} integers in "
                             f"[0, {self.kv - 1}], got {shown(o['kv_map'])}")
        self.tensors = t = tensors
        if "token_embd.weight" not in t or "output_norm.weight" not in t:
            raise ValueError("the checkpoint needs token_embd.weight and output_norm.weight")
        self.emb = np.asarray(t["token_embd.weight"], dtype=np.float32)
        self.vocab = self.emb.shape[0]
        self.pad = 0
        self.out = np.asarray(t.get("output.weight", self.emb), dtype=np.float32)
        self.final = np.asarray(t["output_norm.weight"], dtype=np.float32)
        self.blocks = [Block(t, {k: f"blk.{i}.{v}" for k, v in BLOCK.items()}, self._rows)
                       for i in range(self.L)]

    def _rows(self, key, w):
        """Q and K rows back in Hugging Face's order (unless ``permuted=False``)."""
        if self.permuted and key in ("q", "k"):
            return unpermute(w, self.heads if key == "q" else self.kv)
        return w

    @staticmethod
    def describe(key, value) -> str:
        if key == "permuted":
            return "Q/K rows left in llama.cpp's order"
        if key == "kv_map":
            return f"kv_map={np.asarray(value).tolist()}"
        return Traced.describe(key, value)

    @classmethod
    def from_gguf(cls, path, name=None, **options) -> Llama:
        cls.options(options)                        # bad options fail before any reading
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
        m = cls(meta, tensors, tok, name or path.stem, **options)
        m.source = str(path)               # what a trace's provenance names (sd.rerun loads it)
        return m

    def _norm(self, x, w):
        if self.norm_kind == "projection":       # the idealized projection: x / |x| * sqrt(d)
            return x / np.linalg.norm(x, axis=-1, keepdims=True) * np.float32(np.sqrt(self.d))
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(self.eps)) * w

    def steps(self, ids, lengths):
        """(x, h, p) per layer: the embedding, then after each block (see :class:`Traced`).

        Right padding needs no mask: a causal query never sees a later (pad) key.
        """
        B, n = ids.shape
        H, G, dh, d = self.heads, self.kv, self.dh, self.d
        cos, sin = rope_tables(n, dh, self.theta)
        causal = np.triu(np.full((n, n), -np.inf, dtype=np.float32), 1)
        x = self.emb[ids].astype(np.float32)
        yield x, None, None
        for blk in self.blocks:
            z = self._norm(x, blk["n1"]).reshape(B * n, d)
            q, k, v = ((z @ blk[c].T).reshape(B, n, heads, dh).transpose(0, 2, 1, 3)
                       for c, heads in (("q", H), ("k", G), ("v", G)))
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k, v = k[:, self.kv_map], v[:, self.kv_map]
            p = softmax((q @ k.transpose(0, 1, 3, 2)) * np.float32(dh ** -0.5) + causal)
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B * n, d)
            h = x + (ctx @ blk["o"].T).reshape(B, n, d)
            if self.mlp:
                z = self._norm(h, blk["n2"]).reshape(B * n, d)
                gate = z @ blk["gate"].T
                act = gate * expit(gate) * (z @ blk["up"].T)          # SiLU, no overflow
                x = h + (act @ blk["down"].T).reshape(B, n, d)
            else:
                x = h
            yield x, h, p

    def logits(self, token_ids) -> np.ndarray:
        """Next-token logits (n, vocab): final norm, then the output (tied) embedding."""
        ids, lengths = self.batch([self._check_ids(token_ids)])
        x = deque(self.steps(ids, lengths), maxlen=1)[0][0][0]      # the last layer only
        return (x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(self.eps))
                * self.final) @ self.out.T
