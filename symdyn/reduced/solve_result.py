"""The answer of ``sd.solve``: :class:`Trajectory`.

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..base.archive import Archived
from ..base.provenance import Provenance
from ..model.display import summary_html, summary_text, trajectory_rows
from ..model.registry import laws_of


def provenance(s, n, beta, attention, options) -> Provenance:
    """What ``solve`` was given: the scheme by name with its parameters, ``n``
    and ``beta`` (one number where the batch shares it), the options."""
    def one(x):
        x = np.asarray(x, dtype=float)
        return float(x.ravel()[0]) if x.size and np.all(x == x.ravel()[0]) else x
    return Provenance.of("solve", dict(s.params), options, scheme=s.name, n=one(n),
                         beta=one(beta), attention=attention, laws=laws_of(s))


@dataclass(frozen=True, repr=False, kw_only=True)
class Trajectory(Archived):
    """The solution of the reduced ODE; batch axes first, time last.

    Attributes
    ----------
    t : ndarray, shape (K,)
    gamma, epsilon, log_epsilon, gamma_dot, r : ndarray, shape batch + (K,)
        :math:`\\gamma`, :math:`\\varepsilon = 1-\\gamma`, its logarithm,
        :math:`\\dot\\gamma` and the token norm. ``dtype=object`` (mpmath
        numbers) when solved with ``dps``.
    n, beta, gamma0, r0 : ndarray, shape batch
        The parameters, broadcast.
    nfev : int
        Right-hand-side evaluations (vectorized calls count once); 0 with
        ``dps`` (the extrapolation does not count them).
    message : str
    params : dict of str to ndarray
        The scheme's free parameters (:attr:`Scheme.free`), broadcast.
    sensitivities : dict of str to ndarray, or None
        :math:`\\partial\\gamma/\\partial q` at the output times, shape batch +
        (K,), for each ``q`` asked for (``solve(..., sensitivities=...)``).
    provenance : Provenance
        What made it (``str(tr)`` prints it; ``sd.rerun(tr)`` solves again).

    Examples
    --------
    >>> import symdyn as sd
    >>> tr = sd.solve("ngpt", n=[8, 32], beta=1.0, gamma0=0.0, t=[1.0, 2.0])
    >>> tr.gamma.shape, tr.n.tolist()
    ((2, 2), [8.0, 32.0])
    """

    t: np.ndarray
    gamma: np.ndarray
    epsilon: np.ndarray
    log_epsilon: np.ndarray
    gamma_dot: np.ndarray
    r: np.ndarray
    n: np.ndarray
    beta: np.ndarray
    gamma0: np.ndarray
    r0: np.ndarray
    nfev: int
    message: str
    params: dict = field(default_factory=dict)
    sensitivities: dict | None = None
    provenance: Provenance | None = None

    DIMS = {"t": ("time",), "gamma": ("time",), "epsilon": ("time",),
            "log_epsilon": ("time",), "gamma_dot": ("time",), "r": ("time",),
            "sensitivities": ("time",)}

    def _rows(self):
        return [*(self.provenance.summary() if self.provenance else []),
                *trajectory_rows(self)]

    def _repr_html_(self) -> str:
        return summary_html("Trajectory (sd.solve)", self._rows(), self.t, self.gamma)

    def __str__(self) -> str:
        return summary_text("Trajectory (sd.solve)", self._rows(), self.t, self.gamma,
                            epsilon=self.epsilon)
