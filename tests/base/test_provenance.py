"""Results carry what made them (issue 36 item 1): provenance, save/load, rerun.

Oracles: the arguments of the call itself (the provenance must name them);
the arrays a result held (a saved file read back, and a rerun, must give the
same bytes). Controls: a changed seed gives different arrays; a rerun with a
changed parameter differs; a file that is not a result is refused.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.base.provenance import HEADER, Provenance
from symdyn.model.symbols import t as t_sym


def _arrays(r):
    """name -> ndarray of every array of a result (dicts of arrays flattened)."""
    out = {}
    for f in dataclasses.fields(r):
        v = getattr(r, f.name)
        if isinstance(v, np.ndarray):
            out[f.name] = v
        elif isinstance(v, dict):
            out.update({f"{f.name}.{k}": a for k, a in v.items() if isinstance(a, np.ndarray)})
    return out


def _same_bytes(a, b):
    A, B = _arrays(a), _arrays(b)
    assert A.keys() == B.keys()
    return all(A[k].dtype == B[k].dtype and A[k].shape == B[k].shape
               and A[k].tobytes() == B[k].tobytes() for k in A)


def _noisy(seed=None, **kw):
    X0 = sd.init.sphere(6, 3, batch=2, seed=0)
    return sd.simulate("post-ln", X0, beta=2.0, t=[0.0, 0.5, 2.0], step=0.25, mask="causal",
                       kappa=20.0, seed=seed, **kw)


def test_a_simulation_names_what_made_it():
    sim = _noisy(seed=3)
    p = sim.provenance
    assert (p.producer, p.scheme, p.n, p.d, p.beta) == ("simulate", "post-ln", 6, 3, 2.0)
    assert (p.mask, p.kappa, p.noise_seed, p.step, p.weights) == ("causal", 20.0, 3, 0.25,
                                                                  "identity")
    assert p.version == sd.__version__
    text = str(sim)
    for shown in ("mask", "causal", "kappa", "20", "noise seed", "3", "step", "0.25",
                  "epsilon = 1 - gamma"):
        assert shown in text
    assert "array(" not in text and len(text.splitlines()) < 30
    assert "\n" not in repr(sim) and len(repr(sim)) < 120


def test_deepnorm_s_layers_and_solve_s_options_are_recorded():
    tr = sd.solve(sd.scheme("deepnorm", layers=6), n=[8, 16], beta=1.0, gamma0=0.0,
                  t=[0.0, 1.0])
    p = tr.provenance
    assert p.scheme == "deepnorm" and dict(p.params) == {"layers": 6}
    assert p.n == [8.0, 16.0] and p.beta == 1.0 and dict(p.options)["rtol"] == 1e-11
    assert "layers=6" in str(tr)


def test_a_noisy_run_without_a_seed_records_the_entropy_it_drew():
    a, b = _noisy(), _noisy()
    assert isinstance(a.provenance.noise_seed, int) and a.provenance.noise_seed > 2**64
    # control: two unseeded runs draw different noise (so the record matters)
    assert a.provenance.noise_seed != b.provenance.noise_seed
    assert not np.array_equal(a.gamma, b.gamma)
    assert _same_bytes(sd.rerun(a), a)


@pytest.mark.parametrize("make", [
    lambda: _noisy(seed=5),
    lambda: sd.simulate(sd.scheme("deepnorm", layers=6), sd.init.sphere(5, 4, batch=3, seed=1),
                        beta=[0.5, 1.0, 2.0], t=[0.0, 1.0, 3.0], save_x=True),
    lambda: sd.simulate("pre-ln", sd.init.gaussian(5, 3, seed=2), beta=1.0, t=[0.0, 2.0],
                        weights="kaiming"),
    lambda: sd.solve("post-ln", n=[8, 32], beta=1.0, gamma0=0.0, t=[0.0, 5.0, 300.0]),
    lambda: sd.solve(sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5}),
                     n=8, beta=1.0, gamma0=0.0, t=[1.0, 3.0], params={"c": [0.0, 1.0]},
                     sensitivities=["c"]),
], ids=["noisy-causal", "deepnorm-batch-save-x", "pre-ln-kaiming", "solve", "solve-custom"])
def test_save_load_gives_the_same_bytes_and_rerun_the_same_arrays(make, tmp_path):
    r = make()
    path = tmp_path / "r.nc"
    r.save(path)
    back = sd.load(path)
    assert type(back) is type(r) and back.provenance == r.provenance
    assert _same_bytes(back, r)
    assert _same_bytes(sd.rerun(back), r)      # a custom scheme too: its laws are kept


def test_control_a_changed_seed_or_parameter_changes_the_arrays():
    sim = _noisy(seed=5)
    other = dataclasses.replace(sim, provenance=sim.provenance.replace(noise_seed=6))
    assert not _same_bytes(sd.rerun(other), sim)
    tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[0.0, 5.0])
    assert not _same_bytes(sd.rerun(dataclasses.replace(tr, beta=tr.beta * 1.01)), tr)


def test_the_file_is_plain_netcdf_with_the_provenance_as_json(tmp_path):
    from scipy.io import netcdf_file
    sim = _noisy(seed=5)
    sim.save(tmp_path / "s.nc")
    with netcdf_file(tmp_path / "s.nc", mmap=False) as f:
        assert f.variables["gamma"].dimensions == ("member", "time")
        assert f.variables["labels"].dimensions == ("member", "time", "token")
        p = json.loads(f.provenance.decode())
    assert p["noise_seed"] == 5 and p["mask"] == "causal"
    assert Provenance.from_json(json.dumps(p)) == sim.provenance


def test_refusals(tmp_path):
    from scipy.io import netcdf_file
    with netcdf_file(tmp_path / "x.nc", "w") as f:
        f.symdyn_type = "Nothing"
        f.provenance = Provenance(producer="x").to_json()
        f.attributes_json = "{}"
    with pytest.raises(ValueError, match="not a symdyn result"):
        sd.load(tmp_path / "x.nc")
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match="path"):          # checked before any writing
        _noisy(seed=1).save(tmp_path / "a_file" / "s.nc")
    tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[0.0, 1.0], dps=20)
    with pytest.raises(ValueError, match="netCDF-3 keeps real"):
        tr.save(tmp_path / "mp.nc")
    # a law the text does not rebuild (a sympy Piecewise): not recorded, scheme= asked
    fam = sd.custom_scheme("mine", speed=sp.Piecewise((1, t_sym < 5), (2, True)))
    with pytest.raises(ValueError, match="laws were not recorded; pass scheme="):
        sd.rerun(sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[0.0, 1.0]))


def test_a_custom_scheme_keeps_its_laws_and_reruns_without_being_given():
    """The laws as text (the custom_scheme arguments again), read back by the
    one safe parser: the rerun gives the same bytes (simulate with bound
    parameters and a temperature, solve on a sphere-leaving law). Controls:
    a registry scheme keeps none; a changed law changes the arrays; text that
    is not a law is refused by the parser, never run."""
    fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5},
                           temperature="1/(1 + t)")
    sim = sd.simulate(fam, sd.init.sphere(5, 3, seed=2), beta=2.0, t=[1.0, 4.0],
                      params={"c": 0.3})
    assert dict(sim.provenance.laws) == {"speed": "A_norm/(c*t + 1)", "radial": None,
                                         "temperature": "1/(t + 1)", "params": {"c": 0.5}}
    assert "laws" in str(sim) and _same_bytes(sd.rerun(sim), sim)
    peri = sd.custom_scheme("soft-peri", speed="r*(1 + A_norm)", radial="a")
    tr = sd.solve(peri, n=8, beta=1.0, gamma0=0.2, t=[0.5, 2.0])
    assert _same_bytes(sd.rerun(tr), tr)
    assert sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[1.0]).provenance.laws == ()
    changed = dict(tr.provenance.laws, speed="r*(2 + A_norm)")
    other = dataclasses.replace(tr, provenance=tr.provenance.replace(
        laws=tuple(changed.items())))
    assert not _same_bytes(sd.rerun(other), tr)                       # control
    hostile = dict(changed, speed="__import__('os').getcwd()")
    with pytest.raises(ValueError, match="speed"):
        sd.rerun(dataclasses.replace(tr, provenance=tr.provenance.replace(
            laws=tuple(hostile.items()))))
    for laws, word in (((("speed", "A_norm"), ("open", "1")), "laws: expected"),
                       ((("radial", "a"),), "speed required"), (5, "pairs"),
                       ((("speed", "A_norm"), ("params", [1, 2])), "params must map")):
        with pytest.raises(ValueError, match=word):          # a tampered file: data
            sd.rerun(dataclasses.replace(tr, provenance=tr.provenance.replace(laws=laws)))


def test_to_xarray_names_dimensions_and_keeps_the_provenance():
    xr = pytest.importorskip("xarray")
    sim = _noisy(seed=5)
    ds = sim.to_xarray()
    assert isinstance(ds, xr.Dataset)
    assert ds["r"].dims == ("member", "token", "time") and ds["x0"].dims[-1] == "dim"
    assert np.array_equal(ds["time"].values, sim.t)
    assert json.loads(ds.attrs["provenance"])["noise_seed"] == 5
    assert ds.attrs["provenance.mask"] == "causal"


def test_a_layer_trace_names_its_model_ablations_and_inputs(tmp_path):
    pytest.importorskip("safetensors")
    from test_trained_tiny import bert_folder, bert_weights

    from symdyn.trained.fits import randomized

    model = sd.trained.load(bert_folder(tmp_path / "tiny-bert", bert_weights()))
    ids = [[1, 2, 3, 4], [5, 6, 7]]
    plain = model.trace(token_ids=ids)
    ablated = randomized(model.variant(mlp=False), 3).trace(token_ids=ids)
    assert "no MLP, random weights (seed 3)" in str(ablated)
    assert "ablations" not in str(plain)             # control: the checkpoint has none
    assert str(tmp_path / "tiny-bert") == ablated.provenance.weights
    assert "array(" not in str(ablated) and "\n" not in repr(ablated)
    ablated.save(tmp_path / "t.nc")
    back = sd.load(tmp_path / "t.nc")
    assert back.provenance == ablated.provenance and _same_bytes(back, ablated)
    assert _same_bytes(sd.rerun(back, weights=tmp_path / "tiny-bert"), ablated)
    with pytest.raises(ValueError, match="weights: the trace was made from the model at"):
        sd.rerun(back)                # the path a file names is not opened
    other = randomized(model.variant(mlp=False), 4).trace(token_ids=ids)
    assert not _same_bytes(other, ablated)                 # control: another seed differs


def test_a_mean_field_is_saved_with_its_complex_moments_and_rerun(tmp_path):
    mf = sd.mean_field(2.0, [0.0, 0.5, 2.0], lambda th: 1 + 0.3 * np.cos(th) + 0.2 * np.sin(2 * th),
                       kappa=8.0, modes=16)
    p = mf.provenance
    assert (p.producer, p.beta, p.kappa, dict(p.options)["modes"]) == ("mean_field", 2.0, 8.0, 16)
    text = str(mf)
    assert "kappa" in text and "order |c_1|" in text and "array(" not in text
    assert len(text.splitlines()) < 25 and "\n" not in repr(mf)
    mf.save(tmp_path / "m.nc")
    back = sd.load(tmp_path / "m.nc")
    assert back.moments.dtype == np.complex128 and _same_bytes(back, mf)
    assert _same_bytes(sd.rerun(back), mf)
    other = dataclasses.replace(back, provenance=p.replace(kappa=4.0))
    assert not _same_bytes(sd.rerun(other), mf)                 # control: another kappa


def test_a_fit_keeps_its_data_and_fits_it_again(tmp_path):
    from symdyn.trained import fits

    layers = np.arange(8.0)
    gamma = 1 - 0.9 * np.exp(-0.5 * layers) * (1 + 0.01 * np.sin(layers))
    fit = fits.exponential(gamma, first=2)
    assert dict(fit.provenance.options) == {"function": "exponential", "first": 2}
    assert fit.values[1] == pytest.approx(0.5, abs=0.02)      # the law it was made with
    fit.save(tmp_path / "f.nc")
    back = sd.load(tmp_path / "f.nc")
    assert _same_bytes(back, fit) and _same_bytes(sd.rerun(back), fit)
    other = dataclasses.replace(back, data=gamma ** 2)
    assert not _same_bytes(sd.rerun(other), fit)                 # control: other data
    tr = sd.solve("post-ln", n=8, beta=1.5, gamma0=0.1, t=0.3 * layers[1:])
    ode = fits.reduced_ode(np.concatenate([[0.1], tr.gamma]), "post-ln", n=8)
    assert ode.provenance.scheme == "post-ln" and ode.provenance.n == 8
    assert ode.values == pytest.approx([1.5, 0.3], rel=1e-4)    # the oracle: its own source
    assert _same_bytes(sd.rerun(ode), ode)


def test_a_sweep_table_names_its_grid_seeds_and_times():
    df = sd.sweep({"scheme": ["post-ln"], "n": [6], "d": [3], "beta": [1.0]}, t=[0.0, 1.0],
                  seeds=2, executor="serial")
    p = Provenance.from_json(df.attrs["provenance"])
    opts = dict(p.options)
    assert (p.producer, opts["kind"], opts["seeds"], opts["t"]) == ("sweep", "simulate", [0, 1],
                                                                    [0.0, 1.0])
    assert opts["grid"]["scheme"] == ["post-ln"] and p.version == sd.__version__
    other = sd.sweep({"scheme": ["post-ln"], "n": [6], "d": [3], "beta": [1.0]}, t=[0.0, 1.0],
                     seeds=[3], executor="serial")
    assert dict(Provenance.from_json(other.attrs["provenance"]).options)["seeds"] == [3]


def test_a_zonal_mean_field_is_saved_and_rerun(tmp_path):
    zm = sd.mean_field_zonal(1.5, [0.0, 0.5, 2.0], [1.0, 0.2, 0.05], d=4, kappa=6.0, modes=12)
    p = zm.provenance
    assert (p.producer, p.beta, p.kappa, p.d, dict(p.options)["modes"]) == (
        "mean_field_zonal", 1.5, 6.0, 4, 12)
    assert zm.m0[:3].tolist() == [1.0, 0.2, 0.05] and zm.m0.shape == (13,)
    text = str(zm)
    assert "kappa" in text and "m_1 = mean <x, e>" in text and "array(" not in text
    assert len(text.splitlines()) < 25 and "\n" not in repr(zm) and "d=4" in repr(zm)
    zm.save(tmp_path / "z.nc")
    back = sd.load(tmp_path / "z.nc")
    assert type(back) is sd.ZonalMeanField and back.provenance == p
    assert back.d == 4 and _same_bytes(back, zm)
    assert _same_bytes(sd.rerun(back), zm)
    other = dataclasses.replace(back, provenance=p.replace(kappa=4.0))
    assert not _same_bytes(sd.rerun(other), zm)                 # control: another kappa


def _same_columns(a, b):
    """Every column equal bit for bit (numbers) or as text, in the same order."""
    return list(a.columns) == list(b.columns) and all(
        a[c].to_numpy().tobytes() == b[c].to_numpy().tobytes()
        if a[c].dtype.kind in "biuf" else a[c].astype(str).tolist() == b[c].astype(str).tolist()
        for c in a.columns)


def test_a_sweep_table_is_saved_loaded_and_rerun(tmp_path):
    grid = {"scheme": ["post-ln", sd.scheme("deepnorm", layers=6)], "n": [6], "d": [3],
            "beta": [1.0, 2.0], "step": [None, 0.25]}
    df = sd.sweep(grid, t=[0.0, 0.5, 2.0], seeds=2, executor="serial")
    p = df.provenance                                   # reachable, not only in attrs
    assert p.producer == "sweep" and dict(p.options)["grid"]["scheme"][1] == {
        "scheme": "deepnorm", "params": {"layers": 6}}
    df.save(tmp_path / "s.nc")
    back = sd.load(tmp_path / "s.nc")
    assert isinstance(back, type(df)) and back.provenance == p and _same_columns(back, df)
    assert back["scheme"].tolist() == df["scheme"].tolist() and np.isnan(back["step"]).any()
    again = sd.rerun(back)
    assert _same_columns(again, df) and again.provenance == p
    assert _same_columns(sd.rerun(df[df["beta"] == 1.0]), df)     # a cut reruns the sweep
    # a custom scheme's laws ride in the grid's record: rerun without scheme=
    fam = sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})
    own = sd.sweep({"scheme": [fam], "n": [6], "d": [3], "beta": [1.0]}, t=[0.0, 1.0],
                   seeds=1, executor="serial")
    assert dict(own.provenance.options)["grid"]["scheme"][0]["laws"]["speed"] == \
        "A_norm/(c*t + 1)"
    own.save(tmp_path / "own.nc")
    assert _same_columns(sd.rerun(sd.load(tmp_path / "own.nc")), own)
    # control: the same sweep with another seed list differs
    changed = back.copy()
    changed.attrs["provenance"] = p.replace(options=tuple(
        (k, [2, 3] if k == "seeds" else v) for k, v in p.options)).to_json()
    assert not _same_columns(sd.rerun(changed), df)


def test_a_solver_sweep_reruns_and_an_unrecorded_custom_scheme_needs_scheme(tmp_path):
    df = sd.sweep({"scheme": ["post-ln", "pre-ln"], "beta": [1.0, 4.0]}, t=[0.0, 10.0],
                  kind="solve", executor="serial")
    df.save(tmp_path / "s.nc")
    assert _same_columns(sd.rerun(sd.load(tmp_path / "s.nc")), df)
    fam = sd.custom_scheme("mine", speed="A_norm")         # its laws are recorded
    mine = sd.sweep({"scheme": [fam], "beta": [1.0]}, t=[0.0, 1.0], kind="solve",
                    executor="serial")
    assert _same_columns(sd.rerun(mine), mine)
    # a law the text does not rebuild (a sympy Piecewise): scheme= is asked for
    kink = sd.custom_scheme("kink", speed=sp.Piecewise((1, t_sym < 0.5), (2, True)))
    kinked = sd.sweep({"scheme": [kink], "beta": [1.0]}, t=[0.0, 1.0], kind="solve",
                      executor="serial")
    with pytest.raises(ValueError, match="laws were not recorded; pass scheme="):
        sd.rerun(kinked)
    assert _same_columns(sd.rerun(kinked, scheme=[kink]), kinked)


def test_a_custom_scheme_under_a_builtin_name_is_not_rerun_as_the_builtin(tmp_path):
    """A scheme of one's own named "post-ln" whose laws no text rebuilds (a
    Piecewise speed) is recorded as unrecorded, through a file too: rerun and a
    sweep's rerun ask for scheme= instead of running the registry's Post-LN
    (which gave tokens 0.25 away). Control: the registry's Post-LN reruns
    without it, and with scheme= the custom one reruns bit for bit."""
    kink = sd.custom_scheme("post-ln", speed=sp.Piecewise((1 + t_sym, t_sym < 1), (2, True)))
    X0 = sd.init.sphere(5, 3, seed=0)
    sim = sd.simulate(kink, X0, beta=1.0, t=[2.0], save_x=True)
    sim.save(tmp_path / "k.nc")
    for result in (sim, sd.load(tmp_path / "k.nc")):
        with pytest.raises(ValueError, match="laws were not recorded; pass scheme="):
            sd.rerun(result)
    assert np.array_equal(sd.rerun(sim, scheme=kink).X, sim.X)
    plain = sd.simulate("post-ln", X0, beta=1.0, t=[2.0], save_x=True)
    assert np.array_equal(sd.rerun(plain).X, plain.X)
    assert not np.allclose(plain.X, sim.X, atol=1e-3)          # the two differ
    swept = sd.sweep({"scheme": [kink], "beta": [1.0]}, t=[0.0, 1.0], kind="solve",
                     executor="serial")
    with pytest.raises(ValueError, match="laws were not recorded; pass scheme="):
        sd.rerun(swept)
    assert _same_columns(sd.rerun(swept, scheme=[kink]), swept)


def _rewritten(src, dst, rename=None, change=None):
    """``src``'s netCDF copied to ``dst`` with its global attribute ``sha256``
    renamed to ``rename`` (None: left out, as an older symdyn saved files) and
    the last value of variable ``change`` negated."""
    from scipy.io import netcdf_file
    with netcdf_file(src, mmap=False) as f, netcdf_file(dst, "w", version=2) as g:
        for key in HEADER:
            setattr(g, key, getattr(f, key))
        if rename is not None:
            setattr(g, rename, f.sha256)
        for name, size in f.dimensions.items():
            g.createDimension(name, size)
        for name, v in f.variables.items():
            w = g.createVariable(name, v.data.dtype, v.dimensions)
            w.dtype_name = v.dtype_name
            data = v.data.copy()
            if name == change:
                data.flat[-1] = -data.flat[-1]
            w[...] = data


def test_a_damaged_digest_name_does_not_pass_as_an_older_file(tmp_path):
    tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[0.0, 5.0])
    tr.save(tmp_path / "t.nc")
    _rewritten(tmp_path / "t.nc", tmp_path / "bad.nc", rename="sha2\x006", change="gamma")
    with pytest.raises(ValueError, match=r"unknown global attribute 'sha2\\x006'"):
        sd.load(tmp_path / "bad.nc")
    # controls: without the digest (an older symdyn's file) it loads with a
    # warning, changed numbers and all; with it, the changed numbers are refused
    _rewritten(tmp_path / "t.nc", tmp_path / "old.nc", change="gamma")
    with pytest.warns(UserWarning, match="no SHA-256 digest"):
        old = sd.load(tmp_path / "old.nc")
    assert old.gamma[0] == tr.gamma[0] and old.gamma[-1] == -tr.gamma[-1] != 0
    _rewritten(tmp_path / "t.nc", tmp_path / "signed.nc", rename="sha256", change="gamma")
    with pytest.raises(ValueError, match="does not match its SHA-256 digest"):
        sd.load(tmp_path / "signed.nc")
    _rewritten(tmp_path / "t.nc", tmp_path / "same.nc", rename="sha256")
    assert sd.load(tmp_path / "same.nc").gamma.tobytes() == tr.gamma.tobytes()
