"""The full n-particle system: ``simulate``, continuous dynamics or the layer rules.

Continuous (``step=None``), for every token (docs/model.md, section 1):

.. math:: \\dot\\theta_k = \\frac{1}{s_k} P_{\\theta_k} A_k, \\qquad
          \\dot r_k = \\rho_k,

with the scheme's own speed law :math:`(s, \\rho)` (the same
:class:`~symdyn.model.scheme.Scheme` the symbolic side reads; nothing here uses
the reduction) and ``A`` at :math:`\\beta\\tau(t)` for a tempered scheme
(:mod:`symdyn.particles.field`). The batch is one vectorized system with
per-member adaptive steps (:mod:`symdyn.particles.continuous`); directions are
renormalized after every accepted step.

Layers (``step=h``): each scheme's own ``Scheme.layer`` (docs/model.md, section 2),
``t_k = k h`` (:mod:`symdyn.particles.layers`)::

    post-ln       x <- N(x + h A(x))
    pre-ln        x <- x + h A(N(x))
    mix-ln        post-ln while t_k < t_switch, then pre-ln
    peri-ln       x <- x + h N(A(N(x)))
    ngpt          x <- N(x + h alpha(t_k) (N(A(x)) - x))
    sqrt-scaling  x <- N(x + h A(x) / s(t_k))          (s = sqrt(1 + t))
    deepnorm      x <- N(alpha x + h A(x))
    ln-scaling    x <- x + h A(N(x) / sqrt(1 + t_k))
    none          x <- x + h A(x), scores on the raw tokens
    custom        theta <- N(theta + h P A / s), r <- r + h rho

``mask="causal"`` masks the attention (token ``k`` sees ``j <= k``,
:mod:`symdyn.particles.attention`); ``kappa=`` follows each layer by a Gaussian
kick of the directions (:mod:`symdyn.particles.noise`, docs/model.md, section 7).
``"none"`` is the unnormalized baseline: :math:`\\dot x_k = A_k(X)` with
scores :math:`\\beta\\langle x_k, x_j\\rangle`. The argument checks are in
:mod:`symdyn.particles.arguments`, the result and its observables in
:mod:`symdyn.particles.result`.

Layer 2, particles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from ..base.checks import BadInput, finite_array, output_times, shown
from ..base.provenance import Provenance
from ..model.baseline import NONE, resolve
from ..model.law_limits import check_speed
from ..model.parameters import run_parameters
from ..model.registry import SchemeLike, from_record, laws_of
from ..model.scheme import Scheme
from ..model.symbols import beta as b_sym
from ..model.symbols import n as n_sym
from . import noise
from .arguments import (
    TOLERANCES,
    Options,
    batch_shape,
    check_underflow,
    checked_tokens,
    options,
    workspace,
)
from .continuous import continuous
from .layers import layers as run_layers
from .result import SAVES, Recorder, Simulation, check_outputs, resolution
from .weights import Weights, as_weights, identity

__all__ = ["NONE", "SIMULATE_OPTIONS", "TOLERANCES", "Simulation", "layer_times",
           "resolve", "simulate"]



def _check_law(s, times, n, beta, step, clock):
    """The continuous dynamics: refuse a speed law that oscillates more than
    any step size resolves, or vanishes, on the run's span of t
    (:mod:`symdyn.model.law_limits`); layers read the law at their times only."""
    if step is None:
        T = times[-1] if clock == "t" else float(np.expm1(min(times[-1], 709.0)))
        check_speed(s, T, {n_sym: np.array([float(n)]), b_sym: beta}, "simulate")


#: A layer loop estimated (from below) to take longer than this is refused.
MAX_DAYS = 1
#: The layer loop's assumed least cost: seconds a layer, and the flop rate at
#: which ``flops`` a layer run (a lower bound: only what cannot finish is refused).
LAYER_SECONDS, FLOP_RATE = 1e-5, 1e12
#: The continuous dynamics runs to t (tau with clock="log") <= MAX_TIME:
#: beyond about 1e155 the batched integrator's steps stop growing (the
#: doubling steps overflow), so a later end is never reached.
MAX_TIME = 1e150


def layer_times(t, step, flops=0.0):
    """Output times; with ``step``, multiples of it on distinct layers, and a
    layer count that can run in :data:`MAX_DAYS` (at :data:`LAYER_SECONDS` a
    layer plus ``flops`` at :data:`FLOP_RATE`, a lower bound), and the
    continuous dynamics (``step=None``) to :data:`MAX_TIME`. (Their count is bounded by memory only:
    :func:`~symdyn.particles.result.check_outputs`.)"""
    times = output_times(t)
    if step is None:
        if times[-1] > MAX_TIME:
            raise ValueError(f"t: the continuous dynamics runs to t <= {MAX_TIME:g} (tau "
                             f"with clock='log'): beyond, its steps stop growing; got "
                             f"{times[-1]:g}")
        return times
    layers = times / step
    days = layers[-1] * (LAYER_SECONDS + flops / FLOP_RATE) / 86400
    if days > MAX_DAYS:
        raise ValueError(f"step: {step:g} needs {layers[-1]:.3g} layers to reach "
                         f"t = {times[-1]:g}, at least {days:.3g} days of computing "
                         f"(at most {MAX_DAYS}); use a larger step or step=None")
    if np.any(np.abs(layers - np.round(layers)) > 1e-9 * np.maximum(1, layers)):
        raise ValueError(f"t: output times must be multiples of step = {step}")
    if np.any(np.diff(np.round(layers)) == 0):
        raise ValueError(f"t: two output times fall on the same layer of step = {step}")
    return times


#: the options of :func:`simulate` (a scheme's parameters go in ``params=``)
SIMULATE_OPTIONS = ("scheme", "X0", "beta", "t", "weights", "attention", "step", "rtol", "atol",
                    "save_x", "cluster_threshold", "merge", "clock", "dtype", "method", "params",
                    "mask", "kappa", "seed", "save")

def simulate(scheme: SchemeLike, X0: ArrayLike, beta: ArrayLike, t: ArrayLike,
             weights: Weights | tuple | None = None, attention: str = "softmax",
             step: float | None = None, *, rtol: float | None = None,
             atol: float | None = None,
             save_x: bool = False, cluster_threshold: float = 0.999,
             merge: float | None = None, clock: str = "t", dtype=np.float64,
             method: str = "auto", params: dict | None = None, mask: str = "full",
             kappa: float | None = None, seed: int | None = None,
             save: str | Callable | list | tuple | None = None, **legacy) -> Simulation:
    """Simulate the n-particle system of a scheme (or ``"none"``).

    Parameters
    ----------
    scheme : str or Scheme
        A built-in name, a custom scheme, or ``"none"`` (no normalization).
    X0 : array (n, d) or (batch, n, d)
        Starting tokens (non-zero). Schemes that renormalize at ``t = 0``
        (post-ln, mix-ln, ngpt, sqrt-scaling, on-sphere custom) use ``X0/|X0|``.
    beta : float or array (batch,)
        Inverse temperature, ``>= 0``.
    t : float or 1-D array
        Output times, ``>= 0``, strictly increasing (multiples of ``step``).
    weights : None, "identity", "kaiming", (Q, K, V) or sd.weights.Weights
        ``None``: identity; ``"kaiming"``: ``sd.weights.kaiming(d, seed=0)``
        (the sweep's name and default seed). Each matrix ``(d, d)`` or
        ``(heads, d, d)``.
    attention : {"softmax", "unnormalized"}
    step : float, optional
        ``None``: the continuous dynamics with error control (``rtol``,
        ``atol``); ``h > 0``: the layer rules with residual step ``h``.
    rtol, atol : float, optional
        Relative and absolute tolerances per step, in ``(0, 1)``; default
        ``1e-10, 1e-12`` (float64), ``1e-5, 1e-6`` (float32, where rtol must
        be at least ``1e-6``). With identity weights (float64, no mask) each
        member is integrated in its cluster's frame and ``epsilon`` keeps this
        relative precision down to 1e-280; otherwise it is resolved down to
        ``Simulation.floor`` (1e-14 at the defaults) and flagged below.
    save_x : bool
        Also return the tokens at the output times (adds ``"tokens"`` to ``save``).
    save : None, str, callable, or a list or tuple of them
        What each output records. ``None`` (default): every observable
        (``gamma``, ``epsilon``, ``min_cosine``, ``linked``, ``clusters``,
        ``labels``, ``r``, ``speed``, ``energy`` and ``"bounds"``: ``bound``,
        ``spread``, ``offset``, ``floor``). Otherwise the names of those
        recorded, ``"tokens"`` for ``X`` (``save="tokens"``: the tokens
        only, the cheapest record), and at most one function ``f(t, X)`` of
        the output times ``t`` (m,) and the tokens ``X`` (m, n, d) (with
        ``clock="log"`` their directions, as ``Simulation.X``) of m
        (member, output) rows, returning an array of m rows: its values land
        in ``Simulation.values``, batch + (K, ...). What is not recorded is
        absent: reading it raises an error naming ``save=``. The integration
        is the same whatever is recorded.
    cluster_threshold : float
        Cosine in ``[0, 1]`` at or above which two tokens are linked in ``clusters``.
    merge : float, optional
        Continuous dynamics: the distance ``delta`` (direction, and relative
        norm) within which tokens may become one weighted token
        (:mod:`symdyn.particles.merging`), in ``[0, 1e-6]`` (float32: ``[0, 1e-4]``);
        0 never merges. Default ``100 rtol`` within that range. A group merges
        only where this changes every distance from which ``gamma``,
        ``epsilon``, ``min_cosine``, ``linked`` and ``clusters`` are made by
        less than ``delta`` relative (sub-clusters much tighter than their
        distance to the other tokens; never a configuration contracting as a
        whole at the pace of ``t``, as Pre-LN does), or where all tokens left
        are closer than the state resolves (a few roundings) or contract at
        least 1e3 times faster than the clock (Post-LN after its last clusters
        met; in the cluster's frame, identity weights: once ``epsilon`` fell
        below 1e-280); a value is then only a bound, and ``Simulation.bound``
        says so.
    clock : {"t", "log"}
        ``"log"`` (continuous dynamics of the radial schemes, tied weights):
        integrate in :math:`\\tau = \\log(1 + t)` with :math:`\\log r - \\tau`
        as state (:mod:`symdyn.model.log_clock`), so runs reach ``tau = 1e4`` (``t =
        e^{10^4}``, beyond floats); ``t`` is then read as ``tau`` and the
        result's ``r`` holds ``log r``.
    dtype : numpy.float64 or numpy.float32
        The precision of the tokens and the integration. float32 halves the
        cost of large runs and keeps the meaning of ``gamma``, ``linked``,
        ``clusters`` and ``min_cosine`` away from 1 (cosines to ~1e-7), but
        not of ``epsilon`` near a cluster; ``cluster_threshold`` must then be
        at most ``1 - 1e-4``.
    method : {"auto", "dop853"}
        Continuous dynamics: ``"auto"`` lets runs whose explicit steps become
        stability-limited (contracting clusters) switch to the Rosenbrock-W
        method ROS34PW2 and back (:mod:`symdyn.ode.rosenbrock`,
        :mod:`symdyn.ode.stiffness`; float64, at most ``rosenbrock.MAX_DIM`` state
        components, the batch's Jacobians within ``stiffness.JAC_FLOATS``
        floats); ``"dop853"`` stays explicit.
    params : dict of str to float, optional
        Values of the scheme's free parameters (``params={"c": 0.5}``, one
        number each; defaults where omitted): the run uses
        ``scheme.bind(**params)``. (Passing them beside the options is
        deprecated.)
    mask : {"full", "causal"} (any case)
        ``"causal"``: token ``k`` attends only to ``j <= k`` (decoders; every
        scheme, weights and heads; merging on the sphere only, exact under the
        mask: :mod:`symdyn.particles.causal`). Default: full attention.
    kappa : float, optional
        The inverse noise level (> 0) of the noisy dynamics (needs ``step``):
        each layer's rule is followed by
        :math:`\\theta \\leftarrow N(\\theta + \\sqrt{2h/\\kappa}\\,\\xi)` on the
        directions (norms kept), the Euler-Maruyama step of
        :math:`d\\theta = \\dots dt + \\sqrt{2/\\kappa}\\, dW` on the sphere
        (:mod:`symdyn.particles.noise`). ``None`` or ``inf`` (no noise):
        deterministic (``seed`` is then unused).
    seed : int, optional
        Seed of the noise (with ``kappa``): the same seed gives the same run;
        batch members draw independent streams (``SeedSequence(seed).spawn``).
        ``None``: fresh entropy.

    Raises
    ------
    ValueError
        An argument out of its range, a law that is not concrete (``alpha(t)``),
        or a run too large for this machine's memory or too many layers
        (estimated before anything is allocated).
    ArithmeticError
        The speed law is not finite and > 0, a radial law drives ``r`` through
        zero, or the tokens go non-finite (a step too large): the message names
        the law or the step and the time.

    Examples
    --------
    >>> import symdyn as sd
    >>> X0 = sd.init.equiangular(8, 8, 0.0, seed=1)
    >>> sim = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 1.0, 5.0])
    >>> tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[0.0, 1.0, 5.0])
    >>> bool(abs(sim.gamma - tr.gamma).max() < 1e-8)
    True
    """
    s = resolve(scheme)
    laws = laws_of(s)               # a scheme of one's own, before its parameters are bound
    if isinstance(s, Scheme):
        s = s.bind(**run_parameters(s, params, legacy, "simulate", SIMULATE_OPTIONS))
    opt = options(s, attention, step, dtype, rtol, atol, cluster_threshold, merge, clock,
                  method, save_x, mask, kappa, seed, save)
    if opt.kappa is not None and opt.seed is None:      # recorded, so the run can be rerun
        opt = dataclasses.replace(opt, seed=np.random.SeedSequence().entropy)
    X, (M, n, d) = batch_shape(X0)
    b = _beta(beta, M)
    w = None if weights is None else as_weights(weights, d)
    if clock == "log" and w is not None and not w.tied:
        raise ValueError("clock: 'log' needs tied weights (untied draws change at every "
                         "unit of t)")
    # Q = K = V = I: every velocity lies in span(x_1..x_n), so the flow is the
    # same in orthonormal coordinates of that span (R^n): exact, and d/n times
    # cheaper. Observables are rotation invariant.
    # (not with noise: the Gaussian kicks leave the span)
    span = (w is None or w.identity) and d > n and opt.kappa is None
    heads = 1 if w is None else w.Q.shape[1]
    full = 0 if w is None or w.identity else 1.5 * d        # projections Q, K, V
    tokens = "tokens" in opt.save
    check_outputs(t, M, n, d, opt.save)
    times = layer_times(t, opt.step, flops=4 * M * heads * n * d * (n + full))
    workspace(M, n, d, len(times), span, opt.step, tokens)
    _check_law(s, times, n, b, opt.step, clock)
    st = _start(s, *checked_tokens(X, (M, n, d)), w, span, heads, opt.dtype)
    theta, rad = st.theta, st.rad
    rec = Recorder(M, n, theta.shape[-1], len(times), opt.threshold, opt.save, opt.fn,
                   st.basis, log_norms=clock == "log")
    rec.resolution = resolution(theta.shape[-1], opt.dtype,
                                *((opt.rtol, opt.atol) if opt.step is None else ()))
    if opt.step is None:
        run = continuous(s, st.weights, attention, theta, rad, b, times, opt.rtol, opt.atol,
                         rec, opt.merge, clock == "log", method, opt.causal)
    else:
        kicks = (None if opt.kappa is None
                 else noise.Noise(opt.kappa, opt.seed, opt.step, theta.shape, theta.dtype))
        run = run_layers(s, st.weights, attention, theta, rad, b, times, opt.step, rec,
                         opt.causal, kicks)
    check_underflow(s, rec, times, clock)
    missing = np.isnan(rec.r).any(axis=(0, 1))
    if missing.any():                  # never return a time that was not computed
        raise ArithmeticError(f"simulate: no result at t = {times[missing]}")
    if st.basis is not None and tokens:
        rec.X = rec.X @ np.swapaxes(st.basis, -1, -2)[:, None]

    def out(x):
        return None if x is None else x[0] if X.ndim == 2 else x
    return Simulation(
        t=times, gamma=out(rec.gamma), epsilon=out(rec.epsilon), min_cosine=out(rec.min_cos),
        clusters=out(rec.clusters), linked=out(rec.linked),
        r=out(rec.r) if "r" in opt.save else None,
        speed=out(rec.speed), X=out(rec.X), cluster_threshold=opt.threshold,
        steps=run.steps, nfev=run.nfev, message=run.message, merged=run.merged, clock=clock,
        stiff_steps=run.stiff_steps,
        bound=None if rec.bound is None else {k: out(v) for k, v in rec.bound.items()},
        spread=out(rec.spread), offset=out(rec.offset), labels=out(rec.labels),
        energy=out(rec.energy), floor=out(rec.floor),
        recorded=tuple(k for k in SAVES if k in opt.save), values=out(rec.values),
        provenance=_provenance(s, laws, X, b, attention, mask, opt, weights, w, {
            "rtol": rtol, "atol": atol, "save_x": save_x, "clock": clock,
            "cluster_threshold": cluster_threshold, "merge": merge,
            "dtype": np.dtype(dtype).name, "method": method,
            **_saved(save, opt)}),
        x0=np.array(X0))


def rerun_simulation(sim: Simulation, t=None, scheme=None, weights=None,
                     save: Callable | None = None) -> Simulation:
    """The run that made ``sim`` again, from its provenance and start ``x0``
    (``sd.rerun``), at its output times or at ``t`` (the steps do not depend
    on them: the same trajectory, read elsewhere). ``scheme``, ``weights``,
    ``save``: what a registry name cannot rebuild (a custom scheme, weight
    arrays, the function whose values the run saved). The start and the
    weight arrays must be the run's (:meth:`Provenance.check_arrays`: their
    SHA-256 digests), else a ValueError names the argument that differs."""
    p = sim.provenance
    opts = dict(p.options)
    opts["dtype"] = np.dtype(opts.get("dtype", "float64")).type
    if p.weights == "given" and weights is None:
        raise BadInput("weights: the run was given weight arrays; pass weights=")
    w = weights if weights is not None else p.weights
    given = None if w is None or isinstance(w, str) else as_weights(w, sim.x0.shape[-1])
    p.check_arrays(_arrays(sim.x0, given))
    function = opts.pop("save_function", None)
    if function is not None and save is None:
        raise BadInput(f"save: the run saved the values of the function {shown(function)}, "
                       f"which a rerun cannot rebuild; pass save= (that function)")
    if save is not None:
        if function is None or not callable(save):
            raise BadInput("save: a rerun takes a function only where the run saved one's "
                           "values")
        opts["save"] = [*(opts.get("save") or ()), save]
    s, free = from_record(p.scheme, p.params, scheme, p.laws)
    return simulate(s, sim.x0, beta=np.asarray(p.beta, dtype=float),
                    t=sim.t if t is None else t, weights=None if w == "identity" else w,
                    attention=p.attention, step=p.step, mask=p.mask, kappa=p.kappa,
                    seed=p.noise_seed, params=free or None, **opts)


def _saved(save: object, opt: Options) -> dict:
    """The record's options for ``save=``: None (every observable), or the
    names recorded, and the name of the function whose values were saved."""
    if save is None:
        return {"save": None}
    names = [k for k in SAVES if k in opt.save]
    fn = opt.fn
    return {"save": names, **({} if fn is None else {
        "save_function": getattr(fn, "__qualname__", None) or repr(fn)})}


def _arrays(X0: ArrayLike, weights: Weights | None) -> dict:
    """The arrays a run was given, by the name its provenance records:
    ``X0``, and ``weights.Q``, ``.K``, ``.V`` where the weights were arrays
    (None: a name or identity weights)."""
    given = {"X0": np.asarray(X0)}
    mats = None if weights is None or weights.identity else weights
    for name in ("Q", "K", "V"):
        given[f"weights.{name}"] = None if mats is None else getattr(mats, name)
    return given


def _provenance(s, laws, X, b, attention, mask, opt, weights, w, given):
    """What made the run (the scheme by name with its parameters, or its
    ``laws``; the noise's seed; the digests of ``X`` and of the weight
    arrays ``w``, checked, where they were given as arrays)."""
    if weights is None or isinstance(weights, str):
        name, mats = weights or "identity", None
    else:
        name = "identity" if getattr(weights, "identity", False) else "given"
        mats = None if name == "identity" else w
    arrays = {k: v for k, v in _arrays(X, mats).items() if v is not None}
    return Provenance.of("simulate", dict(getattr(s, "params", ())), given, arrays,
                         scheme=getattr(s, "name", str(s)), n=X.shape[-2], d=X.shape[-1],
                         beta=b[0] if np.all(b == b[0]) else b, attention=attention,
                         mask=mask.lower(), kappa=opt.kappa, noise_seed=opt.seed,
                         step=opt.step, weights=name, laws=laws)


def _beta(beta, M):
    """``beta`` as a fresh array (M,)."""
    b = finite_array(beta, "beta", 0.0)
    try:
        return np.broadcast_to(b, (M,)).copy()
    except ValueError:
        raise ValueError(f"beta must be a number or an array of shape ({M},), "
                         f"got {shown(beta)}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Start:
    """A run at t = 0: directions ``theta`` (M, n, d'), norms ``rad`` (M, n),
    ``weights`` in the run's precision, and the ``basis`` (M, d, n) of the
    span coordinates (d' = n) or None (d' = d)."""
    theta: np.ndarray
    rad: np.ndarray
    weights: Weights
    basis: np.ndarray | None


def _start(s, X, norms, w, span, heads, dtype) -> Start:
    """Directions, norms and weights at t = 0 in the run's precision; with
    identity weights and d > n, in orthonormal coordinates of the tokens' span
    (``basis`` (M, d, n), else None)."""
    theta = X / norms[..., None]
    rad = np.ones(norms.shape) if _starts_on_sphere(s) else norms
    basis = None
    if span:
        basis, _ = np.linalg.qr(np.swapaxes(theta, -1, -2))      # (M, d, n)
        theta = theta @ basis
        w = _identity(theta.shape[-1], heads, dtype)
    elif w is None:
        w = _identity(theta.shape[-1], 1, dtype)
    return Start(theta=theta.astype(dtype, copy=False), rad=rad.astype(dtype, copy=False),
                 weights=w.astype(dtype), basis=basis)


@lru_cache(maxsize=256)
def _starts_on_sphere(s) -> bool:
    return s.starts_on_sphere


def _identity(d, heads, dtype):
    """Identity weights; small ones made once per size (and never written to)."""
    if heads * d * d > 10**5:
        return identity(d, heads).astype(dtype)
    return _small_identity(d, heads, np.dtype(dtype).name)


@lru_cache(maxsize=32)
def _small_identity(d, heads, dtype):
    w = identity(d, heads).astype(np.dtype(dtype))
    for m in (w.Q, w.K, w.V):
        m.flags.writeable = False
    return w
