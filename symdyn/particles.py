"""The full n-particle system: continuous dynamics and the layer rules.

Continuous (``step=None``), for every token (DESIGN.md section 1):

.. math:: \\dot\\theta_k = \\frac{1}{s_k} P_{\\theta_k} A_k, \\qquad
          \\dot r_k = \\rho_k,

with the scheme's own speed law :math:`(s, \\rho)` (the same
:class:`~symdyn.schemes.Scheme` the symbolic side reads; nothing here uses
the reduction). The batch is one vectorized system with per-member adaptive
steps (:mod:`symdyn.integrate`); directions are renormalized after every
accepted step.

Layers (``step=h``): the rules of DESIGN.md's table, ``t_k = k h``::

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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp
from scipy.sparse.csgraph import connected_components

from .attention import attention as _attention
from .attention import of_weights
from .checks import finite_array, output_times
from .integrate import integrate
from .schemes import Scheme
from .schemes import scheme as get_scheme
from .symbols import a, r, t
from .weights import as_weights, identity

#: The baseline without normalization (attention on the raw tokens).
NONE = Scheme("none", r, a, sp.Integer(0), layer="none")
KINDS = ("softmax", "unnormalized")


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


# --------------------------------------------------------------------------
# the vector field
# --------------------------------------------------------------------------

class _Field:
    """(d theta/dt, dr/dt) of a batch, phase by phase."""

    def __init__(self, s, w, kind, breakpoints, period):
        self.s, self.w, self.kind = s, w, kind
        self.laws = s.numeric()
        self.scheme_bps = np.asarray(s.breakpoints, dtype=float)
        self.bps = np.asarray(breakpoints, dtype=float)
        starts = np.concatenate([[0.0], self.bps])
        self.law_of_phase = np.searchsorted(self.scheme_bps, starts, side="right")
        self.draw_of_phase = (np.floor(starts / period).astype(int) if period
                              else np.zeros(len(starts), dtype=int))
        self.raw = s.layer == "none"
        self._buffers = {}

    def _workspace(self, m, n, d):
        key = (m, n, d)
        if key not in self._buffers:
            if len(self._buffers) > 8:
                self._buffers.clear()
            self._buffers[key] = (np.empty((m, n, d)), np.empty((m, n, n)),
                                  np.empty((m, n, d)))
        return self._buffers[key]

    def phase_at(self, times, side="left"):
        return np.searchsorted(self.bps, times, side=side)

    def __call__(self, tm, theta, rad, beta, phase, draw=None):
        """Field of members that share ``phase``: arrays (m, ...).

        ``draw`` picks the weights (default: the draw of the phase). The
        returned direction field lives in a reused buffer: valid until the
        next call.
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
        A = _attention(Y, beta, qkv, self.kind, ident, out=out, work=work)
        a_k = np.einsum("mnd,mnd->mn", A, theta)
        norm = np.sqrt(np.einsum("mnd,mnd->mn", A, A))
        speed, radial = self.laws[self.law_of_phase[phase]]
        args = (tm[:, None], rad, a_k, norm, n, beta[:, None])
        s = np.broadcast_to(speed(*args), a_k.shape)
        rho = np.broadcast_to(radial(*args), a_k.shape)
        np.multiply(theta, a_k[..., None], out=tmp)
        A -= tmp
        A *= (1.0 / s)[..., None]
        return A, rho

    def grouped(self, tm, theta, rad, beta, phase):
        if np.all(phase == phase[0]):
            return self(tm, theta, rad, beta, int(phase[0]))
        dtheta, drho = np.empty_like(theta), np.empty_like(rad)
        for p in np.unique(phase):
            sel = phase == p
            dtheta[sel], drho[sel] = self(tm[sel], theta[sel], rad[sel], beta[sel], int(p))
        return dtheta, drho


# --------------------------------------------------------------------------
# observables
# --------------------------------------------------------------------------

class _Recorder:
    def __init__(self, M, n, d, K, threshold, save_x):
        self.gamma = np.empty((M, K))
        self.epsilon = np.empty((M, K))
        self.min_cos = np.empty((M, K))
        self.clusters = np.empty((M, K), dtype=int)
        self.linked = np.empty((M, K))
        self.r = np.empty((M, n, K))
        self.speed = np.empty((M, n, K))
        self.X = np.empty((M, K, n, d)) if save_x else None
        self.threshold = threshold

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

def resolve(scheme) -> Scheme:
    """A built-in name, ``"none"`` (no normalization) or a Scheme."""
    if isinstance(scheme, str) and scheme == "none":
        return NONE
    return get_scheme(scheme)


def _tokens(X0):
    try:
        X = np.array(X0, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("X0: expected a numeric array (n, d) or (batch, n, d)") from None
    if X.ndim not in (2, 3):
        raise ValueError(f"X0 must have shape (n, d) or (batch, n, d), got {X.shape}")
    single = X.ndim == 2
    X = X[None] if single else X
    if X.shape[1] < 2 or X.shape[2] < 1 or X.shape[0] < 1:
        raise ValueError(f"X0 needs n >= 2 tokens in d >= 1 dimensions, got {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X0 has non-finite entries")
    norms = np.linalg.norm(X, axis=-1)
    if np.any(norms == 0):
        b, k = np.argwhere(norms == 0)[0]
        raise ValueError(f"X0: token {k} (batch {b}) is zero; N(x) = x/|x| needs x != 0")
    return X, single, norms


def _times(t, step):
    times = output_times(t)
    if step is not None:
        layers = times / step
        if np.any(np.abs(layers - np.round(layers)) > 1e-9 * np.maximum(1, layers)):
            raise ValueError(f"t: output times must be multiples of step = {step}")
    return times


def simulate(scheme, X0, beta, t, weights=None, attention="softmax", step=None, *,
             rtol=1e-10, atol=1e-12, save_x=False, cluster_threshold=0.999) -> Simulation:
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
    save_x : bool
        Also return the tokens at the output times.
    cluster_threshold : float
        Cosine at or above which two tokens are linked in ``clusters``.

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
    if attention not in KINDS:
        raise ValueError(f"attention: must be one of {KINDS}, got {attention!r}")
    if step is not None:
        try:
            step = float(step)
        except (TypeError, ValueError):
            raise ValueError(f"step must be None or a number > 0, got {step!r}") from None
        if not (np.isfinite(step) and step > 0):
            raise ValueError(f"step must be None or a finite number > 0, got {step!r}")
    if not (0 <= cluster_threshold <= 1):
        raise ValueError(f"cluster_threshold must lie in [0, 1], got {cluster_threshold!r}")
    X, single, norms = _tokens(X0)
    M, n, d = X.shape
    b = finite_array(beta, "beta", 0.0)
    try:
        b = np.broadcast_to(b, (M,)).copy()
    except ValueError:
        raise ValueError(f"beta must be a number or an array of shape ({M},), "
                         f"got {beta!r}") from None
    times = _times(t, step)
    w = as_weights(weights, d)

    theta = X / norms[..., None]
    rad = np.ones((M, n)) if s.sphere_until > 0 else norms
    basis = None
    if w.identity and d > n:
        # Q = K = V = I: every velocity lies in span(x_1..x_n), so the flow
        # is the same in orthonormal coordinates of that span (R^n): exact,
        # and d/n times cheaper. Observables are rotation invariant.
        basis, _ = np.linalg.qr(np.swapaxes(theta, -1, -2))      # (M, d, n)
        theta = theta @ basis
        w = identity(n, w.Q.shape[1])
    rec = _Recorder(M, n, theta.shape[-1], len(times), float(cluster_threshold), save_x)
    if step is None:
        steps, nfev, msg = _continuous(s, w, attention, theta, rad, b, times, rtol, atol,
                                       rec)
    else:
        steps, nfev, msg = _layers(s, w, attention, theta, rad, b, times, step, rec)

    if basis is not None and save_x:
        rec.X = rec.X @ np.swapaxes(basis, -1, -2)[:, None]
    def out(x):
        return x[0] if single else x
    return Simulation(times, out(rec.gamma), out(rec.epsilon), out(rec.min_cos),
                      out(rec.clusters), out(rec.linked),
                      out(rec.r), out(rec.speed), None if rec.X is None else out(rec.X),
                      float(cluster_threshold), steps, nfev, msg)


# --------------------------------------------------------------------------
# continuous dynamics
# --------------------------------------------------------------------------

def _continuous(s, w, kind, theta, rad, beta, times, rtol, atol, rec):
    M, n, d = theta.shape
    T = times[-1]
    period = None
    unit_bps = []
    if not w.tied:
        period = 1.0
        unit_bps = list(np.arange(1.0, np.ceil(T)))
        if w.draws < np.ceil(T):
            raise ValueError(f"weights: untied weights hold {w.draws} draws but t "
                             f"reaches {T:g} (one draw per unit of time)")
    bps = sorted(set(s.breakpoints) | set(unit_bps))
    field = _Field(s, w, kind, bps, period)
    on_sphere = s.on_sphere
    nd = n * d

    def unpack(y):
        return y[:, :nd].reshape(-1, n, d), y[:, nd:]

    def rhs(tm, y, phase, bk):
        th, rr = unpack(y)
        dth, drr = field.grouped(tm, th, rr, bk, phase)
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
        ph = field.phase_at(np.full(len(members), times[k]))
        dth, _ = field.grouped(np.full(len(members), times[k]), th, rr, beta[members], ph)
        rec(k, members, th, rr, np.linalg.norm(dth, axis=-1))

    y0 = np.concatenate([theta.reshape(M, nd), rad], axis=1)
    with np.errstate(all="ignore"):
        sol = integrate(rhs, times, y0, (beta,), rtol=rtol, atol=atol, breakpoints=bps,
                        project=project, record=record)
    if not sol.success:
        raise ArithmeticError(f"simulate: {sol.message}")
    return int(sol.nsteps.sum()), sol.nfev, sol.message


# --------------------------------------------------------------------------
# layers
# --------------------------------------------------------------------------

def _unit(v):
    return v / np.sqrt(np.einsum("...i,...i->...", v, v))[..., None]


def _layers(s, w, kind, theta, rad, beta, times, h, rec):
    M, n, d = theta.shape
    layer_of = np.round(times / h).astype(int)
    total = int(layer_of[-1])
    if not w.tied and w.draws < total:
        raise ValueError(f"weights: untied weights hold {w.draws} draws but {total} "
                         f"layers are needed")
    field = _Field(s, w, kind, s.breakpoints, None)
    rule = s.layer
    ts = float(s.sphere_until) if rule == "mix-ln" else None
    alpha = (sp.lambdify(t, dict(s.params)["alpha"], "numpy") if rule == "ngpt" else None)
    speed_law = s.numeric()[0][0]
    x = theta * rad[..., None]
    out = {int(k): i for i, k in enumerate(layer_of)}

    def observe(k, x):
        if not np.all(np.isfinite(x)):
            raise ArithmeticError(f"simulate: non-finite tokens by layer {k} "
                                  f"(t = {k * h:g})")
        th = _unit(x)
        rr = np.linalg.norm(x, axis=-1)
        tk = k * h
        ph = field.phase_at(np.array([tk]))[0]
        dth, _ = field(np.full(M, tk), th, rr, beta, int(ph), draw=min(k, w.draws - 1))
        rec(out[k], np.arange(M), th, rr, np.linalg.norm(dth, axis=-1))

    def A(y, k):
        qkv, ident = of_weights(w, k)
        return _attention(y, beta, qkv, kind, ident)

    with np.errstate(all="ignore"):
        for k in range(total + 1):
            if k in out:
                observe(k, x)
            if k == total:
                break
            tk = k * h
            if rule == "post-ln" or (rule == "mix-ln" and tk < ts):
                x = _unit(x + h * A(x, k))
            elif rule in ("pre-ln", "mix-ln"):
                x = x + h * A(_unit(x), k)
            elif rule == "peri-ln":
                x = x + h * _unit(A(_unit(x), k))
            elif rule == "ngpt":
                x = _unit(x + h * float(alpha(tk)) * (_unit(A(x, k)) - x))
            elif rule == "sqrt-scaling":
                x = _unit(x + h * A(x, k) / float(speed_law(tk, 1, 0, 0, n, 0)))
            elif rule == "none":
                x = x + h * A(x, k)
            else:                                   # custom: generic rule
                th, rr = _unit(x), np.linalg.norm(x, axis=-1)
                ph = int(field.phase_at(np.array([tk]), side="right")[0])
                dth, drho = field(np.full(M, tk), th, rr, beta, ph, draw=k)
                x = (rr + h * drho)[..., None] * _unit(th + h * dth)
    return total, total, f"{total} layers of step {h:g}"
