"""Layer 3, trained: a model's per-layer token geometry (:class:`LayerTrace`).

For tokens :math:`x_1..x_n` of one text at one depth, with :math:`u_i = x_i/|x_i|`:

* ``cosine``: the mean pairwise cosine
  :math:`\\frac{2}{n(n-1)}\\sum_{i<j} u_i\\cdot u_j = (|\\sum_i u_i|^2 - n)/(n(n-1))`,
  the paper's :math:`\\gamma` when all pairs are alike;
* ``min_cosine``: :math:`\\min_{i\\ne j} u_i\\cdot u_j`;
* ``norm``: the mean token norm :math:`\\frac1n\\sum_i |x_i|`;
* ``entropy[l-1, h]``: head h of block l, the mean over queries of
  :math:`-\\sum_j p_{ij}\\log p_{ij}` (nats; causal rows run over the keys
  a query sees).

Entry l = 0 is the embedding, l = 1..L the residual stream after block l
(no final norm: Hugging Face's Llama ``last_hidden_state`` is after it, ours
is not). ``attn_*`` (length L) are the same after block l's attention
sublayer alone (Post-LN: ``LN(x + Attn(x))``; Pre-LN: ``x + Attn(N(x))``).
``skip_first=True`` leaves the first token out of every statistic (as a
token and as a query; it stays in the forward pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def geometry(x: np.ndarray, skip_first: bool = False) -> tuple[float, float, float]:
    """(mean pairwise cosine, mean norm, min pairwise cosine) of the rows of ``x``.

    >>> x = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    >>> [round(v, 6) for v in geometry(x)]
    [0.471405, 2.414214, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)[1 if skip_first else 0:]
    n = len(x)
    if n < 2:
        raise ValueError(f"a trace needs at least 2 tokens (skip_first={skip_first}); got {n}")
    r = np.linalg.norm(x, axis=1)
    u = x / r[:, None]
    s = u.sum(0)
    gram = u @ u.T
    np.fill_diagonal(gram, np.inf)
    return float((s @ s - n) / (n * (n - 1))), float(r.mean()), float(gram.min())


def entropy(p: np.ndarray, skip_first: bool = False) -> np.ndarray:
    """Mean over queries of each head's attention entropy; ``p`` is (heads, n, n).

    >>> p = np.array([[[1.0, 0.0], [0.5, 0.5]]])
    >>> entropy(p).round(6).tolist()
    [0.346574]
    """
    p = np.asarray(p, dtype=np.float64)[:, 1 if skip_first else 0:, :]
    h = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(-1)
    return h.mean(-1)


@dataclass
class LayerTrace:
    """Per-layer statistics of one text (arrays (L+1,)/(L,)/(L, H)) or a batch (leading axis)."""

    model: str
    scheme: str
    tokens: np.ndarray          #: number of tokens per text (before skip_first)
    cosine: np.ndarray
    norm: np.ndarray
    min_cosine: np.ndarray
    attn_cosine: np.ndarray
    attn_norm: np.ndarray
    attn_min_cosine: np.ndarray
    entropy: np.ndarray
    skip_first: bool = False
    texts: list = field(default_factory=list)

    @property
    def layers(self) -> np.ndarray:
        """0..L (0: the embedding)."""
        return np.arange(self.cosine.shape[-1])

    def band(self, name: str = "cosine", q=(0.1, 0.5, 0.9)) -> np.ndarray:
        """Quantiles ``q`` over the texts of a batched trace: (len(q), entries)."""
        a = np.asarray(getattr(self, name))
        if a.ndim < 2:
            raise ValueError("band needs a batched trace (trace(text=[...]))")
        return np.quantile(a, q, axis=0)

    def table(self, csv: bool = False) -> str:
        """The per-layer table (one text; a batch gives its median)."""
        cols = ["cosine", "min_cosine", "norm", "attn_cosine", "attn_norm", "entropy"]
        med = {c: np.median(getattr(self, c), axis=0) if np.ndim(self.tokens) else
               getattr(self, c) for c in cols}
        rows = []
        for lay in self.layers:
            a = lay - 1
            rows.append([lay, med["cosine"][lay], med["min_cosine"][lay], med["norm"][lay],
                         med["attn_cosine"][a] if lay else np.nan,
                         med["attn_norm"][a] if lay else np.nan,
                         med["entropy"][a].mean() if lay else np.nan])
        head = ["layer", *cols[:-1], "mean_entropy"]
        if csv:
            return "\n".join([",".join(head)] + [",".join(
                [str(r[0])] + ["" if np.isnan(v) else f"{v:.8g}" for v in r[1:]])
                for r in rows]) + "\n"
        title = (f"{self.model} ({self.scheme}), {np.median(self.tokens):g} tokens"
                 f"{', first token left out' if self.skip_first else ''}; residual stream, "
                 "no final norm")
        lines = [title, "".join(f"{h:>13}" for h in head)]
        for r in rows:
            lines.append(f"{r[0]:>13}" + "".join(
                f"{'-':>13}" if np.isnan(v) else f"{v:>13.5g}" for v in r[1:]))
        return "\n".join(lines) + "\n"


class Traced:
    """What both families share: tokens -> padded batch -> forward -> :class:`LayerTrace`.

    A subclass sets ``name``, ``scheme``, ``tokenizer``, ``context`` and
    ``forward(ids, lengths) -> (states, attn_states, probs)``: lists over
    layers of (B, n, d) arrays and (B, H, n, n) attention probabilities.
    """

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no padding, no truncation; errors past the context)."""
        if self.tokenizer is None:
            raise ValueError(f"{self.name}: no tokenizer; pass token_ids")
        return self.tokenizer.encode(text)

    def _check_ids(self, ids) -> np.ndarray:
        a = np.asarray(ids)
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError("token_ids must be a 1-d sequence of integers")
        if len(a) > self.context:
            raise ValueError(f"token_ids has {len(a)} tokens; this model's context holds at "
                             f"most {self.context}")
        if a.size and (a.min() < 0 or a.max() >= self.vocab):
            raise ValueError(f"token_ids must lie in [0, {self.vocab - 1}]")
        return a.astype(np.int64)

    def batch(self, seqs) -> tuple[np.ndarray, np.ndarray]:
        """Right-padded ids (B, n_max) and the lengths."""
        lengths = np.array([len(s) for s in seqs])
        ids = np.full((len(seqs), lengths.max()), self.pad, dtype=np.int64)
        for b, s in enumerate(seqs):
            ids[b, :len(s)] = s
        return ids, lengths

    def trace(self, text=None, token_ids=None, skip_first: bool = False) -> LayerTrace:
        """Per-layer geometry of ``text`` (a str or a list of them) or ``token_ids``."""
        if (text is None) == (token_ids is None):
            raise ValueError("give exactly one of text and token_ids")
        single = isinstance(text, str) or (token_ids is not None and np.ndim(token_ids[0]) == 0)
        if text is not None:
            texts = [text] if single else list(text)
            seqs = [self._check_ids(self.encode(t)) for t in texts]
        else:
            texts = []
            seqs = [self._check_ids(s) for s in ([token_ids] if single else token_ids)]
        ids, lengths = self.batch(seqs)
        states, attn_states, probs = self.forward(ids, lengths)
        per = []
        for b, n in enumerate(lengths):
            g = np.array([geometry(s[b, :n], skip_first) for s in states]).T
            ga = np.array([geometry(s[b, :n], skip_first) for s in attn_states]).T
            ent = np.array([entropy(p[b, :, :n, :n], skip_first) for p in probs])
            per.append((g, ga, ent))
        pick = (lambda a: a[0]) if single else np.array
        return LayerTrace(
            model=self.name, scheme=self.scheme, tokens=pick(lengths),
            cosine=pick([p[0][0] for p in per]), norm=pick([p[0][1] for p in per]),
            min_cosine=pick([p[0][2] for p in per]),
            attn_cosine=pick([p[1][0] for p in per]), attn_norm=pick([p[1][1] for p in per]),
            attn_min_cosine=pick([p[1][2] for p in per]), entropy=pick([p[2] for p in per]),
            skip_first=skip_first, texts=texts)

    def hidden_states(self, token_ids) -> np.ndarray:
        """The residual stream of one sequence, (L+1, n, d): embedding, then after each block."""
        ids, lengths = self.batch([self._check_ids(token_ids)])
        return np.stack([s[0] for s in self.forward(ids, lengths)[0]])
