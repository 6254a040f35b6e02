r"""Symmetric configurations: the closed ODE of their free variables, derived per scheme.

A configuration splits the ``n`` tokens into classes whose class sums
:math:`S_c = \sum_{j\in c}\theta_j` have a known Gram matrix
(:class:`~symdyn.reduced.equiangular.Frame`). Its *point classes* are single
tokens or coincident tokens (a cluster: every token at one point); the field
at a token of a point class ``p`` is

.. math:: \dot\theta_p = \frac{1}{s_p} P_{\theta_p} A_p, \quad
          A_p = \frac{\sum_c e^{\beta\tau(t)\langle\theta_p, S_c\rangle/|c|} S_c}{Z_p},
          \quad \dot r_p = \rho_p,

with the scheme's speed :math:`s_p` and radial rate :math:`\rho_p` at
:math:`a_p = \langle A_p, \theta_p\rangle`, :math:`|A_p|` and the class's
radius (:func:`~symdyn.reduced.equiangular.token_law`, the same algebra as
:func:`~symdyn.reduced.equiangular.reduce`). A free cosine
:math:`c = \langle\theta_p, \theta_q\rangle` moves at
:math:`\dot c = \langle\dot\theta_p, \theta_q\rangle + \langle\theta_p, \dot\theta_q\rangle`.

Configurations (:func:`configuration`):

* ``"two-clusters"``: clusters ``A`` (``m`` tokens at :math:`\theta_A`) and
  ``B`` (``n - m`` at :math:`\theta_B`), :math:`\rho = \langle\theta_A,
  \theta_B\rangle`; variables ``rho`` and, off the sphere, ``r_A``, ``r_B``.
* ``"clusters"``: point clusters of given masses ``(m_1, ..., m_k)``
  (``n = sum m_i``) in general position, the cosines ``c_ij`` of their
  centres (and radii ``r_i``) as variables: the Gram matrix of the centres
  closes the field in any dimension.
* ``"simplex"``: ``k`` clusters of ``n/k`` tokens each at the vertices of an
  equiangular set, common cosine ``gamma``; variables ``gamma`` (and ``r``).
  With ``k = n`` (``"equiangular"``) this is :func:`sd.reduce
  <symdyn.reduced.equiangular.reduce>`'s configuration and frame.

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..base.budget import complete_cache, time_limit
from ..base.checks import check_attention, finite_array, integer, number, shown
from ..model.expressions import value
from ..model.guards import ExprLike, in_domain
from ..model.piecewise import lambdify_phases, piecewise_breakpoints
from ..model.registry import SchemeLike
from ..model.registry import scheme as get_scheme
from ..model.scheme import Scheme
from ..model.symbols import ALL_SYMBOLS, gamma, n, r, t
from ..model.symbols import beta as BETA
from .equiangular import Frame, tidy_factors, token_law

#: The cosine of the two cluster centres and their radii.
rho = sp.Symbol("rho", real=True)
r_A = sp.Symbol("r_A", positive=True)
r_B = sp.Symbol("r_B", positive=True)
#: The size of cluster ``A`` and the number of clusters of a simplex.
m = sp.Symbol("m", positive=True)
k = sp.Symbol("k", positive=True)

NAMES = ("two-clusters", "simplex", "equiangular", "clusters")


def cosine(i: int, j: int) -> sp.Symbol:
    """``c_ij``: the cosine of the centres of clusters ``i < j`` (``"clusters"``)."""
    return sp.Symbol(f"c_{i}{j}", real=True)


@dataclass(frozen=True)
class Configuration:
    """A symmetric configuration (see the module's docstring).

    Attributes
    ----------
    name : str
    size : tuple of (class, sympy.Expr)
        Tokens per class.
    gram : tuple of (class, class, sympy.Expr)
        :math:`\\langle S_c, S_{c'}\\rangle` (each unordered pair once).
    cosines : tuple of (Symbol, class, class)
        The free cosines, each between two point classes.
    radii : tuple of (Symbol, class)
        Each radius variable and the point class whose norm it is.
    """

    name: str
    size: tuple
    gram: tuple
    cosines: tuple
    radii: tuple

    def frame(self) -> Frame:
        table = {}
        for c, c2, g in self.gram:
            table[c, c2] = table[c2, c] = g
        return Frame(dict(self.size), lambda c, c2: table[c, c2])

    def reduce(self, scheme: SchemeLike, attention: str = "softmax",
               beta: ExprLike = BETA) -> ConfigurationReduction:
        """The closed ODE of this configuration's variables under ``scheme``.

        Examples
        --------
        >>> import symdyn as sd
        >>> red = sd.configuration("two-clusters", m=1).reduce("post-ln")
        >>> red.variables
        (rho,)
        """
        s = get_scheme(scheme)
        check_attention(attention)
        beta = in_domain(value(beta, "beta", ALL_SYMBOLS), "beta")
        with time_limit(f"reduce {self.name} under {s.name}"):
            return _reduce(self, s, attention, beta)


@dataclass(frozen=True, kw_only=True)
class ConfigurationReduction:
    """:math:`\\dot y = f(t, y)` for the variables ``y`` of a configuration.

    ``rates[i]`` is :math:`\\dot y_i` in ``variables``, ``t``, ``n``, ``beta``
    and the configuration's sizes (``m``, ``k``)."""

    configuration: Configuration
    scheme: Scheme
    attention: str
    variables: tuple
    rates: tuple
    beta: sp.Expr

    def rate(self, name: str) -> sp.Expr:
        """The rate of the variable ``name`` (``"rho"``, ``"r_A"``, ...)."""
        names = [v.name for v in self.variables]
        if name not in names:
            raise ValueError(f"name: {shown(name)} is not a variable of {self.configuration.name} "
                             f"under {self.scheme.name} (choose among {', '.join(names)})")
        return self.rates[names.index(name)]

    def numeric(self, **values):
        """Per phase of the scheme (Mix-LN switches), ``f(t, *y)`` returning the
        rates, at numbers for ``n``, ``beta``, ``m``, ``k`` (those that are symbols)."""
        sub = _numbers(self, values)
        rates = [e.subs(sub) for e in self.rates]      # derived sympy expressions
        loose = set().union(*(e.free_symbols for e in rates)) - {t, *self.variables}
        if loose:
            names = ", ".join(sorted(map(str, loose)))
            raise ValueError(f"values: give numbers for {names} (n, beta, m, k here; a "
                             f"scheme's free parameters by reducing scheme.bind(...))")
        return piecewise_breakpoints(tuple(rates)), lambdify_phases(
            (t, *self.variables), rates, piecewise_breakpoints(tuple(rates)), together=True)

    def solve(self, times, start, rtol: float = 1e-12, atol: float = 1e-14, **values):
        """The variables at ``times`` (array ``(len(times), len(variables))``) from
        ``start`` (a dict by name; radii default to 1) at ``t = 0``, by DOP853
        (scipy) phase by phase; ``values`` as in :meth:`numeric`."""
        from scipy.integrate import solve_ivp
        times = finite_array(times, "times")
        if times.ndim != 1 or times.size == 0 or times[0] < 0 or np.any(np.diff(times) <= 0):
            raise ValueError("times: a 1-D array of strictly increasing times >= 0")
        y = _start(self, start)
        breaks, phases = self.numeric(**values)
        edges = [0.0, *[b for b in breaks if b < times[-1]], float(times[-1])]
        out = np.empty((times.size, len(y)))
        out[times == 0] = y
        for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
            f = phases[min(i, len(phases) - 1)]
            inside = (times > lo) & (times <= hi)
            stops = np.unique(np.append(times[inside], hi))
            sol = solve_ivp(lambda tt, yy, f=f: np.asarray(f(tt, *yy), float), (lo, hi), y,
                            method="DOP853", rtol=rtol, atol=atol, t_eval=stops)
            if not sol.success:
                raise ArithmeticError(f"solve: {sol.message}")
            out[inside] = sol.y[:, :inside.sum()].T
            y = sol.y[:, -1]
        return out

    def __str__(self) -> str:
        rows = "\n".join(f"  d {v}/dt = {e}" for v, e in zip(self.variables, self.rates,
                                                               strict=True))
        return f"{self.configuration.name} under {self.scheme.name} ({self.attention}):\n{rows}"


def _numbers(red, values) -> dict:
    known = {"n": n, "beta": BETA, "m": m, "k": k}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a size or parameter of the reduction "
                         f"(choose among {', '.join(known)})")
    sub = {known[name]: number(v, name, 0) for name, v in values.items()}
    sizes = [e.subs(sub) for _, e in red.configuration.size]
    if any(e.is_number and e < 0 for e in sizes):
        raise ValueError(f"n: the class sizes {', '.join(map(str, sizes))} must be >= 0 "
                         f"(m <= n, k <= n)")
    return sub


def _start(red, start) -> np.ndarray:
    if not isinstance(start, dict):
        raise ValueError(f"start: a dict of starting values by variable name, got {shown(start)}")
    names = [v.name for v in red.variables]
    unknown = sorted(set(start) - set(names))
    if unknown:
        raise ValueError(f"start: {', '.join(unknown)} not among {', '.join(names)}")
    y = []
    for v in red.variables:
        radius = v in {sym for sym, _ in red.configuration.radii}
        if radius:
            y.append(number(start.get(v.name, 1.0), v.name, 0, low_open=True))
        elif v.name not in start:
            raise ValueError(f"start: give {v.name}, a cosine in [-1, 1]")
        else:
            y.append(number(start[v.name], v.name, -1, 1))
    return np.array(y, float)


@complete_cache(maxsize=128)
def _reduce(config: Configuration, s: Scheme, attention: str, beta) -> ConfigurationReduction:
    frame = config.frame()
    radius = {c: sym for sym, c in config.radii}
    points = sorted({c for _, p, q in config.cosines for c in (p, q)} | set(radius))
    law = {}
    for p in points:
        one = token_law(frame, p, s, attention, beta)
        to = {r: radius.get(p, sp.Integer(1)) if not s.on_sphere else sp.Integer(1)}
        law[p] = ({c: v.subs(to) for c, v in one.velocity.items()}, one.r_dot.subs(to))
    variables, rates = [], []
    for sym, p, q in config.cosines:
        rate = frame.dot(law[p][0], frame.point(q)) + frame.dot(frame.point(p), law[q][0])
        numer, denom = sp.fraction(sp.factor(sp.cancel(rate)))
        variables.append(sym)
        rates.append(sp.factor(numer) / tidy_factors(denom))
    if not s.on_sphere:
        seen = set()
        for sym, c in config.radii:
            if sym not in seen:
                seen.add(sym)
                variables.append(sym)
                rates.append(law[c][1])
    if config.name == "clusters":      # n is the sum of the masses
        total = sp.Add(*(size for _, size in config.size))
        rates = [e.subs(n, total) for e in rates]
    return ConfigurationReduction(configuration=config, scheme=s, attention=attention,
                                  variables=tuple(variables), rates=tuple(rates), beta=beta)


def _size(x, name, low):
    """A size: a number (an integer ``>= low``) or the symbol itself (``None``)."""
    return integer(x, name, low) if x is not None else None


def configuration(name: str, m: int | None = None, k: int | None = None,
                  masses=None) -> Configuration:
    """A symmetric configuration by name.

    Parameters
    ----------
    name : {"two-clusters", "simplex", "equiangular"}
    m : int, optional
        ``"two-clusters"``: the size of cluster ``A`` (``>= 1``); the symbol
        ``m`` if omitted. Cluster ``B`` holds ``n - m``.
    k : int, optional
        ``"simplex"``: the number of clusters (``>= 2``), each of ``n/k``
        tokens; the symbol ``k`` if omitted.
    masses : sequence of int
        ``"clusters"``: the cluster sizes (at least 2 clusters, each ``>= 1``);
        ``n`` is their sum.

    Examples
    --------
    >>> import symdyn as sd
    >>> sd.configuration("two-clusters", m=3).size
    (('A', 3), ('B', n - 3))
    """
    if name not in NAMES:
        raise ValueError(f"name: {shown(name)} is not a configuration (choose among "
                         f"{', '.join(NAMES)})")
    if name != "two-clusters" and m is not None:
        raise ValueError(f"m: only the two-clusters configuration has a cluster size, not {name}")
    if name != "simplex" and k is not None:
        raise ValueError(f"k: only the simplex configuration has a number of clusters, not {name}")
    if name != "clusters" and masses is not None:
        raise ValueError(f"masses: only the clusters configuration takes masses, not {name}")
    if name == "clusters":
        return _clusters(masses)
    if name == "two-clusters":
        mA = sp.Integer(_size(m, "m", 1)) if m is not None else globals()["m"]
        mB = n - mA
        return Configuration(name, (("A", mA), ("B", mB)),
                             (("A", "A", mA**2), ("B", "B", mB**2), ("A", "B", mA * mB * rho)),
                             ((rho, "A", "B"),), ((r_A, "A"), (r_B, "B")))
    if name == "equiangular":
        kk, M = n, sp.Integer(1)
    else:
        kk = sp.Integer(_size(k, "k", 2)) if k is not None else globals()["k"]
        M = n / kk
    rest = kk - 2
    size = (("1", M), ("2", M), ("rest", rest * M))
    gram = (("1", "1", M**2), ("2", "2", M**2), ("1", "2", M**2 * gamma),
            ("1", "rest", rest * M**2 * gamma), ("2", "rest", rest * M**2 * gamma),
            ("rest", "rest", rest * M**2 + rest * (rest - 1) * M**2 * gamma))
    return Configuration(name, size, gram, ((gamma, "1", "2"),), ((r, "1"), (r, "2")))


def _clusters(masses) -> Configuration:
    if masses is None or isinstance(masses, (str, bytes)) or not hasattr(masses, "__len__") \
            or len(masses) < 2:
        raise ValueError(f"masses: a sequence of at least 2 cluster sizes (integers >= 1), "
                         f"got {shown(masses)}")
    sizes = [x if isinstance(x, sp.Expr) and not x.is_number     # n/3, for derivations
             else sp.Integer(integer(int(x) if isinstance(x, sp.Integer) else x, "masses", 1))
             for x in masses]
    names = [str(i + 1) for i in range(len(sizes))]
    gram, cosines = [], []
    for i, (c, mc) in enumerate(zip(names, sizes, strict=True)):
        gram.append((c, c, mc**2))
        for j in range(i + 1, len(sizes)):
            sym = cosine(i + 1, j + 1)
            gram.append((c, names[j], mc * sizes[j] * sym))
            cosines.append((sym, c, names[j]))
    radii = tuple((sp.Symbol(f"r_{c}", positive=True), c) for c in names)
    return Configuration("clusters", tuple(zip(names, sizes, strict=True)), tuple(gram),
                         tuple(cosines), radii)
