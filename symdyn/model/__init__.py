"""Layer 1, model: the symbols, the safe parser of user text, schemes (speed
and radial laws, layer rules, free parameters) and their compiled laws.
Imports only :mod:`symdyn.base`.
"""
