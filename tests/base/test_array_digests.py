"""A run's provenance holds the SHA-256 of every array its caller passed (issue 48 item 7).

Oracles: the arrays themselves (equal arrays, however passed, have one
digest; the digest of the start is that of the ``x0`` the result keeps) and
a rerun with the same arrays (the same call: the same bytes). Controls: one
changed element, a changed dtype or shape gives another digest; a rerun with
a weight matrix changed in one element, without the arrays, with arrays
where the run had none, or from a start changed in one element, is refused
with a message naming the argument; a file without digests loads with a
warning.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

import symdyn as sd
from symdyn.base.provenance import Provenance, array_digest

D = 4


def _run(weights):
    X0 = sd.init.gaussian(5, D, scale=D**-0.5, batch=2, seed=0)
    return sd.simulate("peri-ln", X0, beta=1.0, t=[0.0, 0.5, 1.0], weights=weights, step=0.25)


@pytest.fixture(scope="module")
def kaiming():
    return sd.weights.kaiming(D, heads=2, seed=3)


def test_equal_arrays_have_one_digest_and_one_changed_element_another():
    a = np.random.default_rng(0).normal(size=(3, 4))
    d = array_digest(a)
    assert len(d) == 64 and int(d, 16) >= 0                    # SHA-256 in hex
    assert array_digest(a.copy()) == d == array_digest(np.asfortranarray(a))
    assert array_digest(a.astype(">f8")) == d                  # byte order is not content
    b = a.copy()
    b[2, 3] = np.nextafter(b[2, 3], np.inf)                    # control: one ulp of one element
    assert array_digest(b) != d
    assert array_digest(a.astype(np.float32)) != d             # control: another dtype
    assert array_digest(a.reshape(4, 3)) != d                  # control: another shape
    # not the digest of the bytes alone: the dtype and shape are in it
    assert d != hashlib.sha256(a.tobytes()).hexdigest()


def test_the_provenance_holds_the_start_and_weight_digests(kaiming):
    sim = _run(kaiming)
    digests = dict(sim.provenance.arrays)
    assert set(digests) == {"X0", "weights.Q", "weights.K", "weights.V"}
    assert digests["X0"] == array_digest(sim.x0)
    for name in "QKV":
        assert digests[f"weights.{name}"] == array_digest(getattr(kaiming, name))
    assert sim.provenance.weights == "given"
    assert "sha256:" in str(sim)
    # named weights are rebuilt from their name: only the start is an array
    assert dict(_run("kaiming").provenance.arrays).keys() == {"X0"}
    assert dict(_run(None).provenance.arrays).keys() == {"X0"}


def test_the_same_arrays_rerun_bit_for_bit_in_either_form(kaiming, tmp_path):
    sim = _run(kaiming)
    again = sd.rerun(sim, weights=kaiming)
    assert again.gamma.tobytes() == sim.gamma.tobytes()
    # the same matrices as a (Q, K, V) tuple of fresh copies: the same digests
    tup = tuple(np.array(getattr(kaiming, name)[0]) for name in "QKV")
    assert sd.rerun(sim, weights=tup).gamma.tobytes() == sim.gamma.tobytes()
    sim.save(tmp_path / "s.nc")
    back = sd.load(tmp_path / "s.nc")
    assert back.provenance.arrays == sim.provenance.arrays
    assert sd.rerun(back, weights=kaiming).gamma.tobytes() == sim.gamma.tobytes()


@pytest.mark.parametrize("name", ["Q", "K", "V"])
def test_control_one_changed_weight_element_is_refused_naming_weights(kaiming, name):
    sim = _run(kaiming)
    mats = {k: np.array(getattr(kaiming, k)) for k in "QKV"}
    mats[name][0, 1, 2, 3] += 1e-9
    other = sd.weights.Weights(mats["Q"], mats["K"], mats["V"])
    with pytest.raises(ValueError, match=rf"^weights: weights\.{name} differs"):
        sd.rerun(sim, weights=other)


def test_missing_or_unexpected_arrays_are_refused_naming_the_argument(kaiming):
    with pytest.raises(ValueError, match="^weights: .*pass weights="):
        sd.rerun(_run(kaiming))
    with pytest.raises(ValueError, match="^weights: the run was not given this array"):
        sd.rerun(_run("kaiming"), weights=kaiming)
    sim = _run(None)
    with pytest.raises(ValueError, match="^weights: the run was not given this array"):
        sd.rerun(sim, weights=kaiming)
    sd.rerun(sim, weights=sd.weights.identity(D))          # identity weights are no arrays


def test_control_a_start_changed_in_one_element_is_refused_naming_X0():
    sim = _run(None)
    x0 = sim.x0.copy()
    x0[1, 2, 0] += 1e-12
    with pytest.raises(ValueError, match=r"^X0: X0 differs"):
        sd.rerun(dataclasses.replace(sim, x0=x0))
    sd.rerun(dataclasses.replace(sim, x0=sim.x0.copy()))    # the same values: accepted


def test_a_file_without_digests_loads_with_a_warning_and_reruns(tmp_path):
    sim = _run(None)
    old = dataclasses.replace(sim, provenance=sim.provenance.replace(arrays=None))
    old.save(tmp_path / "old.nc")
    with pytest.warns(UserWarning, match="no SHA-256 of the arrays"):
        back = sd.load(tmp_path / "old.nc")
    assert back.provenance.arrays is None
    assert sd.rerun(back).gamma.tobytes() == sim.gamma.tobytes()
    sim.save(tmp_path / "new.nc")                          # control: a new file does not warn
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sd.load(tmp_path / "new.nc")


def test_a_malformed_digest_list_is_refused():
    good = Provenance.of("simulate", arrays={"X0": np.zeros(2)})
    assert Provenance.from_json(good.to_json()) == good
    text = good.to_json().replace(dict(good.arrays)["X0"], "abc")
    with pytest.raises(ValueError, match="arrays must be a list of"):
        Provenance.from_json(text)
