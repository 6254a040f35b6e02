"""Files that cannot lie (issue 46 items 2, 4): ``sd.load`` checks a file
against its result type's schema and opens regular files only.

Oracle: the result that was saved (an honest file loads equal, bit for bit,
and so does an honest file rewritten by the forger below: the control that
the forger itself changes nothing). Every malformed file (deep JSON, a JSON
list, wrong types, a missing variable, an empty, truncated or changed file,
a folder, a FIFO, one result type's file relabelled as another, an array
replaced by text) is a ValueError naming the file and what is wrong. The
forger recomputes the file's digest, as an attacker could, so the schema
checks (not the digest) are what refuses its files.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from contextlib import contextmanager

import numpy as np
import pytest

import symdyn as sd
from symdyn.base.provenance import Provenance, digest
from symdyn.trained import fits
from symdyn.trained.trace import LayerTrace


def _arrays(r):
    out = {}
    for f in dataclasses.fields(r):
        v = getattr(r, f.name)
        if isinstance(v, np.ndarray):
            out[f.name] = v
        elif isinstance(v, dict):
            out.update({f"{f.name}.{k}": a for k, a in v.items()})
    return out


def same(a, b) -> bool:
    """Two results equal: same type, provenance, scalars, arrays bit for bit."""
    if type(a) is not type(b):
        return False
    if hasattr(a, "columns"):                           # a sweep's table
        return a.provenance == b.provenance and list(a.columns) == list(b.columns) and all(
            a[c].to_numpy().tobytes() == b[c].to_numpy().tobytes()
            if a[c].dtype.kind in "biuf" else a[c].tolist() == b[c].tolist()
            for c in a.columns)
    A, B = _arrays(a), _arrays(b)
    scalars = [f.name for f in dataclasses.fields(a)
               if not isinstance(getattr(a, f.name), np.ndarray | dict)]
    return A.keys() == B.keys() and all(
        A[k].dtype == B[k].dtype and A[k].shape == B[k].shape
        and A[k].tobytes() == B[k].tobytes() for k in A) and all(
        _plain(getattr(a, k)) == _plain(getattr(b, k)) for k in scalars)


def _plain(v):
    return list(v) if isinstance(v, tuple | list) else v


def _trace():
    """A LayerTrace as ``model.trace`` returns one (no model needed to save it)."""
    p = Provenance.of("trace", weights="tiny.gguf", options={"skip_first": 0,
                                                                  "random_seed": None})
    rng = np.random.default_rng(0)
    return LayerTrace(model="tiny", scheme="post-ln", tokens=np.array([5, 7]),
                      cosine=rng.random((2, 3)), norm=rng.random((2, 3)),
                      min_cosine=rng.random((2, 3)), attn_cosine=rng.random((2, 2)),
                      attn_norm=rng.random((2, 2)), attn_min_cosine=rng.random((2, 2)),
                      entropy=rng.random((2, 2, 4)), texts=["a b", "c d e"],
                      provenance=p, scheme_display="Post-LN")


def _fit():
    layers = np.arange(8.0)
    return fits.exponential(1 - 0.9 * np.exp(-0.5 * layers), first=2)


#: one cheap result of every type a file can hold
MAKERS = {
    "Trajectory": lambda: sd.solve("post-ln", n=[8, 32], beta=1.0, gamma0=0.0, t=[0.0, 5.0]),
    "Simulation": lambda: sd.simulate("post-ln", sd.init.sphere(5, 3, batch=2, seed=0),
                                      beta=1.0, t=[0.0, 1.0], kappa=20.0, step=0.25, seed=2**70),
    "MeanField": lambda: sd.mean_field(2.0, [0.0, 0.5], lambda th: 1 + 0.3 * np.cos(th),
                                       kappa=8.0, modes=6),
    "ZonalMeanField": lambda: sd.mean_field_zonal(1.5, [0.0, 0.5], [1.0, 0.2], d=4, kappa=6.0,
                                                  modes=6),
    "Fit": _fit,
    "LayerTrace": _trace,
    "SweepTable": lambda: sd.sweep({"scheme": ["post-ln"], "n": [5], "d": [3], "beta": [1.0]},
                                   t=[0.0, 1.0], seeds=2, executor="serial"),
}

_CACHE: dict = {}


def saved(kind, folder):
    """(result, path of its honest file) for ``kind``."""
    if kind not in _CACHE:
        _CACHE[kind] = MAKERS[kind]()
    r = _CACHE[kind]
    path = folder / f"{kind}.nc"
    r.save(path)
    return r, path


HEADER = ("symdyn_type", "provenance", "attributes_json", "sha256")


def read_raw(path):
    """A netCDF-3 file as plain data (read by scipy, not by symdyn)."""
    from scipy.io import netcdf_file
    with netcdf_file(path, "r", mmap=False) as f:
        attrs = {k: getattr(f, k).decode() for k in HEADER if hasattr(f, k)}
        sizes = dict(f.dimensions)
        variables = {name: (v.dimensions, np.array(v[...]), v.dtype_name.decode())
                     for name, v in f.variables.items()}
    return attrs, sizes, variables


def forge(src, dst, *, kind=None, provenance=None, attributes=None, drop=(), add=None,
          sign=True):
    """Write ``dst``: the file at ``src`` with its type, provenance text,
    attributes text changed, variables dropped or added (name -> (dims,
    array, dtype name)), its digest recomputed (``sign``) as an attacker could."""
    from scipy.io import netcdf_file
    attrs, sizes, variables = read_raw(src)
    for name in drop:
        del variables[name]
    variables.update(add or {})
    header = {"symdyn_type": kind or attrs["symdyn_type"],
              "provenance": attrs["provenance"] if provenance is None else provenance,
              "attributes_json": attrs["attributes_json"] if attributes is None else attributes}
    for dims, a, _ in variables.values():
        sizes.update(zip(dims, a.shape, strict=True))
    with netcdf_file(dst, "w", version=2) as f:
        for k, v in header.items():
            setattr(f, k, v)
        if sign is not None:        # None: no digest, as symdyn wrote files before them
            f.sha256 = digest(header, [(n, t, d, a) for n, (d, a, t) in variables.items()]) \
                if sign else attrs["sha256"]
        for dim in {d for dims, _, _ in variables.values() for d in dims}:
            f.createDimension(dim, sizes[dim])
        for name, (dims, a, dtype) in variables.items():
            v = f.createVariable(name, a.dtype, dims)
            v[...] = a
            v.dtype_name = dtype
    return dst


def refused(path, *words):
    """``sd.load(path)`` raises a ValueError naming ``path`` and saying ``words``."""
    with pytest.raises(ValueError) as info:
        sd.load(path)
    text = str(info.value)
    assert str(path) in text, text
    for w in words:
        assert w in text, text
    return text


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_control_an_honest_file_and_an_unchanged_forgery_load_equal(kind, tmp_path):
    r, path = saved(kind, tmp_path)
    assert same(sd.load(path), r)
    assert same(sd.load(forge(path, tmp_path / "copy.nc")), r)     # the forger is faithful


def test_deep_json_and_json_lists_are_value_errors_naming_the_file(tmp_path):
    _, path = saved("Trajectory", tmp_path)
    deep = "[" * 100_000 + "]" * 100_000
    refused(forge(path, tmp_path / "deep.nc", provenance=deep), "provenance", "too deep")
    refused(forge(path, tmp_path / "deep2.nc", attributes=deep), "attributes_json", "too deep")
    refused(forge(path, tmp_path / "list.nc", provenance="[1, 2]"), "JSON object")
    refused(forge(path, tmp_path / "list2.nc", attributes="[1, 2]"), "JSON object")
    refused(forge(path, tmp_path / "text.nc", attributes="not json"), "not JSON")


def test_fields_of_the_wrong_type_are_value_errors_naming_them(tmp_path):
    _, path = saved("Trajectory", tmp_path)
    attrs = json.loads(read_raw(path)[0]["attributes_json"])
    prov = json.loads(read_raw(path)[0]["provenance"])
    refused(forge(path, tmp_path / "a.nc", attributes=json.dumps({**attrs, "nfev": "many"})),
            "nfev must be int")
    refused(forge(path, tmp_path / "b.nc", attributes=json.dumps({**attrs, "nfev": True})),
            "nfev must be int")
    refused(forge(path, tmp_path / "c.nc", provenance=json.dumps({**prov, "producer": 5})),
            "producer must be str")
    refused(forge(path, tmp_path / "d.nc", provenance=json.dumps({**prov, "options": [[1]]})),
            "options must be a list of [name, value] pairs")
    refused(forge(path, tmp_path / "e.nc", provenance=json.dumps({**prov, "params": 3})),
            "params")
    refused(forge(path, tmp_path / "f.nc", attributes=json.dumps({**attrs, "extra": 1})),
            "not a field of Trajectory")


def test_a_missing_variable_is_named(tmp_path):
    _, path = saved("Trajectory", tmp_path)
    refused(forge(path, tmp_path / "m.nc", drop=["gamma"]), "gamma is missing")
    _, path = saved("Simulation", tmp_path)
    refused(forge(path, tmp_path / "s.nc", drop=["clusters"]), "clusters is missing")


def test_gamma_replaced_by_text_is_refused(tmp_path):
    _, path = saved("Trajectory", tmp_path)
    _, _, variables = read_raw(path)
    dims = variables["gamma"][0]
    text = np.full(variables["gamma"][1].shape, b"x", dtype="S1")
    refused(forge(path, tmp_path / "t.nc", drop=["gamma"], add={"gamma": (dims, text, "float64")}),
            "gamma")
    refused(forge(path, tmp_path / "u.nc", drop=["gamma"], add={"gamma": (dims, text, "str")}),
            "gamma", "dtype")
    attrs = json.loads(read_raw(path)[0]["attributes_json"])
    refused(forge(path, tmp_path / "v.nc", drop=["gamma"],
                  attributes=json.dumps({**attrs, "gamma": "0.5"})), "gamma")
    # gamma with the wrong dimensions (its time axis named otherwise)
    wrong = {"gamma": (("member", "other"), variables["gamma"][1], "float64")}
    refused(forge(path, tmp_path / "w.nc", drop=["gamma"], add=wrong), "gamma", "dimensions")


def test_one_type_s_file_relabelled_as_another_is_refused(tmp_path):
    _, path = saved("Trajectory", tmp_path)
    refused(forge(path, tmp_path / "sim.nc", kind="Simulation"), "Simulation")
    refused(forge(path, tmp_path / "mf.nc", kind="MeanField"), "MeanField")
    _, path = saved("MeanField", tmp_path)
    refused(forge(path, tmp_path / "z.nc", kind="ZonalMeanField"), "ZonalMeanField")
    _, path = saved("Simulation", tmp_path)
    refused(forge(path, tmp_path / "t.nc", kind="SweepTable"), "SweepTable")
    refused(forge(path, tmp_path / "n.nc", kind="Nothing"), "not a symdyn result")


def test_empty_truncated_changed_files_and_folders_are_value_errors(tmp_path):
    r, path = saved("Simulation", tmp_path)
    data = path.read_bytes()
    (tmp_path / "empty.nc").write_bytes(b"")
    refused(tmp_path / "empty.nc", "empty")
    for cut in (1, 4, 40, len(data) // 2, len(data) - 1):
        (tmp_path / "cut.nc").write_bytes(data[:cut])
        refused(tmp_path / "cut.nc")
    (tmp_path / "text.nc").write_text("hello")
    refused(tmp_path / "text.nc", "not a netCDF-3 file")
    refused(tmp_path, "a folder")
    # one number of gamma changed, the digest kept: refused, not read as another result
    _, _, variables = read_raw(path)
    dims, gamma, dtype = variables["gamma"]
    changed = forge(path, tmp_path / "changed.nc", drop=["gamma"],
                    add={"gamma": (dims, gamma + 1e-9, dtype)}, sign=False)
    refused(changed, "SHA-256")
    assert same(sd.load(path), r)                          # control: the original loads
    # a file saved before files carried a digest loads, by its schema, with a warning
    old = forge(path, tmp_path / "old.nc", sign=None)
    with pytest.warns(UserWarning, match="no SHA-256 digest"):
        assert same(sd.load(old), r)
    # ... and its schema is still checked (control: gamma left out)
    bad = forge(path, tmp_path / "old_bad.nc", sign=None, drop=["gamma"])
    with pytest.warns(UserWarning):
        refused(bad)


@contextmanager
def hang_guard(*fifos, seconds=60):
    """Fail (not hang) if the block opens one of ``fifos``: after ``seconds`` a
    watchdog opens each for reading and writing (never blocks), which releases
    an ``open`` blocked on it, and the block's end then fails the test. No
    signal: the derivation budget owns SIGALRM."""
    blocked = []

    def release():
        blocked.append(True)
        for fifo in fifos:
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))

    watchdog = threading.Timer(seconds, release)
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
    assert not blocked, "a FIFO was opened and blocked"


def test_a_fifo_is_refused_unopened_by_load_and_save(tmp_path):
    fifo = tmp_path / "evil.nc"
    os.mkfifo(fifo)
    r, honest = saved("Trajectory", tmp_path)
    with hang_guard(fifo):
        refused(fifo, "FIFO")
        with pytest.raises(ValueError, match=f"{fifo}.*FIFO"):
            r.save(fifo)
        with pytest.raises(ValueError, match=f"{fifo}.*FIFO"):
            MAKERS["SweepTable"]().save(fifo)
    assert same(sd.load(honest), r)                        # control: a regular file loads


def test_seeds_of_any_size_round_trip_or_are_refused_at_creation(tmp_path):
    r, path = saved("Simulation", tmp_path)                 # noise seed 2**70: JSON keeps it
    back = sd.load(path)
    assert back.provenance.noise_seed == 2**70 and isinstance(back.provenance.noise_seed, int)
    with pytest.raises(ValueError, match=r"seeds: .*\[0, 2\*\*63\)"):
        sd.sweep({"scheme": ["post-ln"], "n": [5], "d": [3], "beta": [1.0]}, t=[0.0, 1.0],
                 seeds=[2**63, 3], executor="serial")
    # control: the largest seed the table's int64 column holds is kept exactly
    big = sd.sweep({"scheme": ["post-ln"], "n": [5], "d": [3], "beta": [1.0]}, t=[0.0, 1.0],
                   seeds=[2**63 - 1], executor="serial")
    assert big["seed"].dtype == np.int64 and big["seed"].iloc[0] == 2**63 - 1
