"""The continuous vector field of the particles, phase by phase.

For every token (docs/model.md, section 1)

.. math:: \\dot\\theta_k = \\frac{1}{s_k} P_{\\theta_k} A_k, \\qquad
          \\dot r_k = \\rho_k,

with the scheme's own speed law :math:`(s, \\rho)` (the same
:class:`~symdyn.model.scheme.Scheme` the symbolic side reads) and ``A`` at
the inverse temperature :math:`\\beta\\tau(t)` of a tempered scheme (``a``
and ``|A|`` in the laws too). :data:`~symdyn.model.baseline.NONE` is the unnormalized baseline:
:math:`\\dot x_k = A_k(X)` with scores :math:`\\beta\\langle x_k, x_j\\rangle`. With ``causal`` the
attention is masked (token ``k`` sees ``j <= k``, :mod:`symdyn.particles.attention`).

Layer 2, particles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import sympy as sp

from ..base.arithmetic import einsum, row_norms
from ..model import log_clock
from ..model.baseline import NONE
from ..model.guards import lambdify
from ..model.law_limits import R_UNDERFLOW, underflow
from ..model.piecewise import phase_branches
from ..model.scheme import radial_fault, speed_fault
from ..model.symbols import A_norm, a
from ..model.symbols import t as t_sym
from .attention import attention as _attention
from .attention import of_weights


class Field:
    """(d theta/dt, dr/dt) of a batch, phase by phase."""

    def __init__(self, s, w, attention, breakpoints, period, log=False, dtype=np.float64,
                 causal=False):
        self.s, self.w, self.attention, self.dtype = s, w, attention, dtype
        self.causal = causal        # token k attends to j <= k (attention.py)
        # log clock (symdyn.model.log_clock): the time is tau, rad holds u = log r - tau
        self.log = log
        facts = _facts(s, log)
        self.laws, self.scheme_bps, self.constant = facts.laws, facts.breakpoints, facts.constant
        self.needs_a, self.needs_norm, self.tau = facts.needs_a, facts.needs_norm, facts.tau
        # the run's phases (None: the scheme's own)
        self.bps = (self.scheme_bps if breakpoints is None
                    else np.asarray(breakpoints, dtype=float))
        starts = np.concatenate([[0.0], self.bps])
        self.law_of_phase = np.searchsorted(self.scheme_bps, starts, side="right")
        self.draw_of_phase = (np.floor(starts / period).astype(int) if period
                              else np.zeros(len(starts), dtype=int))
        self.raw = s.layer == NONE.layer
        self.on_sphere = s.on_sphere and not log
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

    @property
    def shares_normalizers(self) -> bool:
        """Whether ``normalizers=`` can receive the softmax's
        :math:`Z_k = \\sum_j m_j e^{\\beta(\\langle\\theta_k, \\theta_j\\rangle - 1)}`
        (identity weights, softmax of unit tokens, no temperature law, no mask):
        then :math:`\\sum_{kj} e^{\\beta\\langle\\theta_k, \\theta_j\\rangle} =
        e^\\beta \\sum_k m_k Z_k`, the energy's sum, at no cost."""
        return (self.w.identity and self.attention == "softmax" and not self.raw
                and self.tau is None and not self.causal)

    def __call__(self, tm, theta, rad, beta, phase, draw=None, mass=None, normalizers=None):
        """Field of members that share ``phase``: arrays (m, ...).

        ``draw`` picks the weights (default: the draw of the phase); ``mass``
        (m, n) weighs merged tokens (:mod:`symdyn.particles.merging`; mass 0 is
        frozen); ``normalizers`` (m, n), where :attr:`shares_normalizers`,
        receives the softmax's row sums. The
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
        theta = theta / row_norms(theta)[..., None]
        law = self.law_of_phase[phase]
        # the temperature law: the attention (and a, |A| in the laws) at beta tau(t)
        hot, hot_fault = (beta, None) if self.tau is None else self._hot(tm, beta)
        A, a_k, norm = self._attend(theta, rad, hot, phase, draw, mass, normalizers)
        rho = self._laws(A, tm, rad, a_k, norm, beta, law, hot, hot_fault, theta)
        if mass is not None:                # merged tokens (mass 0) stand still
            rho = self._freeze(A, rho, mass)
        return A, rho

    def _laws(self, A, tm, rad, a_k, norm, beta, law, hot, hot_fault, theta):
        """Divide ``A`` (m, n, d) by the speed law in place; the radial rates.
        Refused tokens get NaN in both (``fault`` says why)."""
        m, n = rad.shape
        speed, radial = self.laws[law]
        constant = self.constant[law]
        args = (None if constant is not None and self.on_sphere      # no law to read
                else (tm[:, None], rad, a_k, norm, n, beta[:, None]))
        if constant is None:
            s = _full(speed(*args), (m, n))
            A *= (1.0 / s)[..., None]       # s = +inf outgrew floats: 1/s = 0, its limit
        else:                               # a positive number: nothing to check
            s = constant
            if constant != 1.0:
                A *= 1.0 / constant
        rho = self._zeros(m, n) if self.on_sphere else _full(radial(*args), (m, n))
        if hot_fault or self._suspect(s, rad, constant):
            bad = self._refused(s, rad, hot, (m, n))
            if bad.any():
                self._note(bad, tm, np.broadcast_to(s, (m, n)), rad, theta)
                self.fault = hot_fault or self.fault
                A[bad] = np.nan
                rho = np.where(bad, np.nan, rho)
        return rho

    def _freeze(self, A, rho, mass):
        """Merged tokens (mass 0) stand still: their rows of ``A`` set to 0."""
        frozen = mass == 0
        np.copyto(A, 0.0, where=frozen[..., None])     # A[frozen] = 0, cheaper
        return rho if self.on_sphere else np.where(frozen, 0.0, rho)

    @property
    def frames(self) -> bool:
        """Whether :meth:`frame` can integrate this field in the cluster's frame:
        identity weights, attention of the directions (not ``"none"``), no mask."""
        return self.w.identity and not self.raw and not self.causal

    def frame(self, tm, c, ell, u, rad, beta, phase, mass=None, out=None) -> np.ndarray:
        """The field in the frame of the configuration (:mod:`symdyn.particles.continuous`):
        ``theta_k = c + e^ell u_k``, ``c`` the centre (m, d), ``ell`` (m,) the
        log of the deviations' scale, ``u`` (m, n, d) the scaled deviations.

        Everything is read from the differences ``D_jk = theta_j - theta_k =
        e^ell (u_j - u_k)`` of the unit directions: the scores
        :math:`\\beta(\\langle\\theta_k, \\theta_j\\rangle - 1) = -\\beta|D_{jk}|^2/2`
        and :math:`P_{\\theta_k} A_k = \\sum_j w_{kj} (D_{jk} + \\tfrac12 |D_{jk}|^2
        \\theta_k)`, so the velocities keep their relative precision however
        close the tokens are (a Gram matrix of the directions would resolve
        ``|D|`` only to ~1e-8, ``epsilon`` to ~1e-16). Writes the rates into
        ``out`` (m, d + 1 + n d + n; None: only the speeds are wanted), laid
        out as the frame state (:class:`FrameState`: ``dc``, ``dell``, ``du``,
        ``rho``), and returns the speeds :math:`|\\dot\\theta_k| e^{-\\ell}` (m, n). The
        centre moves with the tangential mean velocity ``V``, :math:`\\dot c = P_c V`; the
        scale with the deviations' mean rate,
        :math:`\\dot\\ell = \\sum_k m_k \\langle u_k, w_k\\rangle / \\sum_k m_k |u_k|^2`
        (``w_k = (v_k - P_c V) e^{-ell}``), and :math:`\\dot u_k = w_k - \\dot\\ell\\, u_k`
        (so :math:`\\sum_k m_k |u_k|^2` is conserved), ``u`` in the last term read
        on its manifold (tangential mean 0, unit directions: off it, the
        modes constant in ``theta`` stand still in ``u``)."""
        m, n, d = u.shape
        # frame_directions, without its record (once an evaluation)
        ch, e = _centre(c), np.exp(ell)
        along = (u @ ch[:, :, None])[..., 0]
        uu = einsum("mnd,mnd->mn", u, u)
        uh = _deviations(u, ch, e, along, uu)
        hot, hot_fault = (beta, None) if self.tau is None else self._hot(tm, beta)
        cen = uh - _ones_row(n) @ uh / n                # differences stay, magnitudes O(1)
        sq = einsum("mnd,mnd->mn", cen, cen)
        D2 = cen @ np.swapaxes(cen, -1, -2)
        D2 *= -2.0
        D2 += sq[:, :, None]
        D2 += sq[:, None, :]
        np.maximum(D2, 0.0, out=D2)                     # |u_j - u_k|^2
        e2 = e * e
        W = np.multiply(D2, (-0.5 * hot * e2)[:, None, None])
        np.exp(W, out=W)                                # e^{beta (<theta_k, theta_j> - 1)}
        if mass is not None:
            W *= mass[:, None, :]
        if self.attention == "softmax":
            Z = np.add.reduce(W, axis=-1)
            if mass is not None:
                np.maximum(Z, _TINY, out=Z)
        else:                                           # Z = n e^{-beta}: e^{beta <,>} / n
            total = float(n) if mass is None else mass.sum(axis=-1)
            Z = np.broadcast_to((total * np.exp(-hot))[:, None], (m, n))
        W /= Z[..., None]
        diagonal = W.reshape(m, n * n)[:, ::n + 1]
        own = diagonal.copy()
        diagonal[...] = 0.0                             # the own term has D = 0
        off = np.add.reduce(W, axis=-1)
        P = W @ uh
        P -= uh * off[..., None]                        # sum_j w_kj (u_j - u_k)
        Q = 0.5 * einsum("mkj,mkj->mk", W, D2)          # sum_j w_kj |u_j - u_k|^2 / 2
        theta = ch[:, None, :] + e[:, None, None] * uh
        P += (e[:, None] * Q)[..., None] * theta        # P_theta A e^{-ell}
        a_k = norm = None
        if self.needs_a or self.needs_norm:
            a_k = own + off - e2[:, None] * Q           # <A_k, theta_k>
        if self.needs_norm:
            norm = np.sqrt(e2[:, None] * einsum("mnd,mnd->mn", P, P) + a_k * a_k)
        rho = self._laws(P, tm, rad, a_k, norm, beta, self.law_of_phase[phase], hot,
                         hot_fault, theta)
        if mass is not None:
            rho = self._freeze(P, rho, mass)
        speed = row_norms(P)
        # means over the tokens, weighed by their masses: (1, n) or (m, 1, n) @
        weigh = _ones_row(n) / n if mass is None else (mass / mass.sum(axis=-1)[:, None])[:, None]
        V = (weigh @ P)[:, 0]
        V -= (V[:, None, :] @ ch[:, :, None])[:, 0] * ch     # P_c V
        # the centre moves so that the tangential mean of u stays 0:
        # c' = e P_c V / <c, mean theta>, <c, mean theta> = 1 + e <c, mean u>
        mean = (weigh @ u)[:, 0]
        mean_along = (mean[:, None, :] @ ch[:, :, None])[:, 0, 0]
        V /= (1.0 + e * mean_along)[:, None]
        w = P - V[:, None, :]
        # dell = sum_k m_k <u_k, w_k> / sum_k m_k |u_k|^2 (the means' ratio)
        num = (weigh @ einsum("mnd,mnd->mn", u, w)[..., None])[:, 0, 0]
        den = (weigh @ uu[..., None])[:, 0, 0]
        dell = np.divide(num, den, out=np.zeros(m), where=den > 0)
        # du = w - dell u, with u read on its manifold: tangential mean 0 and
        # <c, u_k> = -e |u_k|^2 / 2 (unit directions). The same field there; off
        # it, the two modes constant in theta (an offset of every token, a token
        # off the sphere) stand still in u instead of growing like e^{-ell}
        # (from rounding: O(1) by t = 40 on Post-LN) and holding the steps at
        # ~1/|dell|.
        ref = u - mean[:, None, :]
        ref -= (along - mean_along[:, None] + 0.5 * e[:, None] * uu)[..., None] * ch[:, None, :]
        du = w - dell[:, None, None] * ref
        # below the floor the scale is no longer resolved: u and ell stand
        # still (their modes would hold the steps at ~1/|dell|), the values are
        # flagged (Recorder.resolve)
        if (e2 < 1e10 * FRAME_FLOOR).any():
            frozen = frame_epsilon(e, uh, np.ones((m, n)) if mass is None else mass) \
                < FRAME_FLOOR / 2
            dell = np.where(frozen, 0.0, dell)
            du[frozen] = 0.0
        if mass is not None:
            np.copyto(du, 0.0, where=(mass == 0)[..., None])
        if out is None:
            return speed
        np.multiply(e[:, None], V, out=out[:, :d])
        out[:, d] = dell
        out[:, d + 1:d + 1 + n * d] = du.reshape(m, n * d)
        out[:, d + 1 + n * d:] = rho
        return speed

    def frame_grouped(self, tm, c, ell, u, rad, beta, phase, mass=None,
                      out=None) -> np.ndarray:
        """:meth:`frame` of members in several phases."""
        if len(phase) == 1 or (phase == phase[0]).all():
            return self.frame(tm, c, ell, u, rad, beta, int(phase[0]), mass, out)
        speed = np.empty_like(rad)
        for p in np.unique(phase):
            sel = phase == p
            part = None if out is None else np.empty((int(sel.sum()), out.shape[1]),
                                                     dtype=out.dtype)
            speed[sel] = self.frame(tm[sel], c[sel], ell[sel], u[sel], rad[sel], beta[sel],
                                    int(p), None if mass is None else mass[sel], part)
            if out is not None:
                out[sel] = part
        return speed

    def _attend(self, theta, rad, hot, phase, draw, mass, normalizers=None):
        """``P_theta A`` (in a reused buffer), and ``a``, ``|A|`` where a law reads
        them (else None), at the inverse temperature ``hot`` (``beta tau(t)``)."""
        m, n, d = theta.shape
        qkv, ident = of_weights(self.w, self.draw_of_phase[phase] if draw is None else draw)
        Y = theta * rad[..., None] if self.raw else theta
        out, work, tmp = self._workspace(m, n, d)
        a_k = norm = None
        if ident:
            # A = A_off + own * theta_k: P_theta A = A_off - <A_off, theta> theta
            # exactly, without cancelling the token's own O(1) term (attention.py)
            A, own = _attention(Y, hot, None, self.attention, True, out=out, work=work,
                                mass=mass, split_self=True, causal=self.causal,
                                unit=not self.raw, row_sums=normalizers)
            if self.raw:
                own = own * rad
            along = einsum("mnd,mnd->mn", A, theta)
            if self.needs_a:
                a_k = own + along
            if self.needs_norm:
                norm = np.sqrt(np.maximum(einsum("mnd,mnd->mn", A, A)
                                          + own * (own + 2 * along), 0.0))
        else:
            A = _attention(Y, hot, qkv, self.attention, False, out=out, work=work,
                           mass=mass, causal=self.causal)
            along = a_k = einsum("mnd,mnd->mn", A, theta)
            if self.needs_norm:
                norm = row_norms(A)
        np.multiply(theta, along[..., None], out=tmp)
        A -= tmp
        return A, a_k, norm

    def _suspect(self, s, rad, constant) -> bool:
        """Might a token be refused? Two reductions (a NaN fails them too); the
        tokens themselves are found by :meth:`_refused` only then."""
        least = np.minimum.reduce                # ndarray.min without its wrapper
        if constant is None and not least(s, axis=None) > 0:
            return True
        if self.on_sphere or (s is rad and not self.log):   # r = 1, or s = r checked
            return False
        return not (math.isfinite(np.add.reduce(rad, axis=None)) if self.log
                    else least(rad, axis=None) > 0)

    def _refused(self, s, rad, hot, shape):
        """Tokens whose speed is not > 0 (or NaN), whose r is not > 0 (log clock:
        not finite), or whose temperature was refused."""
        bad = ~(np.broadcast_to(s, shape) > 0)
        if not self.on_sphere:
            bad |= ~(np.isfinite(rad) if self.log else rad > 0)
        if self.tau is not None:
            bad |= ~np.isfinite(hot)[:, None]
        return bad

    def _zeros(self, m, n):
        key = ("zeros", m, n)
        if key not in self._buffers:
            self._buffers[key] = np.zeros((m, n), dtype=self.dtype)
            self._buffers[key].flags.writeable = False
        return self._buffers[key]

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

    def grouped(self, tm, theta, rad, beta, phase, draw=None, mass=None, normalizers=None):
        if len(phase) == 1 or (phase == phase[0]).all():
            return self(tm, theta, rad, beta, int(phase[0]), draw, mass, normalizers)
        dtheta, drho = np.empty_like(theta), np.empty_like(rad)
        for p in np.unique(phase):
            sel = phase == p
            part = None if normalizers is None else np.empty(rad[sel].shape)
            dtheta[sel], drho[sel] = self(tm[sel], theta[sel], rad[sel], beta[sel], int(p),
                                          mass=None if mass is None else mass[sel],
                                          normalizers=part)
            if part is not None:
                normalizers[sel] = part
        return dtheta, drho


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What a field of a scheme needs: the compiled laws ``(speed, radial)``
    per phase, their breakpoints, each phase's speed when it is a positive
    number (else None), whether the laws read ``a`` and ``|A|``, and the
    temperature law :math:`\\tau(t)` (None when it is 1)."""
    laws: Any
    breakpoints: np.ndarray
    constant: list
    needs_a: bool
    needs_norm: bool
    tau: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameState:
    """Views of the rows of a frame state ``y`` (m, d + 1 + n d + n;
    :mod:`symdyn.particles.continuous`), or of its rates (:meth:`Field.frame`):
    the centre ``c`` (m, d), the log scale ``ell`` (m,), the scaled
    deviations ``u`` (m, n, d) and the norms ``rad`` (m, n) (the log clock:
    ``log r - tau``)."""
    c: np.ndarray
    ell: np.ndarray
    u: np.ndarray
    rad: np.ndarray

    @classmethod
    def of(cls, y: np.ndarray, n: int, d: int) -> FrameState:
        nd = n * d
        return cls(c=y[:, :d], ell=y[:, d], u=y[:, d + 1:d + 1 + nd].reshape(-1, n, d),
                   rad=y[:, d + 1 + nd:])


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameDirections:
    """Unit directions in the frame (:func:`frame_directions`): the centre
    normalized :math:`\\hat c` (m, d), the scale :math:`e^\\ell` (m,), the
    scaled deviations :math:`\\hat u_k` (m, n, d); and of the given ``u``,
    :math:`\\langle\\hat c, u_k\\rangle` and :math:`|u_k|^2` (m, n)."""
    centre: np.ndarray
    scale: np.ndarray
    deviations: np.ndarray
    along: np.ndarray
    squares: np.ndarray


@lru_cache(maxsize=64)
def _facts(s, log) -> Facts:
    """What a field of ``s`` needs (:class:`Facts`), once per scheme."""
    if log:
        laws, bps, constant = log_clock.numeric(s), log_clock.breakpoints(s), None
    else:
        laws, bps = s.numeric(), np.asarray(s.breakpoints, dtype=float)
        constant = [float(e) if e.is_number and e.is_positive and e.is_finite else None
                    for e in phase_branches(s.speed, s.breakpoints)]
    used = s.speed.free_symbols | s.radial.free_symbols
    return Facts(laws=laws, breakpoints=bps, constant=constant or [None] * len(laws),
                 needs_a=a in used, needs_norm=A_norm in used, tau=_temperature(s, log))


_TINY = np.finfo(float).tiny
#: ``epsilon`` below this is not resolved in the cluster's frame (its scale's
#: square nears float64's underflow; :mod:`symdyn.particles.continuous`)
FRAME_FLOOR = 1e-280


@lru_cache(maxsize=16)
def _ones_row(n):
    """(1, n) ones: ``_ones_row(n) @ u`` sums the tokens (one matmul)."""
    out = np.ones((1, n))
    out.flags.writeable = False
    return out


def frame_directions(c, ell, u) -> FrameDirections:
    """The unit directions of the frame state ``(c, ell, u)``: the centre
    normalized :math:`\\hat c`, ``e = e^ell`` and the scaled deviations,
    :math:`\\hat\\theta_k = (\\hat c + e u_k)/\\sqrt{1 + q_k} = \\hat c + e \\hat u_k`
    with :math:`q_k = e (2\\langle\\hat c, u_k\\rangle + e|u_k|^2)`:
    :math:`\\hat u_k = (1 + g) u_k + (g/e) \\hat c`, ``g = 1/sqrt(1 + q) - 1 =
    -q / (sqrt(1 + q) (1 + sqrt(1 + q)))`` (no cancellation at any scale); with
    :math:`\\langle\\hat c, u_k\\rangle` and :math:`|u_k|^2` (:class:`FrameDirections`)."""
    ch, e = _centre(c), np.exp(ell)
    along = (u @ ch[:, :, None])[..., 0]
    uu = einsum("mnd,mnd->mn", u, u)
    return FrameDirections(centre=ch, scale=e, deviations=_deviations(u, ch, e, along, uu),
                           along=along, squares=uu)


def _centre(c):
    """The centre normalized, :math:`\\hat c = c/|c|` (m, d)."""
    return c / np.sqrt(einsum("md,md->m", c, c))[:, None]


def _deviations(u, ch, e, along, uu):
    """:math:`\\hat u_k` of :func:`frame_directions` from ``u``, :math:`\\hat c`,
    ``e``, :math:`\\langle\\hat c, u_k\\rangle` and :math:`|u_k|^2`."""
    qt = e[:, None] * uu
    qt += 2 * along
    root = np.sqrt(1 + e[:, None] * qt)
    den = root * (1 + root)
    qt /= den
    uh = u * (1 - e[:, None] * qt)[..., None]
    uh -= qt[..., None] * ch[:, None, :]
    return uh


def frame_epsilon(e, uh, weight):
    """:math:`\\epsilon = e^2 \\sum_k m_k |\\hat u_k - \\bar u|^2 / (\\sum_k m_k - 1)` of
    members in the frame (``weight`` (m, n): the masses), per member."""
    total = weight.sum(axis=-1)
    dev = uh - (einsum("mn,mnd->md", weight, uh) / total[:, None])[:, None, :]
    return e * e * einsum("mn,mnd,mnd->m", weight, dev, dev) / (total - 1)


def _full(v, shape):
    """A law's value (an array, or a number for a law without token symbols) of ``shape``."""
    return v if getattr(v, "shape", None) == shape else np.broadcast_to(v, shape)


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

