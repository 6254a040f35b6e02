"""Layer 3, trained: a trace against what its scheme predicts (least squares).

With :math:`\\varepsilon_l = 1 - \\gamma_l` (``gamma`` = a trace's mean cosine)
over layers :math:`l = l_0..L`:

* ``exponential``: :math:`\\log\\varepsilon_l = a - k\\,l` (Post-LN's terminal law);
* ``power``: :math:`\\log\\varepsilon_l = a - p\\log l` (Pre-LN's);
* ``linear_norm``: :math:`|x|_l = r_0 + s\\,l` (Pre-LN's norm growth);
* ``reduced_ode``: :math:`\\gamma_l = \\gamma(\\tau l)` of the scheme's reduced
  ODE (:func:`symdyn.reduced.solver.solve`, n tokens, start :math:`\\gamma_0`
  from the trace) with the effective inverse temperature :math:`\\beta` and the
  time per layer :math:`\\tau` fitted.

Each returns a :class:`Fit`: the constants, their standard errors from the
Jacobian (:math:`\\hat\\sigma^2 (J^TJ)^{-1}`, no claim beyond the least-squares
model), the residuals and their root mean square (log space for the laws),
and ``success``: the solver converged and every standard error is finite. A
covariance that is not finite (a constant the data do not fix, such as the
reduced ODE's ``beta`` on a trace that barely moves) is a ``RuntimeWarning``
naming the constants, and ``success`` is False. ``failed`` is True, and
``failure`` says why, when ``success`` is False or a standard error is at
least its constant's magnitude (:math:`\\sigma_c \\ge |c|`: the data do not
fix the constant's sign, e.g. a reduced-ODE ``beta = 0.75 ± 92``); the repr
and ``str`` say so.

>>> import symdyn as sd
>>> l = np.arange(8); fit = sd.trained.fits.exponential(1 - 0.9 * np.exp(-0.5 * l))
>>> round(float(fit.values[1]), 6), fit.success
(0.5, True)
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from ..base.archive import Archived
from ..base.checks import integer
from ..base.provenance import Provenance
from ..reduced.solver import solve

#: law -> its equation and what each constant means (the repr shows them).
LAWS = {
    "exponential": ("log(1 - gamma_l) = a - k l",
                    {"a": "log(1 - gamma) at l = 0", "k": "decay rate per layer"}),
    "power": ("log(1 - gamma_l) = a - p log l",
              {"a": "log(1 - gamma) at l = 1", "p": "decay exponent"}),
    "linear norm": ("|x|_l = r0 + s l", {"r0": "norm at l = 0", "s": "growth per layer"}),
    "reduced ODE": ("gamma_l = gamma(tau l) of the reduced ODE",
                    {"beta": "effective inverse temperature", "tau": "ODE time per layer"}),
}


@dataclass(repr=False, kw_only=True)
class Fit(Archived):
    """Fitted constants ``values`` (standard errors ``errors``) of ``law`` over
    ``layers``; ``data`` the values fitted, ``provenance`` the fit's function
    and options (``sd.rerun`` fits ``data`` again); ``success``: the solver
    converged and every standard error is finite; ``failed``: not
    ``success``, or some standard error >= its constant's magnitude
    (``failure`` says which). The constants' meanings: :data:`LAWS`."""

    law: str
    names: tuple
    values: np.ndarray
    errors: np.ndarray
    residuals: np.ndarray
    layers: np.ndarray
    data: np.ndarray | None = None
    provenance: Provenance | None = None
    success: bool = True
    failed: bool = False
    failure: str = ""

    DIMS = {"values": ("constant",), "errors": ("constant",), "residuals": ("fitted",),
            "layers": ("fitted",), "data": ("layer",)}

    @property
    def rms(self) -> float:
        return float(np.sqrt(np.mean(self.residuals ** 2)))

    @property
    def equation(self) -> str:
        """The law's equation in its constants (``log(1 - gamma_l) = a - k l``)."""
        return LAWS.get(self.law.split(" (")[0], ("", {}))[0]

    def meaning(self, name: str) -> str:
        """What the constant ``name`` is (``k``: ``decay rate per layer``)."""
        return LAWS.get(self.law.split(" (")[0], ("", {}))[1].get(name, "")

    def _constants(self, meanings: bool) -> str:
        return ", ".join(
            f"{n}{f' ({self.meaning(n)})' if meanings and self.meaning(n) else ''} = "
            f"{v:.4g} ± {e:.2g}"
            for n, v, e in zip(self.names, self.values, self.errors, strict=True))

    def _flag(self) -> str:
        return f" FAILED: {self.failure}" if self.failed else ""

    def __str__(self):
        return f"{self.law}: {self._constants(False)}; rms residual {self.rms:.3g} over layers " \
               f"{self.layers[0]}..{self.layers[-1]}{'' if self.success else ' (success False)'}" \
               f"{';' + self._flag() if self.failed else ''}"

    def __repr__(self):
        return (f"<Fit {self.law}: {self.equation}, layers {self.layers[0]}..{self.layers[-1]}: "
                f"{self._constants(True)}; rms residual {self.rms:.3g};"
                f"{self._flag() or ' failed = False'}>")


def failure_of(fit: Fit) -> str:
    """Why ``fit`` fails (``""`` if it does not): the solver did not converge, a
    covariance that is not finite or singular, a constant that is not finite,
    or a standard error at least its constant's magnitude."""
    why = []
    loose = [n for n, e in zip(fit.names, fit.errors, strict=True) if not np.isfinite(e)]
    if loose:
        why.append(f"the covariance is singular (the standard error of {', '.join(loose)} "
                   f"is not finite)")
    for n, v, e in zip(fit.names, fit.values, fit.errors, strict=True):
        if not np.isfinite(v):
            why.append(f"{n} is {v}")
        elif n in loose:
            continue
        elif e >= abs(v):
            why.append(f"the standard error of {n} ({e:.2g}) is at least its value ({v:.4g})")
    if not fit.success and not why:
        why.append("the solver did not converge")
    return "; ".join(why)


def _made(fit: Fit, function: str, data, converged: bool = True, **options) -> Fit:
    """``fit`` with the data it fitted, what made it (the function, its options),
    ``success`` and ``failed``; a ``RuntimeWarning`` when a standard error is
    not finite."""
    fit.data = np.array(data, dtype=float)
    bad = [n for n, e in zip(fit.names, fit.errors, strict=True) if not np.isfinite(e)]
    fit.success = bool(converged and not bad and np.all(np.isfinite(fit.values)))
    fit.failure = failure_of(fit)
    fit.failed = bool(fit.failure)
    if bad:
        warnings.warn(f"{fit.law}: the covariance is not finite (the standard error of "
                      f"{', '.join(bad)} is {fit.errors[fit.names.index(bad[0])]}): the data "
                      f"do not fix {'it' if len(bad) == 1 else 'them'}; Fit.success is False",
                      RuntimeWarning, stacklevel=3)
    fit.provenance = Provenance.of("fit", None, {"function": function, **options},
                                   scheme=options.get("scheme"), n=options.get("n"))
    return fit


def _linear(law, names, X, y, layers):
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    res = y - X @ coef
    dof = max(len(y) - X.shape[1], 1)
    XX = X.T @ X
    if np.linalg.cond(XX) > 1e12:                   # a constant the layers do not fix
        err = np.full(len(names), np.inf)
    else:
        err = np.sqrt(np.diag((res @ res / dof) * np.linalg.inv(XX)))
    return Fit(law=law, names=names, values=coef, errors=err, residuals=res, layers=layers)


def _select(values, first):
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or len(v) - first < 3:
        raise ValueError(f"a fit needs one trace with at least 3 layers from first={first}")
    layers = np.arange(len(v))
    return layers[first:], v[first:]


def exponential(gamma, first: int = 1) -> Fit:
    """``log(1 - gamma_l) = a - k l`` for l >= first.

    >>> l = np.arange(8); round(float(exponential(1 - 0.9 * np.exp(-0.5 * l)).values[1]), 6)
    0.5
    """
    lay, g = _select(gamma, first)
    X = np.column_stack([np.ones_like(lay, dtype=float), -lay])
    return _made(_linear("exponential", ("a", "k"), X, np.log1p(-g), lay), "exponential",
                 gamma, first=first)


def power(gamma, first: int = 1) -> Fit:
    """``log(1 - gamma_l) = a - p log l`` for l >= max(first, 1)."""
    lay, g = _select(gamma, max(first, 1))
    X = np.column_stack([np.ones_like(lay, dtype=float), -np.log(lay)])
    return _made(_linear("power", ("a", "p"), X, np.log1p(-g), lay), "power", gamma,
                 first=first)


def linear_norm(norm, first: int = 1) -> Fit:
    """``|x|_l = r0 + s l`` for l >= first."""
    lay, r = _select(norm, first)
    X = np.column_stack([np.ones_like(lay, dtype=float), lay])
    return _made(_linear("linear norm", ("r0", "s"), X, r, lay), "linear_norm", norm,
                 first=first)


def reduced_ode(gamma, scheme: str, n: int, first: int = 0, beta0=1.0, tau0=0.3) -> Fit:
    """``gamma_l = gamma(tau l)`` of ``scheme``'s reduced ODE; ``beta``, ``tau`` fitted."""
    lay, g = _select(gamma, first)
    g0 = float(np.asarray(gamma, dtype=float)[0])
    t_lay = np.asarray(lay, dtype=float)

    def model(p):
        beta, tau = np.exp(p)
        t = tau * t_lay
        keep = t > 0
        out = np.full(len(t), g0)
        if keep.any():
            out[keep] = solve(scheme, n=n, beta=beta, gamma0=g0, t=t[keep], rtol=1e-8,
                              atol=1e-10).gamma
        return out

    sol = least_squares(lambda p: model(p) - g, np.log([beta0, tau0]), method="lm")
    res = sol.fun
    J = sol.jac * np.exp(sol.x)[None, :]            # d/dbeta, d/dtau from d/dlog
    dof = max(len(g) - 2, 1)
    JJ = J.T @ J
    if np.linalg.cond(JJ) > 1e12:                   # a constant the data do not fix
        err = np.full(2, np.inf)
    else:
        err = np.sqrt(np.abs(np.diag((res @ res / dof) * np.linalg.inv(JJ))))
    return _made(Fit(law=f"reduced ODE ({scheme})", names=("beta", "tau"), values=np.exp(sol.x),
                     errors=err, residuals=res, layers=lay),
                 "reduced_ode", gamma, sol.success, first=first, scheme=scheme, n=n,
                 beta0=beta0, tau0=tau0)


def of_trace(trace) -> dict:
    """The laws fitted to one trace (a :class:`~symdyn.trained.trace.LayerTrace`
    of one text): ``{"exponential", "power", "linear_norm", "reduced_ode": Fit}``,
    the reduced ODE of the trace's scheme with n = the tokens traced."""
    if np.ndim(trace.tokens):
        raise ValueError("trace: of_trace fits one text's trace; take the median of a batch "
                         "and call the fits themselves")
    return {"exponential": exponential(trace.cosine), "power": power(trace.cosine),
            "linear_norm": linear_norm(trace.norm),
            "reduced_ode": reduced_ode(trace.cosine, trace.scheme, int(trace.traced))}


class RandomBlock(Mapping):
    """A block whose matrices (its 2-d entries) are Gaussian with each trained
    matrix's mean and std, drawn when read from the seed ``(seed, layer,
    entry)``: the same numbers at every read, one matrix in memory at a time."""

    def __init__(self, block, seed: int, layer: int):
        self.block, self.seed, self.layer = block, seed, layer

    def __getitem__(self, key):
        w = self.block[key]
        if w.ndim != 2:
            return w
        rng = np.random.default_rng([self.seed, self.layer, list(self.block).index(key)])
        z = rng.standard_normal(w.shape, dtype=np.float32)
        z *= np.float32(w.std(dtype=np.float64))
        z += np.float32(w.mean(dtype=np.float64))
        return z

    def __iter__(self):
        return iter(self.block)

    def __len__(self):
        return len(self.block)


def randomized(model, seed: int = 0):
    """A copy of ``model`` whose weight matrices are Gaussian with each matrix's mean and std.

    Norm gains, embeddings and biases are kept (the tokens and the normalization
    stay the trained ones; only what the blocks learned is replaced). The
    weights are shared with ``model``; the random ones are drawn when a layer runs.
    """
    import copy
    seed = integer(seed, "seed", 0)
    m = copy.copy(model)
    m.blocks = [RandomBlock(b, seed, i) for i, b in enumerate(model.blocks)]
    m.random_seed = seed
    return m
