"""What made a result: :class:`Provenance`, and the netCDF file of a result.

Every result (``Simulation``, ``Trajectory``, ``LayerTrace``, ``MeanField``)
carries one :class:`Provenance`: the scheme by registry name with its
parameters, ``n``, ``d``, ``beta``, the attention, mask and ``kappa``, the
start and its seed, the noise's seed (drawn with
``np.random.SeedSequence().entropy`` and recorded when not given), the step,
the weights, ablations, the other options of the call and the symdyn version.
``str(result)`` prints :meth:`Provenance.summary`; titles print
:meth:`Provenance.changes` (what differs from a default).

:func:`write` and :func:`read` keep a result's arrays in a netCDF-3 file
through ``scipy.io.netcdf_file`` (no new binary dependency): each array a
variable with named dimensions, its numpy dtype in an attribute (netCDF-3 has
no int64 nor bool: those are stored as int32 and int8 and read back as they
were, refused where a value does not fit), the provenance a JSON string.

Layer 0, base.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np

from .checks import writable_path
from .version import __version__

#: Values a title leaves out (the defaults of ``simulate`` and the CLI).
DEFAULTS = {"attention": "softmax", "mask": "full", "kappa": None, "step": None,
            "weights": "identity", "ablations": ()}


#: The fields held as (name, value) pairs.
PAIRS = ("params", "options", "laws")


def plain(value):
    """``value`` as JSON can hold it: numpy scalars and arrays as numbers and lists."""
    if isinstance(value, np.ndarray):        # numbers: tolist gives Python's already
        return value.tolist() if value.dtype.kind in "biuf" else plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if getattr(value, "is_Integer", False):          # a sympy number (layers=6)
        return int(value)
    if getattr(value, "is_Float", False) or getattr(value, "is_Rational", False):
        return float(value)
    return str(value)                                 # a symbol (layers=N)


def _short(value) -> str:
    if isinstance(value, str) and len(value) > 60:
        return repr(value[:50] + "...")
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        if len(value) > 2 and all(isinstance(v, int) for v in value) and \
                list(value) == list(range(value[0], value[0] + len(value))):
            return f"{value[0]}..{value[-1]}"          # consecutive seeds
        if len(value) > 4:
            return f"{len(value)} values in [{_short(min(value))}, {_short(max(value))}]"
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class Provenance:
    """What made a result; every value JSON-able (numbers, strings, lists).

    ``producer`` names the function (``"simulate"``, ``"solve"``, ...);
    ``params`` and ``options`` are tuples of (name, value) pairs (the scheme's
    parameters; the call's other options, what :func:`symdyn.rerun` passes
    again); ``laws`` too, for a scheme of one's own: its speed, radial rate
    and temperature as text and its parameters' defaults
    (:func:`symdyn.model.registry.laws_of`; empty for the registry's schemes).
    """

    producer: str
    scheme: str | None = None
    params: tuple = ()
    n: object = None
    d: object = None
    beta: object = None
    attention: str | None = None
    mask: str | None = None
    kappa: float | None = None
    start: str | None = None
    start_seed: object = None
    noise_seed: int | None = None
    step: float | None = None
    weights: str | None = None
    ablations: tuple = ()
    options: tuple = ()
    laws: tuple = ()
    version: str = __version__

    @classmethod
    def of(cls, producer: str, params=None, options=None, **values) -> Provenance:
        """A provenance with values made JSON-able (``params``, ``options``: dicts)."""
        pairs = {k: tuple((str(a), plain(b)) for a, b in dict(v or {}).items())
                 for k, v in (("params", params), ("options", options),
                              ("laws", values.pop("laws", None)))}
        values = {k: tuple(plain(v)) if k == "ablations" else plain(v)
                  for k, v in values.items()}
        return cls(producer, **pairs, **values)

    def replace(self, **values) -> Provenance:
        """This provenance with ``values`` changed (made JSON-able)."""
        return dataclasses.replace(self, **{k: plain(v) if k not in PAIRS + ("ablations",)
                                            else v
                                            for k, v in values.items()})

    def summary(self) -> list[tuple[str, str]]:
        """(label, value) rows of the values that are set (what ``str`` prints)."""
        rows = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None or v == ():
                continue
            if f.name in PAIRS:
                v = ", ".join(f"{a}={_short(b)}" for a, b in v if b is not None)
            elif f.name == "ablations":
                v = ", ".join(v)
            rows.append((f.name.replace("_", " "), v if isinstance(v, str) and f.name in (
                *PAIRS, "ablations") else _short(v)))
        return rows

    def changes(self) -> list[tuple[str, object]]:
        """(name, value) of what differs from a default, in title order:
        the scheme's parameters, mask, kappa, noise seed, step, attention,
        weights, ablations."""
        out = [(a, b) for a, b in self.params]
        for k in ("mask", "kappa", "noise_seed", "step", "attention", "weights", "ablations"):
            v = getattr(self, k)
            if v is not None and v != DEFAULTS.get(k) and v != ():
                out.append((k, ", ".join(v) if k == "ablations" else v))
        return out

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Provenance:
        data = json.loads(text)
        for k in PAIRS:
            data[k] = tuple(tuple(p) for p in data.get(k, ()))
        data["ablations"] = tuple(data.get("ablations", ()))
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


#: a complex array is stored as two real variables with these suffixes
COMPLEX = ("__real", "__imag")

#: netCDF-3 types: numpy dtypes stored as another, read back as they were
STORED = {"int64": "int32", "bool": "int8", "uint8": "int16"}


def write(path, kind: str, provenance: Provenance, arrays: dict, attrs: dict) -> None:
    """Write ``arrays`` (name -> (dims, ndarray)) and ``attrs`` (numbers,
    strings) of a result of type ``kind`` to a netCDF-3 file at ``path``."""
    from scipy.io import netcdf_file

    path = writable_path(path, "path")
    arrays, sizes = dict(arrays), {}
    for name, (dims, a) in list(arrays.items()):
        if a.dtype == object:
            raise ValueError(f"save: {name} holds {a.dtype} values; netCDF-3 keeps real "
                             f"floats and integers only")
        if np.iscomplexobj(a):                 # two real variables, joined again by read
            del arrays[name]
            arrays[name + COMPLEX[0]] = (dims, a.real)
            arrays[name + COMPLEX[1]] = (dims, a.imag)
        for dim, size in zip(dims, a.shape, strict=True):
            if sizes.setdefault(dim, size) != size:
                raise ValueError(f"save: dimension {dim} is {sizes[dim]} and {size}")
    with netcdf_file(path, "w", version=2) as f:
        f.symdyn_type = kind
        f.provenance = provenance.to_json()
        f.attributes_json = json.dumps(plain(attrs))
        for dim, size in sizes.items():
            f.createDimension(dim, size)
        for name, (dims, a) in arrays.items():
            stored = STORED.get(a.dtype.name, a.dtype.name)
            if stored != a.dtype.name and a.size and not np.array_equal(a.astype(stored), a):
                raise ValueError(f"save: {name} has values beyond {stored}")
            v = f.createVariable(name, stored, dims)
            v[...] = a.astype(stored)
            v.dtype_name = a.dtype.name


def read(path) -> tuple[str, Provenance, dict, dict]:
    """``(kind, provenance, arrays, attrs)`` of a file :func:`write` wrote."""
    from scipy.io import netcdf_file

    with netcdf_file(path, "r", mmap=False) as f:
        kind = f.symdyn_type.decode() if isinstance(f.symdyn_type, bytes) else f.symdyn_type
        text = f.provenance
        attrs = f.attributes_json
        arrays = {name: np.array(v[...]).astype(_text(v.dtype_name))
                  for name, v in f.variables.items()}
    for name in [k[:-len(COMPLEX[0])] for k in arrays if k.endswith(COMPLEX[0])]:
        re, im = arrays.pop(name + COMPLEX[0]), arrays.pop(name + COMPLEX[1])
        z = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
        z.real, z.imag = re, im                # exact, signed zeros too
        arrays[name] = z
    return kind, Provenance.from_json(_text(text)), arrays, json.loads(_text(attrs))


def _text(x) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)
