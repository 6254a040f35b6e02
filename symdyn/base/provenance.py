"""What made a result: :class:`Provenance`, and the netCDF file of a result.

Every result (``Simulation``, ``Trajectory``, ``LayerTrace``, ``MeanField``)
carries one :class:`Provenance`: the scheme by registry name with its
parameters, ``n``, ``d``, ``beta``, the attention, mask and ``kappa``, the
start and its seed, the noise's seed (drawn with
``np.random.SeedSequence().entropy`` and recorded when not given), the step,
the weights, ablations, the other options of the call, the SHA-256 of
every array the caller passed (:func:`array_digest`: the start ``X0``, weight
matrices; :meth:`Provenance.check_arrays` refuses a rerun with others) and the
symdyn version.
``str(result)`` prints :meth:`Provenance.summary`; titles print
:meth:`Provenance.changes` (what differs from a default).

:func:`write` and :func:`read` keep a result's arrays in a netCDF-3 file
through ``scipy.io.netcdf_file`` (no new binary dependency): each array a
variable with named dimensions, its numpy dtype in an attribute (netCDF-3 has
no int64 nor bool: those are stored as int32 and int8 and read back as they
were, refused where a value does not fit), the provenance a JSON string.
A save is atomic: every value is checked first, the file is written beside
its target under a temporary name, flushed to disk and renamed over it, so a
failed save (a bad value, a full disk, a killed process) leaves the old file
as it was and a reader never sees half a file. :func:`read` opens regular
files only and turns every malformed file into a ``ValueError`` naming it; the
file records the SHA-256 of its content (:func:`digest`), so a changed or cut
file is refused rather than read as another result.

Layer 0, base.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import secrets
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .checks import BadInput, read_regular, shown, writable_path
from .version import __version__

#: Values a title leaves out (the defaults of ``simulate`` and the CLI).
DEFAULTS = {"attention": "softmax", "mask": "full", "kappa": None, "step": None,
            "weights": "identity", "ablations": ()}


#: The global attributes of a saved file (and ``sha256``, its digest, since
#: files carry one).
HEADER = ("symdyn_type", "provenance", "attributes_json")

#: The fields held as (name, value) pairs.
PAIRS = ("params", "options", "laws")

#: The producers whose provenance records the digests of the arrays they were
#: given (``arrays``); a file of theirs without them was saved by an older symdyn.
DIGESTED = ("simulate",)


def array_digest(a: Any) -> str:
    """SHA-256 (hex) of an array: its dtype, shape and values (C order,
    little-endian), so equal arrays of one dtype have one digest and a
    change of any element, of the shape or of the dtype gives another."""
    a = np.asarray(a)
    if a.dtype == object:
        raise BadInput(f"array_digest: expected an array of numbers, got {a.dtype} values")
    h = hashlib.sha256()
    h.update(json.dumps([a.dtype.str.lstrip("<>|="), a.dtype.kind, list(a.shape)]).encode())
    h.update(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes())
    return h.hexdigest()


def plain(value: Any) -> Any:
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


def _short(value: Any) -> str:
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


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """What made a result; every value JSON-able (numbers, strings, lists).

    ``producer`` names the function (``"simulate"``, ``"solve"``, ...);
    ``params`` and ``options`` are tuples of (name, value) pairs (the scheme's
    parameters; the call's other options, what :func:`symdyn.rerun` passes
    again); ``laws`` too, for a scheme of one's own: its speed, radial rate
    and temperature as text and its parameters' defaults
    (:func:`symdyn.model.registry.laws_of`; empty for the registry's schemes).
    ``arrays``: (name, SHA-256) pairs of the arrays the caller passed
    (:func:`array_digest`; ``"X0"``, ``"weights.Q"``, ...), None where the
    producer recorded none (a file saved before digests were kept).
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
    arrays: tuple | None = None

    @classmethod
    def of(cls, producer: str, params: Mapping[str, Any] | None = None,
           options: Mapping[str, Any] | None = None,
           arrays: Mapping[str, Any] | None = None, **values: Any) -> Provenance:
        """A provenance with values made JSON-able (``params``, ``options``:
        dicts); ``arrays``: name -> the array the caller passed, recorded as
        its :func:`array_digest` (None: none recorded)."""
        pairs: dict[str, Any] = {k: tuple((str(a), plain(b)) for a, b in dict(v or {}).items())
                 for k, v in (("params", params), ("options", options),
                              ("laws", values.pop("laws", None)))}
        values = {k: tuple(plain(v)) if k == "ablations" else plain(v)
                  for k, v in values.items()}
        digests = None if arrays is None else tuple(
            (str(k), array_digest(a)) for k, a in arrays.items())
        return cls(producer=producer, **pairs, **values, arrays=digests)

    def check_arrays(self, given: Mapping[str, Any]) -> None:
        """Refuse arrays other than those the run was given: ``given`` maps
        each name :attr:`arrays` may hold to the array a rerun passes (None:
        not passed). A ValueError names the first argument that is missing,
        differs (its SHA-256, :func:`array_digest`), or was not given to the
        run. A provenance without digests (an older file) checks nothing."""
        if self.arrays is None:
            return
        recorded = dict(self.arrays)
        for name, a in given.items():
            if name not in recorded:
                if a is not None:
                    raise BadInput(f"{_argument(name)}: the run was not given this array "
                                   f"(its provenance records {_names(recorded)}); pass "
                                   f"{_argument(name)}=None")
                continue
            if a is None:
                raise BadInput(f"{_argument(name)}: the run was given this array (SHA-256 "
                               f"{recorded[name][:16]}...); pass it again")
            now = array_digest(a)
            if now != recorded[name]:
                raise BadInput(f"{_argument(name)}: {name} differs from the array the run was "
                               f"given (SHA-256 {now[:16]}..., the run's "
                               f"{recorded[name][:16]}...)")
        missing = sorted(set(recorded) - set(given))
        if missing:
            raise BadInput(f"{_argument(missing[0])}: the run was given {missing[0]} "
                           f"(SHA-256 {recorded[missing[0]][:16]}...); pass it again")

    def replace(self, **values: Any) -> Provenance:
        """This provenance with ``values`` changed (made JSON-able)."""
        return dataclasses.replace(self, **{k: plain(v) if k not in (*PAIRS, "ablations",
                                                                     "arrays")
                                            else v
                                            for k, v in values.items()})

    def summary(self) -> list[tuple[str, str]]:
        """(label, value) rows of the values that are set (what ``str`` prints;
        the arrays' digests by their first 12 hex digits)."""
        rows: list[tuple[str, str]] = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None or v == ():
                continue
            if f.name == "arrays":
                rows.append(("arrays", ", ".join(f"{a} sha256:{b[:12]}" for a, b in v)))
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
        out: list[tuple[str, object]] = [(a, b) for a, b in self.params]
        for k in ("mask", "kappa", "noise_seed", "step", "attention", "weights", "ablations"):
            v = getattr(self, k)
            if v is not None and v != DEFAULTS.get(k) and v != ():
                out.append((k, ", ".join(v) if k == "ablations" else v))
        return out

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    def rerun_options(self, producer: str, allowed: Iterable[str], what: str) -> dict:
        """The options a rerun of ``what`` (made by ``producer``) takes from
        this record: a ValueError if it names another producer or an option
        not in ``allowed`` (paths, executors and schedulers are the caller's
        to give, never the file's)."""
        if self.producer != producer:
            raise ValueError(f"rerun: {what} is made by {producer}, but its provenance names "
                             f"{shown(self.producer)}")
        opts = dict(self.options)
        extra = sorted(set(opts) - set(allowed))
        if extra:
            raise ValueError(f"rerun: {what}'s provenance holds the option(s) "
                             f"{', '.join(map(shown, extra))}, which a rerun does not take "
                             f"from a file (it takes {', '.join(sorted(allowed))}; paths, "
                             f"executors and schedulers come from the caller)")
        return opts

    @classmethod
    def from_json(cls, text: str) -> Provenance:
        """The provenance :meth:`to_json` wrote; anything else (not an object,
        a field of the wrong type, pairs that are not (name, value)) is a
        ValueError saying what is wrong."""
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValueError("provenance: JSON nested too deep") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"provenance: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"provenance: expected a JSON object, got "
                             f"{type(data).__name__}")
        for k in PAIRS:
            pairs = data.get(k, ())
            if not isinstance(pairs, list | tuple) or not all(
                    isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], str)
                    for p in pairs):
                raise ValueError(f"provenance: {k} must be a list of [name, value] pairs, "
                                 f"got {shown(pairs)}")
            data[k] = tuple(tuple(p) for p in pairs)
        ablations = data.get("ablations", ())
        if not isinstance(ablations, list | tuple) or not all(
                isinstance(a, str) for a in ablations):
            raise ValueError(f"provenance: ablations must be a list of names, "
                             f"got {shown(ablations)}")
        data["ablations"] = tuple(ablations)
        digests = data.get("arrays")
        if digests is not None:
            if not isinstance(digests, list | tuple) or not all(
                    isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], str)
                    and isinstance(p[1], str) and len(p[1]) == 64 for p in digests):
                raise ValueError(f"provenance: arrays must be a list of [name, SHA-256] "
                                 f"pairs, got {shown(digests)}")
            data["arrays"] = tuple(tuple(p) for p in digests)
        for k, types in _TYPES.items():
            if k in data and not (data[k] is None and k != "producer") and \
                    not (isinstance(data[k], types) and not isinstance(data[k], bool)):
                raise ValueError(f"provenance: {k} must be {types[0].__name__}"
                                 f"{'' if k == 'producer' else ' or null'}, "
                                 f"got {shown(data[k])}")
        if "producer" not in data:
            raise ValueError("provenance: no producer")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def _argument(name: str) -> str:
    """The argument an array named in ``Provenance.arrays`` was passed as
    (``"weights.Q"``: ``weights``)."""
    return name.split(".", 1)[0]


def _names(recorded: Mapping[str, str]) -> str:
    return ", ".join(sorted(recorded)) or "no arrays"


#: the provenance's fields whose JSON type is fixed (the others: numbers or lists)
_TYPES = {"producer": (str,), "scheme": (str,), "attention": (str,), "mask": (str,),
          "start": (str,), "weights": (str,), "version": (str,), "noise_seed": (int,),
          "kappa": (float, int), "step": (float, int)}


#: a complex array is stored as two real variables with these suffixes
COMPLEX = ("__real", "__imag")

#: netCDF-3 types: numpy dtypes stored as another, read back as they were
STORED = {"int64": "int32", "bool": "int8", "uint8": "int16"}


def write(path: str | os.PathLike, kind: str, provenance: Provenance, arrays: dict,
          attrs: dict) -> None:
    """Write ``arrays`` (name -> (dims, ndarray)) and ``attrs`` (numbers,
    strings) of a result of type ``kind`` to a netCDF-3 file at ``path``."""
    from scipy.io import netcdf_file

    # renamed over: a regular file only
    target: Path = Path(writable_path(path, "path", regular=True))
    if target.is_symlink():              # replace the file it points to, keep the link
        target = Path(os.path.realpath(target))
    arrays, sizes = dict(arrays), dict[str, int]()
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
    for name, (_dims, a) in arrays.items():     # every value checked before any byte
        stored = STORED.get(a.dtype.name, a.dtype.name)
        if a.dtype.name not in DTYPES:
            raise ValueError(f"save: {name} holds {a.dtype.name} values; a file keeps "
                             f"{', '.join(DTYPES)}")
        if stored != a.dtype.name and a.size and not np.array_equal(a.astype(stored), a):
            raise ValueError(f"save: {name} has values beyond {stored}")
    header = {"symdyn_type": kind, "provenance": provenance.to_json(),
              "attributes_json": json.dumps(plain(attrs))}
    header["sha256"] = digest(header, [
        (name, a.dtype.name, dims, a.astype(STORED.get(a.dtype.name, a.dtype.name)))
        for name, (dims, a) in arrays.items()])
    temporary = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    try:
        with netcdf_file(temporary, "w", version=2) as f:
            for key, value in header.items():
                setattr(f, key, value)
            for dim, size in sizes.items():
                f.createDimension(dim, size)
            for name, (dims, a) in arrays.items():
                stored = STORED.get(a.dtype.name, a.dtype.name)
                v = f.createVariable(name, stored, dims)
                v[...] = a.astype(stored)
                v.dtype_name = a.dtype.name
        _fsync(temporary)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync(target.parent, folder=True)


#: the dtypes a file keeps (each stored as itself or as :data:`STORED` says)
DTYPES = ("float64", "float32", "int64", "int32", "int16", "int8", "uint8", "bool")


def _fsync(path: str | os.PathLike, folder: bool = False) -> None:
    """Flush ``path`` (a file; a folder's entries with ``folder``) to the disk."""
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if folder else 0))
    except OSError:
        if folder:                  # a folder that cannot be opened: nothing to flush
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not folder:              # some file systems cannot sync a folder
            raise
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True, kw_only=True)
class Stored:
    """What a result file holds: the result's class name ``kind``, its
    ``provenance``, its ``arrays`` (name -> ndarray) and ``attrs`` (name ->
    number, text or list)."""
    kind: str
    provenance: Provenance
    arrays: dict
    attrs: dict


def read(path: str | os.PathLike, dims: dict | None = None) -> Stored:
    """What a file :func:`write` wrote holds (:class:`Stored`; ``dims``: a dict
    filled with each array's dimension names). A path that is not a regular
    file, and a file that is not one :func:`write` wrote, is a ValueError
    naming ``path`` and what is wrong. A file of a producer that records the
    digests of the arrays it was given (:data:`DIGESTED`) without them loads
    with a warning: a rerun cannot check its arrays."""
    data = read_regular(path, "path")
    try:
        stored = _parse(data, {} if dims is None else dims)
    except ValueError as exc:
        raise BadInput(f"path: {shown(str(path), 200)} is not a symdyn result file: "
                       f"{exc}") from None
    except Exception as exc:  # noqa: BLE001 (a hostile file: whatever the parser hits)
        raise BadInput(f"path: {shown(str(path), 200)} is not a symdyn result file "
                       f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
    p = stored.provenance
    if p.producer in DIGESTED and p.arrays is None:
        warnings.warn("the file records no SHA-256 of the arrays its run was given (saved by "
                      "an older symdyn): a rerun cannot check that they are the same",
                      UserWarning, stacklevel=3)
    return stored


def _parse(data: bytes, dims: dict) -> Stored:
    from scipy.io import netcdf_file

    if not data:
        raise ValueError("the file is empty")
    if data[:3] != b"CDF":
        raise ValueError("not a netCDF-3 file")
    arrays: dict[str, np.ndarray] = {}
    header: dict[str, str] = {}
    stored: list[tuple[str, str, tuple[str, ...], np.ndarray]] = []
    with netcdf_file(io.BytesIO(data), "r", mmap=False) as f:
        for key in HEADER:
            if not hasattr(f, key):
                raise ValueError(f"no {key} attribute")
            header[key] = _text(getattr(f, key))
        extra = sorted(set(getattr(f, "_attributes", {})) - {*HEADER, "sha256"})
        if extra:       # a damaged name too: "sha256" changed would pass as unsigned
            raise ValueError(f"unknown global attribute {shown(extra[0])} (a symdyn "
                             f"file has {', '.join(HEADER)} and sha256)")
        signed = hasattr(f, "sha256")
        if signed:
            header["sha256"] = _text(f.sha256)
        for name, v in f.variables.items():
            name = _text(name)
            dtype = _text(getattr(v, "dtype_name", b""))
            if dtype not in DTYPES:
                raise ValueError(f"variable {name} has dtype {shown(dtype)}, expected one of "
                                 f"{', '.join(DTYPES)}")
            a = np.array(v[...])
            if a.dtype.name != STORED.get(dtype, dtype):
                raise ValueError(f"variable {name} is stored as {a.dtype.name}, not as its "
                                 f"dtype {dtype} is")
            arrays[name] = a.astype(dtype)
            dims[name] = tuple(_text(d) for d in v.dimensions)
            stored.append((name, dtype, dims[name], a))
        if not signed:          # saved before files carried their digest: checked by schema only
            warnings.warn("the file has no SHA-256 digest (saved by an older symdyn): its "
                          "schema is checked, but not that its numbers are the ones saved",
                          UserWarning, stacklevel=4)
        elif digest(header, stored) != header["sha256"]:
            raise ValueError("its content does not match its SHA-256 digest (changed or cut "
                             "short since it was saved)")
    for name in [k[:-len(COMPLEX[0])] for k in arrays if k.endswith(COMPLEX[0])]:
        if name + COMPLEX[1] not in arrays or dims[name + COMPLEX[0]] != dims[name + COMPLEX[1]]:
            raise ValueError(f"variable {name}: real part without a matching imaginary part")
        re, im = arrays.pop(name + COMPLEX[0]), arrays.pop(name + COMPLEX[1])
        z = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
        z.real, z.imag = re, im                # exact, signed zeros too
        arrays[name] = z
        dims[name] = dims.pop(name + COMPLEX[0])
        dims.pop(name + COMPLEX[1])
    if any(k.endswith(COMPLEX[1]) for k in arrays):
        raise ValueError("an imaginary part without its real part")
    try:
        attrs = json.loads(header["attributes_json"])
    except RecursionError:
        raise ValueError("attributes_json: JSON nested too deep") from None
    except ValueError as exc:
        raise ValueError(f"attributes_json: not JSON ({exc})") from None
    if not isinstance(attrs, dict):
        raise ValueError(f"attributes_json: expected a JSON object, got {type(attrs).__name__}")
    return Stored(kind=header["symdyn_type"], provenance=Provenance.from_json(header["provenance"]),
                  arrays=arrays, attrs=attrs)


def digest(header: Mapping[str, str],
           variables: Iterable[tuple[str, str, Iterable[str], np.ndarray]]) -> str:
    """SHA-256 of what a file holds: its type, provenance and attributes
    (``header``) and each variable (name, dtype, dimensions, shape, bytes as
    stored, big-endian), in name order. :func:`write` records it; :func:`read`
    refuses a file whose content does not match it."""
    h = hashlib.sha256()

    def part(data: bytes) -> None:
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)

    for key in ("symdyn_type", "provenance", "attributes_json"):
        part(header[key].encode())
    for name, dtype, dims, a in sorted(variables, key=lambda v: v[0]):
        part(json.dumps([name, dtype, list(dims), list(a.shape), a.dtype.str[1:]]).encode())
        part(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder(">")).tobytes())
    return h.hexdigest()


def _text(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)
