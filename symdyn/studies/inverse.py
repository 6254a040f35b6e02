"""The inverse problem: parameters of a speed-law family that give a depth profile.

A *family* is a scheme with free parameters :math:`p` (:attr:`Scheme.free`).
With the exact gradients :math:`\\partial\\gamma/\\partial p` of
:mod:`symdyn.reduced.forward_sensitivity`, :func:`design` solves one of

``"target"``
    :math:`\\gamma(L) = g`, with the parameters closest to the family's
    defaults :math:`p_0`: :math:`\\min |p - p_0|^2` subject to
    :math:`\\gamma(L; p) = g` (SLSQP), then Newton steps of minimal norm on
    :math:`\\gamma(L; p) - g` until it is below ``1e-12``;
``"speed"``
    use every layer: with layers :math:`0 = t_0 < \\dots < t_K = L`, maximize
    the smallest average progress per layer
    :math:`z = \\min_k (\\gamma(t_{k+1}) - \\gamma(t_k)) / (t_{k+1} - t_k)`
    subject to :math:`\\gamma(L) \\le g` (do not collapse before the last layer);
``"profile"``
    match a target curve: :math:`\\min \\sum_i (\\gamma(t_i) - g_i)^2`
    (``scipy.optimize.least_squares`` with the exact Jacobian).

:func:`alpha_family` gives nGPT's step-size families (constant, affine, power,
two-piece), with bounds (:func:`bounds_of` recognizes them by their laws);
the optimizers are in :mod:`~symdyn.studies.optimize`; :func:`evaluate`
scores any scheme (a built-in, or a family at given parameters) on the same
objective, for comparisons.

Layer 3, studies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..base.checks import check_attention, check_gamma0, finite_array, integer, number, shown
from ..model.display import summary_text
from ..model.registry import SchemeLike
from ..model.registry import scheme as get_scheme
from ..model.registry import schemes as builtin_names
from ..model.scheme import Scheme
from ..model.symbols import t as t_sym
from ..reduced.solve_result import Trajectory
from ..reduced.solver import solve
from .optimize import (
    TARGET_TOL,
    LawFails,
    Model,
    balance,
    fit_profile,
    reach,
    stopped,
)
from .runs import simulated_check

OBJECTIVES = ("target", "speed", "profile")
#: The most layers of the "speed" objective: one constraint and one output
#: time each, so its cost grows with the layers (seconds at this bound).
MAX_LAYERS = 10_000


#: nGPT step-size families: alpha(t) with free parameters, their defaults and bounds.
ALPHA_FAMILIES = {
    "constant": ("a0", {"a0": 1.0}, {"a0": (1e-3, 1e3)}),
    "affine": ("a0 + a1*t", {"a0": 1.0, "a1": 0.0}, {"a0": (1e-3, 1e3), "a1": (0.0, 1e3)}),
    "power": ("a0*(1 + t)**p", {"a0": 1.0, "p": 0.0}, {"a0": (1e-3, 1e3), "p": (-3.0, 3.0)}),
    "two-piece": (None, {"a0": 1.0, "a1": 1.0}, {"a0": (1e-3, 1e3), "a1": (1e-3, 1e3)}),
}


def alpha_family(name: str, depth: float | None = None) -> Scheme:
    """nGPT with a step-size family :math:`\\alpha_t` (see :data:`ALPHA_FAMILIES`):
    ``constant`` :math:`a_0`, ``affine`` :math:`a_0 + a_1 t`, ``power``
    :math:`a_0 (1 + t)^p`, ``two-piece`` :math:`a_0` before ``depth/2`` and
    :math:`a_1` after it.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.alpha_family("affine").bind(a1=0.5).law_of_t("alpha")(2.0)
    2.0
    >>> sd.alpha_family("two-piece", depth=4.0).breakpoints
    (2.0,)
    """
    if name not in ALPHA_FAMILIES:
        raise ValueError(f"name: expected one of {', '.join(ALPHA_FAMILIES)}, got {shown(name)}")
    alpha, defaults, _ = ALPHA_FAMILIES[name]
    if alpha is None:
        if depth is None:
            raise ValueError("depth: the two-piece family switches at depth/2; give depth > 0")
        half = sp.nsimplify(number(depth, "depth", 0, low_open=True) / 2)
        a0, a1 = (sp.Symbol(k, real=True) for k in ("a0", "a1"))
        alpha = sp.Piecewise((a0, t_sym < half), (a1, True))
    return get_scheme("ngpt", alpha=alpha, params=defaults)


def same_laws(a: Scheme, b: Scheme) -> bool:
    """True when two schemes move tokens alike: the same speed, radial,
    sphere and temperature laws and the same layer rule (names, defaults and
    styles aside).

    Examples
    --------
    >>> import symdyn as sd
    >>> same_laws(alpha_family("affine"), sd.scheme("ngpt", alpha="a0 + a1*t",
    ...                                              params={"a0": 2.0, "a1": 1.0}))
    True
    >>> same_laws(alpha_family("constant"), sd.custom_scheme("c", speed="A_norm/a0",
    ...                                                       params={"a0": 1.0}))
    False
    """
    names = ("speed", "radial", "sphere_until", "temperature", "layer")
    return all(getattr(a, k) == getattr(b, k) for k in names)


def bounds_of(s: Scheme, bounds, depth):
    """``(low, high)`` per parameter: those of ``bounds``, and for the others
    the nGPT family's own (recognized by its laws, :func:`same_laws`), else
    unbounded."""
    names = list(s.defaults)
    own = next((v[2] for k, v in ALPHA_FAMILIES.items()
                if same_laws(alpha_family(k, depth), s)), {})
    if bounds is None:
        bounds = {}
    if not isinstance(bounds, dict) or set(bounds) - set(names):
        raise ValueError(f"bounds: expected a dict of (low, high) by parameter among "
                         f"{', '.join(names)}, got {shown(bounds)}")
    out = []
    for k in names:
        pair = bounds.get(k, own.get(k, (-np.inf, np.inf)))
        try:
            lo, hi = pair
            lo, hi = (-np.inf if lo is None else float(lo)), (np.inf if hi is None else float(hi))
        except (TypeError, ValueError):
            raise ValueError(f"bounds[{shown(k)}]: expected (low, high), numbers or None, got "
                             f"{shown(pair)}") from None
        if not lo < hi:
            raise ValueError(f"bounds[{shown(k)}]: low must be < high, got {shown((lo, hi))}")
        out.append((lo, hi))
    return out


@dataclass(frozen=True, kw_only=True)
class Design:
    """The outcome of :func:`design`.

    Attributes
    ----------
    scheme : Scheme
        The family (free parameters as symbols).
    params : dict of str to float
        The parameters found.
    objective : str
    value : float
        ``target``: :math:`\\gamma(L) - g`; ``speed``: the smallest progress
        per layer :math:`z`; ``profile``: the root-mean-square error.
    trajectory : Trajectory
        The designed scheme on 201 points of ``[0, L]``.
    success : bool
    message : str
    nfev : int
        Solves of the reduced ODE (with sensitivities) spent.
    check : dict
        :math:`\\gamma(L)` of the particle simulator from an equiangular start
        with identity weights (``"identity"``, equal to the reduced ODE's up to
        the solvers' tolerances) and with Kaiming weights (``"kaiming"``, where
        the symmetric reduction is only approximate; the value, not a
        guarantee), and the reduced ODE's own ``"reduced"``; empty when
        ``check=False``.

    Examples
    --------
    >>> import symdyn as sd
    >>> res = sd.design("constant", target=0.9, depth=4.0, n=32, beta=1.0, gamma0=0.0,
    ...                 check=False)
    >>> res.success, round(res.params["a0"], 6), abs(res.value) < 1e-10
    (True, 0.424161, True)
    """

    scheme: Scheme
    params: dict
    objective: str
    value: float
    trajectory: Trajectory
    success: bool
    message: str
    nfev: int
    check: dict

    def _value_text(self) -> str:
        """The objective's value; a target met to below the solver's tolerance
        is printed as that bound (the digits below it are rounding, another
        on every CPU)."""
        if self.objective == "target" and abs(self.value) < TARGET_TOL:
            return f"< {TARGET_TOL:g} (met)"
        return f"{self.value:.6g}"

    def __str__(self) -> str:
        rows = [("family", f"{self.scheme.name}: speed {self.scheme.speed}"),
                ("objective", f"{self.objective}, value {self._value_text()}"),
                *((f"  {k}", f"{v:.10g}") for k, v in self.params.items()),
                ("success", f"{self.success} ({self.message}; {self.nfev} solves)"),
                *((f"check: gamma(L) {k}", f"{v:.10g}") for k, v in self.check.items())]
        return summary_text("Design (sd.design)", rows, self.trajectory.t,
                            self.trajectory.gamma)


def design(family: SchemeLike, objective: str = "target", *, depth: float, n: float,
           beta: float, gamma0: float, target=None, times=None, layers: int = 16,
           bounds: dict | None = None, attention: str = "softmax", check: bool = True,
           d: int | None = None, seed: int = 0) -> Design:
    """Find parameters of ``family`` for ``objective`` (see the module docstring).

    Parameters
    ----------
    family : Scheme or str
        A scheme with free parameters, or the name of an nGPT family
        (:data:`ALPHA_FAMILIES`, see :func:`alpha_family`); the family's
        defaults are the starting point.
    objective : {"target", "speed", "profile"}
    depth : float
        :math:`L > 0`, the depth (time) of the network.
    n, beta, gamma0 : float
        Tokens, inverse temperature and starting cosine (one value each).
    target : float or array
        ``target``, ``speed``: :math:`g` in ``(gamma0, 1)``; ``profile``: the
        target values at ``times``.
    times : array, optional
        ``profile`` only: times in ``(0, depth]`` of the target values.
    layers : int
        ``speed`` only: the number of equal layers of ``[0, depth]``, at most
        :data:`MAX_LAYERS`.
    bounds : dict, optional
        ``{name: (low, high)}`` for some or all parameters (``None`` for an
        open end); a parameter not named keeps the nGPT family's bounds, else
        is unbounded. A search that steps where the law fails on ``[0, L]``
        (a negative nGPT ``alpha``, ...) stops there: ``success`` False, the
        last parameters where the law held, the reason in ``message``.
    check : bool
        Simulate the designed scheme with ``n`` particles in dimension ``d``
        (default ``max(n, 16)``) from an equiangular start (see ``Design.check``).

    Examples
    --------
    >>> import symdyn as sd
    >>> fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})
    >>> res = sd.design(fam, objective="target", target=0.99, depth=4.0, n=32, beta=1.0,
    ...                 gamma0=0.0, check=False)
    >>> res.success, abs(float(res.trajectory.gamma[-1]) - 0.99) < 1e-10
    (True, True)
    """
    if isinstance(family, str) and family in ALPHA_FAMILIES:
        s = alpha_family(family, depth)
    elif isinstance(family, (str, Scheme)):
        s = get_scheme(family)
    else:
        raise ValueError(f"family: expected a Scheme or a name, got {shown(family)}")
    names = list(s.defaults)
    if not names:
        raise ValueError(f"family: {s.name} has no free parameters to design "
                         f"(use sd.custom_scheme(..., params=...) or an nGPT family)")
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {', '.join(OBJECTIVES)}, "
                         f"got {shown(objective)}")
    L = number(depth, "depth", 0, low_open=True)
    n = number(n, "n", 2)
    beta = number(beta, "beta", 0)
    gamma0 = number(gamma0, "gamma0")
    check_gamma0(gamma0, n)
    check_attention(attention)
    box = bounds_of(s, bounds, L)
    p0 = np.clip([s.defaults[k] for k in names], [b[0] for b in box], [b[1] for b in box])
    model, goal, optimize = _problem(objective, s, names, L, (n, beta, gamma0, attention),
                                     target, times, layers)
    try:
        found = optimize(model, goal, p0, box)
    except LawFails as exc:      # SLSQP or least_squares stepped onto an invalid law
        found = stopped(objective, model, goal, exc, L)
    params = dict(zip(names, map(float, found.p), strict=True))
    tr = solve(s, n=n, beta=beta, gamma0=gamma0, t=np.linspace(0, L, 201),
               attention=attention, params=params)
    result = {} if not check else _check(s, params, L, n, beta, gamma0, attention, tr, d, seed)
    return Design(scheme=s, params=params, objective=objective, value=found.value,
                  trajectory=tr, success=found.success, message=found.message,
                  nfev=model.nfev, check=result)


def _problem(objective, s, names, L, fixed, target, times, layers):
    """The model of ``objective`` (its output times), its checked goal (the
    target value, or the target curve), and its optimizer."""
    if objective == "profile":
        times, goal = profile_target(times, target, L)
        return Model(s, names, times, *fixed), goal, fit_profile
    goal = number(target, "target", fixed[2], 1, low_open=True, high_open=True)
    if objective == "target":
        return Model(s, names, np.array([L]), *fixed), goal, reach
    layers = integer(layers, "layers", 1)
    if layers > MAX_LAYERS:
        raise ValueError(f"layers: {layers:,} layers, more than the {MAX_LAYERS:,} the speed "
                         f"objective takes (one constraint and one output time each)")
    return Model(s, names, np.linspace(0, L, layers + 1), *fixed), goal, balance


def _check(s, params, L, n, beta, gamma0, attention, tr, d, seed):
    """gamma(L) of the particle simulator (identity and Kaiming weights) beside
    the reduced ODE's; empty when ``n`` is not a whole number."""
    k = int(round(n))
    if k != n:
        return {}
    d = max(k, 16) if d is None else integer(d, "d", 2)
    return {"reduced": float(tr.gamma[-1]),
            **simulated_check(s, params, L, k, d, beta, gamma0, attention, seed)}


def profile_target(times, target, L):
    """The ``"profile"`` objective's times and target values, checked."""
    times = finite_array(times, "times", 0.0, low_open=True)
    goal = finite_array(target, "target")
    if times.ndim != 1 or goal.shape != times.shape or np.any(np.diff(times) <= 0):
        raise ValueError("times, target: expected increasing times in (0, depth] and one "
                         "target value per time")
    if times[-1] > L:
        raise ValueError(f"times: must lie in (0, depth] = (0, {L:g}], got up to {times[-1]:g}")
    if np.any(goal >= 1) or np.any(goal <= -1):
        raise ValueError("target: cosines must lie in (-1, 1)")
    return times, goal


def evaluate(scheme: SchemeLike, objective: str, *, depth: float, n: float, beta: float,
             gamma0: float, target=None, times=None, layers: int = 16,
             attention: str = "softmax", params: dict | None = None) -> float:
    """The score :func:`design` reports (``Design.value``) for ``scheme`` as it is
    (a built-in, or a family at ``params``): for comparing designed schedules
    with the built-in schemes on the same objective.

    Examples
    --------
    >>> from symdyn.studies.inverse import evaluate
    >>> z = evaluate("post-ln", "speed", target=0.99, depth=4.0, n=32, beta=1.0,
    ...                        gamma0=0.0)
    >>> 0 < z < 0.25
    True
    """
    L = number(depth, "depth", 0, low_open=True)
    kw = dict(n=n, beta=beta, gamma0=gamma0, attention=attention, params=params)
    if objective == "target":
        return float(solve(scheme, t=[L], **kw).gamma[-1] - number(target, "target"))
    if objective == "speed":
        layers = integer(layers, "layers", 1)
        if layers > MAX_LAYERS:
            raise ValueError(f"layers: {layers:,} layers, more than the {MAX_LAYERS:,} the "
                             f"speed objective takes (one output time each)")
        grid = np.linspace(0, L, layers + 1)
        return float(np.min(np.diff(solve(scheme, t=grid, **kw).gamma) / np.diff(grid)))
    if objective == "profile":
        times, goal = profile_target(times, target, L)
        return float(np.sqrt(np.mean((solve(scheme, t=times, **kw).gamma - goal) ** 2)))
    raise ValueError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {shown(objective)}")


def compare(objective: str, *, depth: float, n: float, beta: float, gamma0: float,
            target=None, times=None, layers: int = 16, families=tuple(ALPHA_FAMILIES),
            schemes=None, attention: str = "softmax"):
    """Designed nGPT families against the built-in schemes on one objective.

    Returns a ``pandas.DataFrame`` with one row per scheme: ``kind``
    (``"designed"`` or ``"built-in"``), ``family`` (the :data:`ALPHA_FAMILIES`
    name of a designed row; None), ``params`` (the designed values),
    ``value`` (``Design.value`` or :func:`evaluate`), ``gamma_L``,
    ``feasible`` (``speed``: :math:`\\gamma(L) \\le g`; else None) and
    ``success`` (of the design; built-ins: None).

    Examples
    --------
    >>> from symdyn.studies.inverse import compare
    >>> df = compare("target", target=0.9, depth=4.0, n=32, beta=1.0, gamma0=0.0,
    ...              families=["constant"], schemes=["post-ln", "pre-ln"])
    >>> list(df.index), bool(abs(df.loc["ngpt (constant)", "value"]) < 1e-10)
    (['ngpt (constant)', 'post-ln', 'pre-ln'], True)
    """
    import pandas as pd

    problem = dict(depth=depth, n=n, beta=beta, gamma0=gamma0, target=target, times=times,
                   layers=layers, attention=attention)
    def feasible(gamma_L):
        return bool(gamma_L <= target + 1e-9) if objective == "speed" else None

    rows = {}
    for name in families:
        res = design(name, objective, check=False, **problem)
        gamma_L = float(res.trajectory.gamma[-1])
        rows[f"{res.scheme.name} ({name})"] = ("designed", name, res.params, res.value, gamma_L,
                                  feasible(gamma_L), res.success)
    for name in builtin_names() if schemes is None else schemes:
        value = evaluate(name, objective, **problem)
        gamma_L = float(solve(name, n=n, beta=beta, gamma0=gamma0, t=[depth],
                              attention=attention).gamma[-1])
        rows[name] = ("built-in", None, {}, value, gamma_L, feasible(gamma_L), None)
    return pd.DataFrame.from_dict(rows, orient="index", columns=[
        "kind", "family", "params", "value", "gamma_L", "feasible", "success"])
