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

import numpy as np

from .provenance import plain, write

#: kind name -> class, filled as result classes are defined
KINDS: dict = {}


class Archived:
    """Mixin of the result dataclasses (``DIMS``: field -> trailing dims)."""

    DIMS: dict = {}
    BATCH = "member"       #: the name of a single batch axis

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        KINDS[cls.__name__] = cls

    def __repr__(self) -> str:
        p = getattr(self, "provenance", None)
        what = ", ".join(f"{k}={v}" for k, v in (p.summary() if p else [])
                         if k in ("producer", "scheme", "n", "d", "beta"))
        t = getattr(self, "t", None)
        when = f", {np.size(t)} times" if t is not None else ""
        return f"<{type(self).__name__} {what or 'no provenance'}{when}>"

    def _parts(self):
        """(arrays: name -> (dims, ndarray), attrs: name -> value)."""
        arrays, attrs = {}, {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
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

    def _dims(self, name, a):
        trailing = self.DIMS.get(name, ())
        lead = a.ndim - len(trailing)
        if lead < 0:
            return tuple(f"{name}_{i}" for i in range(a.ndim))
        batch = (self.BATCH,) if lead == 1 else tuple(f"batch{i}" for i in range(lead))
        return batch + tuple(trailing)

    def save(self, path) -> None:
        """Write this result to a netCDF-3 file (``symdyn.load`` reads it back)."""
        if getattr(self, "provenance", None) is None:
            raise ValueError(f"save: this {type(self).__name__} has no provenance")
        write(path, type(self).__name__, self.provenance, *self._parts())

    def to_xarray(self):
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
    def from_parts(cls, provenance, arrays: dict, attrs: dict):
        """The result whose :meth:`save` wrote ``arrays`` and ``attrs``."""
        values = {"provenance": provenance}
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
