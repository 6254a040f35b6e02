"""The symbols of symdyn (user text is parsed by :mod:`symdyn.model.expressions`).

Every formula in the package is written in these symbols:

* ``t`` -- time (depth), ``t >= 0``;
* ``r`` -- token norm, ``r > 0``;
* ``a`` -- :math:`a_k = \\langle A_k, \\theta_k \\rangle`;
* ``A_norm`` -- :math:`|A_k|`;
* ``n`` -- number of tokens; ``beta`` -- inverse temperature;
* ``gamma`` -- the common cosine similarity of an equiangular configuration;
* ``C`` -- the free constant of a terminal law.

Layer 1, model.
"""

from __future__ import annotations

import sympy as sp

t = sp.Symbol("t", nonnegative=True)
r = sp.Symbol("r", positive=True)
a = sp.Symbol("a", real=True)
A_norm = sp.Symbol("A_norm", positive=True)
n = sp.Symbol("n", positive=True)
beta = sp.Symbol("beta", positive=True)
gamma = sp.Symbol("gamma", real=True)
C = sp.Symbol("C", positive=True)

#: The symbols a scheme's speed law and radial rate may use.
SCHEME_SYMBOLS = {s.name: s for s in (t, r, a, A_norm, n, beta)}

#: Every symbol a user's text may name (see :mod:`symdyn.model.expressions`).
ALL_SYMBOLS = {**SCHEME_SYMBOLS, "gamma": gamma, "C": C}
