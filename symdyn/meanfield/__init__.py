"""Layer 2, meanfield: the mean-field limit n -> infinity of the attention
dynamics and its noisy (McKean-Vlasov) version. ``stability`` derives with
sympy the linear growth rate of each spherical-harmonic mode about the uniform
state on S^{d-1} and the critical inverse noise level ``critical_kappa``;
``circle`` solves the Fokker-Planck equation on the circle (d = 2) in Fourier
modes (``mean_field``), ``zonal`` on S^{d-1}, d >= 3, for zonal laws in
Gegenbauer moments (``mean_field_zonal``); ``kuramoto`` gives the stationary
order parameter of the noisy Kuramoto model (beta = 0) above ``kappa_c = d``
(``kuramoto_order``). Imports base only.
"""

from .circle import MeanField, mean_field
from .kuramoto import kuramoto_order
from .stability import critical_kappa, growth_rate, mean_field_rates
from .zonal import ZonalMeanField, mean_field_zonal

__all__ = ["MeanField", "ZonalMeanField", "critical_kappa", "growth_rate", "kuramoto_order",
           "mean_field", "mean_field_rates", "mean_field_zonal"]
