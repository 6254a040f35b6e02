"""The Dormand-Prince 5(4) pair: its Butcher table, declared.

Dormand & Prince, "A family of embedded Runge-Kutta formulae", J. Comput.
Appl. Math. 6 (1980) 19-26 (``RK5(4)7M``): six stages give the 5th-order
solution :math:`y_1 = y_0 + h \\sum_j b_j k_j`; the 7th evaluation,
:math:`k_6 = f(t_0 + h, y_1)`, is reused as the next step's first stage
(first same as last). The error estimate of order 4 is
:math:`h \\sum_j e_j k_j` over the 7 evaluations (``E``, the difference of
the 5th- and 4th-order weights), measured in the RMS norm
(:func:`symdyn.ode.control.rms_norm`). Dense output: Shampine's quartic
interpolant ("Some practical Runge-Kutta formulas", Math. Comp. 46 (1986)
135-150), ``P[j, k]`` the coefficient of :math:`\\theta^{k+1}` in the weight
:math:`b_j(\\theta)`: :math:`u(\\theta) = y_0 + h \\sum_j b_j(\\theta) k_j`.

A declaration only: :class:`symdyn.ode.methods.ExplicitPair` steps it with
the one stage loop of :mod:`symdyn.ode.rk`.

Layer 1, ode.
"""

from __future__ import annotations

from fractions import Fraction as Q

import numpy as np

NAME = "DP5(4)"
N_STAGES = 6
ORDER = 5
ERROR_ORDER = 4
ERRORS = ("E",)           # the error rows, in the order the norm takes them
NORM = "rms"


def _floats(rows: list) -> np.ndarray:
    return np.array([[float(Q(x)) for x in row] for row in rows])


C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0])

A = _floats([
    [0, 0, 0, 0, 0, 0],
    ["1/5", 0, 0, 0, 0, 0],
    ["3/40", "9/40", 0, 0, 0, 0],
    ["44/45", "-56/15", "32/9", 0, 0, 0],
    ["19372/6561", "-25360/2187", "64448/6561", "-212/729", 0, 0],
    ["9017/3168", "-355/33", "46732/5247", "49/176", "-5103/18656", 0],
])

B = _floats([["35/384", 0, "500/1113", "125/192", "-2187/6784", "11/84"]])[0]

# b - b_hat (the 4th-order weights b_hat = 5179/57600, 0, 7571/16695, 393/640,
# -92097/339200, 187/2100, 1/40), over the 7 evaluations
E = _floats([["71/57600", 0, "-71/16695", "71/1920", "-17253/339200", "22/525",
              "-1/40"]])[0]

P = _floats([
    [1, "-8048581381/2820520608", "8663915743/2820520608", "-12715105075/11282082432"],
    [0, 0, 0, 0],
    [0, "131558114200/32700410799", "-68118460800/10900136933",
     "87487479700/32700410799"],
    [0, "-1754552775/470086768", "14199869525/1410260304", "-10690763975/1880347072"],
    [0, "127303824393/49829197408", "-318862633887/49829197408",
     "701980252875/199316789632"],
    [0, "-282668133/205662961", "2019193451/616988883", "-1453857185/822651844"],
    [0, "40617522/29380423", "-110615467/29380423", "69997945/29380423"],
])
