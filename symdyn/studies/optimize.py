"""The optimizers of the inverse problem on a model of gamma with exact gradients.

:class:`Model` gives :math:`\\gamma` at fixed times and its gradient in the
parameters (the solver's sensitivities); :func:`reach`, :func:`balance` and
:func:`fit_profile` solve the ``"target"``, ``"speed"`` and ``"profile"``
objectives of :func:`symdyn.studies.inverse.design`; :func:`stopped` is the
outcome when a search steps where the family's law fails.

Layer 3, studies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..reduced.solver import solve

# Newton polish of the "target" objective: |gamma(L) - g| below this.
TARGET_TOL = 1e-12
# The solver's tolerance inside the optimizer (tighter than solve's default, so
# that the gradients are exact to about 1e-10 and the polish converges).
RTOL = 1e-12


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an optimizer found: the parameters ``p``, whether it succeeded,
    its message, and the objective's ``value`` there."""

    p: np.ndarray
    success: bool
    message: str
    value: float


class LawFails(ValueError):
    """The family's law fails on [0, L] at parameters the optimizer tried."""


class Model:
    """gamma at fixed times and its gradient in the parameters, with a memo;
    ``good``: the last parameters where the law held (None before)."""

    def __init__(self, s, names, times, n, beta, gamma0, attention):
        self.s, self.names, self.times = s, names, times
        self.fixed = dict(n=n, beta=beta, gamma0=gamma0, attention=attention)
        self.memo, self.nfev, self.good = {}, 0, None

    def __call__(self, p):
        key = tuple(np.asarray(p, dtype=float))
        if key not in self.memo:
            try:
                tr = solve(self.s, t=self.times, rtol=RTOL, sensitivities=self.names,
                           **self.fixed, params=dict(zip(self.names, key, strict=True)))
            except (ValueError, ArithmeticError) as exc:
                raise LawFails(str(exc)) from None
            jac = np.stack([tr.sensitivities[q] for q in self.names], axis=-1)
            self.memo = {key: (tr.gamma, jac)}
            self.nfev += 1
            self.good = key
        return self.memo[key]


def stopped(objective, model, goal, exc, L) -> Outcome:
    """The outcome when the optimizer stepped where the family's law fails on
    ``[0, L]``: the last parameters where it held, with ``success`` False and
    the reason (the defaults failing already is the caller's error: raised)."""
    if model.good is None:
        raise ValueError(str(exc)) from None
    p = np.array(model.good)
    gam, _ = model(p)
    if objective == "target":
        value = float(gam[-1] - goal)
    elif objective == "speed":
        value = float(np.min(np.diff(gam) / np.diff(model.times)))
    else:
        value = float(np.sqrt(np.mean((gam - goal) ** 2)))
    why = str(exc) if len(str(exc)) <= 150 else str(exc)[:147] + "..."
    return Outcome(p=p, success=False, value=value,
                   message=(f"the search stepped where the law fails on [0, {L:g}] ({why}); "
                            f"these are the last parameters where it held (bounds= can keep "
                            f"the search on valid laws)"))


def reach(model, g, p0, box) -> Outcome:
    """min |p - p0|^2 s.t. gamma(L) = g, then minimal-norm Newton steps."""
    from scipy.optimize import minimize

    def gap(p):
        return model(p)[0][-1] - g

    def grad(p):
        return model(p)[1][-1]

    p = np.asarray(p0, dtype=float)
    if len(p) > 1:
        res = minimize(lambda q: np.sum((q - p0) ** 2), p, jac=lambda q: 2 * (q - p0),
                       bounds=box, method="SLSQP", options={"ftol": 1e-14, "maxiter": 200},
                       constraints=[{"type": "eq", "fun": gap, "jac": grad}])
        p = res.x
    lo, hi = np.array(box).T
    r = gap(p)
    slow = 0                   # Newton converges fast; a stall means out of reach
    for _ in range(50):
        if abs(r) < TARGET_TOL or slow == 3:
            break
        J = grad(p)
        step = -r * J / J.dot(J)
        # damped: stay in the box, on valid laws, and decrease |gamma(L) - g|;
        # a step that shrinks to nothing means the target is out of reach
        while np.max(np.abs(step)) > 1e-10 * (1 + np.max(np.abs(p))):
            q = p + step
            if np.all(q >= lo) and np.all(q <= hi):
                try:
                    r_new = gap(q)
                except (ValueError, ArithmeticError):   # the law fails on [0, L]
                    r_new = np.inf
                if abs(r_new) < abs(r):
                    break
            step = step / 2
        else:
            break
        slow = slow + 1 if abs(r_new) > abs(r) / 2 else 0
        p, r = q, r_new
    ok = bool(abs(r) < 1e-10)
    return Outcome(p=p, success=ok, value=float(r), message=(
        "gamma(L) reaches the target" if ok else
        f"gamma(L) - target = {r:.3g}: the target looks out of reach of this family (the "
        f"steps toward it stall at the bounds or where the law fails on [0, L])"))


def balance(model, g, p0, box) -> Outcome:
    """max z s.t. per-layer progress >= z and gamma(L) <= g (SLSQP on (p, z))."""
    from scipy.optimize import minimize

    dt = np.diff(model.times)

    def progress(x):
        gam, _ = model(x[:-1])
        return np.diff(gam) / dt - x[-1]

    def progress_jac(x):
        _, J = model(x[:-1])
        return np.hstack([np.diff(J, axis=0) / dt[:, None], -np.ones((len(dt), 1))])

    gam0, _ = model(p0)
    x0 = np.append(p0, np.min(np.diff(gam0) / dt))
    cons = [{"type": "ineq", "fun": progress, "jac": progress_jac},
            {"type": "ineq", "fun": lambda x: g - model(x[:-1])[0][-1],
             "jac": lambda x: np.append(-model(x[:-1])[1][-1], 0.0)}]
    res = minimize(lambda x: -x[-1], x0, jac=lambda x: np.append(np.zeros(len(p0)), -1.0),
                   bounds=list(box) + [(None, None)], method="SLSQP", constraints=cons,
                   options={"ftol": 1e-12, "maxiter": 300})
    p = res.x[:-1]
    gam, _ = model(p)
    z = float(np.min(np.diff(gam) / dt))
    ok = bool(res.success and gam[-1] <= g + 1e-9)
    return Outcome(p=p, success=ok, message=str(res.message), value=z)


def fit_profile(model, goal, p0, box) -> Outcome:
    """min the RMS of gamma - goal at the model's times (least squares)."""
    from scipy.optimize import least_squares

    res = least_squares(lambda p: model(p)[0] - goal, p0, jac=lambda p: model(p)[1],
                        bounds=tuple(np.array(box).T), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    rms = float(np.sqrt(np.mean(res.fun ** 2)))
    return Outcome(p=res.x, success=bool(res.status > 0), message=str(res.message), value=rms)
