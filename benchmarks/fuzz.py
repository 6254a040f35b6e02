"""Fuzz every entry point, API and CLI, with hostile and careless input.

    python benchmarks/fuzz.py [--cases 3000] [--seed 0] [--timeout 30] [--only ENTRY ...]

Each case is one call (text, numbers, types, sizes, files) run in a worker
process; the parent kills a worker that takes longer than ``--timeout`` (a
hang) and starts another. Every outcome is one of

* ``result``        a value came back, and it passed the entry's invariants
                    (finite, gamma in [-1, 1], no ``nan``/``zoo`` in a formula);
* ``clear``         a ``ValueError`` (API) or exit status 2 with one stderr
                    line (CLI), under 300 characters, within 1 s;
* ``slow refusal``  as ``clear``, but after 1 s of work;
* ``unclear``       any other exception, a traceback, a message over 300
                    characters or over several lines;
* ``silent wrong``  a value came back that breaks an invariant;
* ``ran code``      a payload created the sentinel file;
* ``hang``          no answer within ``--timeout`` seconds.

Entry points: the symbolic side (custom laws, nGPT's alpha, derive, leading
orders), solve, simulate (also ``mask=``, ``kappa=``, ``seed=``), sweep, design,
the mean field (``mean_field``, ``mean_field_rates``, ``critical_kappa``,
``kuramoto_order``), trained models (``sd.trained.load``, ``model.trace`` on the
tests' tiny random BERT) and the CLI (``symdyn trace`` too).

It prints the counts and every case that is not ``result`` or ``clear``.
The promise (issue 24): hangs, silent wrong, ran code and unclear are 0.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import io
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from collections import Counter

SENTINEL = os.path.join(tempfile.gettempdir(), f"symdyn-fuzz-sentinel-{os.getpid()}")

# --- inputs -------------------------------------------------------------------------

NAMES = sorted({n for n in dir(builtins) if not n.startswith("_")} | {
    "__import__", "info", "show_config", "load", "save", "loadtxt", "fromfile", "memmap",
    "system", "popen", "getattr", "setattr", "vars", "locals", "globals", "lambdify",
    "sympify", "Symbol", "Function", "S", "N", "factorial", "gamma", "Gamma", "loggamma",
    "zeta", "polygamma", "erf", "erfc", "besselj", "select", "where", "vectorize"})

BIG = ["10**8", "10**49", "10**50", "10**51", "2**26", "2**64", "1e300", "1e308", "1e-320"]


def law_texts(rng: random.Random) -> str:
    kind = rng.randrange(9)
    if kind == 0:
        return f"{rng.choice(NAMES)}(t)"
    if kind == 1:
        return f"{rng.choice(['gamma', 'Gamma', 'factorial', 'exp', 'sinh'])}({rng.choice(BIG)})"
    if kind == 2:
        return f"2 + sin({rng.choice(BIG[:4])}*t)"
    if kind == 3:
        return f"Abs(t - {rng.uniform(0, 3):.4f})"
    if kind == 4:
        return "(" * rng.randrange(50, 200) + "t" + ")" * rng.randrange(50, 200)
    if kind == 5:
        return rng.choice([f"__import__('os').system('touch {SENTINEL}')",
                           f"open('{SENTINEL}', 'w')", "().__class__.__bases__[0]",
                           "t.__class__", "lambda: 0", "exp(t)[0]", "t; import os",
                           "\x00", "t\u200b", "ｔ", "t" * 2000, "", " ", "1/0", "-1",
                           "0", "nan", "oo", "zoo", "I", "t**(10**9)", "t**t**t**t"])
    if kind == 6:
        return f"{rng.choice(['1', 't', '1 + t', '2 - t', 'exp(-t)'])}" \
               f"{rng.choice(['', '*r', '/r', '*a', '*A_norm', '**2', '**-1'])}"
    if kind == 7:
        return rng.choice(["1 + t", "t", "1/(1 + t)", "exp(-t)", "sqrt(t)", "t**2 - 1",
                           "Heaviside(t - 1)", "Max(1, t)", "floor(t) + 1", "erf(t)"])
    return "".join(rng.choice("t+-*/()^.0123456789 abeirnstx_,=[]{}'\"") for _ in
                   range(rng.randrange(1, 30)))


NUMBERS = [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 1.0, 2.0, 0.5, 1e300,
           1e-300, -0.0, True, False, 1 + 2j, "3", "x", None, [1.0, 2.0], (), [],
           "1e300", 10**400, 2**63, -5, 3.5]


def number(rng: random.Random, good):
    return good if rng.random() < 0.5 else rng.choice(NUMBERS)


def times(rng: random.Random):
    return rng.choice([[1.0], [0.0, 1.0], [1.0, 0.5], [-1.0], [], [float("nan")],
                       [1e250], [1e300], [0.0, 1e-300], list(range(1, 50)), "1",
                       [[1.0, 2.0]], 5.0, 10 ** 5, [1.0] * 3])


# --- entry points -------------------------------------------------------------------
# Each maker returns (entry, kwargs); `run` dispatches on entry in the worker.


def make_case(rng: random.Random, entries=None):
    entry = rng.choice(entries or ENTRIES)
    text = law_texts(rng)
    if entry in ("custom", "ngpt", "law_of_t", "numeric", "derive_custom", "solve_custom",
                 "simulate_custom", "leading_order", "initial_velocity_text"):
        return entry, {"text": text, "x": number(rng, 1.0)}
    if entry == "solve":
        return entry, {"scheme": rng.choice(SCHEMES), "n": number(rng, 4.0),
                       "beta": number(rng, 1.0), "gamma0": number(rng, 0.2),
                       "t": times(rng), "rtol": number(rng, 1e-9)}
    if entry == "simulate":
        return entry, {"scheme": rng.choice(SCHEMES), "n": rng.choice([1, 2, 4, 0, -1, 10**6]),
                       "d": rng.choice([1, 2, 3, 0, 10**7]), "beta": number(rng, 1.0),
                       "t": times(rng), "step": rng.choice([None, None, 0.1, 0.0, -1.0, 1e-300]),
                       "clock": rng.choice(["t", "t", "log", "x"]), "merge": number(rng, None)}
    if entry == "sweep":
        return entry, {"grid": rng.choice([{"n": [4], "beta": [1.0], "gamma0": [0.1]},
                                           {"n": [4, -1], "beta": [1.0]},
                                           {"n": list(range(2, 200)), "beta": list(range(300))},
                                           {"scheme": ["post-ln", "a/b"], "n": [4]},
                                           {"nonsense": [1]}, {"n": "4"}, {}]),
                       "cache": rng.choice([None, "FILE", "/proc/nope", "\x00bad", "LINK"])}
    if entry == "design":
        return entry, {"layers": rng.choice([16, 0, -1, 10**9, 2.5]),
                       "depth": number(rng, 4.0), "bounds": rng.choice([None, {"c": (0, 1)}])}
    if entry == "cli":
        return entry, {"argv": cli_argv(rng)}
    if entry in MEANFIELD:
        return entry, mostly_good(entry, meanfield_case(entry, rng), rng)
    if entry == "simulate_noise":
        kw = {"scheme": rng.choice(SCHEMES), "t": times(rng) if rng.random() < 0.3
                       else [0.5, 1.0], "step": rng.choice([None, 0.1, 0.5, 0.0, 0.05]),
                       "mask": rng.choice(["full", "causal", "Causal", "CAUSAL ", "", None, 1,
                                           "diagonal"]),
                       "kappa": number(rng, rng.choice([2.0, 40.0, float("inf")])),
                       "seed": rng.choice([None, 0, 1, -1, 2**70, 1.5, "0", True, [1, 2]]),
                       "X0": rng.choice(["sphere", "bool", "object", "nan", "batch"])}
        return entry, mostly_good(entry, kw, rng)
    if entry in TRAINED:
        return entry, mostly_good(entry, trained_case(entry, rng), rng)
    raise AssertionError(entry)


#: Good values of the newer entries' arguments: each argument keeps its fuzzed
#: value with probability 0.4, so most cases have one or two faults, not all.
GOOD = {"mean_field": {"beta": 1.0, "t": [0.0, 1.0], "mu0": "function", "kappa": 4.0,
                       "attention": "softmax", "modes": 16, "tol": 1e-8},
        "mean_field_rates": {"k": [1, 2], "beta": 1.0, "kappa": 4.0, "attention": "softmax"},
        "critical_kappa": {"beta": 1.0, "d": 3, "attention": "softmax", "symbolic": False},
        "kuramoto_order": {"kappa": 4.0, "d": 3},
        "simulate_noise": {"t": [0.5, 1.0], "step": 0.1, "mask": "causal", "kappa": 4.0,
                           "seed": 0, "X0": "sphere"},
        "trained_load": {"path": "TINY", "options": {}},
        "trained_trace": {"text": None, "ids": [3, 1, 4, 1], "skip_first": False}}


def mostly_good(entry, kw, rng: random.Random):
    for key, value in GOOD.get(entry, {}).items():
        if rng.random() < 0.6:
            kw[key] = value
    return kw


MEANFIELD = ["mean_field", "mean_field_rates", "critical_kappa", "kuramoto_order"]
TRAINED = ["trained_load", "trained_trace", "cli_trace"]
MU0 = ["moments", "samples", "function", "nan", "shape", "complex", "negative", "zero",
       "raises", "none", "list", "bool", "huge", "string", "2d"]


def meanfield_case(entry, rng: random.Random):
    kappa = number(rng, rng.choice([None, 4.0, float("inf"), 0.5]))
    attention = rng.choice(["softmax", "softmax", "unnormalized", "hard", None, 3])
    if entry == "mean_field":
        return {"beta": number(rng, rng.choice([0.0, 1.0, 5.0, 700.0, 800.0])),
                "t": times(rng) if rng.random() < 0.4 else [0.0, 1.0],
                "mu0": rng.choice(MU0), "kappa": kappa, "attention": attention,
                "modes": rng.choice([8, 16, 32, 0, -1, 2.5, True, 10**9, 10**5]),
                "tol": number(rng, 1e-8)}
    if entry == "mean_field_rates":
        return {"k": rng.choice([1, [1, 2, 3], 0, -1, 2.5, True, [True], "1", 10**6,
                                 [0, 1, 2, 3]]),
                "beta": number(rng, 1.0), "kappa": kappa, "attention": attention}
    if entry == "critical_kappa":
        return {"beta": number(rng, rng.choice([0.0, 1.0, 50.0, 800.0])),
                "d": rng.choice([2, 3, 1, 0, 2.5, True, 10**6, "3"]), "attention": attention,
                "symbolic": rng.choice([False, False, True, "yes", 1])}
    return {"kappa": rng.choice([3.0, [1.0, 6.0], float("inf"), 1e300, 1e-300, 2.0,
                                 [[4.0]], -1.0, float("nan"), True, "4", [], 10**400]),
            "d": rng.choice([2, 3, 10, 1000, 1, 0, 2.5, True, "3", 10**9])}


def trained_case(entry, rng: random.Random):
    text = rng.choice(["It was the best of times.", "", " ", "\x00", "t" * 5000, "ｔ",
                       "\u200b", "😀" * 20, law_texts(rng), None, 3, b"bytes"])
    if entry == "trained_load":
        return {"path": rng.choice(["TINY", "nonexistent-model", "", "/dev/null", "/proc",
                                    "EMPTY", "BADJSON", "NOWEIGHTS", "FILE.gguf", None, 3,
                                    "all-MiniLM-L6-v2x", "../../etc/passwd"]),
                "options": rng.choice([{}, {}, {"norm": "rms"}, {"norm": "projection"},
                                       {"mlp": "no"}, {"mlp": False}, {"eps": -1.0},
                                       {"eps": float("nan")}, {"theta": 1e4},
                                       {"nonsense": 1}, {"permuted": 1}])}
    if entry == "trained_trace":
        return {"text": text, "ids": rng.choice([None, None, [3, 1, 4], [], [-1], [10**9],
                                                 [1.5, 2], [True, 2], [[1, 2]], list(range(40)),
                                                 "123", [3] * 1000]),
                "skip_first": rng.choice([False, True, "yes", None])}
    return {"argv": ["trace", rng.choice(["TINY", "nonexistent", "", "/dev/null"]),
                     "--text", str(text)] + rng.choice([[], ["--csv"], ["--skip-first"],
                                                        ["--bogus"]])}


SCHEMES = ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"]
ENTRIES = ["custom", "ngpt", "law_of_t", "numeric", "derive_custom", "solve_custom",
           "simulate_custom", "leading_order", "initial_velocity_text", "solve", "simulate",
           "sweep", "design", "cli", "mean_field", "mean_field_rates", "critical_kappa",
           "kuramoto_order", "simulate_noise", "trained_load", "trained_trace", "cli_trace"]
CLI_VALUES = ["4", "0", "-1", "1e309", "nan", "inf", "8.5", "abc", "", "1" * 400, "2",
              "1e-300", "Post-LN"]


def cli_argv(rng: random.Random):
    base = rng.choice([
        ["solve", "post-ln", "--n", "4", "--beta", "1", "--gamma0", "0", "--t-max", "1"],
        ["simulate", "post-ln", "--n", "4", "--d", "3", "--seeds", "1", "--t-max", "1",
         "--points", "3"],
        ["simulate", "post-ln", "--n", "4", "--d", "3", "--seeds", "1", "--t-max", "1",
         "--points", "3", "--step", "0.5", "--kappa", "4", "--seed", "0", "--mask", "causal"],
        ["derive", "custom", "--speed", "A_norm/(1+c*t)", "--param", "c=0.5"],
        ["derive", "post-ln"], ["derive", "custom", "--speed", "1"],
        ["derive", "ngpt", "--alpha", "1 + t"], ["schemes"]])
    argv = list(base)
    for _ in range(rng.randrange(1, 3)):
        i = rng.randrange(len(argv))
        argv[i] = law_texts(rng) if rng.random() < 0.3 else rng.choice(CLI_VALUES)
    return argv


def run(entry, kw, tmp):
    import numpy as np

    import symdyn as sd
    if entry == "custom":
        return sd.custom_scheme("fz", speed=kw["text"])
    if entry == "ngpt":
        return sd.scheme("ngpt", alpha=kw["text"])
    if entry == "law_of_t":
        return sd.scheme("ngpt", alpha=kw["text"]).law_of_t("alpha")(kw["x"])
    if entry == "numeric":
        return sd.scheme("ngpt", alpha=kw["text"]).numeric()
    if entry == "derive_custom":
        return sd.derive(sd.custom_scheme("fz", speed=kw["text"]))
    if entry == "solve_custom":
        return sd.solve(sd.custom_scheme("fz", speed=kw["text"]), n=4, beta=1.0, gamma0=0.1,
                        t=[0.5, 2.0])
    if entry == "simulate_custom":
        return sd.simulate(sd.custom_scheme("fz", speed=kw["text"]), sd.init.sphere(4, 3, seed=0),
                           1.0, [0.5, 1.0])
    if entry == "leading_order":
        return sd.leading_order(kw["text"])
    if entry == "initial_velocity_text":
        return sd.initial_velocity("post-ln", gamma0=kw["text"])
    if entry == "solve":
        return sd.solve(kw["scheme"], n=kw["n"], beta=kw["beta"], gamma0=kw["gamma0"],
                        t=kw["t"], rtol=kw["rtol"])
    if entry == "simulate":
        shape = (max(kw["n"], 0), max(kw["d"], 0))
        if shape[0] * shape[1] <= 10**7:
            X0 = np.random.default_rng(0).normal(size=shape)
        else:                               # a huge input that costs no memory here
            X0 = np.broadcast_to(np.float32(0.5), shape)
        return sd.simulate(kw["scheme"], X0, kw["beta"], kw["t"], step=kw["step"],
                           clock=kw["clock"], merge=kw["merge"])
    if entry == "sweep":
        cache = {"FILE": os.path.join(tmp, "afile"), "LINK": os.path.join(tmp, "link")}.get(
            kw["cache"], kw["cache"])
        open(os.path.join(tmp, "afile"), "w").close()
        with contextlib.suppress(FileExistsError):
            os.symlink("/nonexistent/target", os.path.join(tmp, "link"))
        return sd.sweep(kw["grid"], [0.5, 1.0], kind="solve", executor="serial", cache=cache)
    if entry == "design":
        fam = sd.alpha_family("linear")
        return sd.design(fam, depth=kw["depth"], n=8, beta=1.0, gamma0=0.0,
                         layers=kw["layers"], bounds=kw["bounds"], check=False)
    if entry in ("cli", "cli_trace"):
        from symdyn import cli
        argv = [trained_path(a, tmp) if a in TRAINED_PATHS else a for a in kw["argv"]]
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = cli.main(argv)
            except SystemExit as exc:       # argparse
                code = exc.code
        return ("cli", code, err.getvalue(), out.getvalue())
    if entry == "mean_field":
        return sd.mean_field(kw["beta"], kw["t"], mu0_value(kw["mu0"]), kappa=kw["kappa"],
                             attention=kw["attention"], modes=kw["modes"], tol=kw["tol"])
    if entry == "mean_field_rates":
        return ("rates", sd.mean_field_rates(kw["k"], kw["beta"], kw["kappa"],
                                             kw["attention"]))
    if entry == "critical_kappa":
        return ("kappa_c", sd.critical_kappa(kw["beta"], kw["d"], kw["attention"],
                                             symbolic=kw["symbolic"]))
    if entry == "kuramoto_order":
        return ("order", sd.kuramoto_order(kw["kappa"], kw["d"]))
    if entry == "simulate_noise":
        X0 = sd.init.sphere(4, 3, seed=0)
        X0 = {"sphere": X0, "bool": [[True, 0.5, 0.1]] + X0[1:].tolist(),
              "object": X0.astype(object), "nan": np.where(X0 > 0.9, np.nan, X0),
              "batch": np.stack([X0, X0])}[kw["X0"]]
        return sd.simulate(kw["scheme"], X0, 1.0, kw["t"], step=kw["step"], mask=kw["mask"],
                           kappa=kw["kappa"], seed=kw["seed"])
    if entry == "trained_load":
        path = trained_path(kw["path"], tmp) if kw["path"] in TRAINED_PATHS else kw["path"]
        return ("model", sd.trained.load(path, **kw["options"]))
    if entry == "trained_trace":
        model = sd.trained.load(trained_path("TINY", tmp))
        return model.trace(kw["text"] if kw["ids"] is None else None, token_ids=kw["ids"],
                           skip_first=kw["skip_first"])
    raise AssertionError(entry)


def mu0_value(kind):
    """``mu0`` of ``mean_field``: good ones and the careless ones of issue 34."""
    import numpy as np
    theta = np.random.default_rng(0).uniform(-np.pi, np.pi, 100)
    return {"moments": np.array([1, 0.2, 0.05j]), "samples": theta,
            "function": lambda x: 1 + 0.3 * np.cos(x), "nan": lambda x: np.nan * x,
            "shape": lambda x: np.ones(3), "complex": lambda x: 1 + 1j * x,
            "negative": lambda x: np.cos(x), "zero": lambda x: 0 * x,
            "raises": lambda x: 1 / 0, "none": None, "list": [1.0, 0.3],
            "bool": [True, 0.3], "huge": np.ones(10**6), "string": "uniform",
            "2d": np.ones((2, 2))}[kind]


TRAINED_PATHS = {"TINY", "EMPTY", "BADJSON", "NOWEIGHTS", "FILE.gguf"}


def trained_path(kind, tmp):
    """Folders and files for ``sd.trained.load``: the tiny random BERT of the
    tests, an empty folder, a broken config, a config without weights, a
    ``.gguf`` that is text."""
    import json
    import pathlib
    root = pathlib.Path(tmp) / "trained"
    path = root / kind
    if path.exists():
        return str(path)
    root.mkdir(exist_ok=True)
    if kind == "TINY":
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
        from test_trained_tiny import bert_folder, bert_weights
        bert_folder(path, bert_weights())
    elif kind == "FILE.gguf":
        path.write_text("not a gguf file")
    else:
        path.mkdir()
        if kind == "BADJSON":
            (path / "config.json").write_text("{not json")
        elif kind == "NOWEIGHTS":
            (path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    return str(path)


class CliError(Exception):
    """The command line failed without one clear line and exit status 2."""


def invariants(value) -> str | None:
    """Why a returned value is wrong, or None."""
    import numpy as np
    import sympy as sp
    if isinstance(value, tuple) and value and value[0] == "cli":
        _, code, err, out = value
        if code == 0:
            return "nan in output" if "nan" in out.lower().split(",") else None
        if code == 2 and err.strip() and "\n" not in err.strip() and len(err) < 300 \
                and "Traceback" not in err:
            return "CLEAR"
        raise CliError(f"exit {code}, {len(err)} chars: {err.strip()[-200:]!r}")
    if isinstance(value, tuple) and value and value[0] in ("rates", "kappa_c", "order"):
        v = value[1]
        if isinstance(v, sp.Basic):
            return "nan/zoo/I in a formula" if v.has(sp.nan, sp.zoo, sp.I) else None
        arr = np.asarray(v)
        if arr.dtype.kind not in "f" or not np.all(np.isfinite(arr)):
            return f"{value[0]} not finite real: {arr!r}"[:120]
        if value[0] == "order" and not np.all((arr >= 0) & (arr <= 1)):
            return f"order parameter outside [0, 1]: {arr}"
        if value[0] == "kappa_c" and not np.all(arr >= 0):
            return f"negative critical kappa {arr}"
        return None
    if isinstance(value, tuple) and value and value[0] == "model":
        return None
    moments = getattr(value, "moments", None)
    if isinstance(moments, np.ndarray):          # MeanField: a probability law's moments
        if not np.all(np.isfinite(moments)):
            return "non-finite moments"
        if np.any(np.abs(moments) > np.abs(moments[:, :1]) * (1 + 1e-6)) or \
                np.any(np.abs(moments[:, 0] - 1) > 1e-9):
            return "moments of no probability law (|c_k| > c_0 or c_0 != 1)"
        return None
    if hasattr(value, "attn_cosine"):             # a LayerTrace: cosines of real tokens
        cos, norm = np.asarray(value.cosine, float), np.asarray(value.norm, float)
        if not (np.all(np.isfinite(cos)) and np.all(np.abs(cos) <= 1 + 1e-6)
                and np.all(np.isfinite(norm))):
            return "a trace's cosine outside [-1, 1] or non-finite"
        return None
    if isinstance(value, float):   # law_of_t("alpha"): finite and >= 0 (alpha = 0: velocity 0)
        return None if np.isfinite(value) and value >= 0 else f"law value {value}"
    if isinstance(value, sp.Basic):
        return "nan/zoo in a formula" if value.has(sp.nan, sp.zoo) else None
    for field in ("gamma", "epsilon", "r", "min_cosine"):
        arr = getattr(value, field, None)
        if arr is None or not isinstance(arr, np.ndarray) or arr.dtype == object:
            continue
        if field in ("gamma", "min_cosine") and np.any(np.abs(arr[np.isfinite(arr)]) > 1 + 1e-6):
            return f"{field} outside [-1, 1]"
        if not np.all(np.isfinite(arr)) and not getattr(value, "bounds", None):
            return f"non-finite {field}"
    return None


# --- the worker and the parent ------------------------------------------------------


def worker(inbox, outbox):
    import warnings
    warnings.simplefilter("ignore")
    tmp = tempfile.mkdtemp(prefix="symdyn-fuzz-")
    os.chdir(tmp)
    import symdyn  # noqa: F401  (import once, before the clock runs)
    while True:
        item = inbox.get()
        if item is None:
            return
        entry, kw = item
        start = time.monotonic()
        try:
            value = run(entry, kw, tmp)
            why = invariants(value)
            kind = "clear" if why == "CLEAR" else ("result" if why is None else "silent wrong")
            detail = "" if why in (None, "CLEAR") else why
        except ValueError as exc:
            msg = str(exc)
            kind = "clear" if len(msg) < 300 and "\n" not in msg.strip() else "unclear"
            detail = "" if kind == "clear" else f"ValueError, {len(msg)} chars: {msg[:160]!r}"
        except BaseException as exc:        # noqa: BLE001  (what the fuzz is looking for)
            kind, detail = "unclear", f"{type(exc).__name__}: {str(exc)[:160]!r}"
        seconds = time.monotonic() - start
        if kind == "clear" and seconds > 1.0:
            kind, detail = "slow refusal", f"{seconds:.1f} s"
        if os.path.exists(SENTINEL):
            os.remove(SENTINEL)
            kind, detail = "ran code", "the sentinel file was created"
        outbox.put((kind, detail, seconds))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--only", nargs="+", choices=ENTRIES, metavar="ENTRY",
                        help=f"fuzz only these entry points: {', '.join(ENTRIES)}")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    cases = [make_case(rng, args.only) for _ in range(args.cases)]
    ctx = mp.get_context("spawn")
    counts, notes, proc = Counter(), [], None
    t0 = time.monotonic()
    for i, case in enumerate(cases):
        if proc is None:
            inbox, outbox = ctx.Queue(), ctx.Queue()
            proc = ctx.Process(target=worker, args=(inbox, outbox), daemon=True)
            proc.start()
        inbox.put(case)
        try:
            kind, detail, _ = outbox.get(timeout=args.timeout + (60 if i == 0 else 0))
        except Exception:                   # queue.Empty: the worker hangs (or died)
            kind, detail = ("hang", f"> {args.timeout:g} s") if proc.is_alive() else \
                ("unclear", f"worker died (exit {proc.exitcode})")
            proc.kill()
            proc = None
        counts[kind] += 1
        if kind not in ("result", "clear"):
            notes.append(f"{kind:13s} {case[0]:22s} {str(case[1])[:150]} -> {detail}")
        if (i + 1) % 250 == 0:
            print(f"  {i + 1} cases, {time.monotonic() - t0:.0f} s: {dict(counts)}",
                  file=sys.stderr)
    if proc is not None:
        inbox.put(None)
        proc.join(5)
    print(f"{len(cases)} inputs tried in {time.monotonic() - t0:.0f} s (seed {args.seed})")
    for kind in ("result", "clear", "slow refusal", "unclear", "silent wrong", "ran code",
                 "hang"):
        print(f"  {kind:13s} {counts[kind]}")
    for line in notes:
        print(line)
    bad = sum(counts[k] for k in ("unclear", "silent wrong", "ran code", "hang"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
