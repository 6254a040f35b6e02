"""Forward sensitivities of the reduced ODE, derived by sympy.

The solvers integrate :math:`y = (u, r)` with :math:`u = \\log\\varepsilon`,
:math:`\\dot u = f_u(t, \\varepsilon, r; n, \\beta, p)`, :math:`\\dot r = f_r`
(the stable form of :mod:`symdyn.reduced.compile`, :math:`\\varepsilon = e^u`). For a
parameter :math:`q` (a free parameter of the scheme, ``beta``, ``n``,
``gamma0`` or ``r0``), :math:`\\sigma_q = \\partial y / \\partial q` obeys

.. math:: \\dot\\sigma_q = J\\,\\sigma_q + \\partial_q f, \\qquad
          J = \\begin{pmatrix} \\varepsilon\\,\\partial_\\varepsilon f_u &
          \\partial_r f_u \\\\ \\varepsilon\\,\\partial_\\varepsilon f_r &
          \\partial_r f_r \\end{pmatrix},

from :math:`\\sigma_q(0) = \\partial y(0)/\\partial q`: :math:`(-1/\\varepsilon_0,
0)` for ``gamma0``, :math:`(0, 1)` for ``r0`` (schemes not renormalized at
``t = 0``), else 0. sympy differentiates the stable expressions (equal to
the reduced ODE for every parameter value, so their derivatives are the
reduced ODE's), and every entry is put through the same rewriting
(:func:`symdyn.reduced.compile.stabilize`) before it is compiled. The outputs are

.. math:: \\partial_q\\gamma = -\\varepsilon\\,\\sigma_{q,u}, \\qquad
          \\partial_q\\dot\\gamma = -\\varepsilon\\,(\\sigma_{q,u}\\,\\dot u
          + \\dot\\sigma_{q,u}).

:math:`\\sigma_{q,u} = \\partial_q \\log(1-\\gamma)` keeps its relative precision
near the cluster, as :math:`u` does.

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from ..base.budget import complete_cache
from ..base.checks import check_attention, shown
from ..model.piecewise import lambdify_phases
from ..model.registry import SchemeLike
from ..model.registry import scheme as get_scheme
from ..model.scheme import Scheme
from ..model.symbols import beta, n, r
from .compile import StableSystem, epsilon, in_gamma, stabilize, stable_system

#: Parameters of every scheme that a sensitivity may be taken with respect to.
STANDARD = ("beta", "n", "gamma0", "r0")


@dataclass(frozen=True, kw_only=True)
class Sensitivity:
    """The forward sensitivity system of a scheme's reduced ODE.

    Attributes
    ----------
    system : StableSystem
    wrt : tuple of str
        The parameters, in order.
    jacobian : tuple of sympy.Expr
        :math:`(J_{uu}, J_{ur}, J_{ru}, J_{rr})` in :attr:`StableSystem.args`.
    forcing : tuple of (sympy.Expr, sympy.Expr)
        :math:`(\\partial_q f_u, \\partial_q f_r)` per parameter (0 for
        ``gamma0`` and ``r0``).
    """

    system: StableSystem
    wrt: tuple
    jacobian: tuple
    forcing: tuple

    @property
    def scheme(self) -> Scheme:
        return self.system.scheme

    def phases(self, module: str = "numpy", *, form: str = "epsilon") -> list:
        """Per phase, one compiled ``g(*args)`` returning the list
        ``[J_uu, J_ur, J_ru, J_rr, F_u(q1), F_r(q1), F_u(q2), ...]``;
        ``args``: :attr:`StableSystem.args`, or with ``form="gamma"``
        :attr:`StableSystem.gamma_args` (every ``1 - epsilon`` read from ``G``,
        as the solvers call it)."""
        if form not in ("epsilon", "gamma"):
            raise ValueError(f"form: must be 'epsilon' or 'gamma', got {shown(form)}")
        return _lambdify(self, module, form == "gamma")

    def initial(self, eps0) -> list[tuple]:
        """:math:`\\sigma_q(0) = (\\sigma_u, \\sigma_r)` per parameter, for
        :math:`\\varepsilon_0` (a float array or an mpmath number)."""
        on = self.scheme.starts_on_sphere
        return [(-1 / eps0 if q == "gamma0" else 0 * eps0,
                 0 * eps0 + (1 if q == "r0" and not on else 0)) for q in self.wrt]


def sensitivity(scheme: SchemeLike, wrt=None, attention: str = "softmax") -> Sensitivity:
    """The forward sensitivity system of ``scheme`` (cached).

    Parameters
    ----------
    scheme : str or Scheme
    wrt : sequence of str, optional
        Free parameters of the scheme and any of ``beta, n, gamma0, r0``;
        default: the free parameters, then ``beta`` and ``gamma0``.
    attention : {"softmax", "unnormalized"}

    Examples
    --------
    >>> import symdyn as sd
    >>> fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})
    >>> sens = sd.sensitivity(fam, wrt=["c"])
    >>> sens.wrt, len(sens.forcing)
    (('c',), 1)
    """
    s = get_scheme(scheme)
    return _sensitivity(s, check_attention(attention), parameter_names(s, wrt))


def parameter_names(s: Scheme, wrt=None) -> tuple:
    """``wrt`` checked against ``s``: distinct names among its free parameters
    and :data:`STANDARD`; None means the free parameters, ``beta``, ``gamma0``."""
    names = [sym.name for sym in s.symbols]
    if wrt is None:
        wrt = tuple(names) + ("beta", "gamma0")
    elif isinstance(wrt, str):
        wrt = (wrt,)
    try:
        wrt = tuple(wrt)
    except TypeError:
        raise ValueError(f"wrt: expected a list of parameter names, got {shown(wrt)}") from None
    allowed = tuple(names) + STANDARD
    bad = [q for q in wrt if not isinstance(q, str) or q not in allowed]
    if bad or not wrt or len(set(wrt)) != len(wrt):
        raise ValueError(f"wrt: expected distinct names among {', '.join(allowed)}, "
                         f"got {shown(list(wrt))}")
    return wrt


@complete_cache(maxsize=128)
def _sensitivity(s: Scheme, attention: str, wrt: tuple) -> Sensitivity:
    system = stable_system(s, attention)
    fu, fr = system.log_eps_dot, system.r_dot
    symbol = {"beta": beta, "n": n, **{sym.name: sym for sym in s.symbols}}
    jac = tuple(stabilize(e) for e in (epsilon * sp.diff(fu, epsilon), sp.diff(fu, r),
                                        epsilon * sp.diff(fr, epsilon), sp.diff(fr, r)))
    forcing = tuple((stabilize(sp.diff(fu, symbol[q])), stabilize(sp.diff(fr, symbol[q])))
                    if q in symbol else (sp.Integer(0), sp.Integer(0)) for q in wrt)
    return Sensitivity(system=system, wrt=wrt, jacobian=jac, forcing=forcing)


@lru_cache(maxsize=128)
def _lambdify(sens: Sensitivity, module: str, gamma: bool = False):
    """Per phase, one function of all entries (they repeat the stable system's
    terms, so common subexpressions are computed once)."""
    exprs = list(sens.jacobian) + [e for pair in sens.forcing for e in pair]
    if gamma:
        return lambdify_phases(sens.system.gamma_args, [in_gamma(e) for e in exprs],
                               sens.system.breakpoints, module, together=True)
    return lambdify_phases(sens.system.args, exprs, sens.system.breakpoints, module,
                           together=True)
