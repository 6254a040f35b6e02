r"""Metastability across normalizations: plateaus, cluster counts and the last merge
against the derived two-cluster merge law, per scheme (issue 49 item 3;
docs/metastability.md, section 4).

**Runs.** ``n`` i.i.d. uniform tokens on :math:`\mathcal S^{d-1}` per seed
(:func:`~symdyn.studies.metastability.uniform_sphere`), the continuous
dynamics of each scheme (softmax, identity weights), output times
log-spaced in the log time :math:`\tau = \log(1 + t)`. Schemes on the sphere
run in the clock ``t``; schemes whose norms grow (Pre-LN, Mix-LN, Peri-LN,
LN-Scaling) in the clock :math:`\tau` (``clock="log"``), where their
clusters live (their speeds decay like ``1/t``).

**Plateaus.** A plateau is a run of constant cluster count seen at two
output times or more (``sim.plateaus``); the study keeps those with
``2 <= count < n`` that end within the run (metastable states: formed,
then left), and measures each one's duration in log time,
:math:`\Delta\tau = \tau_{end} - \tau_{start}` (observed ends).

**The last merge.** From the first output time :math:`\tau_0` of the last
two-cluster plateau, the measured masses ``m``, ``n - m``, the cosine
:math:`\rho_0` of the cluster centres (normalized mean directions) and the
clusters' radii (geometric means) start the derived two-cluster ODE
(:func:`sd.configuration <symdyn.reduced.configurations.configuration>`
``("two-clusters")``) at :math:`\tau_0`; it predicts the time at which
:math:`\rho` reaches the cluster threshold (0.999), the merge. The merge
time is :math:`T = t_{merge} - t_0 = e^{\tau_{merge}} - e^{\tau_0}`,
compared as :math:`\log T` (natural log; radial schemes merge at
:math:`t \sim e^{10^3}`, beyond floats). Autonomous laws use
:func:`sd.merge_time <symdyn.reduced.merge.merge_time>` (a quadrature);
the others integrate the reduced ODE from :math:`t_0`
(:func:`predicted_merge`), in :math:`\tau` with :math:`u = \log r - \tau`
for the radial schemes (the simulator's log clock). The law is judged
(:func:`summarize`) on the merge's duration ``D`` in the run's clock:
:math:`D = T` in ``t``, :math:`D = \tau_{merge} - \tau_0` in the log clock.

Layer 3, studies.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from ..base.checks import integer, number
from ..model.guards import lambdify
from ..model.piecewise import phase_branches, piecewise_breakpoints
from ..model.registry import SchemeLike, schemes
from ..model.registry import scheme as get_scheme
from ..model.scheme import Scheme
from ..model.symbols import beta as BETA
from ..model.symbols import n as N_SYM
from ..model.symbols import t as T_SYM
from ..particles import clusters
from ..particles.simulation import simulate
from ..reduced.configurations import configuration, m, r_A, r_B, rho
from ..reduced.merge import autonomous, crossing_in_phases, merge_time
from .metastability import uniform_sphere

#: The merge level: the cosine at which the simulator links two tokens.
LEVEL = clusters.THRESHOLD
#: The log time and the radii's excess in it (the simulator's log clock).
TAU = sp.Symbol("tau", real=True)
U_A, U_B = sp.symbols("u_A u_B", real=True)
#: The last output time (in tau) per clock: far enough for every scheme's last merge
#: at the study's sizes; ``"cooling"``: a temperature that decays in t (LN-Scaling's
#: 1/(1+t) underflows at tau ~ 745).
TAU_MAX = {"t": 25.0, "log": 3000.0, "cooling": 300.0}


def clock(scheme: SchemeLike) -> str:
    """``"t"`` for a scheme on the sphere, ``"log"`` for one whose norms grow."""
    return "t" if get_scheme(scheme).on_sphere else "log"


@dataclass(frozen=True, kw_only=True)
class Merge:
    """A predicted merge: its log time ``tau`` and ``log_T``, the natural log
    of the time from the start to it (``inf`` when the level is not reached)."""

    tau: float
    log_T: float


def log_duration(tau0: float, tau1: float) -> float:
    """:math:`\\log(e^{\\tau_1} - e^{\\tau_0})` (the time between two log times),
    without forming :math:`e^{\\tau}`; ``-inf`` when they are equal."""
    return float(tau1 + np.log(-np.expm1(tau0 - tau1))) if tau1 > tau0 else -np.inf


@lru_cache(maxsize=32)
def _log_clock(s: Scheme):
    """The two-cluster ODE of ``s`` in ``tau``, ``(rho, u_A, u_B)``, per phase:
    :math:`d\\rho/d\\tau = R\\dot\\rho`, :math:`du/d\\tau = \\dot r e^{-u} - 1`
    at :math:`t = R - 1`, :math:`r = R e^{u}`, :math:`R = e^\\tau`, with ``R``
    cancelled by sympy where it cancels (Pre-LN, Mix-LN, Peri-LN: nothing of
    size :math:`e^\\tau` is formed); each phase ``f(tau, rho, u_A, u_B, n, m, beta)``."""
    red = configuration("two-clusters").reduce(s)
    breaks = piecewise_breakpoints(tuple(red.rates))
    R = sp.Symbol("R", positive=True)
    to = {T_SYM: R - 1, r_A: R * sp.exp(U_A), r_B: R * sp.exp(U_B)}
    phases = []
    for i in range(len(breaks) + 1):
        rates = [phase_branches(e, breaks)[i].subs(to, simultaneous=True) for e in red.rates]
        moved = [sp.factor(sp.cancel(sp.powsimp(rates[0] * R))), rates[1] * sp.exp(-U_A) - 1,
                 rates[2] * sp.exp(-U_B) - 1]
        moved = [e.subs(R, sp.exp(TAU)) for e in moved]
        phases.append(lambdify((TAU, rho, U_A, U_B, N_SYM, m, BETA), moved, "rates"))
    return np.log1p(np.asarray(breaks, dtype=float)), phases


def predicted_merge(scheme: SchemeLike, *, beta: float, n: float, m: float, cos0: float,
                    tau0: float = 0.0, log_r0: tuple[float, float] = (0.0, 0.0),
                    level: float = LEVEL, tau_max: float = 1e4) -> Merge:
    """When two point clusters of masses ``m`` and ``n - m`` at cosine ``cos0``
    at the log time ``tau0`` (``t0 = e^tau0 - 1``), with log radii ``log_r0``
    (schemes whose norms grow), reach the cosine ``level`` under ``scheme``'s
    derived two-cluster ODE (module docstring). Autonomous laws:
    :math:`T` = :func:`~symdyn.reduced.merge.merge_time` whatever ``tau0``;
    on the sphere otherwise: the ODE in ``t`` from ``t0``; radial schemes: the
    ODE in ``tau`` from ``tau0`` (to ``tau_max``)."""
    s = get_scheme(scheme)
    b = number(beta, "beta", 0)
    nn = number(n, "n", 2)
    mm = number(m, "m", 0, nn, low_open=True, high_open=True)
    c0 = number(cos0, "cos0", -1, 1, high_open=True)
    lv = number(level, "level", -1, 1, high_open=True)
    tau0 = number(tau0, "tau0", 0)
    top = number(tau_max, "tau_max", tau0, low_open=True)
    if c0 >= lv:
        return Merge(tau=tau0, log_T=-np.inf)
    if s.on_sphere and autonomous(s):
        T = merge_time(s, b, float(np.arccos(c0)), nn, mm, level=lv)
        t0 = float(np.expm1(tau0))
        return Merge(tau=float(np.log1p(t0 + T)), log_T=float(np.log(T)))
    if s.on_sphere:
        red = configuration("two-clusters").reduce(s)
        breaks, phases = red.numeric(n=nn, m=mm, beta=b)
        t0, t_end = float(np.expm1(tau0)), float(np.expm1(min(top, 700.0)))
        inner = [x for x in breaks if t0 < x < t_end]
        first = int(np.searchsorted(breaks, t0, side="right"))
        ph = [phases[min(first + i, len(phases) - 1)] for i in range(len(inner) + 1)]
        hit = crossing_in_phases(ph, [t0, *inner, t_end], np.array([c0]), lv,
                                 f"predicted_merge ({s.name})")
        return Merge(tau=float(np.log1p(hit)), log_T=float(np.log(hit - t0))
                     if np.isfinite(hit) else np.inf)
    breaks, phases = _log_clock(s)
    inner = [x for x in breaks if tau0 < x < top]
    first = int(np.searchsorted(breaks, tau0, side="right"))
    last = len(phases) - 1

    def bound(f):
        return lambda x, *y: f(x, *y, nn, mm, b)
    ph = [bound(phases[min(first + i, last)]) for i in range(len(inner) + 1)]
    y0 = np.array([c0, log_r0[0] - tau0, log_r0[1] - tau0], float)
    hit = crossing_in_phases(ph, [tau0, *inner, top], y0, lv, f"predicted_merge ({s.name})")
    return Merge(tau=hit, log_T=log_duration(tau0, hit) if np.isfinite(hit) else np.inf)


@dataclass(frozen=True, kw_only=True)
class LastMerge:
    """One seed's last merge (two clusters into one) beside its prediction.

    ``tau0``: first output time of the last two-cluster plateau (log time);
    ``masses``, ``cos0``, ``log_r0``: the clusters there; ``tau_lo``,
    ``tau_hi``: the merge happened in ``(tau_lo, tau_hi]`` (refined by a
    rerun, :func:`refine`); ``log_T_lo``, ``log_T_hi``: the measured
    :math:`\\log T` bracket; ``predicted``: :func:`predicted_merge` from the
    same state."""

    seed: int
    tau0: float
    masses: tuple[int, int]
    cos0: float
    log_r0: tuple[float, float]
    tau_lo: float
    tau_hi: float
    log_T_lo: float
    log_T_hi: float
    predicted: Merge

    @property
    def log_T(self) -> float:
        """The midpoint of the measured :math:`\\log T` bracket."""
        return (self.log_T_lo + self.log_T_hi) / 2

    @property
    def log_ratio(self) -> float:
        """:math:`\\log(T_{measured}/T_{predicted})` (bracket midpoint)."""
        return self.log_T - self.predicted.log_T

    def log_D(self, clock_: str) -> tuple[float, float]:
        """The measured bracket of :math:`\\log D`, the merge's duration in the
        run's clock: :math:`D = T` (clock ``t``), :math:`D = \\tau_{merge} -
        \\tau_0` (clock ``log``)."""
        if clock_ == "t":
            return self.log_T_lo, self.log_T_hi
        return float(np.log(self.tau_lo - self.tau0)), float(np.log(self.tau_hi - self.tau0))


def predicted_log_D(merge: Merge, tau0: float, clock_: str) -> float:
    """:math:`\\log D` of a predicted merge (:meth:`LastMerge.log_D`)."""
    return merge.log_T if clock_ == "t" else float(np.log(merge.tau - tau0))


@dataclass(frozen=True, kw_only=True)
class SchemeRuns:
    """The runs of one scheme at one ``(n, beta)``: counts on the grid, the
    metastable plateaus and the last merges.

    ``tau`` (K,) the output times in log time; ``counts`` (seeds, K);
    ``plateaus``: ``(seed, clusters, duration in log time)`` of every
    plateau with ``2 <= clusters < n`` that ended in the run; ``merges``: a
    :class:`LastMerge` per seed that had a last two-cluster plateau ending in
    one cluster; ``unmerged``: the seeds without one (no two-cluster plateau
    seen, or not one cluster by the last output time)."""

    scheme: str
    clock: str
    n: int
    beta: float
    d: int
    seeds: tuple[int, ...]
    tau: np.ndarray
    counts: np.ndarray
    plateaus: tuple[tuple[int, int, float], ...]
    merges: tuple[LastMerge, ...]
    unmerged: tuple[int, ...]


def grid(scheme: SchemeLike, points: int) -> np.ndarray:
    """The output times in log time: ``points`` geometric from 1e-2 to the
    scheme's :data:`TAU_MAX`."""
    s = get_scheme(scheme)
    cooling = T_SYM in s.temperature.free_symbols
    top = TAU_MAX["cooling" if cooling else clock(s)]
    return np.geomspace(1e-2, top, integer(points, "points", 10))


def _times(s: Scheme, tau: np.ndarray) -> np.ndarray:
    return tau if clock(s) == "log" else np.expm1(tau)


def _directions(sim, k: int) -> np.ndarray:
    """The directions (members, n, d) at output ``k`` (the log clock records
    them as ``X``; the clock t the tokens)."""
    return clusters.directions(sim.X[:, k])


def run_scheme(scheme: SchemeLike, *, n: int, beta: float, seeds, d: int = 3,
               points: int = 600, refine_points: int = 200) -> SchemeRuns:
    """Simulate ``scheme`` from ``n`` uniform tokens on S^{d-1} per seed and
    measure its plateaus and last merges (module docstring): one run on
    :func:`grid` (with the tokens), one rerun with ``refine_points`` more
    output times inside every last merge's bracket."""
    s = get_scheme(scheme)
    nn, dd = integer(n, "n", 3), integer(d, "d", 2)
    b = number(beta, "beta", 0, low_open=True)
    seeds = tuple(int(x) for x in seeds)
    if not seeds:
        raise ValueError("seeds: at least one seed")
    tau = grid(s, points)
    X0 = uniform_sphere(nn, seeds, dd)
    sim = simulate(s, X0, beta=b, t=_times(s, tau), save_x=True, clock=clock(s))
    counts = np.asarray(sim.clusters)
    table = sim.plateaus
    kept = []
    for row in table.itertuples():
        if 2 <= row.clusters < nn and np.isfinite(row.end_before):
            t0, t1 = row.t_start, row.t_end
            if clock(s) == "t":
                t0, t1 = np.log1p(t0), np.log1p(t1)
            kept.append((seeds[row.member], int(row.clusters), float(t1 - t0)))
    starts = {}
    for j in range(len(seeds)):
        row = counts[j]
        if row[-1] != 1:
            continue
        k1 = int(np.flatnonzero(row != 1)[-1]) + 1        # first output of the final 1
        if row[k1 - 1] != 2:
            continue
        k0 = k1 - 1
        while k0 > 0 and row[k0 - 1] == 2:
            k0 -= 1
        if k0 == k1 - 1:                                   # seen once: no plateau
            continue
        starts[j] = (k0, k1)
    brackets = refine(s, X0, b, tau, {j: (tau[k1 - 1], tau[k1]) for j, (_, k1) in
                                       starts.items()}, refine_points)
    merges = []
    for j, (k0, _) in starts.items():
        theta = _directions(sim, k0)[j]
        labels = sim.labels[j, k0]
        c = clusters.centres(theta, labels)[:2]
        mass = tuple(int(x) for x in clusters.sizes(labels)[:2])
        log_r = sim.r[j, :, k0] if sim.clock == "log" else np.zeros(nn)
        log_r0 = tuple(float(log_r[labels == i].mean()) for i in (0, 1))
        cos0 = float(np.clip(c[0] @ c[1], -1, 1))
        lo, hi = brackets[j]
        pred = predicted_merge(s, beta=b, n=nn, m=mass[0], cos0=cos0, tau0=tau[k0],
                               log_r0=log_r0)
        merges.append(LastMerge(seed=seeds[j], tau0=float(tau[k0]), masses=mass, cos0=cos0,
                                log_r0=log_r0, tau_lo=lo, tau_hi=hi,
                                log_T_lo=log_duration(tau[k0], lo),
                                log_T_hi=log_duration(tau[k0], hi), predicted=pred))
    return SchemeRuns(scheme=s.name, clock=clock(s), n=nn, beta=b, d=dd, seeds=seeds, tau=tau,
                      counts=counts, plateaus=tuple(kept), merges=tuple(merges),
                      unmerged=tuple(seeds[j] for j in range(len(seeds)) if j not in starts))


def refine(s: Scheme, X0: np.ndarray, beta: float, tau: np.ndarray, brackets: dict,
           points: int) -> dict:
    """Each member's bracket ``(lo, hi]`` (log time) of the last change to one
    cluster, narrowed by one rerun with ``points`` output times inside every
    bracket (the dense output: the same steps); a bracket the rerun does not
    reproduce is kept."""
    if not brackets or points < 2:
        return dict(brackets)
    top = max(hi for _, hi in brackets.values())
    fine = np.union1d(tau[tau <= top], np.concatenate([np.linspace(lo, hi, points + 1)
                                                       for lo, hi in brackets.values()]))
    counts = np.asarray(simulate(s, X0, beta=beta, t=_times(s, fine), clock=clock(s)).clusters)
    out = {}
    for j, (lo, hi) in brackets.items():
        inside = (fine > lo) & (fine <= hi)
        ks = np.flatnonzero(inside)
        one = counts[j, ks] == 1
        # the rerun agrees at the bracket's ends and changes to one cluster once inside
        if counts[j, np.searchsorted(fine, lo)] == 2 and one[-1] and \
                np.all(np.diff(one.astype(int)) >= 0):
            first = ks[np.argmax(one)]
            out[j] = (float(fine[first - 1]), float(fine[first]))
        else:
            out[j] = (lo, hi)
    return out


#: The study's sizes: (n, beta) settings and seeds, full and quick.
SETTINGS = {"full": {"sizes": ((16, 3.0), (16, 4.0), (32, 3.0), (32, 4.0)),
                     "seeds": tuple(range(8)), "points": 600, "refine": 200},
            "quick": {"sizes": ((16, 4.0),), "seeds": (0, 1, 2), "points": 300, "refine": 100}}


def study(quick: bool = False, schemes_: tuple[str, ...] | None = None,
          progress=None) -> list[SchemeRuns]:
    """:func:`run_scheme` for every built-in scheme (or ``schemes_``) at every
    size of :data:`SETTINGS` (``"quick"`` or ``"full"``), with its seeds."""
    say = progress or (lambda message: None)
    cfg = SETTINGS["quick" if quick else "full"]
    out = []
    for name in schemes_ or tuple(schemes()):
        for n, beta in cfg["sizes"]:
            say(f"metastability across schemes: {name}, n = {n}, beta = {beta:g}")
            out.append(run_scheme(name, n=n, beta=beta, seeds=cfg["seeds"],
                                  points=cfg["points"], refine_points=cfg["refine"]))
    return out


def _mean_se(x) -> tuple[float, float]:
    """Mean and standard error; an infinite value (a law that never reaches
    the level) makes the mean infinite and the se NaN."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return np.nan, np.nan
    if not np.all(np.isfinite(x)):
        return float(np.sum(x)), np.nan
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else np.nan


@dataclass(frozen=True, kw_only=True)
class Summary:
    """One row of the study's table (natural logs; ``± se`` over seeds).

    ``log_T_pred``, ``log_T_meas``: mean and se of :math:`\\log T`;
    ``log_ratio``: mean and se of :math:`\\log(D_{meas}/D_{pred})` (paired by
    seed), ``D`` the merge's duration in the run's clock (:meth:`LastMerge.log_D`:
    ``T`` in ``t``, :math:`\\Delta\\tau` in the log clock, where a merge at
    :math:`t \\sim e^{10^3}` has :math:`\\log T \\approx \\tau` and only
    :math:`\\Delta\\tau` carries the law's relative error); ``log_T_ratio``: mean
    and se of :math:`\\log(T_{meas}/T_{pred})`; ``error``: the error bar of
    ``log_ratio``, its se plus the largest half-width of a measured bracket;
    ``agrees``: :math:`|\\text{mean}| \\le 2\\,\\text{error}`
    (``None`` with fewer than 2 merges); ``plateaus``: metastable plateaus
    per seed (mean); ``duration``: mean and se over those plateaus of their
    length in log time; ``beta_used``: the beta of the prediction."""

    scheme: str
    clock: str
    n: int
    beta: float
    beta_used: float
    seeds: int
    merges: int
    log_T_pred: tuple[float, float]
    log_T_meas: tuple[float, float]
    log_ratio: tuple[float, float]
    log_T_ratio: tuple[float, float]
    error: float
    agrees: bool | None
    plateaus: float
    duration: tuple[float, float]


def summarize(runs: SchemeRuns, beta: float | None = None,
              error: float | None = None) -> Summary:
    """The row of ``runs``; ``beta``: predict with another beta (a control:
    the measured states are the same, the law is evaluated at ``beta``);
    ``error``: judge agreement against this error bar instead of the row's
    own (the control is judged against the error bar of the law at the
    run's beta: the residuals of a wrong law spread with its bias, which is
    no measurement error)."""
    b = runs.beta if beta is None else number(beta, "beta", 0, low_open=True)
    preds = [m.predicted if beta is None else predicted_merge(
        runs.scheme, beta=b, n=runs.n, m=m.masses[0], cos0=m.cos0, tau0=m.tau0,
        log_r0=m.log_r0) for m in runs.merges]
    meas = [m.log_T for m in runs.merges]
    D = [m.log_D(runs.clock) for m in runs.merges]
    ratio = [(lo + hi) / 2 - predicted_log_D(p, m.tau0, runs.clock)
             for (lo, hi), p, m in zip(D, preds, runs.merges, strict=True)]
    half = max(((hi - lo) / 2 for lo, hi in D), default=np.nan)
    mean, se = _mean_se(ratio)
    err = se + half if error is None else number(error, "error", 0)
    if len(ratio) < 2:
        agrees = None
    elif not np.isfinite(mean):             # the law never reaches the level: refuted
        agrees = False
    else:
        agrees = bool(abs(mean) <= 2 * err) if np.isfinite(err) else None
    return Summary(scheme=runs.scheme, clock=runs.clock, n=runs.n, beta=runs.beta, beta_used=b,
                   seeds=len(runs.seeds), merges=len(runs.merges),
                   log_T_pred=_mean_se([p.log_T for p in preds]), log_T_meas=_mean_se(meas),
                   log_ratio=(mean, se), error=err,
                   agrees=agrees, log_T_ratio=_mean_se(
                       [x - p.log_T for x, p in zip(meas, preds, strict=True)]),
                   plateaus=len(runs.plateaus) / len(runs.seeds),
                   duration=_mean_se([p[2] for p in runs.plateaus]))


def duration_ratios(runs: SchemeRuns) -> np.ndarray:
    """Per seed that merged, :math:`\\log(D_{meas}/D_{pred})` (bracket midpoint;
    :meth:`LastMerge.log_D`)."""
    return np.array([np.mean(m.log_D(runs.clock)) - predicted_log_D(m.predicted, m.tau0,
                                                                      runs.clock)
                     for m in runs.merges])


def count_quartiles(runs: SchemeRuns) -> np.ndarray:
    """The 25th, 50th and 75th percentiles over seeds of the cluster count at
    each output time, (3, K)."""
    return np.percentile(runs.counts, [25, 50, 75], axis=0)
