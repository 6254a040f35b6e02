"""Layer 1, ode: integration methods (DOP853, ROS34PW2, mpmath extrapolation)
and their driver. Knows nothing of schemes or particles; imports only
:mod:`symdyn.base`.
"""
