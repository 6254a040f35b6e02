"""The table of a sweep that knows what made it: :class:`SweepTable`.

``sd.sweep`` returns a :class:`SweepTable`: a ``pandas.DataFrame`` (every
pandas operation on it returns a plain ``DataFrame``, ``attrs`` included)
with :attr:`~SweepTable.provenance` (the grid, seeds, times, batch and
tolerances the sweep ran with; the grid's schemes by registry name and
parameters), :meth:`~SweepTable.save` (a netCDF-3 file, one variable per
column along ``row``; text columns as integer codes into their sorted
levels), ``sd.load`` back, and :meth:`~SweepTable.rerun` (``sd.rerun``):
the same sweep again, whose columns equal the saved ones bit for bit (a
sweep is deterministic: its starts are drawn from the recorded seeds).

Layer 3, studies (imports pandas: only ``sd.sweep`` and ``sd.load`` of a
sweep's file import this module).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..base.archive import KINDS
from ..base.checks import shown
from ..base.provenance import Provenance, write
from ..model.registry import from_record, laws_of, unrecorded
from ..model.registry import scheme as get_scheme

#: attrs of a table that are not saved (they describe one run's machine)
TIMINGS = ("compute_seconds", "wall_seconds")


class SweepTable(pd.DataFrame):
    """A sweep's tidy table with its provenance (``attrs["provenance"]``, JSON)."""

    @property
    def _constructor(self):
        return pd.DataFrame            # a filtered or merged table is a plain DataFrame

    @property
    def provenance(self) -> Provenance:
        """What made the table (:class:`~symdyn.base.provenance.Provenance`)."""
        return Provenance.from_json(self.attrs["provenance"])

    def save(self, path) -> None:
        """Write the table to a netCDF-3 file (``sd.load`` reads it back)."""
        arrays, levels = {}, {}
        for name in self.columns:
            values = self[name].to_numpy()
            if values.dtype.kind not in "biuf":        # text: codes into sorted levels
                if not all(isinstance(v, str) for v in values):
                    raise ValueError(f"save: column {name} holds values that are neither "
                                     f"numbers of one dtype nor text: "
                                     f"{shown(values[:3].tolist())}")
                levels[name], values = np.unique(values.astype(str), return_inverse=True)
                levels[name] = levels[name].tolist()
            arrays[name] = (("row",), np.ascontiguousarray(values))
        attrs = {k: v for k, v in self.attrs.items() if k != "provenance" and k not in TIMINGS}
        write(path, "SweepTable", self.provenance, arrays,
              {"columns": list(self.columns), "levels": levels, "attrs": attrs})

    @classmethod
    def check_parts(cls, arrays: dict, dims: dict, attrs: dict) -> None:
        """Check what a file holds against a table's schema: ``columns`` (names),
        ``levels`` (column -> sorted texts), ``attrs`` (an object); one variable
        of numbers along ``row`` per column, a text column's codes within its
        levels, nothing else. A ValueError says what is wrong."""
        columns, levels = attrs.get("columns"), attrs.get("levels")
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns) \
                or len(set(columns)) != len(columns):
            raise ValueError(f"columns must be a list of distinct names, got {shown(columns)}")
        if not isinstance(levels, dict) or not all(
                c in columns and isinstance(v, list) and all(isinstance(x, str) for x in v)
                for c, v in levels.items()):
            raise ValueError(f"levels must map columns to lists of texts, got {shown(levels)}")
        if not isinstance(attrs.get("attrs"), dict) or set(attrs) - {"columns", "levels",
                                                                      "attrs"}:
            raise ValueError(f"attributes: expected columns, levels and attrs, got "
                             f"{shown(sorted(attrs))}")
        if set(arrays) != set(columns):
            raise ValueError(f"variables {shown(sorted(set(arrays) ^ set(columns)))} do not "
                             f"match the columns")
        for c in columns:
            a = arrays[c]
            if a.dtype.kind not in "biuf" or tuple(dims.get(c, ("row",))) != ("row",):
                raise ValueError(f"column {c} must be numbers along row, got {a.dtype.name} "
                                 f"along {dims.get(c)}")
            if c in levels and a.size and (a.dtype.kind not in "iu" or a.min() < 0
                                           or a.max() >= len(levels[c])):
                raise ValueError(f"column {c}: codes outside its {len(levels[c])} levels")

    @classmethod
    def from_parts(cls, provenance, arrays: dict, attrs: dict) -> SweepTable:
        """The table whose :meth:`save` wrote ``arrays`` and ``attrs``."""
        levels = attrs["levels"]
        frame = {c: (np.asarray(levels[c], dtype=object)[arrays[c]] if c in levels
                     else arrays[c]) for c in attrs["columns"]}
        table = cls(pd.DataFrame(frame))
        for c in levels:
            table[c] = table[c].astype(str)
        table.attrs.update(attrs["attrs"], provenance=provenance.to_json())
        return table


def rerun(table, sweep, scheme=None, executor="serial", workers=None) -> SweepTable:
    """The sweep that made ``table`` (a table of ``sd.sweep``, or a DataFrame
    cut from one: its ``attrs`` keep the provenance) run again, whole, by
    ``sweep`` (:func:`~symdyn.studies.sweeps.sweep`, handed in: that module
    imports this one). ``executor``, ``workers``: as ``sweep``'s; ``scheme``:
    the grid's schemes, in order, when it held custom ones. Only the numerical
    settings (:data:`RERUN_OPTIONS`) come from the record: a cache, an
    output file, an executor or a scheduler it names is refused (they come
    from the caller), and the sweep runs without a cache."""
    p = Provenance.from_json(table.attrs["provenance"])
    opts = p.rerun_options("sweep", RERUN_OPTIONS, "a sweep's table")
    if not isinstance(opts.get("grid"), dict):
        raise ValueError(f"rerun: the table's grid must be a dict of axes, got "
                         f"{shown(opts.get('grid'))}")
    grid = dict(opts.pop("grid"))
    if "scheme" in grid:
        grid["scheme"] = _schemes(grid["scheme"], scheme)
    kind, seeds, times = opts.pop("kind", None), opts.pop("seeds", None), opts.pop("t", None)
    return sweep(grid, times, kind=kind, seeds=seeds or None, executor=executor,
                 workers=workers, **opts)


#: what a sweep's rerun takes from its record (the rest is the caller's)
RERUN_OPTIONS = frozenset({"kind", "grid", "seeds", "t", "batch", "rtol", "atol",
                           "cluster_threshold"})

KINDS["SweepTable"] = SweepTable


def scheme_record(value):
    """A grid's ``scheme`` axis as the provenance keeps it: names stay names; a
    Scheme is ``{"scheme": registry name, "params": {...}}``, a custom one with
    its ``"laws"`` as text (:func:`~symdyn.model.registry.laws_of`), or
    ``"custom": true`` when no text rebuilds it."""
    if isinstance(value, (list, tuple)):
        return [scheme_record(v) for v in value]
    if not hasattr(value, "speed"):
        return value
    entry = {"scheme": value.name, "params": dict(value.params)}
    laws = laws_of(value)
    if unrecorded(laws):            # even under a built-in name
        return {**entry, "custom": True}
    return {**entry, "laws": dict(laws)} if laws else entry


def _schemes(axis, given):
    """The ``scheme`` axis rebuilt from :func:`scheme_record` (``given``: custom ones)."""
    if given is not None:
        return given
    one = not isinstance(axis, list)
    out = []
    for v in [axis] if one else axis:
        if isinstance(v, dict) and v.get("custom"):
            raise ValueError(f"rerun: the sweep ran the custom scheme {v['scheme']!r}, "
                             f"whose laws were not recorded; pass scheme= (the grid's "
                             f"schemes, in order)")
        if isinstance(v, dict) and "laws" in v:
            v = from_record(v["scheme"], tuple(v["params"].items()), None, v["laws"])[0]
        elif isinstance(v, dict):
            v = get_scheme(v["scheme"], **v["params"])
        out.append(v)
    return out[0] if one else out
