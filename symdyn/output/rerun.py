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
from ..base.checks import BadInput, shown
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
    dims: dict = {}
    stored = read(path, dims)
    kind, arrays, attrs = stored.kind, stored.arrays, stored.attrs
    if kind == "SweepTable":
        from ..studies.sweep_table import SweepTable  # pandas, on use (registers the kind)
        cls = SweepTable
    elif kind in KINDS:
        cls = KINDS[kind]
    else:
        raise BadInput(f"path: {shown(str(path), 200)} holds a {shown(kind)}, not a symdyn "
                       f"result ({', '.join(sorted({*KINDS, 'SweepTable'}))})")
    try:
        cls.check_parts(arrays, dims, attrs)
        return cls.from_parts(stored.provenance, arrays, attrs)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise BadInput(f"path: {shown(str(path), 200)} is not a valid {kind} file: "
                       f"{' '.join(str(exc).split())[:300]}") from None


#: what a rerun takes from a file: per result type, its producer and the
#: options (numerical settings, flags, the inputs that rebuild the result)
#: it passes on; every path (cache, out, a model's file), executor and
#: scheduler comes from the caller, so a file naming any other is refused
ALLOWED = {
    "Simulation": ("simulate", {"rtol", "atol", "save_x", "clock", "cluster_threshold",
                                "merge", "dtype", "method", "save", "save_function"}),
    "Trajectory": ("solve", {"rtol", "atol", "dps", "sensitivities", "dense_output"}),
    "MeanField": ("mean_field", {"modes", "tol"}),
    "ZonalMeanField": ("mean_field_zonal", {"modes", "tol"}),
    "Fit": ("fit", {"function", "first", "scheme", "n", "beta0", "tau0"}),
    "LayerTrace": ("trace", {"skip_first", "random_seed", "text", "token_ids", "mlp", "norm",
                             "eps", "permuted", "theta", "kv_map"}),
    "SweepTable": ("sweep", {"kind", "grid", "seeds", "t", "batch", "rtol", "atol",
                             "cluster_threshold"}),
}


def options_of(kind: str, p) -> dict:
    """The options a rerun of a ``kind`` takes from its provenance ``p``:
    a ValueError if ``p`` names another producer or an option that is not
    one of :data:`ALLOWED` (a path, an executor: the caller's to give)."""
    producer, allowed = ALLOWED[kind]
    return p.rerun_options(producer, allowed, f"a {kind}")


def fit_functions() -> dict:
    """The fits a rerun may call, by the name their provenance records."""
    from ..trained import fits
    return {"exponential": fits.exponential, "power": fits.power,
            "linear_norm": fits.linear_norm, "reduced_ode": fits.reduced_ode}


def rerun(result, scheme=None, weights=None, save=None):
    """Run what made ``result`` again (``Simulation``, ``Trajectory``, ``LayerTrace``,
    ``MeanField``, ``ZonalMeanField``, ``Fit``, a sweep's table (serially)): the
    same call, bit-identical arrays. A custom scheme is rebuilt from the laws its
    provenance keeps as text; ``scheme`` (one the text cannot rebuild: a
    sympy ``Piecewise``, a layer rule of its own), ``weights`` (weights
    given as arrays; for a ``LayerTrace`` the model's file or folder) and
    ``save`` (the function a simulation saved the values of) supply what the
    record cannot. Weight arrays must be the run's: a simulation's
    provenance holds the SHA-256 of every array its call was given, and
    others (or none where it had some) are refused, the message naming the
    argument. Only the numerical settings of :data:`ALLOWED` come from the
    record: a rerun opens no path and starts no executor that a file names,
    and a trace made from a model's file needs ``weights=``."""
    if "provenance" in getattr(result, "attrs", {}):          # a sweep's table
        from ..studies.sweep_table import rerun as rerun_sweep  # pandas, on use
        return rerun_sweep(result, sweep, scheme)
    p = getattr(result, "provenance", None)
    if p is None:
        raise ValueError("rerun: the result has no provenance")
    kind = type(result).__name__
    if kind not in ALLOWED:
        raise ValueError(f"rerun: {kind} cannot be rerun yet")
    opts = options_of(kind, p)
    if save is not None and not isinstance(result, Simulation):
        raise BadInput(f"save: a rerun of a {kind} takes no save= (a Simulation's does)")
    if isinstance(result, LayerTrace):
        return _retrace(p, opts, weights)
    if isinstance(result, Fit):
        functions, name = fit_functions(), opts.pop("function", None)
        if not isinstance(name, str) or name not in functions:
            raise ValueError(f"rerun: the fit's function must be one of "
                             f"{', '.join(sorted(functions))}, got {shown(name)}")
        return functions[name](result.data, **opts)
    if isinstance(result, MeanField):
        return mean_field(p.beta, result.t, result.c0, kappa=p.kappa, attention=p.attention,
                          **opts)
    if isinstance(result, ZonalMeanField):
        return mean_field_zonal(p.beta, result.t, result.m0, p.d, kappa=p.kappa,
                                attention=p.attention, **opts)
    if isinstance(result, Simulation):
        return rerun_simulation(result, scheme=scheme, weights=weights, save=save)
    if isinstance(result, Trajectory):
        s, _ = from_record(p.scheme, p.params, scheme, p.laws)
        return solve(s, result.n, result.beta, result.gamma0, result.r0, result.t,
                     p.attention, params=dict(result.params) or None, **opts)
    raise ValueError(f"rerun: {kind} cannot be rerun yet")


def _retrace(p, opts, weights):
    """A :class:`LayerTrace` again: the model (``weights``, the caller's path;
    or the known model the record names) loaded with the same options (its
    random weights redrawn from their seed), the same inputs."""
    from ..trained import KNOWN
    from ..trained import load as load_model
    from ..trained.fits import randomized

    if weights is None:
        if p.weights not in KNOWN:
            raise ValueError(f"weights: the trace was made from the model at "
                             f"{shown(p.weights, 200)}; pass weights= (its file or folder): "
                             f"a rerun opens no path a file names")
        weights = p.weights
    inputs = {k: opts.pop(k) for k in ("text", "token_ids") if k in opts}
    skip, seed = opts.pop("skip_first", False), opts.pop("random_seed", None)
    model = load_model(weights, **opts)
    if seed is not None:
        model = randomized(model, seed)
    return model.trace(**inputs, skip_first=skip)
