"""Layer 2, reduced: the equiangular reduction of a scheme to the ODE of
gamma(t), its initial and terminal asymptotics, the stable compiled system,
sensitivities and the batched solver. Imports model, ode and base.
"""
