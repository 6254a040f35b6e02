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
token type ids 0. Float32 throughout, like the checkpoint. The weights are
views of the memory-mapped file (:func:`.files.safetensors_arrays`), read
when their layer runs; nothing is copied at load.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.special import erf

from ..base.checks import is_integer, is_real, read_regular, shown
from .files import Block, safetensors_arrays
from .tokenize import bert_tokenizer
from .trace import Traced, choice, flag, positive


def read_config(path) -> dict:
    """``config.json`` of a model folder (a regular file holding a JSON
    object), checked by :func:`check_config`; else a ValueError naming it."""
    data = read_regular(path, "config.json")
    try:
        config = json.loads(data)
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deep") from None
    except ValueError as exc:                      # UnicodeDecodeError too
        raise ValueError(f"{path}: not JSON ({' '.join(str(exc).split())})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a JSON object, got a {type(config).__name__}")
    try:
        check_config(config)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return config


#: config.json's integer sizes: name -> (required, smallest value)
SIZES = {"hidden_size": (True, 1), "num_attention_heads": (True, 1),
         "num_hidden_layers": (True, 1), "vocab_size": (True, 1),
         "max_position_embeddings": (False, 1), "pad_token_id": (False, 0)}


def check_config(config) -> None:
    """A BERT config checked as the API checks its arguments: the sizes
    integers in range, the heads dividing the width, ``layer_norm_eps`` a
    finite number > 0 (a ValueError naming the key and what is allowed)."""
    if not isinstance(config, dict):
        raise ValueError(f"config: expected a JSON object, got {shown(config)}")
    for key, (required, low) in SIZES.items():
        value = config.get(key)
        if value is None and not required:
            continue
        if not (is_integer(value) and value >= low):
            raise ValueError(f"{key} must be an integer >= {low}, got {shown(value)}")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise ValueError(f"num_attention_heads must divide hidden_size "
                         f"({config['hidden_size']}), got {config['num_attention_heads']}")
    eps = config.get("layer_norm_eps", 1e-12)
    if not (is_real(eps) and np.isfinite(eps) and eps > 0):
        raise ValueError(f"layer_norm_eps must be a finite number > 0, got {shown(eps)}")


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


#: short name -> tensor of block i (``encoder.layer.{i}.`` + name)
BLOCK = {"q": "attention.self.query.weight", "q_b": "attention.self.query.bias",
         "k": "attention.self.key.weight", "k_b": "attention.self.key.bias",
         "v": "attention.self.value.weight", "v_b": "attention.self.value.bias",
         "o": "attention.output.dense.weight", "o_b": "attention.output.dense.bias",
         "ln1_g": "attention.output.LayerNorm.weight", "ln1_b": "attention.output.LayerNorm.bias",
         "up": "intermediate.dense.weight", "up_b": "intermediate.dense.bias",
         "down": "output.dense.weight", "down_b": "output.dense.bias",
         "ln2_g": "output.LayerNorm.weight", "ln2_b": "output.LayerNorm.bias"}


class Bert(Traced):
    """A BERT-style encoder; ``Bert.from_folder(path)``. Options (:data:`OPTIONS`):
    ``mlp`` (bool), ``norm`` (``"layer"`` or ``"projection"``: x/|x|·sqrt(d)),
    ``eps`` (None: the config's)."""

    scheme = "post-ln"                #: its family, a registry name (sd.scheme)
    scheme_display = "Post-LN"
    OPTIONS = {"mlp": (True, flag), "norm": ("layer", choice("layer", "projection")),
               "eps": (None, positive)}

    def __init__(self, config: dict, weights: dict, tokenizer=None, name="bert", **options):
        o = self.given = self.options(options)
        check_config(config)
        if config.get("model_type", "bert") not in ("bert",):
            raise ValueError(f"model_type={config.get('model_type')!r}: only 'bert' folders "
                             "load as encoders")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("position_embedding_type must be 'absolute'")
        self.name, self.tokenizer, self.source_meta = name, tokenizer, config
        self.config = config
        self.d = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.L = config["num_hidden_layers"]
        self.eps = config.get("layer_norm_eps", 1e-12) if o["eps"] is None else o["eps"]
        self.context = config.get("max_position_embeddings", 512)
        self.vocab = config["vocab_size"]
        self.pad = config.get("pad_token_id", 0) or 0
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act={config.get('hidden_act')!r}: only 'gelu' (erf)")
        self.mlp, self.norm_kind = o["mlp"], o["norm"]
        w = self.tensors = {k.removeprefix("bert."): v for k, v in weights.items()}
        e = "embeddings."
        emb = Block(w, {"tok": e + "word_embeddings.weight",
                        "pos": e + "position_embeddings.weight",
                        "typ": e + "token_type_embeddings.weight",
                        "g": e + "LayerNorm.weight", "b": e + "LayerNorm.bias"})
        self.tok, self.pos, self.typ = emb["tok"], emb["pos"], emb["typ"]
        self.ln0 = (emb["g"], emb["b"])
        self.blocks = [Block(w, {k: f"encoder.layer.{i}.{v}" for k, v in BLOCK.items()})
                       for i in range(self.L)]

    @classmethod
    def from_folder(cls, folder, name=None, **options) -> Bert:
        cls.options(options)                        # bad options fail before any reading
        folder = Path(folder)
        f = folder / "model.safetensors"
        if not f.is_file():
            raise ValueError(f"{folder}: no model.safetensors (only safetensors folders load)")
        config = read_config(folder / "config.json")
        weights = safetensors_arrays(f)
        context = config.get("max_position_embeddings", 512)
        tok = bert_tokenizer(folder, context) if (folder / "tokenizer.json").is_file() else None
        m = cls(config, weights, tok, name or folder.name, **options)
        m.source = str(folder)             # what a trace's provenance names (sd.rerun loads it)
        return m

    def _ln(self, x, g, b):
        if self.norm_kind == "projection":       # the idealized LayerNorm: x / |x| * sqrt(d)
            return x / np.linalg.norm(x, axis=-1, keepdims=True) * np.float32(np.sqrt(self.d))
        return layer_norm(x, g, b, self.eps)

    def embed(self, ids):
        n = ids.shape[1]
        return self._ln(self.tok[ids] + self.pos[:n] + self.typ[0], *self.ln0)

    def steps(self, ids, lengths):
        """(x, h, p) per layer: the embedding, then after each block (see :class:`Traced`)."""
        B, n = ids.shape
        H, d = self.heads, self.d
        dh = d // H
        mask = np.where(np.arange(n)[None, :] < np.asarray(lengths)[:, None], 0.0,
                        np.finfo(np.float32).min).astype(np.float32)[:, None, None, :]
        x = self.embed(ids)
        yield x, None, None
        for blk in self.blocks:
            z = x.reshape(B * n, d)
            q, k, v = ((z @ blk[c].T + blk[c + "_b"]).reshape(B, n, H, dh).transpose(0, 2, 1, 3)
                       for c in "qkv")
            p = softmax((q @ k.transpose(0, 1, 3, 2)) * np.float32(dh ** -0.5) + mask)
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B * n, d)
            h = self._ln(x + (ctx @ blk["o"].T + blk["o_b"]).reshape(B, n, d), blk["ln1_g"],
                         blk["ln1_b"])
            if self.mlp:
                m = gelu(h.reshape(B * n, d) @ blk["up"].T + blk["up_b"]) @ blk["down"].T
                x = self._ln(h + (m + blk["down_b"]).reshape(B, n, d), blk["ln2_g"],
                             blk["ln2_b"])
            else:
                x = self._ln(h, blk["ln2_g"], blk["ln2_b"])
            yield x, h, p
