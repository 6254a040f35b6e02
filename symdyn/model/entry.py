"""The declaration of a built-in scheme: an :class:`Entry`, its parameters and style.

A module of ``symdyn/model/schemes/`` defines ``ENTRY = Entry(...)``; the
registry (:mod:`symdyn.model.registry`) finds it. This module holds only the
declarations; :mod:`symdyn.model.scheme` holds what they build.

Layer 1, model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Style:
    """How a scheme is drawn: a colour, a matplotlib dash, a legend label and
    a marker (None: the figure picks a spare one)."""

    color: str
    dash: str | tuple
    label: str
    marker: str | None = None


@dataclass(frozen=True)
class Parameter:
    """A parameter of a built-in scheme: ``sd.scheme(name, **{name: value})``.

    ``kind`` is ``"number"`` (checked to lie in ``[low, high]``, and to be
    an integer with ``integer``), ``"law"`` (text in ``t`` for the entry's
    parser) or ``"free"`` (a dict of free parameters with defaults, see
    :func:`symdyn.model.parameters.free_parameters`). A number with a
    ``symbol`` (DeepNorm's ``N``) may also be that symbol, as text
    (``layers="N"``): it then stays a sympy symbol in every derivation, a free
    parameter with the default as its value in runs; legends and captions
    name the number by ``symbol``.
    """

    name: str
    default: object
    kind: str = "number"
    low: float = -np.inf
    high: float = np.inf
    text: str = ""
    symbol: str | None = None
    integer: bool = False


@dataclass(frozen=True)
class Entry:
    """A built-in scheme, declared in one module of ``symdyn/model/schemes/``.

    ``build(**parameters)`` returns the :class:`Scheme` (its speed, radial and
    temperature laws and its :class:`LayerRule`) for checked parameter values;
    ``parameters`` declares them with defaults and ranges; ``order`` is the
    place in :func:`symdyn.schemes`; ``style`` and ``citation`` travel with
    every scheme built from the entry; ``schedules`` names example laws of
    its law parameter (``{label: law}``, nGPT's alpha schedules of the
    paper's Figure 3), empty for a scheme without one.
    """

    name: str
    build: Callable[..., object] = field(repr=False)
    style: Style
    citation: str
    order: int
    parameters: tuple = ()
    schedules: dict = field(default_factory=dict, compare=False, repr=False)
