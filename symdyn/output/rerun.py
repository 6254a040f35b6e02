"""``sd.load(path)``: a saved result back; ``sd.rerun(result)``: the same run again.

:func:`load` reads what ``result.save(path)`` wrote (a netCDF-3 file,
:mod:`symdyn.base.provenance`) into the same class, the arrays equal to the
saved ones bit for bit. :func:`rerun` calls the producer again with what the
result's :class:`~symdyn.base.provenance.Provenance` recorded (and, for a
simulation, its starting tokens ``x0``; for a mean field, its starting
moments ``c0``, ``m0``): the scheme rebuilt from its registry name and parameters,
the noise from its recorded seed, so the arrays come out bit-identical.

Layer 4, output.
"""

from __future__ import annotations

from ..base.archive import KINDS
from ..base.checks import shown
from ..base.provenance import read
from ..meanfield.circle import MeanField, mean_field
from ..meanfield.zonal import ZonalMeanField, mean_field_zonal
from ..model.registry import from_record
from ..particles.result import Simulation
from ..particles.simulation import rerun_simulation
from ..reduced.solve_result import Trajectory
from ..reduced.solver import solve
from ..studies.sweeps import sweep
from ..trained.fits import Fit
from ..trained.trace import LayerTrace


def load(path):
    """The result saved at ``path`` by ``result.save(path)``.

    Only a regular file is opened (a FIFO, a folder, a device is refused
    unopened), and what it holds is checked against the schema of the class
    it names (:meth:`~symdyn.base.archive.Archived.check_parts`): every
    malformed file is a ValueError naming ``path`` and what is wrong."""
    dims = {}
    kind, provenance, arrays, attrs = read(path, dims)
    if kind == "SweepTable":
        from ..studies.sweep_table import SweepTable  # pandas, on use (registers the kind)
        cls = SweepTable
    elif kind in KINDS:
        cls = KINDS[kind]
    else:
        raise ValueError(f"path: {shown(str(path), 200)} holds a {shown(kind)}, not a symdyn "
                         f"result ({', '.join(sorted({*KINDS, 'SweepTable'}))})")
    try:
        cls.check_parts(arrays, dims, attrs)
        return cls.from_parts(provenance, arrays, attrs)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise ValueError(f"path: {shown(str(path), 200)} is not a valid {kind} file: "
                         f"{' '.join(str(exc).split())[:300]}") from None


def rerun(result, scheme=None, weights=None):
    """Run what made ``result`` again (``Simulation``, ``Trajectory``, ``LayerTrace``,
    ``MeanField``, ``ZonalMeanField``, a sweep's table (serially)): the same
    call, bit-identical arrays. A custom scheme is rebuilt from the laws its
    provenance keeps as text; ``scheme`` (one the text cannot rebuild: a
    sympy ``Piecewise``, a layer rule of its own) and ``weights`` (weights
    given as arrays) supply what the record cannot."""
    if "provenance" in getattr(result, "attrs", {}):          # a sweep's table
        from ..studies.sweep_table import rerun as rerun_sweep  # pandas, on use
        return rerun_sweep(result, sweep, scheme)
    p = result.provenance
    if p is None:
        raise ValueError("rerun: the result has no provenance")
    opts = dict(p.options)
    if isinstance(result, LayerTrace):
        return _retrace(p, opts)
    if isinstance(result, Fit):
        from ..trained import fits
        return getattr(fits, opts.pop("function"))(result.data, **opts)
    if isinstance(result, MeanField):
        return mean_field(p.beta, result.t, result.c0, kappa=p.kappa, attention=p.attention,
                          **opts)
    if isinstance(result, ZonalMeanField):
        return mean_field_zonal(p.beta, result.t, result.m0, p.d, kappa=p.kappa,
                                attention=p.attention, **opts)
    if isinstance(result, Simulation):
        return rerun_simulation(result, scheme=scheme, weights=weights)
    if isinstance(result, Trajectory):
        s, _ = from_record(p.scheme, p.params, scheme, p.laws)
        return solve(s, result.n, result.beta, result.gamma0, result.r0, result.t,
                     p.attention, params=dict(result.params) or None, **opts)
    raise ValueError(f"rerun: {type(result).__name__} cannot be rerun yet")


def _retrace(p, opts):
    """A :class:`LayerTrace` again: the model's file loaded with the same
    options (its random weights redrawn from their seed), the same inputs."""
    from ..trained import load as load_model
    from ..trained.fits import randomized

    inputs = {k: opts.pop(k) for k in ("text", "token_ids") if k in opts}
    skip, seed = opts.pop("skip_first"), opts.pop("random_seed")
    model = load_model(p.weights, **opts)
    if seed is not None:
        model = randomized(model, seed)
    return model.trace(**inputs, skip_first=skip)
