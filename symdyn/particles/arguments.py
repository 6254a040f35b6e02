"""The checks of :func:`~symdyn.particles.simulation.simulate`'s arguments,
made before anything large is allocated.

Layer 2, particles.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..base.checks import (
    RTOL_FLOOR,
    BadInput,
    check_attention,
    has_bool,
    integer,
    inverse_noise,
    memory,
    number,
    real_array,
    shown,
    tolerance,
)
from ..model.baseline import NONE
from ..model.law_limits import R_UNDERFLOW, underflow
from ..model.symbols import SCHEME_SYMBOLS
from . import merging, noise
from .result import COMPLETE, SAVES


@lru_cache(maxsize=256)
def concrete(s):
    """(Once per scheme.) Refuse laws numpy cannot evaluate: undefined functions (``alpha(t)``) or
    symbols other than t, r, a, A_norm, n, beta."""
    for name, law in (("speed", s.speed), ("radial", s.radial), ("temperature", s.temperature)):
        loose = s.undefined(law)
        if loose:
            arg = next(iter(s.holding(loose)), name)
            raise ValueError(f"{arg}: the {name} law {law} of {s.name} has "
                             f"{', '.join(sorted(map(str, loose)))}; a law must be "
                             f"concrete to simulate (a formula in "
                             f"{', '.join(SCHEME_SYMBOLS)})")


#: Default (rtol, atol) per precision, and the smallest rtol float32 resolves.
TOLERANCES = {np.float64: (1e-10, 1e-12), np.float32: (1e-5, 1e-6)}
FLOAT32_RTOL = 1e-6
FLOAT32_THRESHOLD = 1 - 1e-4


@dataclass(frozen=True, slots=True, kw_only=True)
class Precision:
    """A run's precision: its float type with the tolerances and the cluster
    threshold checked for it."""
    dtype: type
    rtol: float
    atol: float
    threshold: float


def precision(dtype, rtol, atol, cluster_threshold) -> Precision:
    """``dtype`` (float64 or float32) with its checked tolerances and threshold
    (plain numbers: checked once per value)."""
    if isinstance(dtype, type) and all(v is None or type(v) is float
                                       for v in (rtol, atol, cluster_threshold)):
        return _precision_once(dtype, rtol, atol, cluster_threshold)
    return _precision(dtype, rtol, atol, cluster_threshold)


def _precision(dtype, rtol, atol, cluster_threshold) -> Precision:
    want = as_dtype(dtype)         # (np.dtype(k) == None is True: float64 is the default)
    kind = None if want is None else next((k for k in TOLERANCES if np.dtype(k) == want), None)
    if kind is None:
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {shown(dtype)}")
    rtol, atol = (tolerance(TOLERANCES[kind][i] if v is None else v, k,
                            RTOL_FLOOR if k == "rtol" else 0.0)
                  for i, (k, v) in enumerate((("rtol", rtol), ("atol", atol))))
    threshold = number(cluster_threshold, "cluster_threshold", 0, 1)
    if kind is np.float32:
        if rtol < FLOAT32_RTOL:
            raise ValueError(f"rtol must be in [{FLOAT32_RTOL:g}, 1) with dtype=float32 "
                             f"(float32 resolves about 1e-7), got {rtol!r}")
        if threshold > FLOAT32_THRESHOLD:
            raise ValueError(f"cluster_threshold must be at most {FLOAT32_THRESHOLD} with "
                             f"dtype=float32 (cosines to about 1e-7), got {threshold!r}; "
                             f"use dtype=float64")
    return Precision(dtype=kind, rtol=rtol, atol=atol, threshold=threshold)


_precision_once = lru_cache(maxsize=64)(_precision)


def as_dtype(dtype):
    if not isinstance(dtype, (type, str, np.dtype)):     # np.dtype(an array): its dtype
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def check_clock(clock, s, step):
    if not isinstance(clock, str) or clock not in ("t", "log"):
        raise ValueError(f"clock must be 't' or 'log', got {shown(clock)}")
    if clock == "t":
        return
    if step is not None:
        raise ValueError("clock: 'log' is for the continuous dynamics (step=None)")
    if s.layer == NONE.layer:
        raise ValueError("clock: 'log' needs a normalization scheme; 'none' attends to "
                         "the raw tokens; use clock='t'")
    if s.on_sphere:
        raise ValueError(f"clock: 'log' serves schemes whose norms grow (pre-ln, mix-ln, "
                         f"peri-ln, ...); {s.name} keeps its tokens on the sphere, where "
                         f"speeds do not decay like 1/t; use clock='t'")


def batch_shape(X0):
    """``X0`` as an array (not yet copied) and its shape ``(batch, n, d)``."""
    if isinstance(X0, (list, tuple)) and has_bool(X0):   # numpy would read True as 1.0
        raise ValueError(f"X0: expected real numbers (token coordinates), got booleans: "
                         f"{shown(X0)}")
    try:
        X = np.asarray(X0)
    except (TypeError, ValueError):
        raise ValueError("X0: expected a numeric array (n, d) or (batch, n, d)") from None
    if X.ndim not in (2, 3):
        raise ValueError(f"X0 must have shape (n, d) or (batch, n, d), got {X.shape}")
    shape = X.shape if X.ndim == 3 else (1,) + X.shape
    if shape[1] < 2 or shape[2] < 1 or shape[0] < 1:
        raise ValueError(f"X0 needs n >= 2 tokens in d >= 1 dimensions, got {X.shape}")
    return X, shape


def checked_tokens(X, shape):
    X = real_array(X, "X0").reshape(shape)
    norms = np.linalg.norm(X, axis=-1)
    if np.any(norms == 0):
        b, k = np.argwhere(norms == 0)[0]
        raise ValueError(f"X0: token {k} (batch {b}) is zero; N(x) = x/|x| needs x != 0")
    return X, norms


def check_underflow(s, rec, times, clock):
    """Token norms below :data:`~symdyn.model.law_limits.R_UNDERFLOW` are rounding
    (0 or subnormal), not the law's ``r``: an ``ArithmeticError`` naming the
    first output time (the log clock holds ``log r``, a scheme on the sphere
    ``r = 1``: nothing underflows)."""
    if clock != "t" or s.on_sphere:
        return
    low = np.abs(rec.r) < R_UNDERFLOW
    if low.any():
        m, k, i = np.argwhere(low)[0]
        raise ArithmeticError("simulate: " + underflow(s, rec.r[m, k, i],
                                                       f"by t = {times[i]:.6g}"))


def workspace(M, n, d, K, span, step, save_x):
    """Refuse (checks.memory) what simulate would hold at once, in floats."""
    dd = min(n, d) if span else d           # identity weights: span coordinates
    parts = {
        "the tokens and their integration stages (batch x n x d)":
            (30 if step is None else 10) * M * n * (dd + 1) + (M * d * n if span else 0),
        "the attention scores (batch x n x n)": 3 * M * n * n,
        "the observables (batch x n x times)": M * K * (2 * n + 4),
        "save_x (batch x times x n x d)": 2 * M * K * n * d if save_x else 0,
    }
    memory(8 * sum(parts.values()), f"simulate: mostly {max(parts, key=parts.get)}")


#: the attention masks of :func:`simulate`
MASKS = ("full", "causal")


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """The checked options of a run."""
    step: float | None
    dtype: type
    rtol: float
    atol: float
    threshold: float
    merge: float
    causal: bool
    kappa: float | None
    seed: int | None
    save: frozenset = frozenset(COMPLETE)
    fn: Callable | None = None


def saves(save, save_x: bool) -> tuple[frozenset, Callable | None]:
    """What each output records (``simulate``'s ``save=``): the names of
    :data:`~symdyn.particles.result.SAVES` and the function, if one is given.
    ``None``: every observable (:data:`~symdyn.particles.result.COMPLETE`);
    a name, a function, or a list or tuple of names and at most one function.
    ``save_x=True`` adds ``"tokens"``."""
    if save is None:
        names, fn = set(COMPLETE), None
    else:
        items = list(save) if isinstance(save, (list, tuple, set, frozenset)) else [save]
        fns = [v for v in items if callable(v)]
        if len(fns) > 1:
            raise BadInput(f"save: at most one function, got {len(fns)}")
        fn, names = (fns[0] if fns else None), set()
        for v in items:
            if callable(v):
                continue
            if not isinstance(v, str) or v not in SAVES:
                near = difflib.get_close_matches(v, list(SAVES), 1) if isinstance(v, str) \
                    else []
                raise BadInput(f"save: each entry must be a function of (t, X) or one of "
                               f"{', '.join(map(repr, SAVES))}, got {shown(v)}"
                               + (f" (did you mean {near[0]!r}?)" if near else ""))
            names.add(v)
        if not names and fn is None:
            raise BadInput("save: names nothing to record; give observables "
                           f"({', '.join(map(repr, SAVES))}) or a function")
    if save_x:
        names.add("tokens")
    return frozenset(names), fn


def options(s, attention, step, dtype, rtol, atol, cluster_threshold, merge, clock, method,
            save_x, mask="full", kappa=None, seed=None, save=None) -> Options:
    """The checked options of :func:`simulate` (before anything is allocated)."""
    concrete(s)
    check_attention(attention)
    step = None if step is None else number(step, "step", 0, low_open=True)
    prec = precision(dtype, rtol, atol, cluster_threshold)
    dtype, rtol, atol, threshold = prec.dtype, prec.rtol, prec.atol, prec.threshold
    if not isinstance(mask, str) or mask.lower() not in MASKS:
        raise ValueError(f"mask must be one of {', '.join(map(repr, MASKS))} (any case), "
                         f"got {shown(mask)}")
    causal = mask.lower() == "causal"
    merge_given = merge is not None
    largest = merging.LARGEST[np.dtype(dtype).name]
    merge = (min(merging.PER_RTOL * rtol, largest) if merge is None
             else number(merge, "merge", 0, largest))
    # under the mask, merging is exact only on the sphere (symdyn.particles.causal)
    # and opt-in: by default it did not save evaluations (causal.py, measured)
    if causal and merge > 0:
        if not merge_given:
            merge = 0.0
        elif not (s.on_sphere and clock == "t" and step is None):
            raise ValueError("merge: under mask='causal' merging is exact only for "
                             "schemes on the sphere in the clock t; use merge=0")
    if kappa is not None and inverse_noise(kappa) is None:      # kappa = inf: no noise
        integer(seed, "seed", 0, optional=True)
        kappa = seed = None
    kappa, seed = noise.check(kappa, seed, step)
    check_clock(clock, s, step)
    if not isinstance(method, str) or method not in ("auto", "dop853"):
        raise ValueError(f"method must be 'auto' or 'dop853', got {shown(method)}")
    if not isinstance(save_x, (bool, np.bool_)):
        raise ValueError(f"save_x must be True or False, got {shown(save_x)}")
    names, fn = saves(save, bool(save_x))
    return Options(step=step, dtype=dtype, rtol=rtol, atol=atol, threshold=threshold,
                   merge=merge, causal=causal, kappa=kappa, seed=seed, save=names, fn=fn)
