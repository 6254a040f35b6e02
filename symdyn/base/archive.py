"""What every result class shares: a short ``repr``, ``to_xarray`` and ``save``.

A result is a frozen dataclass with a ``provenance`` field
(:class:`~symdyn.base.provenance.Provenance`) and a class attribute ``DIMS``:
each array field's trailing dimension names (``("time",)``, ``("token",
"time")``); the leading axes are the batch's (``member``, or ``batch0``,
``batch1``, ... for several). Array fields are variables, dicts of arrays are
variables ``field.key``, numbers and strings are attributes, ``None`` is left
out. :meth:`Archived.save` writes them (:func:`~symdyn.base.provenance.write`);
``symdyn.load`` reads them back into the same class.

Layer 0, base.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import numpy as np

from .checks import StrPath, shown
from .provenance import Provenance, plain, write

if TYPE_CHECKING:
    import xarray

#: name -> (dimension names, array): the variables a result file holds
Variables = dict[str, tuple[tuple[str, ...], np.ndarray]]

R = TypeVar("R", bound="Archived")


class Loadable(Protocol):
    """A class ``symdyn.load`` reads back: it checks a file's arrays
    (name -> ndarray), their dimension names and its attributes (JSON
    values), then builds itself from them."""

    @classmethod
    def check_parts(cls, arrays: dict[str, np.ndarray], dims: dict[str, tuple[str, ...]],
                    attrs: dict[str, Any]) -> None: ...

    @classmethod
    def from_parts(cls, provenance: Provenance, arrays: dict[str, np.ndarray],
                   attrs: dict[str, Any]) -> object: ...


#: kind name -> class, filled as result classes are defined
KINDS: dict[str, type[Loadable]] = {}


class Archived:
    """Mixin of the result dataclasses (``DIMS``: field -> trailing dims).

    A subclass is a dataclass with a ``provenance`` field; both are declared
    here for the type checker only (no class attribute is set)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    provenance: Provenance | None

    DIMS: ClassVar[dict[str, tuple[str, ...]]] = {}
    BATCH: ClassVar[str] = "member"       #: the name of a single batch axis

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        KINDS[cls.__name__] = cls

    def __repr__(self) -> str:
        p = getattr(self, "provenance", None)
        what = ", ".join(f"{k}={v}" for k, v in (p.summary() if p else [])
                         if k in ("producer", "scheme", "n", "d", "beta"))
        t = getattr(self, "t", None)
        when = f", {np.size(t)} times" if t is not None else ""
        return f"<{type(self).__name__} {what or 'no provenance'}{when}>"

    def _parts(self) -> tuple[Variables, dict[str, Any]]:
        """(arrays: name -> (dims, ndarray), attrs: name -> value)."""
        arrays: Variables = {}
        attrs: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name, None)     # None: absent (not recorded)
            if f.name == "provenance" or v is None:
                continue
            if isinstance(v, dict) and all(isinstance(a, np.ndarray) for a in v.values()):
                for key, a in v.items():
                    arrays[f"{f.name}.{key}"] = (self._dims(f.name, a), a)
                attrs[f"{f.name}:keys"] = list(v)
            elif isinstance(v, np.ndarray):
                arrays[f.name] = (self._dims(f.name, v), v)
            else:
                attrs[f.name] = plain(v)
        return arrays, attrs

    def _dims(self: Archived | type[Archived], name: str, a: np.ndarray) -> tuple[str, ...]:
        """The dimension names of field ``name`` holding ``a`` (on an instance
        or, checking a file, on the class)."""
        trailing = self.DIMS.get(name, ())
        lead = a.ndim - len(trailing)
        if lead < 0:
            return tuple(f"{name}_{i}" for i in range(a.ndim))
        batch = (self.BATCH,) if lead == 1 else tuple(f"batch{i}" for i in range(lead))
        return batch + tuple(trailing)

    def save(self, path: StrPath) -> None:
        """Write this result to a netCDF-3 file (``symdyn.load`` reads it back)."""
        p: Provenance | None = getattr(self, "provenance", None)
        if p is None:
            raise ValueError(f"save: this {type(self).__name__} has no provenance")
        write(path, type(self).__name__, p, *self._parts())

    def to_xarray(self) -> xarray.Dataset:
        """An ``xarray.Dataset``: the arrays with named dimensions, the time as
        a coordinate, the provenance (JSON and its fields) and scalars in
        ``attrs`` (needs the ``symdyn[xarray]`` extra)."""
        try:
            import xarray as xr
        except ImportError:
            raise ImportError("to_xarray needs xarray: pip install 'symdyn[xarray]'") from None
        arrays, attrs = self._parts()
        data = dict(arrays)
        coords = {"time": data.pop("t")[1]} if arrays.get("t", ((),))[0] == ("time",) else {}
        p = self.provenance
        meta = {k: (v if isinstance(v, (int, float, str)) else str(v))
                for k, v in attrs.items()}
        meta["provenance"] = p.to_json() if p else ""
        meta.update({f"provenance.{k}": v for k, v in (p.summary() if p else [])})
        return xr.Dataset(data, coords=coords, attrs=meta)

    @classmethod
    def check_parts(cls, arrays: dict[str, np.ndarray], dims: dict[str, tuple[str, ...]],
                    attrs: dict[str, Any]) -> None:
        """Check what a file holds against this class's schema (its fields'
        annotations and :attr:`DIMS`): every field without a default present,
        an array field as a variable of real or complex numbers with the
        dimension names :meth:`save` gives it, a number, a text or a flag as an
        attribute of that type, nothing the class does not have. A ValueError
        says what is wrong."""
        known_arrays: set[str] = set()
        known_attrs: set[str] = set()
        for f in dataclasses.fields(cls):
            if f.name == "provenance":
                continue
            kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            base = kind.split("|")[0].strip()
            optional = "None" in kind or f.default is not dataclasses.MISSING \
                or f.default_factory is not dataclasses.MISSING
            if base in ("np.ndarray", "ndarray"):
                present = f.name in arrays
                if present:
                    _check_array(cls, f.name, arrays[f.name], dims.get(f.name))
                known_arrays.add(f.name)
            elif base == "dict":
                keys = attrs.get(f"{f.name}:keys")
                present = keys is not None
                if present:
                    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                        raise ValueError(f"{f.name}:keys must be a list of names, "
                                         f"got {shown(keys)}")
                    for k in keys:
                        if f"{f.name}.{k}" not in arrays:
                            raise ValueError(f"variable {f.name}.{k} is missing")
                        _check_array(cls, f.name, arrays[f"{f.name}.{k}"],
                                     dims.get(f"{f.name}.{k}"), f"{f.name}.{k}")
                        known_arrays.add(f"{f.name}.{k}")
                known_attrs.add(f"{f.name}:keys")
            else:
                present = f.name in attrs
                if present:
                    _check_value(f.name, base, attrs[f.name])
                known_attrs.add(f.name)
            if not present and not optional:
                raise ValueError(f"{f.name} is missing (a {cls.__name__} needs it)")
        extra = sorted(set(arrays) - known_arrays) + sorted(set(attrs) - known_attrs)
        if extra:
            raise ValueError(f"{', '.join(map(shown, extra[:5]))}: not a field of "
                             f"{cls.__name__}")

    @classmethod
    def from_parts(cls: type[R], provenance: Provenance, arrays: dict[str, np.ndarray],
                   attrs: dict[str, Any]) -> R:
        """The result whose :meth:`save` wrote ``arrays`` and ``attrs``."""
        values: dict[str, Any] = {"provenance": provenance}
        for f in dataclasses.fields(cls):
            if f.name in arrays:
                values[f.name] = arrays[f.name]
            elif f"{f.name}:keys" in attrs:
                values[f.name] = {k: arrays[f"{f.name}.{k}"] for k in attrs[f"{f.name}:keys"]}
            elif f.name in attrs:
                values[f.name] = attrs[f.name]
            elif f.name != "provenance" and f.default is dataclasses.MISSING \
                    and f.default_factory is dataclasses.MISSING:
                values[f.name] = None
        return cls(**values)


#: a scalar field's annotation -> the JSON types its attribute may have
_SCALARS: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (int, float), "str": (str,), "bool": (bool,), "tuple": (list,),
    "list": (list,)}


def _check_value(name: str, base: str, value: object) -> None:
    types = _SCALARS.get(base)
    if types is None:
        return                          # an annotation without a fixed JSON type
    if value is None or not isinstance(value, types) or (
            isinstance(value, bool) and bool not in types):
        raise ValueError(f"{name} must be {base}, got {shown(value)}")


def _check_array(cls: type[Archived], name: str, a: object, dims: tuple[str, ...] | None,
                 variable: str | None = None) -> None:
    variable = variable or name
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "biufc":
        raise ValueError(f"variable {variable} must hold numbers, got {shown(a)}")
    expected = cls._dims(cls, name, a)
    if dims is not None and tuple(dims) != tuple(expected):
        raise ValueError(f"variable {variable} has dimensions {tuple(dims)}, expected "
                         f"{tuple(expected)}")
