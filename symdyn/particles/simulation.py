"""The full n-particle system: continuous dynamics and the layer rules.

Continuous (``step=None``), for every token (docs/model.md, section 1):

.. math:: \\dot\\theta_k = \\frac{1}{s_k} P_{\\theta_k} A_k, \\qquad
          \\dot r_k = \\rho_k,

with the scheme's own speed law :math:`(s, \\rho)` (the same
:class:`~symdyn.model.registry.Scheme` the symbolic side reads; nothing here uses
the reduction). The batch is one vectorized system with per-member adaptive
steps (:mod:`symdyn.ode.integrate`); directions are renormalized after every
accepted step.

Layers (``step=h``): each scheme's own ``Scheme.layer`` (docs/model.md, section 2),
``t_k = k h``::

    post-ln       x <- N(x + h A(x))
    pre-ln        x <- x + h A(N(x))
    mix-ln        post-ln while t_k < t_switch, then pre-ln
    peri-ln       x <- x + h N(A(N(x)))
    ngpt          x <- N(x + h alpha(t_k) (N(A(x)) - x))
    sqrt-scaling  x <- N(x + h A(x) / s(t_k))          (s = sqrt(1 + t))
    none          x <- x + h A(x), scores on the raw tokens
    custom        theta <- N(theta + h P A / s), r <- r + h rho

``"none"`` is the unnormalized baseline: :math:`\\dot x_k = A_k(X)` with
scores :math:`\\beta\\langle x_k, x_j\\rangle`.

Layer 2, particles.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike
from scipy.sparse.csgraph import connected_components

from ..base.checks import (
    RTOL_FLOOR,
    check_attention,
    finite_array,
    memory,
    number,
    output_times,
    real_array,
    shown,
    tolerance,
)
from ..model import log_clock
from ..model.display import simulation_rows, summary_html
from ..model.guards import lambdify
from ..model.law_limits import R_UNDERFLOW, check_speed, underflow
from ..model.registry import (
    LayerRule,
    Scheme,
    SchemeLike,
    radial_fault,
    run_parameters,
    speed_fault,
    unit,
)
from ..model.registry import scheme as get_scheme
from ..model.symbols import SCHEME_SYMBOLS, a, r
from ..model.symbols import beta as b_sym
from ..model.symbols import n as n_sym
from ..model.symbols import t as t_sym
from ..ode.integrate import integrate
from . import merging
from .attention import attention as _attention
from .attention import of_weights
from .weights import Weights, as_weights, identity

#: The baseline without normalization (attention on the raw tokens).
NONE = Scheme("none", r, a, sp.Integer(0),
              layer=LayerRule("none", lambda s, x, h, tk, A, field: x + h * A(x)))


@dataclass(frozen=True)
class Simulation:
    """Observables of a particle simulation; batch axes first, time last.

    Attributes
    ----------
    t : ndarray (K,)
    gamma : ndarray batch + (K,)
        Mean over pairs ``i != j`` of :math:`\\langle\\theta_i, \\theta_j\\rangle`.
    epsilon : ndarray batch + (K,)
        :math:`1 - \\gamma = \\sum_k |\\theta_k - \\bar\\theta|^2/(n-1)`, computed
        from the deviations, so it keeps its relative precision near a cluster.
    min_cosine : ndarray batch + (K,)
        Smallest pairwise cosine.
    clusters : ndarray batch + (K,)
        Connected components of the graph ``cos >= cluster_threshold``.
    linked : ndarray batch + (K,)
        Fraction of the pairs ``i < j`` with ``cos >= cluster_threshold`` (the
        colour of the clustering phase diagram).
    r : ndarray batch + (n, K)
        Token norms.
    speed : ndarray batch + (n, K)
        Token speeds :math:`|\\dot\\theta_k|` of the continuous field.
    X : ndarray batch + (K, n, d) or None
        Tokens, only with ``save_x=True``.
    merged : int
        Tokens merged into a coincident one over the whole batch
        (:mod:`symdyn.particles.merging`; continuous dynamics only). A merged token
        reports its group's ``r``, ``speed`` and ``X``.
    bound : dict of str to ndarray of bool, each batch + (K,)
        Keys ``"gamma"``, ``"epsilon"``, ``"min_cosine"``, ``"linked"``,
        ``"clusters"``: ``True`` where, after a merge, the value is only a
        bound (that of the merged state; :mod:`symdyn.particles.merging` gives the
        interval), ``False`` where a merge changed it by less than the merge
        distance relative (all ``False`` without merging).
    spread : ndarray batch + (K,)
        The most ``epsilon`` can lack through merged tokens,
        ``(offset**2).sum(-2) / (n - 1)``: where ``bound["epsilon"]`` is set,
        the true value is at most ``epsilon + spread``.
    offset : ndarray batch + (n, K)
        How far each token's direction lay from the one it reports (its
        group's representative) when it was merged; 0 for a token never merged.
    stiff_steps : int
        Steps taken with the Rosenbrock-W method over the whole batch
        (``method="auto"``; the rest are DOP853 steps).
    clock : {"t", "log"}
        ``"log"``: ``t`` holds :math:`\\tau = \\log(1 + t)`, ``r`` holds
        :math:`\\log r` and ``speed`` is :math:`|d\\theta/d\\tau|`
        (:mod:`symdyn.model.log_clock`).

    Examples
    --------
    >>> import symdyn as sd
    >>> sim = sd.simulate("post-ln", sd.init.sphere(6, 3, batch=2, seed=0), beta=1.0,
    ...                   t=[0.0, 50.0])
    >>> sim.gamma.shape, sim.clusters[:, -1].tolist()       # one cluster each
    ((2, 2), [1, 1])
    """

    t: np.ndarray
    gamma: np.ndarray
    epsilon: np.ndarray
    min_cosine: np.ndarray
    clusters: np.ndarray
    linked: np.ndarray
    r: np.ndarray
    speed: np.ndarray
    X: np.ndarray | None
    cluster_threshold: float
    steps: int
    nfev: int
    message: str
    merged: int = 0
    clock: str = "t"
    stiff_steps: int = 0
    bound: dict = dataclasses.field(default_factory=dict)
    spread: np.ndarray | None = None
    offset: np.ndarray | None = None

    def _repr_html_(self) -> str:
        return summary_html("Simulation (sd.simulate)", simulation_rows(self), self.t,
                            self.gamma)


# --------------------------------------------------------------------------
# the vector field
# --------------------------------------------------------------------------

class _Field:
    """(d theta/dt, dr/dt) of a batch, phase by phase."""

    def __init__(self, s, w, attention, breakpoints, period, log=False, dtype=np.float64):
        self.s, self.w, self.attention, self.dtype = s, w, attention, dtype
        # log clock (symdyn.model.log_clock): the time is tau, rad holds u = log r - tau
        self.log = log
        self.laws = log_clock.numeric(s) if log else s.numeric()
        self.scheme_bps = (log_clock.breakpoints(s) if log
                           else np.asarray(s.breakpoints, dtype=float))
        self.bps = np.asarray(breakpoints, dtype=float)
        starts = np.concatenate([[0.0], self.bps])
        self.law_of_phase = np.searchsorted(self.scheme_bps, starts, side="right")
        self.draw_of_phase = (np.floor(starts / period).astype(int) if period
                              else np.zeros(len(starts), dtype=int))
        self.raw = s.layer == NONE.layer
        self.tau = _temperature(s, log)     # None: the attention runs at beta
        self._buffers = {}
        self.fault = None       # why the last refused evaluation had no field

    def _workspace(self, m, n, d):
        key = (m, n, d)
        if key not in self._buffers:
            if len(self._buffers) > 8:
                self._buffers.clear()
            self._buffers[key] = tuple(np.empty(shape, dtype=self.dtype)
                                       for shape in ((m, n, d), (m, n, n), (m, n, d)))
        return self._buffers[key]

    def phase_at(self, times, side="left"):
        return np.searchsorted(self.bps, times, side=side)

    def __call__(self, tm, theta, rad, beta, phase, draw=None, mass=None):
        """Field of members that share ``phase``: arrays (m, ...).

        ``draw`` picks the weights (default: the draw of the phase); ``mass``
        (m, n) weighs merged tokens (:mod:`symdyn.particles.merging`; mass 0 is frozen). The
        returned direction field lives in a reused buffer: valid until the
        next call. Tokens whose speed is not finite and > 0, or whose ``r``
        is not > 0, get a NaN field (a step through them is rejected), and
        ``fault`` says why.
        """
        m, n, d = theta.shape
        # The field of unit directions, read at theta/|theta|: between projections
        # the stages leave the sphere slightly, and P_theta with |theta| != 1
        # damps the normal direction so strongly that it, not the dynamics,
        # limited explicit steps near a cluster (4.7x more evaluations, Post-LN).
        theta = theta / np.sqrt(np.einsum("mnd,mnd->mn", theta, theta))[..., None]
        qkv, ident = of_weights(self.w, self.draw_of_phase[phase] if draw is None else draw)
        Y = theta * rad[..., None] if self.raw else theta
        out, work, tmp = self._workspace(m, n, d)
        # the temperature law: the attention (and a, |A| in the laws) at beta tau(t)
        hot, hot_fault = (beta, None) if self.tau is None else self._hot(tm, beta)
        if ident:
            # A = A_off + own * theta_k: P_theta A = A_off - <A_off, theta> theta
            # exactly, without cancelling the token's own O(1) term (attention.py)
            A, own = _attention(Y, hot, None, self.attention, True, out=out, work=work,
                                mass=mass, split_self=True)
            if self.raw:
                own = own * rad
            along = np.einsum("mnd,mnd->mn", A, theta)
            a_k = own + along
            norm = np.sqrt(np.maximum(np.einsum("mnd,mnd->mn", A, A)
                                      + own * (own + 2 * along), 0.0))
        else:
            A = _attention(Y, hot, qkv, self.attention, False, out=out, work=work,
                           mass=mass)
            along = a_k = np.einsum("mnd,mnd->mn", A, theta)
            norm = np.sqrt(np.einsum("mnd,mnd->mn", A, A))
        speed, radial = self.laws[self.law_of_phase[phase]]
        args = (tm[:, None], rad, a_k, norm, n, beta[:, None])
        s = np.broadcast_to(speed(*args), a_k.shape)
        rho = np.broadcast_to(radial(*args), a_k.shape)
        np.multiply(theta, along[..., None], out=tmp)
        A -= tmp
        A *= (1.0 / s)[..., None]
        # s = +inf is a law that outgrew floats: 1/s = 0, its exact limit.
        bad = ~((s > 0) & (np.isfinite(rad) if self.log else rad > 0))
        if hot_fault:
            bad |= ~np.isfinite(hot)[:, None]
        if bad.any():
            self._note(bad, tm, s, rad, theta)
            self.fault = hot_fault or self.fault
            A[bad] = np.nan
            rho = np.where(bad, np.nan, rho)
        if mass is not None:
            A[mass == 0] = 0.0
            rho = np.where(mass == 0, 0.0, rho)
        return A, rho

    def _hot(self, tm, beta):
        """``(beta tau(t), fault)`` of each member (the log clock: t = e^tau - 1);
        where tau is not finite and > 0, NaN and why (the step is rejected)."""
        with np.errstate(all="ignore"):
            tau = np.broadcast_to(np.asarray(self.tau(tm), dtype=float), tm.shape)
        ok = np.isfinite(tau) & (tau > 0)
        if ok.all():
            return beta * tau, None
        m = np.flatnonzero(~ok)[0]
        fault = (f"the temperature law tau = {self.s.temperature} of {self.s.name} is "
                 f"{tau[m]:.6g} at {'tau' if self.log else 't'} = {tm[m]:.6g}; it must be "
                 f"finite and > 0 at every simulated time")
        return np.where(ok, beta * tau, np.nan), fault

    def _note(self, bad, tm, s, rad, theta):
        """Set ``fault`` from the first refused token whose state is finite (a
        non-finite state is the integrator's trial, not the law's fault)."""
        finite = np.isfinite(theta).all(axis=(1, 2)) & np.isfinite(rad).all(axis=1)
        rows = np.flatnonzero(bad.any(axis=1) & finite)
        if rows.size:
            m = rows[0]
            k = np.flatnonzero(bad[m])[0]
            self.fault = (underflow(self.s, rad[m, k], f"at t = {tm[m]:.6g}")
                          if not self.log and abs(rad[m, k]) < R_UNDERFLOW
                          else radial_fault(self.s, rad[m, k], tm[m])
                          if not (self.log or rad[m, k] > 0)
                          else speed_fault(self.s, s[m, k], tm[m]))
            if self.log:
                self.fault += " (log clock: the time is tau = log(1 + t), the speed s e^-tau)"

    def grouped(self, tm, theta, rad, beta, phase, draw=None, mass=None):
        if np.all(phase == phase[0]):
            return self(tm, theta, rad, beta, int(phase[0]), draw, mass)
        dtheta, drho = np.empty_like(theta), np.empty_like(rad)
        for p in np.unique(phase):
            sel = phase == p
            dtheta[sel], drho[sel] = self(tm[sel], theta[sel], rad[sel], beta[sel], int(p),
                                          mass=None if mass is None else mass[sel])
        return dtheta, drho


def _temperature(s, log):
    """The temperature law tau as a numpy function of the field's time (the log
    clock's tau: t = e^tau - 1, exponentials combined), or None when it is 1."""
    if not s.tempered:
        return None
    law = s.temperature
    if log:
        moved = law.subs(t_sym, sp.exp(log_clock.TAU) - 1)
        law = sp.powsimp(sp.expand_power_exp(moved), combine="exp")
    return lambdify((log_clock.TAU if log else t_sym,), law, "temperature")


# --------------------------------------------------------------------------
# observables
# --------------------------------------------------------------------------

class _Recorder:
    """Observables at the output times; NaN (clusters: -1) until recorded."""

    def __init__(self, M, n, d, K, threshold, save_x):
        self.gamma, self.epsilon, self.min_cos, self.linked = np.full((4, M, K), np.nan)
        self.clusters = np.full((M, K), -1)
        self.r, self.speed = np.full((2, M, n, K), np.nan)
        self.X = np.full((M, K, n, d), np.nan) if save_x else None
        self.threshold = threshold
        self.bound = {k: np.zeros((M, K), dtype=bool) for k in merging.PAIRWISE}
        self.spread = np.zeros((M, K))
        self.offset = np.zeros((M, n, K))

    def observe(self, field, k, members, tk, theta, rad, beta, draw, where, merged=None,
                shift=0.0):
        """Record output ``k`` at time ``tk``: the speeds are the field's there
        (``r`` is recorded as ``rad + shift``: the log clock's ``u + tau``).

        ``merged`` (a :class:`~symdyn.particles.merging.Coalescence`): every original
        token reports its representative's state and speed, and the pairwise
        observables that are only bounds are flagged. A non-finite
        token or speed, or a law the field refused, is an ``ArithmeticError``
        (``where`` tells the reader what to change).
        """
        tm = np.full(len(members), tk)
        field.fault = None
        mass = None if merged is None else merged.mass[members]
        dth, _ = field.grouped(tm, theta, rad, beta, field.phase_at(tm), draw, mass)
        speed = np.linalg.norm(dth, axis=-1)
        if merged is not None:
            theta, rad, speed = merged.expand(members, theta, rad, speed)
        if not (np.isfinite(theta).all() and np.isfinite(speed).all()):
            raise ArithmeticError("simulate: " + (field.fault or f"non-finite tokens or "
                                                               f"velocities at {where}"))
        self(k, members, theta, rad + shift, speed)
        if merged is not None:
            flags, self.spread[members, k] = merged.bounds(members, theta)
            self.offset[members, :, k] = merged.offset[members]
            for name, flag in flags.items():
                self.bound[name][members, k] = flag

    def __call__(self, k, members, theta, rad, speed):
        n = theta.shape[1]
        G = theta @ np.swapaxes(theta, -1, -2)
        diag = np.einsum("mnn->mn", G)
        self.gamma[members, k] = (G.sum(axis=(-1, -2)) - diag.sum(-1)) / (n * (n - 1))
        dev = theta - theta.mean(axis=1, keepdims=True)
        self.epsilon[members, k] = np.einsum("mnd,mnd->m", dev, dev) / (n - 1)
        idx = np.arange(n)
        G[:, idx, idx] = np.inf
        self.min_cos[members, k] = G.min(axis=(-1, -2))
        G[:, idx, idx] = 1.0
        self.linked[members, k] = ((G >= self.threshold).sum(axis=(-1, -2)) - n) / (n * (n - 1))
        for i, m in enumerate(members):
            self.clusters[m, k] = connected_components(G[i] >= self.threshold,
                                                       directed=False)[0]
        self.r[members, :, k] = rad
        self.speed[members, :, k] = speed
        if self.X is not None:
            self.X[members, k] = theta * rad[..., None]


# --------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------

def resolve(scheme: SchemeLike) -> Scheme:
    """A built-in name, ``"none"`` (no normalization) or a Scheme."""
    if not isinstance(scheme, (str, Scheme)):
        raise ValueError(f"scheme: expected a name or a Scheme, got {shown(scheme)}")
    if scheme == "none":
        return NONE
    return get_scheme(scheme)


def _concrete(s):
    """Refuse laws numpy cannot evaluate: undefined functions (``alpha(t)``) or
    symbols other than t, r, a, A_norm, n, beta."""
    for name, law in (("speed", s.speed), ("radial", s.radial)):
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


def _precision(dtype, rtol, atol, cluster_threshold):
    """``dtype`` (float64 or float32) with its checked tolerances and threshold."""
    want = _as_dtype(dtype)         # (np.dtype(k) == None is True: float64 is the default)
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
    return kind, rtol, atol, threshold


def _as_dtype(dtype):
    if not isinstance(dtype, (type, str, np.dtype)):     # np.dtype(an array): its dtype
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def _check_clock(clock, s, step):
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


def _shape(X0):
    """``X0`` as an array (not yet copied) and its shape ``(batch, n, d)``."""
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


def _tokens(X, shape):
    X = real_array(X, "X0").reshape(shape)
    norms = np.linalg.norm(X, axis=-1)
    if np.any(norms == 0):
        b, k = np.argwhere(norms == 0)[0]
        raise ValueError(f"X0: token {k} (batch {b}) is zero; N(x) = x/|x| needs x != 0")
    return X, norms


def _check_law(s, times, n, beta, step, clock):
    """The continuous dynamics: refuse a speed law that oscillates more than
    any step size resolves, or vanishes, on the run's span of t
    (:mod:`symdyn.model.law_limits`); layers read the law at their times only."""
    if step is None:
        T = times[-1] if clock == "t" else float(np.expm1(min(times[-1], 709.0)))
        check_speed(s, T, {n_sym: np.array([float(n)]), b_sym: beta}, "simulate")


def _check_underflow(s, rec, times, clock):
    """Token norms below :data:`~symdyn.model.law_limits.R_UNDERFLOW` are rounding
    (0 or subnormal), not the law's ``r``: an ``ArithmeticError`` naming the
    first output time (the log clock holds ``log r``: nothing underflows)."""
    low = np.abs(rec.r) < R_UNDERFLOW if clock == "t" else np.zeros(1, dtype=bool)
    if low.any():
        m, k, i = np.argwhere(low)[0]
        raise ArithmeticError("simulate: " + underflow(s, rec.r[m, k, i],
                                                       f"by t = {times[i]:.6g}"))


def _workspace(M, n, d, K, span, step, save_x):
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


#: A layer loop estimated (from below) to take longer than this is refused.
MAX_DAYS = 1
#: Output times of one simulate: each costs the observables of every member
#: in Python (about 1 ms a member; 1e4 times took 11 s), so more are refused.
MAX_TIMES = 10_000
#: The continuous dynamics runs to t (tau with clock="log") <= MAX_TIME:
#: beyond about 1e155 the batched integrator's steps stop growing (t = 1e250
#: did not finish in minutes, where 1e150 takes under a second).
MAX_TIME = 1e150


def layer_times(t, step, flops=0.0):
    """Output times; with ``step``, multiples of it on distinct layers, and a
    layer count that can run (from below: 10 us a layer plus ``flops`` a layer
    at 1e12 flop/s); at most :data:`MAX_TIMES` times, and the continuous
    dynamics (``step=None``) to :data:`MAX_TIME`."""
    times = output_times(t, MAX_TIMES, "each costs about 1 ms of Python a member")
    if step is None:
        if times[-1] > MAX_TIME:
            raise ValueError(f"t: the continuous dynamics runs to t <= {MAX_TIME:g} (tau "
                             f"with clock='log'): beyond, its steps stop growing; got "
                             f"{times[-1]:g}")
        return times
    layers = times / step
    days = layers[-1] * (1e-5 + flops / 1e12) / 86400
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
                    "save_x", "cluster_threshold", "merge", "clock", "dtype", "method", "params")


def simulate(scheme: SchemeLike, X0: ArrayLike, beta: ArrayLike, t: ArrayLike,
             weights: Weights | tuple | None = None, attention: str = "softmax",
             step: float | None = None, *, rtol: float | None = None,
             atol: float | None = None,
             save_x: bool = False, cluster_threshold: float = 0.999,
             merge: float | None = None, clock: str = "t", dtype=np.float64,
             method: str = "auto", params: dict | None = None, **legacy) -> Simulation:
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
    weights : None, (Q, K, V) or sd.weights.Weights
        ``None``: identity. Each matrix ``(d, d)`` or ``(heads, d, d)``.
    attention : {"softmax", "unnormalized"}
    step : float, optional
        ``None``: the continuous dynamics with error control (``rtol``,
        ``atol``); ``h > 0``: the layer rules with residual step ``h``.
    rtol, atol : float, optional
        Relative and absolute tolerances per step, in ``(0, 1)``; default
        ``1e-10, 1e-12`` (float64), ``1e-5, 1e-6`` (float32, where rtol must
        be at least ``1e-6``).
    save_x : bool
        Also return the tokens at the output times.
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
        met); a value is then only a bound, and ``Simulation.bound`` says so.
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
    if isinstance(s, Scheme):
        s = s.bind(**run_parameters(s, params, legacy, "simulate", SIMULATE_OPTIONS))
    _concrete(s)
    check_attention(attention)
    step = None if step is None else number(step, "step", 0, low_open=True)
    dtype, rtol, atol, threshold = _precision(dtype, rtol, atol, cluster_threshold)
    largest = merging.LARGEST[np.dtype(dtype).name]
    merge = (min(merging.PER_RTOL * rtol, largest) if merge is None
             else number(merge, "merge", 0, largest))
    _check_clock(clock, s, step)
    if not isinstance(method, str) or method not in ("auto", "dop853"):
        raise ValueError(f"method must be 'auto' or 'dop853', got {shown(method)}")
    if not isinstance(save_x, (bool, np.bool_)):
        raise ValueError(f"save_x must be True or False, got {shown(save_x)}")
    X, (M, n, d) = _shape(X0)
    single = X.ndim == 2
    b = finite_array(beta, "beta", 0.0)
    try:
        b = np.broadcast_to(b, (M,)).copy()
    except ValueError:
        raise ValueError(f"beta must be a number or an array of shape ({M},), "
                         f"got {shown(beta)}") from None
    w = None if weights is None else as_weights(weights, d)
    if clock == "log" and w is not None and not w.tied:
        raise ValueError("clock: 'log' needs tied weights (untied draws change at every "
                         "unit of t)")
    # Q = K = V = I: every velocity lies in span(x_1..x_n), so the flow is the
    # same in orthonormal coordinates of that span (R^n): exact, and d/n times
    # cheaper. Observables are rotation invariant.
    span = (w is None or w.identity) and d > n
    heads = 1 if w is None else w.Q.shape[1]
    full = 0 if w is None or w.identity else 1.5 * d        # projections Q, K, V
    times = layer_times(t, step, flops=4 * M * heads * n * d * (n + full))
    _workspace(M, n, d, len(times), span, step, save_x)
    _check_law(s, times, n, b, step, clock)
    X, norms = _tokens(X, (M, n, d))

    theta = X / norms[..., None]
    rad = np.ones((M, n)) if s.starts_on_sphere else norms
    basis = None
    if span:
        basis, _ = np.linalg.qr(np.swapaxes(theta, -1, -2))      # (M, d, n)
        theta = theta @ basis
        w = identity(n, heads)
    elif w is None:
        w = identity(d)
    theta, rad, w = theta.astype(dtype), rad.astype(dtype), w.astype(dtype)
    rec = _Recorder(M, n, theta.shape[-1], len(times), threshold, save_x)
    if step is None:
        steps, nfev, msg, merged, stiff_steps = _continuous(
            s, w, attention, theta, rad, b, times, rtol, atol, rec, merge, clock == "log",
            method)
    else:
        steps, nfev, msg = _layers(s, w, attention, theta, rad, b, times, step, rec)
        merged = stiff_steps = 0

    _check_underflow(s, rec, times, clock)
    if np.isnan(rec.gamma).any():      # never return a time that was not computed
        raise ArithmeticError(f"simulate: no result at t = {times[np.isnan(rec.gamma).any(0)]}")
    if basis is not None and save_x:
        rec.X = rec.X @ np.swapaxes(basis, -1, -2)[:, None]
    def out(x):
        return x[0] if single else x
    return Simulation(times, out(rec.gamma), out(rec.epsilon), out(rec.min_cos),
                      out(rec.clusters), out(rec.linked),
                      out(rec.r), out(rec.speed), None if rec.X is None else out(rec.X),
                      threshold, steps, nfev, msg, merged, clock, stiff_steps,
                      {k: out(v) for k, v in rec.bound.items()}, out(rec.spread),
                      out(rec.offset))


# --------------------------------------------------------------------------
# continuous dynamics
# --------------------------------------------------------------------------

def _continuous_field(s, w, attention, T, log, dtype):
    """The field of a continuous run to ``T`` and its breakpoints (untied
    weights: a new draw every unit of time)."""
    period = None
    unit_bps = []
    if not w.tied:
        if w.draws < np.ceil(T):
            raise ValueError(f"weights: untied weights hold {w.draws} draws but t "
                             f"reaches {T:g} (one draw per unit of time)")
        period = 1.0
        unit_bps = list(np.arange(1.0, np.ceil(T)))
    bps = sorted(set(s.breakpoints) | set(unit_bps))
    if log:
        bps = sorted(log_clock.breakpoints(s))
    return _Field(s, w, attention, bps, period, log, dtype), bps


def _pace(field, merged, beta, clock, log):
    """``merged.pace``: member m's direction field at its latest time ``clock[m]``,
    and the clock's scale (t; the log clock: 1, tau being log t already)."""
    def pace(m, th, rr):
        tm = clock[m:m + 1]
        v, _ = field.grouped(tm, th[None], rr[None], beta[m:m + 1], field.phase_at(tm),
                             mass=merged.mass[m:m + 1])
        return v[0].copy(), 1.0 if log else float(tm[0])
    return pace


def _continuous(s, w, attention, theta, rad, beta, times, rtol, atol, rec, merge, log,
                method):
    M, n, d = theta.shape
    field, bps = _continuous_field(s, w, attention, times[-1], log, theta.dtype)
    if log:
        rad = np.log(rad)           # u = log r - tau at tau = 0
    on_sphere = s.on_sphere
    nd = n * d

    def unpack(y):
        return y[:, :nd].reshape(-1, n, d), y[:, nd:]

    merged = merging.Coalescence(M, n, merge, log_norm=log, threshold=rec.threshold)
    clock = np.zeros(M)             # each member's latest time (tau: log clock)
    merged.pace = _pace(field, merged, beta, clock, log)

    def rhs(tm, y, phase, bk, mk, member):
        clock[member] = tm
        th, rr = unpack(y)
        dth, drr = field.grouped(tm, th, rr, bk, phase, mass=mk)
        out = np.empty_like(y)
        out[:, :nd] = dth.reshape(len(y), nd)
        out[:, nd:] = 0.0 if on_sphere else drr
        return out

    def project(y):
        th, rr = unpack(y)
        th = th / np.linalg.norm(th, axis=-1, keepdims=True)
        y = y.copy()
        y[:, :nd] = th.reshape(len(y), nd)
        return y

    def record(k, members, y):
        th, rr = unpack(y)
        rec.observe(field, k, members, times[k], th, rr, beta[members], None,
                    f"t = {times[k]:g}", merged, times[k] if log else 0.0)

    def refresh(members, y):
        th, rr = unpack(y)
        changed = merged.merge(members, th, rr)
        y[:, :nd], y[:, nd:] = th.reshape(len(y), nd), rr     # unpack may copy
        return changed, merged.live_dims(members, d + 1)

    y0 = np.concatenate([theta.reshape(M, nd), rad], axis=1)
    with np.errstate(all="ignore"):
        sol = integrate(rhs, times, y0, (beta, merged.mass, np.arange(M)), rtol=rtol,
                        atol=atol, breakpoints=bps, project=project, record=record,
                        refresh=refresh if merge else None, stiff=method == "auto")
    if not sol.success:     # a law the field refused is the likely cause
        raise ArithmeticError(f"simulate: {field.fault or sol.message}")
    return (int(sol.nsteps.sum()), sol.nfev + merged.evaluations, sol.message,
            merged.merges, int(sol.stiff_steps.sum()))


# --------------------------------------------------------------------------
# layers
# --------------------------------------------------------------------------

def _layers(s, w, attention, theta, rad, beta, times, h, rec):
    M, n, d = theta.shape
    layer_of = np.round(times / h).astype(int)
    total = int(layer_of[-1])
    if not w.tied and w.draws < total:
        raise ValueError(f"weights: untied weights hold {w.draws} draws but {total} "
                         f"layers are needed")
    field = _Field(s, w, attention, s.breakpoints, None, dtype=theta.dtype)
    x = theta * rad[..., None]
    out = {int(k): i for i, k in enumerate(layer_of)}
    members = np.arange(M)

    def where(k):
        return f"layer {k} (t = {k * h:g}) with step = {h:g}; use a smaller step"

    with np.errstate(all="ignore"):
        for k in range(total + 1):
            if not np.all(np.isfinite(x)):
                raise ArithmeticError("simulate: " + (field.fault or
                                                      f"non-finite tokens at {where(k)}"))
            if k in out:
                rec.observe(field, out[k], members, k * h, unit(x),
                            np.linalg.norm(x, axis=-1), beta, min(k, w.draws - 1), where(k))
            if k == total:
                break
            tk = np.float64(k * h)          # laws divide as numpy does: 1/0 = inf

            def attend(y, k=k):
                qkv, ident = of_weights(w, k)
                return _attention(y, beta, qkv, attention, ident)

            def continuous(y, k=k, tk=tk):
                field.fault = None
                phase = int(field.phase_at(np.array([tk]), side="right")[0])
                return field(np.full(M, tk), unit(y), np.linalg.norm(y, axis=-1), beta,
                             phase, draw=k)

            x = s.layer.update(s, x, h, tk, attend, continuous)
    return total, total, f"{total} layers of step {h:g}"
