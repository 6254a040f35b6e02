"""Layer 3, trained: a model's per-layer token geometry (:class:`LayerTrace`).

For tokens :math:`x_1..x_n` of one text at one depth, with :math:`u_i = x_i/|x_i|`
(the columns of :data:`COLUMNS`):

* ``cosine``: the mean pairwise cosine
  :math:`\\frac{2}{n(n-1)}\\sum_{i<j} u_i\\cdot u_j = (|\\sum_i u_i|^2 - n)/(n(n-1))`,
  the paper's :math:`\\gamma` when all pairs are alike;
* ``min_cosine``: :math:`\\min_{i\\ne j} u_i\\cdot u_j`;
* ``norm``: the mean token norm :math:`\\frac1n\\sum_i |x_i|`;
* ``entropy[l-1, h]``: head h of block l, the mean over queries of
  :math:`-\\sum_j p_{ij}\\log p_{ij}` (nats; causal rows run over the keys
  a query sees); the table's ``mean_entropy`` is its mean over the heads.

Entry l = 0 is the embedding, l = 1..L the residual stream after block l
(no final norm: Hugging Face's Llama ``last_hidden_state`` is after it, ours
is not). ``attn_*`` (length L) are the same after block l's attention
sublayer alone (Post-LN: ``LN(x + Attn(x))``; Pre-LN: ``x + Attn(N(x))``).
``skip_first=True`` leaves the first token out of every statistic (as a
token and as a query; it stays in the forward pass): n counts the tokens
traced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..base.archive import Archived
from ..base.checks import is_real, shown
from ..base.provenance import Provenance

#: The per-layer table's columns (``LayerTrace.table``, ``symdyn trace``), defined.
COLUMNS = {
    "layer": "0 = the embedding, l = 1..L the residual stream after block l (no final norm)",
    "cosine": "gamma: the mean pairwise cosine of the n tokens traced, "
              "(|sum_i u_i|^2 - n)/(n(n-1)) with u_i = x_i/|x_i|",
    "min_cosine": "the least pairwise cosine, min_(i != j) u_i . u_j",
    "norm": "the mean token norm, (1/n) sum_i |x_i|",
    "attn_cosine": "cosine after block l's attention sublayer alone (Post-LN: LN(x + Attn(x)); "
                   "Pre-LN: x + Attn(N(x)))",
    "attn_norm": "norm after block l's attention sublayer alone",
    "mean_entropy": "block l's attention entropy -sum_j p_ij log p_ij (nats), the mean over "
                    "queries and heads",
}


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


@dataclass(repr=False, kw_only=True)
class LayerTrace(Archived):
    """Per-layer statistics of one text (arrays (L+1,)/(L,)/(L, H)) or a batch (leading axis).

    ``scheme``: the model family's registry name (``"post-ln"``, ``"pre-ln"``:
    ``sd.scheme(tr.scheme)``, ``fits.reduced_ode(tr.cosine, tr.scheme, n)``),
    ``scheme_display`` the model's own name of its normalization
    (``"Post-LN"``, ``"Pre-RMSNorm"``). The arrays are defined in
    :mod:`symdyn.trained.trace` (the table's columns: :data:`COLUMNS`).
    ``provenance`` (:mod:`symdyn.base.provenance`): the model's file, its
    options and ablations, ``skip_first``, the texts or token ids
    (``sd.rerun`` traces them again); ``str`` is :meth:`table`, under its header.
    """

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
    provenance: Provenance | None = None
    scheme_display: str | None = None

    DIMS = {"cosine": ("layer",), "norm": ("layer",), "min_cosine": ("layer",),
            "attn_cosine": ("block",), "attn_norm": ("block",), "attn_min_cosine": ("block",),
            "entropy": ("block", "head"), "tokens": ()}
    BATCH = "text"

    def __str__(self) -> str:
        return "LayerTrace (model.trace)\n" + self.table().rstrip("\n")

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

    @property
    def traced(self):
        """Tokens per text in the statistics (``tokens`` less the first with ``skip_first``)."""
        return np.asarray(self.tokens) - int(self.skip_first)

    def header(self) -> list[tuple[str, str]]:
        """(label, value) rows above the table: model, scheme, tokens traced,
        ablations, inputs, version (the provenance)."""
        p = self.provenance
        n, whole = np.median(self.traced), np.median(self.tokens)
        rows = [("model", self.model), ("d", p.d if p else None),
                ("scheme", f"{self.scheme} ({self.scheme_display or self.scheme})"),
                ("tokens", f"n = {n:g} traced" + (f" (the first of {whole:g} left out, "
                                                  "skip_first)" if self.skip_first else "")
                 + (f", the median over {len(self.tokens)} texts" if np.ndim(self.tokens)
                    else ""))]
        if p is not None:
            rows += [("weights", p.weights if p.weights != self.model else None)]
            rows += [(k, v) for k, v in p.summary() if k in ("ablations", "options", "version")]
        rows += [("rows", "one per layer; residual stream, no final norm")]
        return [(k, v) for k, v in rows if v is not None]

    def table(self, csv: bool = False) -> str:
        """The per-layer table (one text; a batch gives its median) under its
        :meth:`header` (CSV: ``# `` comment lines); columns: :data:`COLUMNS`."""
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
        head = list(COLUMNS)
        top = [f"# {k}: {v}" for k, v in self.header()]
        if csv:
            return "\n".join(top + [",".join(head)] + [",".join(
                [str(r[0])] + ["" if np.isnan(v) else f"{v:.8g}" for v in r[1:]])
                for r in rows]) + "\n"
        lines = [*top, "".join(f"{h:>13}" for h in head)]
        for r in rows:
            lines.append(f"{r[0]:>13}" + "".join(
                f"{'-':>13}" if np.isnan(v) else f"{v:>13.5g}" for v in r[1:]))
        return "\n".join(lines) + "\n"


def flag(value, name):
    """``value`` if it is a bool (numpy's too); ``"no"`` or 0 is not."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {shown(value)}")
    return bool(value)


def choice(*allowed):
    """A check that ``value`` is one of the strings ``allowed``."""
    def check(value, name):
        if not (isinstance(value, str) and value in allowed):
            raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, "
                             f"got {shown(value)}")
        return value
    return check


def positive(value, name):
    """None (the file's value) or a finite number > 0."""
    if value is not None and not (is_real(value) and np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be None (the checkpoint's value) or a finite number "
                         f"> 0, got {shown(value)}")
    return None if value is None else float(value)


def least_tokens(count: int, skip_first, what="token_ids", skip="skip_first"):
    """Refuse fewer than 2 tokens (3 when the first is left out): no pair, no cosine."""
    need = 3 if skip_first else 2
    if count < need:
        raise ValueError(f"{what} gives {count} token{'' if count == 1 else 's'}; a trace "
                         f"needs at least {need}{f' with {skip}' if skip_first else ''}")


def nonempty_text(text, what="text"):
    """Refuse a text that is not a str or holds only white space."""
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a str or a list of str, got {shown(text)}")
    if not text.strip():
        raise ValueError(f"{what} is empty: give the text whose tokens are traced")
    return text


class Traced:
    """What both families share: options, tokens -> padded batch -> layers -> :class:`LayerTrace`.

    A subclass sets ``name``, ``scheme`` (its family's registry name),
    ``scheme_display`` (its own name of the normalization), ``tokenizer``, ``context``, ``vocab``,
    ``pad``, ``L``, ``d``, ``heads``, :data:`OPTIONS` (name -> (default,
    check)) and ``steps(ids, lengths)``: a generator of ``(x, h, p)`` per
    layer, the (B, n, d) residual stream ``x``, the state after attention
    ``h`` and the (B, H, n, n) attention probabilities ``p`` (``h``, ``p``
    None at layer 0, the embedding). A trace reduces each layer as it comes:
    one layer's activations live at a time.
    """

    OPTIONS: dict = {}
    random_seed = None          #: set by :func:`symdyn.trained.fits.randomized`
    #: whether the first token is an attention sink with a massive activation,
    #: which statistics of the other tokens leave out (``skip_first``)
    first_token_sink = False

    @classmethod
    def options(cls, given: dict) -> dict:
        """Every option, checked (``ValueError`` naming it and its allowed values),
        defaults filled in."""
        unknown = sorted(set(given) - set(cls.OPTIONS))
        if unknown:
            raise ValueError(f"{unknown[0]}: not an option of a {cls.__name__} model; its "
                             f"options are {', '.join(cls.OPTIONS)}")
        return {k: check(given.get(k, default), k)
                for k, (default, check) in cls.OPTIONS.items()}

    def variant(self, **options):
        """The same weights (shared, not copied) with other options (``mlp=False``, ...);
        a randomized model's variant keeps its random weights."""
        m = type(self)(self.source_meta, self.tensors, self.tokenizer, self.name,
                       **{**self.given, **options})
        if self.random_seed is not None:
            from .fits import randomized
            m = randomized(m, self.random_seed)
        m.source = getattr(self, "source", None)
        return m

    def ablations(self) -> list[str]:
        """What differs from the checkpoint, in words."""
        out = [self.describe(k, v) for k, v in self.given.items()
               if not _same(v, self.OPTIONS[k][0])]
        return out + ([f"random weights (seed {self.random_seed})"]
                      if self.random_seed is not None else [])

    @staticmethod
    def describe(key, value) -> str:
        return {("mlp", False): "no MLP", ("norm", "projection"): "projection norm"}.get(
            (key, value), f"{key}={value!r}")

    def __repr__(self):
        kv = getattr(self, "kv", self.heads)
        return (f"{type(self).__name__}({self.name!r}, {self.scheme_display}, {self.L} layers, "
                f"d={self.d}, {self.heads} heads{f' ({kv} key/value)' if kv != self.heads else ''}"
                f", vocabulary {self.vocab}, context {self.context}; ablations: "
                f"{', '.join(self.ablations()) or 'none'})")

    def encode(self, text: str, what: str = "text") -> list[int]:
        """Token ids of ``text`` (no padding, no truncation; errors past the context)."""
        if self.tokenizer is None:
            raise ValueError(f"{what}: {self.name} has no tokenizer to encode it (its folder "
                             "has no tokenizer.json)")
        return self.tokenizer.encode(text, what)

    def _check_ids(self, ids) -> np.ndarray:
        a = np.asarray(ids)
        if a.ndim == 1 and a.size == 0:
            raise ValueError("token_ids is empty; a trace needs at least 2 tokens")
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError("token_ids must be a 1-d sequence of integers (or a list of them)")
        if len(a) > self.context:
            raise ValueError(f"token_ids has {len(a)} tokens; this model's context holds at "
                             f"most {self.context}")
        if a.min() < 0 or a.max() >= self.vocab:
            raise ValueError(f"token_ids must lie in [0, {self.vocab - 1}]")
        return a.astype(np.int64)

    def batch(self, seqs) -> tuple[np.ndarray, np.ndarray]:
        """Right-padded ids (B, n_max) and the lengths."""
        lengths = np.array([len(s) for s in seqs])
        ids = np.full((len(seqs), lengths.max()), self.pad, dtype=np.int64)
        for b, s in enumerate(seqs):
            ids[b, :len(s)] = s
        return ids, lengths

    def forward(self, ids, lengths):
        """Lists over layers: states (embedding + after each block), states after
        attention, attention probabilities (every layer kept: tests, hidden states)."""
        states, attn_states, probs = [], [], []
        for x, h, p in self.steps(ids, lengths):
            states.append(x)
            if h is not None:
                attn_states.append(h)
                probs.append(p)
        return states, attn_states, probs

    def _sequences(self, text, token_ids, skip_first):
        """(texts, checked id sequences, single) of a trace's input."""
        if (text is None) == (token_ids is None):
            raise ValueError("give exactly one of text and token_ids")
        what = "text" if text is not None else "token_ids"
        given = text if text is not None else token_ids
        if not isinstance(given, str) and (not hasattr(given, "__len__") or len(given) == 0):
            kind = "str" if text is not None else "sequence of token ids"
            raise ValueError(f"{what} must be a {kind} or a non-empty list of them, got "
                             f"{shown(given)}")
        if text is not None:
            single = isinstance(text, str)
            texts = [text] if single else list(text)
            seqs = [self._check_ids(self.encode(nonempty_text(t))) for t in texts]
        else:
            single = np.ndim(token_ids[0]) == 0
            texts = []
            seqs = [self._check_ids(s) for s in ([token_ids] if single else token_ids)]
        for t, s in zip(texts or [None] * len(seqs), seqs, strict=True):
            least_tokens(len(s), skip_first, "token_ids" if t is None else f"text {shown(t)}")
        return texts, seqs, single

    def trace(self, text=None, token_ids=None, skip_first: bool = False) -> LayerTrace:
        """Per-layer geometry of ``text`` (a str or a list of them) or ``token_ids``
        (a sequence of ids or a list of them)."""
        skip_first = flag(skip_first, "skip_first")
        texts, seqs, single = self._sequences(text, token_ids, skip_first)
        ids, lengths = self.batch(seqs)
        g, ga, ent = ([[] for _ in lengths] for _ in range(3))
        for x, h, p in self.steps(ids, lengths):
            for b, n in enumerate(lengths):
                g[b].append(geometry(x[b, :n], skip_first))
                if h is not None:
                    ga[b].append(geometry(h[b, :n], skip_first))
                    ent[b].append(entropy(p[b, :, :n, :n], skip_first))
        g, ga = [np.array(v).transpose(0, 2, 1) for v in (g, ga)]      # (B, 3, layers)
        pick = (lambda a: np.asarray(a)[0]) if single else np.asarray
        return LayerTrace(
            model=self.name, scheme=self.scheme, scheme_display=self.scheme_display,
            tokens=pick(lengths),
            cosine=pick(g[:, 0]), norm=pick(g[:, 1]), min_cosine=pick(g[:, 2]),
            attn_cosine=pick(ga[:, 0]), attn_norm=pick(ga[:, 1]),
            attn_min_cosine=pick(ga[:, 2]), entropy=pick(np.array(ent)),
            skip_first=skip_first, texts=texts,
            provenance=self._provenance(skip_first, texts, seqs, lengths, single))

    def _provenance(self, skip_first, texts, seqs, lengths, single) -> Provenance:
        """What made a trace: the model's file, options, ablations and inputs."""
        options = {**self.given, "skip_first": skip_first, "random_seed": self.random_seed}
        if not texts:
            options["token_ids"] = [s.tolist() for s in seqs][0 if single else slice(None)]
        else:
            options["text"] = texts[0] if single else texts
        return Provenance.of("trace", None, options, scheme=self.scheme,
                             n=int(lengths[0] - skip_first) if single else lengths - skip_first,
                             d=self.d,
                             weights=getattr(self, "source", None) or self.name,
                             ablations=self.ablations())

    def hidden_states(self, token_ids) -> np.ndarray:
        """The residual stream of one sequence, (L+1, n, d): embedding, then after each block."""
        ids, lengths = self.batch([self._check_ids(token_ids)])
        return np.stack([x[0] for x, _, _ in self.steps(ids, lengths)])


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))
