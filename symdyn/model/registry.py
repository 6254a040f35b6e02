"""The catalog of schemes: the built-ins (found in :mod:`symdyn.model.schemes`) and custom ones.

A built-in scheme is one module of ``symdyn/model/schemes/`` defining an
:class:`~symdyn.model.scheme.Entry`; this module finds them, checks the
parameters a user gives against the entry's declaration (names, defaults,
ranges), builds the :class:`~symdyn.model.scheme.Scheme` and attaches the
entry's style and citation. It branches on no scheme's name.

Layer 1, model.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache

import sympy as sp

from ..base.checks import shown
from . import schemes as _entries
from .entry import Entry, Parameter
from .expressions import parse
from .guards import ExprLike, number
from .law_checks import check_positive, check_temperature
from .parameters import (
    at_defaults,
    check_used,
    entry_number,
    free_parameters,
    number_in_range,
    symbols_of,
)
from .scheme import GENERIC, Scheme
from .symbols import SCHEME_SYMBOLS, r, t

#: A scheme argument: a built-in name or a Scheme.
SchemeLike = str | Scheme


def _discover() -> dict[str, Entry]:
    found = []
    for info in pkgutil.iter_modules(_entries.__path__):
        entry = getattr(importlib.import_module(f"{_entries.__name__}.{info.name}"),
                        "ENTRY", None)
        if isinstance(entry, Entry):
            found.append(entry)
    return {e.name: e for e in sorted(found, key=lambda e: (e.order, e.name))}


#: name -> Entry, in the order of :func:`schemes`
BUILTINS: dict[str, Entry] = _discover()


def _key(name: str) -> str:
    """A name as spelled in a legend or a paper, folded: ``"Post-LN"``,
    ``"post_ln"`` and ``"post ln"`` are ``"post-ln"``."""
    return "-".join(name.strip().lower().replace("_", " ").split())


def entry(name: str) -> Entry:
    """The declaration of a built-in scheme (its parameters, style, citation).

    Names are folded (:func:`_key`): the legends' spellings (``"Post-LN"``,
    ``"nGPT"``) are accepted; an unknown name is refused with the closest ones.

    >>> entry("Post-LN").name
    'post-ln'
    """
    key = _key(name) if isinstance(name, str) else None
    if key not in BUILTINS:
        close = difflib.get_close_matches(key or "", list(BUILTINS), n=2, cutoff=0.6)
        hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
        raise ValueError(f"scheme: unknown scheme {shown(name)}; {hint}choose one of "
                         f"{', '.join(BUILTINS)} (or sd.custom_scheme)")
    return BUILTINS[key]


def schemes() -> list[str]:
    """The names of the built-in schemes.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.schemes()[:6]
    ['post-ln', 'pre-ln', 'mix-ln', 'peri-ln', 'ngpt', 'sqrt-scaling']
    """
    return list(BUILTINS)


def scheme(name: SchemeLike, **params) -> Scheme:
    """A built-in scheme by name, with its parameters.

    Parameters
    ----------
    name : str or Scheme
        One of :func:`schemes`; a :class:`Scheme` is returned unchanged.
    **params
        The scheme's parameters, as its entry declares them
        (``sd.model.registry.entry(name).parameters``: names, defaults and
        ranges), e.g. nGPT's ``alpha`` (expression in ``t``, default ``"1"``)
        with ``params``, a dict of free parameters of ``alpha`` with their
        defaults (see :func:`custom_scheme`); Mix-LN's ``t_switch``;
        DeepNorm's ``layers`` (an integer, or ``"N"``: a symbol in the
        derivations and a free parameter ``N`` of runs, default 12).

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.scheme("ngpt", alpha="1 + t").speed
    A_norm/(t + 1)
    >>> sd.scheme("ngpt", alpha="a0 + a1*t", params={"a0": 1, "a1": 0.5}).speed
    A_norm/(a0 + a1*t)
    >>> sd.scheme("mix-ln", t_switch="t_switch").speed          # a symbol in the laws
    Piecewise((1, t < t_switch), (r, True))
    """
    if isinstance(name, Scheme):
        if params:
            raise ValueError("params: cannot re-parametrize a Scheme object")
        return name
    e = entry(name)
    try:        # the same entry and parameters build the same (immutable) scheme
        key = tuple(sorted((k, type(v), v) for k, v in params.items()))
        hash(key)
    except TypeError:                   # a dict of free parameters: built anew
        return _build(e, params)
    return _built(e, key)


def from_record(name: str, params, given: SchemeLike | None = None, laws=()):
    """The scheme a result's provenance records (``name``, its ``(name,
    value)`` ``params``) rebuilt: ``(scheme, free values)``, the registry's
    parameters bound (through :func:`scheme`'s cache) and the free ones
    returned for the run. ``laws`` (:func:`laws_of`): a scheme of one's own,
    rebuilt by :func:`custom_scheme` from its recorded text (the one safe
    parser reads it). ``given``: the scheme itself, for what neither can
    rebuild; the baseline ``"none"`` stays a name."""
    if given is not None:
        return given, {}
    if unrecorded(laws):
        raise ValueError(f"scheme: the run used {name!r}, a scheme of one's own that no "
                         f"text rebuilds (a Piecewise law, a layer rule of its own): its "
                         f"laws were not recorded; pass scheme=")
    if laws:
        made = custom_scheme(name, **_law_arguments(laws))
        return made, {k: v for k, v in params if k in made.defaults}
    if name == "none":
        return "none", {}
    if name not in BUILTINS:
        raise ValueError(f"scheme: {name!r} is not a built-in scheme and its laws were "
                         f"not recorded; pass scheme=")
    free = set(scheme(name).defaults)
    made = {k: v for k, v in params if k not in free}
    return scheme(name, **made), {k: v for k, v in params if k in free}


#: What a record's ``laws`` may hold: :func:`custom_scheme`'s arguments.
LAW_ARGUMENTS = ("speed", "radial", "temperature", "params")


def _law_arguments(laws) -> dict:
    """``laws`` (read from a file: data) as :func:`custom_scheme`'s keywords,
    or a ValueError naming what is wrong with them."""
    try:
        given = dict(laws)
    except (TypeError, ValueError):
        raise ValueError(f"laws: expected (name, value) pairs, got {shown(laws)}") from None
    unknown = sorted(map(str, set(given) - set(LAW_ARGUMENTS)))
    if unknown or "speed" not in given:
        raise ValueError(f"laws: expected {', '.join(LAW_ARGUMENTS)} (speed required), "
                         f"got {', '.join(map(str, given)) or 'nothing'}")
    if given.get("params") is not None and not isinstance(given["params"], Mapping):
        raise ValueError(f"laws: params must map names to numbers, got "
                         f"{shown(given['params'])}")
    return given


#: :func:`laws_of` of a scheme of one's own that no text rebuilds: a rerun of
#: its results must be given the scheme (``scheme=``), even under a built-in name.
UNRECORDED = (("speed", None),)


def unrecorded(laws) -> bool:
    """Whether recorded ``laws`` say :data:`UNRECORDED` (as read from a file too)."""
    try:
        return bool(laws) and dict(laws).get("speed", "") is None
    except (TypeError, ValueError):
        return False


def laws_of(s) -> tuple:
    """:func:`_laws_of`, once per scheme (schemes are immutable; reading the
    laws back costs a parse that every run of the scheme would repeat)."""
    return _laws_of(s) if isinstance(s, Scheme) else ()


@lru_cache(maxsize=64)
def _laws_of(s: Scheme) -> tuple:
    """What a provenance keeps of a scheme its name and parameters do not
    rebuild (one of :func:`custom_scheme`): ``(("speed", text), ("radial",
    text or None), ("temperature", text or None), ("params", defaults))``,
    the arguments of :func:`custom_scheme` again; ``()`` for the registry's
    own schemes and the baseline; :data:`UNRECORDED` for a scheme the text
    does not rebuild (a layer rule of its own, a switch to the sphere, a law
    the parser does not read back: a rerun needs ``scheme=``, whatever its
    name)."""
    if s.name == "none" and s.layer.name == "none":        # the baseline
        return ()
    if s.name in BUILTINS:
        try:
            if from_record(s.name, s.params)[0] == s:
                return ()
        except ValueError:
            pass
    if s.layer is not GENERIC:
        return UNRECORDED
    sphere = s.sphere_until == sp.oo and s.radial == 0
    laws = (("speed", str(s.speed)), ("radial", None if sphere else str(s.radial)),
            ("temperature", None if s.temperature == 1 else str(s.temperature)),
            ("params", dict(s.defaults)))
    try:                # kept only if the text rebuilds this very scheme
        return laws if custom_scheme(s.name, **dict(laws)) == s else UNRECORDED
    except ValueError:  # a law the parser does not read back (a Piecewise, ...)
        return UNRECORDED


@lru_cache(maxsize=256)
def _built(e: Entry, key) -> Scheme:
    return _build(e, {k: v for k, _, v in key})


def _build(e: Entry, params) -> Scheme:
    values, free = _checked(e, params)
    built = e.build(**values)
    return replace(built, style=e.style, citation=e.citation, free=built.free + free)


def _checked(e: Entry, given: dict) -> tuple[dict, tuple]:
    """The entry's parameters: ``given`` checked against their declaration,
    defaults filled; and the free parameters of those given as their symbol."""
    declared = {p.name: p for p in e.parameters}
    if "params" in given and "params" not in declared:
        if given["params"]:
            raise ValueError(f"params: scheme {shown(e.name)} has no expression to hold free "
                             f"parameters (nGPT's alpha or sd.custom_scheme do)")
        given = {k: v for k, v in given.items() if k != "params"}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        takes = ", ".join(declared) or "none"
        raise ValueError(f"params: scheme {shown(e.name)} takes no parameter(s) {unknown} "
                         f"(its parameters: {takes})")
    out, free = {}, ()
    for p in e.parameters:
        v = given.get(p.name, p.default)
        if p.kind == "number":
            v, symbolic = entry_number(p, v)
            free += symbolic
        out[p.name] = v
    return out, free


def parameter_values(s, every: bool = False) -> list[tuple[Parameter, sp.Expr]]:
    """A built-in scheme's number parameters (its entry's) with their values
    in ``s``: those away from the entry's defaults, or ``every`` one; none
    for a custom scheme. A parameter left as its symbol (``layers="N"``) has
    the symbol as its value.

    >>> [(p.symbol, v) for p, v in parameter_values(scheme("mix-ln", t_switch=5))]
    [('t_switch', 5)]
    """
    if not isinstance(s, Scheme) or s.name not in BUILTINS:
        return []
    values = dict(s.params)
    return [(p, values[p.name]) for p in BUILTINS[s.name].parameters
            if p.kind == "number" and p.name in values
            and (every or values[p.name] != number_in_range(p.default, p.name, p.low, p.high))]


def parameter_text(p: Parameter, value, fmt: str = "text") -> str:
    """``N = 6`` (``fmt="text"``) or ``N = 6`` in LaTeX math, no ``$`` (``"latex"``):
    a parameter by its symbol (its name if it declares none); a symbolic
    value is the symbol alone."""
    name = p.symbol or p.name
    head, _, sub = name.partition("_")
    tex = f"{head}_{{\\mathrm{{{sub}}}}}" if len(sub) > 1 else sp.latex(sp.Symbol(name))
    if isinstance(value, sp.Basic) and not value.is_number:
        return tex if fmt == "latex" else name
    v = value if isinstance(value, sp.Basic) else number(value, p.name)
    shown_ = str(int(v)) if v.is_Integer else f"{float(v):g}"
    return f"{tex} = {shown_}" if fmt == "latex" else f"{name} = {shown_}"


def custom_scheme(name: str, speed: ExprLike, radial: ExprLike | None = None,
                  params: Mapping | None = None, temperature: ExprLike | None = None) -> Scheme:
    """A scheme of your own: a speed :math:`s` and optionally a radial rate.

    Parameters
    ----------
    name : str
        A label for reports.
    speed : str or sympy.Expr
        :math:`s_k` in ``t, r, a, A_norm, n, beta``; must be positive.
    radial : str or sympy.Expr, optional
        :math:`\\dot r_k` in the same symbols. ``None`` keeps the tokens on the
        unit sphere (``r = 1``).
    params : dict, optional
        Free parameters of the laws with their default values, e.g.
        ``{"c": 0.5}``: real symbols in every derivation, numbers (scalars
        or batch arrays, in ``params={...}``) in ``solve`` and ``simulate``.
        A name must be an identifier that is not a symbol, function or
        argument name of symdyn, nor a numpy name. The speed must be
        positive at the defaults.
    temperature : str or sympy.Expr, optional
        :math:`\\tau(t) > 0` in ``t`` (and free parameters): the attention
        runs at inverse temperature :math:`\\beta\\tau(t)`; default ``1``.

    Examples
    --------
    >>> import symdyn as sd
    >>> s = sd.custom_scheme("half-peri", speed="sqrt(r*A_norm)", radial="a")
    >>> s.speed
    sqrt(A_norm)*sqrt(r)
    >>> fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})
    >>> fam.speed, fam.defaults
    (A_norm/(c*t + 1), {'c': 0.5})
    >>> sd.custom_scheme("cooling", speed="1", temperature="1/(1 + t)").temperature
    1/(t + 1)
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, got {shown(name)}")
    free = free_parameters(params)
    allowed = {**SCHEME_SYMBOLS, **symbols_of(free)}
    s = parse(speed, "speed", allowed)
    if radial is None:
        s = s.subs(r, 1)
    rho = sp.Integer(0) if radial is None else parse(radial, "radial", allowed)
    tau = sp.Integer(1) if temperature is None else \
        parse(temperature, "temperature", {"t": t, **symbols_of(free)})
    check_used(free, {"speed": s, "radial": rho, "temperature": tau})
    check_positive(at_defaults(s, free), "speed")
    check_temperature(at_defaults(tau, free), "temperature")
    return Scheme(name, s, rho, sp.oo if radial is None else sp.Integer(0), free=free,
                  temperature=tau)
