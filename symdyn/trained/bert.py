"""Layer 3, trained: a BERT encoder (Post-LN) in numpy, from an HF folder.

Reads ``config.json`` and ``model.safetensors`` (``bert.``-prefixed names or
bare). With :math:`\\mathrm{LN}(x) = g\\odot(x-\\bar x)/\\sqrt{\\mathrm{var}\\,x+\\varepsilon}+b`
(:math:`\\varepsilon` = ``layer_norm_eps``, 1e-12 for MiniLM):

.. math::

    x^0 = \\mathrm{LN}(E_{tok}[t_i] + E_{pos}[i] + E_{type}[0]),\\quad
    h = \\mathrm{LN}(x + \\mathrm{MHA}(x)),\\quad
    x^{l+1} = \\mathrm{LN}(h + W_2\\,\\mathrm{GELU}(W_1 h + b_1) + b_2)

with the exact GELU :math:`\\tfrac{x}{2}(1+\\mathrm{erf}(x/\\sqrt2))`; attention
softmax over the keys of the text only (padding masked), position ids 0..n-1,
token type ids 0. Float32 throughout, like the checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.special import erf

from .files import need
from .tokenize import bert_tokenizer
from .trace import Traced


def layer_norm(x, g, b, eps):
    """LayerNorm over the last axis (biased variance, as torch)."""
    xc = x - x.mean(-1, keepdims=True)
    var = (xc * xc).mean(-1, keepdims=True)
    return xc / np.sqrt(var + np.float32(eps)) * g + b


def gelu(x):
    """The exact (erf) GELU, elementwise in the input's dtype."""
    return np.float32(0.5) * x * (np.float32(1.0) + erf(x * np.float32(2 ** -0.5)))


def softmax(s):
    """Softmax over the last axis, in place on ``s``."""
    s -= s.max(-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(-1, keepdims=True)
    return s


class Bert(Traced):
    """A BERT-style encoder; ``Bert.from_folder(path)``."""

    scheme = "Post-LN"

    def __init__(self, config: dict, weights: dict, tokenizer=None, name="bert",
                 eps: float | None = None, mlp: bool = True, norm: str = "layer"):
        if config.get("model_type", "bert") not in ("bert",):
            raise ValueError(f"model_type={config.get('model_type')!r}: only 'bert' folders "
                             "load as encoders")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("position_embedding_type must be 'absolute'")
        self.name, self.tokenizer, self.config = name, tokenizer, config
        self.d = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.L = config["num_hidden_layers"]
        self.eps = config.get("layer_norm_eps", 1e-12) if eps is None else eps
        self.context = config.get("max_position_embeddings", 512)
        self.vocab = config["vocab_size"]
        self.pad = config.get("pad_token_id", 0) or 0
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act={config.get('hidden_act')!r}: only 'gelu' (erf)")
        self.mlp, self.norm_kind = mlp, norm
        w = {k.removeprefix("bert."): np.asarray(v, dtype=np.float32) for k, v in weights.items()}
        self.w = w
        e = "embeddings."
        self.tok, self.pos = w[e + "word_embeddings.weight"], w[e + "position_embeddings.weight"]
        self.typ = w[e + "token_type_embeddings.weight"]
        self.ln0 = (w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"])
        self.blocks = []
        for i in range(self.L):
            p = f"encoder.layer.{i}."
            a = p + "attention.self."
            qkv = np.concatenate([w[a + n + ".weight"] for n in ("query", "key", "value")])
            qkv_b = np.concatenate([w[a + n + ".bias"] for n in ("query", "key", "value")])
            self.blocks.append(dict(
                qkv=np.ascontiguousarray(qkv.T), qkv_b=qkv_b,
                o=np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                o_b=w[p + "attention.output.dense.bias"],
                ln1=(w[p + "attention.output.LayerNorm.weight"],
                     w[p + "attention.output.LayerNorm.bias"]),
                up=np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                up_b=w[p + "intermediate.dense.bias"],
                down=np.ascontiguousarray(w[p + "output.dense.weight"].T),
                down_b=w[p + "output.dense.bias"],
                ln2=(w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])))

    @classmethod
    def from_folder(cls, folder, name=None, **kw) -> Bert:
        folder = Path(folder)
        config = json.loads((folder / "config.json").read_text())
        f = folder / "model.safetensors"
        if not f.is_file():
            raise ValueError(f"{folder}: no model.safetensors (only safetensors folders load)")
        weights = need("safetensors.numpy").load_file(str(f))
        context = config.get("max_position_embeddings", 512)
        tok = bert_tokenizer(folder, context) if (folder / "tokenizer.json").is_file() else None
        return cls(config, weights, tok, name or folder.name, **kw)

    def _ln(self, x, gb):
        if self.norm_kind == "projection":       # the idealized LayerNorm: x / |x| * sqrt(d)
            return x / np.linalg.norm(x, axis=-1, keepdims=True) * np.float32(np.sqrt(self.d))
        return layer_norm(x, gb[0], gb[1], self.eps)

    def embed(self, ids):
        n = ids.shape[1]
        return self._ln(self.tok[ids] + self.pos[:n] + self.typ[0], self.ln0)

    def forward(self, ids, lengths):
        """States (embedding + after each block), states after attention, attention probs."""
        B, n = ids.shape
        H, d = self.heads, self.d
        dh = d // H
        mask = np.where(np.arange(n)[None, :] < np.asarray(lengths)[:, None], 0.0,
                        np.finfo(np.float32).min).astype(np.float32)[:, None, None, :]
        x = self.embed(ids)
        states, attn_states, probs = [x], [], []
        for blk in self.blocks:
            qkv = (x.reshape(B * n, d) @ blk["qkv"] + blk["qkv_b"]).reshape(B, n, 3, H, dh)
            q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
            s = (q @ k.transpose(0, 1, 3, 2)) * np.float32(dh ** -0.5) + mask
            p = softmax(s)
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B * n, d)
            h = self._ln(x + (ctx @ blk["o"] + blk["o_b"]).reshape(B, n, d), blk["ln1"])
            if self.mlp:
                m = gelu(h.reshape(B * n, d) @ blk["up"] + blk["up_b"]) @ blk["down"]
                x = self._ln(h + (m + blk["down_b"]).reshape(B, n, d), blk["ln2"])
            else:
                x = self._ln(h, blk["ln2"])
            attn_states.append(h)
            states.append(x)
            probs.append(p)
        return states, attn_states, probs
