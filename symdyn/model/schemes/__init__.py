"""Layer 1, model: the built-in schemes, one module each (laws, layer rule,
parameters, style, citation).

A module here defines ``ENTRY``, an :class:`~symdyn.model.scheme.Entry`;
:mod:`symdyn.model.registry` finds the modules of this package and lists
them by ``ENTRY.order``. Adding a scheme is adding a module: nothing else in
the library names it (docs/model.md, "Adding a scheme", says how to derive
its laws).
"""
