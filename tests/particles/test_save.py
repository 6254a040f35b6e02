"""``simulate(..., save=)``: what each output records (issue 48 item 5).

Oracles: the complete run with the tokens (``save_x=True``), whose
integration is the same, so its tokens are the tokens-only run's; the
observables recomputed afterwards from the saved tokens by the public
functions (mean cosine, ``sd.cluster_labels``, ``sd.energy``, token norms)
against the complete run's; a function of the state against the same
function applied to the complete run's tokens. Work, not time: a tokens-only
run evaluates the field at no output (the complete run once per member and
output). Controls: another start, another time, another function are seen;
an observable not saved raises naming ``save=``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import symdyn as sd
from symdyn.particles.field import Field
from symdyn.particles.result import COMPLETE, NotSaved

T = [0.0, 0.5, 2.0, 5.0, 12.0]


def _gamma(X):
    """Mean pairwise cosine of the directions of X (..., n, d)."""
    th = X / np.linalg.norm(X, axis=-1, keepdims=True)
    n = X.shape[-2]
    G = th @ np.swapaxes(th, -1, -2)
    return (G.sum(axis=(-1, -2)) - np.trace(G, axis1=-2, axis2=-1)) / (n * (n - 1))


#: (scheme, start, options): the cluster's frame (identity weights), stored unit
#: vectors (Kaiming weights), span coordinates (d > n), the layers, the log clock
CASES = {
    "frame": ("post-ln", sd.init.sphere(8, 3, batch=2, seed=1), {}),
    "kaiming": ("pre-ln", sd.init.sphere(6, 4, batch=2, seed=2),
                {"weights": sd.weights.kaiming(4, seed=1)}),
    "span": ("post-ln", sd.init.sphere(5, 9, batch=2, seed=3), {}),
    "layers": ("peri-ln", sd.init.sphere(6, 3, batch=2, seed=4), {"step": 0.25}),
    "log": ("pre-ln", sd.init.sphere(6, 3, batch=2, seed=5), {"clock": "log"}),
}


def _pair(case, **extra):
    scheme, X0, kw = CASES[case]
    full = sd.simulate(scheme, X0, beta=2.0, t=T, save_x=True, **kw, **extra)
    tokens = sd.simulate(scheme, X0, beta=2.0, t=T, save="tokens", **kw, **extra)
    return full, tokens


@pytest.mark.parametrize("case", sorted(CASES))
def test_tokens_only_are_the_complete_run_s_tokens(case):
    full, tokens = _pair(case)
    assert tokens.recorded == ("tokens",) and tokens.X.shape == full.X.shape
    assert (tokens.steps, tokens.nfev) == (full.steps, full.nfev)     # the same integration
    scale = np.abs(full.X).max()
    assert np.abs(tokens.X - full.X).max() <= 1e-13 * scale
    # control: another start moves the tokens far beyond that tolerance
    scheme, X0, kw = CASES[case]
    other = sd.simulate(scheme, X0[::-1], beta=2.0, t=T, save="tokens", **kw)
    assert np.abs(other.X - full.X).max() > 1e-3 * scale


@pytest.mark.parametrize("case", ["frame", "kaiming", "layers"])
def test_observables_from_the_saved_tokens_agree_with_the_complete_run(case):
    full, tokens = _pair(case)
    X = tokens.X
    assert np.abs(_gamma(X) - full.gamma).max() < 1e-12
    assert np.array_equal(sd.cluster_labels(X, full.cluster_threshold).max(-1) + 1,
                          full.clusters)
    energy = sd.energy(X, 2.0)
    assert np.abs(energy / full.energy - 1).max() < 1e-12
    assert np.abs(np.linalg.norm(X, axis=-1) - np.swapaxes(full.r, -1, -2)).max() < 1e-12
    # control: the tokens of the next output time give other observables
    assert np.abs(_gamma(X[:, 1:]) - full.gamma[:, :-1]).max() > 1e-3


def test_a_run_that_merges_keeps_its_tokens_in_a_tokens_only_run():
    X0 = sd.init.sphere(16, 3, batch=2, seed=0)
    t = [0.0, 10.0, 100.0, 1e3]
    full = sd.simulate("post-ln", X0, beta=9.0, t=t, save_x=True)
    tokens = sd.simulate("post-ln", X0, beta=9.0, t=t, save="tokens")
    assert full.merged > 0 and tokens.merged == full.merged
    assert np.abs(tokens.X - full.X).max() <= 1e-13
    assert np.array_equal(sd.cluster_labels(tokens.X, full.cluster_threshold).max(-1) + 1,
                          full.clusters)


def test_a_subset_records_those_observables_only():
    full, _ = _pair("frame")
    scheme, X0, kw = CASES["frame"]
    part = sd.simulate(scheme, X0, beta=2.0, t=T, save=("energy", "gamma", "clusters"))
    assert part.recorded == ("gamma", "clusters", "energy")
    for name in ("gamma", "clusters", "energy"):
        assert np.abs(getattr(part, name) - getattr(full, name)).max() <= \
            1e-13 * np.abs(getattr(full, name)).max()
    assert part.X is None                       # the tokens keep their meaning: None unsaved
    for name in ("epsilon", "speed", "r", "min_cosine", "linked", "labels", "bound", "floor"):
        with pytest.raises(NotSaved, match="save="):
            getattr(part, name)
    assert getattr(part, "speed", None) is None           # an AttributeError: getattr's default
    assert part.plateaus.equals(full.plateaus)             # plateaus need clusters only
    with pytest.raises(ValueError, match="save="):
        _ = part.events                                    # events need labels or tokens


def test_views_of_what_was_not_saved_name_save():
    _, tokens = _pair("frame")
    with pytest.raises(NotSaved, match=r"gamma: this run did not record 'gamma'.*save="):
        _ = tokens.gamma
    with pytest.raises(NotSaved, match="save="):
        _ = tokens.plateaus
    with pytest.raises(NotSaved, match="save="):
        sd.plot.simulation(tokens)
    assert re.search(r"recorded +tokens", str(tokens)) and "tokens" in tokens._repr_html_()
    assert len(tokens.events) > 0                          # events read the saved tokens
    # control: the default run records everything, as before save= existed
    full = sd.simulate("post-ln", CASES["frame"][1], beta=2.0, t=T)
    assert full.recorded == COMPLETE and full.X is None and set(full.bound) >= {"gamma"}


def test_a_function_of_the_state_is_recorded_in_the_caller_s_coordinates():
    full, _ = _pair("span")                  # d > n: the run holds span coordinates

    def mean_token(t, X):
        return X.mean(axis=1)

    scheme, X0, kw = CASES["span"]
    run = sd.simulate(scheme, X0, beta=2.0, t=T, save=mean_token)
    assert run.recorded == () and run.values.shape == (2, len(T), X0.shape[-1])
    assert np.abs(run.values - full.X.mean(axis=2)).max() < 1e-13
    # the times: a function of (t, X) sees the output times
    timed = sd.simulate(scheme, X0, beta=2.0, t=T, save=["gamma", lambda t, X: t])
    assert np.array_equal(timed.values, np.broadcast_to(T, (2, len(T))))
    assert np.abs(timed.gamma - full.gamma).max() < 1e-13
    # control: another function of the tokens is not the mean
    other = sd.simulate(scheme, X0, beta=2.0, t=T, save=lambda t, X: X[:, 0])
    assert np.abs(other.values - full.X.mean(axis=2)).max() > 1e-3


def test_a_tokens_only_run_evaluates_the_field_at_no_output(monkeypatch):
    rows = []
    frame = Field.frame

    def counted(self, tm, c, *args, **kw):
        rows.append(len(c))
        return frame(self, tm, c, *args, **kw)

    monkeypatch.setattr(Field, "frame", counted)
    scheme, X0, _ = CASES["frame"]
    t = np.linspace(0.0, 5.0, 201)
    counts = {}
    for save in ("tokens", None):
        rows.clear()
        sd.simulate(scheme, X0, beta=2.0, t=t, save=save)
        counts[save] = sum(rows)
    # the complete run evaluates the field once per member and output (its
    # speeds; the control), the tokens-only run at no output: the integration
    # itself is the same
    assert counts[None] - counts["tokens"] == len(X0) * len(t)


@pytest.mark.parametrize("case", ["frame", "layers"])
def test_a_partial_run_round_trips_through_a_file_and_xarray(case, tmp_path):
    scheme, X0, kw = CASES[case]
    run = sd.simulate(scheme, X0, beta=2.0, t=T, save=["tokens", "clusters",
                                                       lambda t, X: X[:, :2, 0]], **kw)
    run.save(tmp_path / "p.nc")
    back = sd.load(tmp_path / "p.nc")
    assert back.recorded == run.recorded == ("clusters", "tokens")
    for name in ("X", "clusters", "values", "t", "x0"):
        assert getattr(back, name).tobytes() == getattr(run, name).tobytes()
    with pytest.raises(NotSaved, match="save="):
        _ = back.gamma
    ds = run.to_xarray()
    assert "X" in ds and "clusters" in ds and "gamma" not in ds and "energy" not in ds
    assert ds["values"].dims == ("member", "time", "value_0")
    assert "plateaus.clusters" in ds and "events.kind" in ds
    tokens = sd.simulate(scheme, X0, beta=2.0, t=T, save="tokens", **kw)
    ds = tokens.to_xarray()
    assert "plateaus.clusters" not in ds and "events.kind" in ds
    # a file whose record names an observable it does not hold is refused
    part = sd.simulate(scheme, X0[0], beta=2.0, t=T, save="gamma", **kw)
    part.save(tmp_path / "g.nc")
    assert sd.load(tmp_path / "g.nc").gamma.shape == (len(T),)


def test_a_tokens_only_rerun_is_the_same_run(tmp_path):
    _, tokens = _pair("layers")
    tokens.save(tmp_path / "t.nc")
    again = sd.rerun(sd.load(tmp_path / "t.nc"))
    assert again.recorded == ("tokens",) and again.X.tobytes() == tokens.X.tobytes()
    run = sd.simulate("post-ln", CASES["frame"][1], beta=2.0, t=T, save=lambda t, X: X[:, 0])
    with pytest.raises(ValueError, match="^save: the run saved the values of the function"):
        sd.rerun(run)
    assert sd.rerun(run, save=lambda t, X: X[:, 0]).values.tobytes() == run.values.tobytes()


@pytest.mark.parametrize("save, words", [
    ("gama", r"save: .*'gama' \(did you mean 'gamma'\?\)"),
    ([], "save: names nothing to record"),
    ((lambda t, X: t, lambda t, X: t), "save: at most one function"),
    (3, "save: each entry must be a function"),
    (lambda t, X: X[:1, 0], "save: the function .* must return an array of m rows"),
    (lambda t, X: "text", "save: the function .* must return real numbers"),
])
def test_bad_save_names_the_argument(save, words):
    with pytest.raises(ValueError, match=words):
        sd.simulate("post-ln", CASES["frame"][1], beta=2.0, t=T, save=save)
