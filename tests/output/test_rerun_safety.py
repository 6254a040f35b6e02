"""Files do not decide what a rerun does (issue 46 item 1).

A rerun takes only numerical settings from a file (batch, tolerances,
thresholds, the inputs that rebuild the result); a cache, an output file, an
executor or a scheduler named by the file is refused (they are the
caller's), a fit is named from a closed set, a trace's model path is the
caller's. Oracle: the honest result (an honest file reruns bit for bit: the
control). The attacks are the honest provenance with one option added or
changed, as someone handing over a file could.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from test_load_safety import hang_guard

import symdyn as sd
from symdyn.base.provenance import Provenance
from symdyn.trained import fits

GRID = {"scheme": ["post-ln"], "n": [5], "d": [3], "beta": [1.0]}


def _columns(a, b):
    return list(a.columns) == list(b.columns) and all(
        a[c].to_numpy().tobytes() == b[c].to_numpy().tobytes()
        if a[c].dtype.kind in "biuf" else a[c].tolist() == b[c].tolist() for c in a.columns)


def _with_options(table, **options):
    """A copy of ``table`` whose provenance's options hold ``options`` too."""
    p = table.provenance
    forged = table.copy()
    forged.attrs = {**table.attrs, "provenance": p.replace(
        options=tuple({**dict(p.options), **options}.items())).to_json()}
    return forged


@pytest.fixture(scope="module")
def table():
    return sd.sweep(GRID, t=[0.0, 1.0], seeds=2, executor="serial")


def test_control_an_honest_sweep_file_reruns_bit_for_bit(table, tmp_path):
    table.save(tmp_path / "s.nc")
    assert _columns(sd.rerun(sd.load(tmp_path / "s.nc")), table)


def test_a_sweep_file_naming_a_cache_or_an_output_is_refused(table, tmp_path):
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="'cache'.*does not take from a file"):
        sd.rerun(_with_options(table, cache=str(cache)))
    assert not cache.exists()                              # nothing read or written there
    out = tmp_path / "precious.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="'out'"):
        sd.rerun(_with_options(table, out=str(out)))
    assert out.read_text() == "a,b\n1,2\n"                 # not overwritten
    for option, value in (("executor", "processes"), ("scheduler", "tcp://evil:8786"),
                          ("workers", 64), ("progress", True)):
        with pytest.raises(ValueError, match=f"'{option}'"):
            sd.rerun(_with_options(table, **{option: value}))


def test_a_sweep_file_s_numerical_settings_are_used(table):
    other = sd.rerun(_with_options(table, rtol=1e-6, atol=1e-9))      # allowed: numbers
    assert dict(other.provenance.options)["rtol"] == 1e-6
    assert other.provenance != table.provenance


def _fit():
    layers = np.arange(8.0)
    return fits.exponential(1 - 0.9 * np.exp(-0.5 * layers) * (1 + 0.01 * np.sin(layers)),
                            first=2)


def _forged(result, **options):
    p = result.provenance
    return dataclasses.replace(result, provenance=p.replace(
        options=tuple({**dict(p.options), **options}.items())))


def test_a_fit_is_named_from_a_closed_set(tmp_path):
    fit = _fit()
    fit.save(tmp_path / "f.nc")
    again = sd.rerun(sd.load(tmp_path / "f.nc"))                     # control
    assert again.values.tobytes() == fit.values.tobytes()
    for name in ("randomized", "of_trace", "np", "Fit", "_made", "__class__", 3):
        with pytest.raises(ValueError, match="fit's function must be one of exponential, "
                                             "linear_norm, power, reduced_ode"):
            sd.rerun(_forged(fit, function=name))
    with pytest.raises(ValueError, match="'data'.*does not take from a file"):
        sd.rerun(_forged(fit, data=[0.1, 0.2]))
    power = sd.rerun(_forged(fit, function="power"))                  # another allowed fit
    assert power.law == "power" and power.values.tobytes() != fit.values.tobytes()


def test_other_results_refuse_options_a_file_adds():
    tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[0.0, 1.0])
    assert sd.rerun(tr).gamma.tobytes() == tr.gamma.tobytes()         # control
    with pytest.raises(ValueError, match="'legacy'"):
        sd.rerun(_forged(tr, legacy=1))
    mf = sd.mean_field(1.0, [0.0, 0.5], lambda th: 1 + 0.3 * np.cos(th), kappa=8.0, modes=6)
    with pytest.raises(ValueError, match="'cache'"):
        sd.rerun(_forged(mf, cache="/tmp"))
    sim = sd.simulate("post-ln", sd.init.sphere(4, 3, seed=0), beta=1.0, t=[0.0, 1.0])
    with pytest.raises(ValueError, match="'out'"):
        sd.rerun(_forged(sim, out="x.csv"))
    # a provenance that names another producer
    with pytest.raises(ValueError, match="made by solve"):
        sd.rerun(dataclasses.replace(tr, provenance=tr.provenance.replace(producer="simulate")))


def test_a_trace_s_model_path_comes_from_the_caller(tmp_path):
    import os

    from symdyn.trained.trace import LayerTrace
    evil = tmp_path / "evil.gguf"
    os.mkfifo(evil)
    p = Provenance.of("trace", weights=str(evil), options={"skip_first": False,
                                                           "random_seed": None,
                                                           "token_ids": [1, 2, 3]})
    z = np.zeros(3)
    trace = LayerTrace(model="evil", scheme="pre-ln", tokens=np.array(3), cosine=z, norm=z,
                       min_cosine=z, attn_cosine=z[:2], attn_norm=z[:2], attn_min_cosine=z[:2],
                       entropy=np.zeros((2, 1)), provenance=p)
    with hang_guard(evil):
        with pytest.raises(ValueError, match="weights: the trace was made from the model at"):
            sd.rerun(trace)                               # the file's path is not opened
        with pytest.raises(ValueError, match="FIFO"):
            sd.rerun(trace, weights=evil)                 # given, a FIFO is refused unopened
    assert json.loads(p.to_json())["weights"] == str(evil)
