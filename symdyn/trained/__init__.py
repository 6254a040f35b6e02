"""Layer 3, trained: trained transformers against the theory. Loads BERT-style
encoders (HF folder: ``config.json`` + ``model.safetensors``) and Llama-style
decoders (GGUF, dequantized once into a memory-mapped cache) into numpy
forward passes that read a layer's weights when it runs, and traces each
layer's token geometry (:class:`~symdyn.trained.trace.LayerTrace`);
:mod:`~symdyn.trained.fits` (``sd.trained.fits``) fits a trace's laws and its
scheme's reduced ODE. Imports
its own modules, lower layers and numpy/scipy; the optional packages (``safetensors``,
``gguf``, ``tokenizers``: ``pip install 'symdyn[trained]'``) are imported on
use, so importing this package never fails without them.

>>> import symdyn.trained as tr
>>> sorted(tr.KNOWN)
['SmolLM2-135M-Instruct', 'all-MiniLM-L6-v2']

Layer 3, trained.
"""

from __future__ import annotations

from . import fits
from .corpus import SENTENCES
from .files import EXTRA, KNOWN, locate
from .trace import LayerTrace

__all__ = ["EXTRA", "KNOWN", "LayerTrace", "SENTENCES", "fits", "load", "trace_table"]


def load(name_or_path, **options):
    """A model by name (``"all-MiniLM-L6-v2"``, ``"SmolLM2-135M-Instruct"``) or path.

    A folder loads as a BERT encoder (:class:`~symdyn.trained.bert.Bert`), a
    ``.gguf`` file as a Llama decoder (:class:`~symdyn.trained.llama.Llama`).
    Options (checked before anything is read: a ``ValueError`` names the
    option and its allowed values; booleans must be ``True`` or ``False``):

    * both: ``mlp=True`` (False: the blocks without their MLP), ``norm`` (the
      model's own, ``"layer"`` for BERT and ``"rms"`` for Llama, or
      ``"projection"``: :math:`x \\sqrt{d} / \\lVert x \\rVert`);
    * BERT: ``eps=None`` (the LayerNorm epsilon; None: the config's);
    * Llama: ``permuted=True`` (the file's Q/K rows are in llama.cpp's order),
      ``theta=None`` (the RoPE base; None: the file's), ``kv_map=None`` (the
      key/value head of each query head; None: j // (heads / kv heads)).

    The weights are memory-mapped, not copied; ``model.variant(**options)``
    shares them.

    >>> load("all-MiniLM-L6-v2", norm="rms")  # doctest: +SKIP
    Traceback (most recent call last):
    ValueError: norm must be one of 'layer', 'projection', got 'rms'
    """
    kind, path = locate(name_or_path)
    name = str(name_or_path) if str(name_or_path) in KNOWN else None
    if kind == "bert":
        from .bert import Bert
        Bert.options(options)
        return Bert.from_folder(path, name=name, **options)
    from .llama import Llama
    Llama.options(options)
    return Llama.from_gguf(path, name=name, **options)


def trace_table(model, text, csv: bool = False, skip_first: bool = False) -> str:
    """The per-layer table of ``text`` for ``symdyn trace MODEL --text ... [--csv]``."""
    m = load(model) if isinstance(model, str) else model
    return m.trace(text=text, skip_first=skip_first).table(csv=csv)
