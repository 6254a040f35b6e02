"""Cluster structure, events, Rényi centres and the energy (symdyn.particles.clusters).

Oracles: scipy's hierarchical clustering (single linkage on the angular
distance, cut at arccos(threshold)) for the labels; the simulator's own
cluster count for the threshold rule; the changes of that count for the
events; the closed form E = (1 - (1-p)^n)/p, p = delta/pi, against sampling
for the Rényi count; a brute-force loop for the centres; the gradient-ascent
identity dE/dt = n sum_k |P grad_k E|^2 >= 0 for the energy under the
unnormalized kernel. Each with a negative control.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist

import symdyn as sd
from symdyn.particles import clusters as C
from symdyn.studies import metastability as MS


def _canonical(lab):
    """Labels renumbered by the order of their first token."""
    seen = {}
    return np.array([seen.setdefault(x, len(seen)) for x in lab])


def _oracle(X, threshold, method="single"):
    """scipy's flat clusters at angular distance arccos(threshold)."""
    theta = X / np.linalg.norm(X, axis=-1, keepdims=True)
    dist = pdist(theta, lambda a, b: np.arccos(np.clip(a @ b, -1, 1)))
    Z = linkage(dist, method=method)
    return _canonical(fcluster(Z, t=np.arccos(threshold), criterion="distance"))


def _clumped(seed, n, d, k, width):
    """n tokens around k random centres, angular spread ~ width."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d))
    X = centres[rng.integers(0, k, n)] / np.linalg.norm(centres, axis=-1).mean()
    return X + width * rng.normal(size=(n, d))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 90), d=st.integers(2, 4),
       k=st.integers(1, 6), width=st.sampled_from([1e-3, 0.02, 0.1]),
       threshold=st.sampled_from([0.9, 0.99, 0.999]))
def test_labels_are_scipys_single_linkage(seed, n, d, k, width, threshold):
    X = _clumped(seed, n, d, k, width)
    theta = X / np.linalg.norm(X, axis=-1, keepdims=True)
    G = theta @ theta.T
    assume(np.abs(G - threshold).min() > 1e-9)         # no pair on the cut itself
    labels = C.cluster_labels(X, threshold)
    assert np.array_equal(labels, _oracle(X, threshold))
    assert np.array_equal(C.leaders(labels)[:labels.max() + 1],
                          [np.flatnonzero(labels == c)[0] for c in range(labels.max() + 1)])
    assert C.sizes(labels).sum() == n


def test_a_chain_is_one_cluster_by_single_linkage_not_by_complete():
    # Negative control: the oracle can tell linkages apart, and so would a
    # labelling that linked only direct neighbours of the first token.
    angles = np.arange(6) * 0.03                          # neighbours 0.03 apart
    X = np.stack([np.cos(angles), np.sin(angles)], -1)
    th = np.cos(0.035)
    assert C.cluster_labels(X, th).tolist() == [0] * 6
    assert _oracle(X, th).tolist() == [0] * 6
    assert _oracle(X, th, "complete").tolist() != [0] * 6
    direct = _canonical(np.where(X @ X[0] >= th, 0, np.arange(6)))
    assert direct.tolist() != C.cluster_labels(X, th).tolist()


def test_the_batch_and_large_graphs_label_as_single_members():
    X = np.stack([_clumped(s, 100, 3, 4, 0.02) for s in range(3)])   # n > SMALL_GRAPH
    big = C.cluster_labels(X)
    small = np.stack([C.cluster_labels(x[:60]) for x in X])
    assert all(np.array_equal(big[i], _oracle(X[i], C.THRESHOLD)) for i in range(3))
    assert np.array_equal(C.cluster_labels(X[:, :60]), small)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10**4), n=st.integers(3, 24), beta=st.sampled_from([4.0, 9.0]))
def test_labels_count_what_the_simulation_counts(seed, n, beta):
    X0 = sd.init.sphere(n, 3, batch=2, seed=seed)
    sim = sd.simulate("post-ln", X0, beta=beta, t=np.geomspace(0.5, 1e4, 16), save_x=True)
    labels = C.cluster_labels(sim.X, sim.cluster_threshold)
    assert np.array_equal(C.count(labels), sim.clusters)
    # control: another threshold counts differently somewhere in the run
    assert not np.array_equal(C.count(C.cluster_labels(sim.X, 0.5)), sim.clusters) or \
        np.all(sim.clusters == 1)


def test_events_are_the_changes_of_the_count():
    t = np.geomspace(0.25, 1e8, 60)
    X0 = sd.init.sphere(24, 2, batch=3, seed=7)
    sim = sd.simulate("post-ln", X0, beta=12.0, t=t, save_x=True)
    labels = C.cluster_labels(sim.X)
    evs = C.events(labels, sim.t, sim.energy)
    assert set(evs["kind"]) == {"merge"}
    assert list(evs.columns) == ["member", *C.EVENT_COLUMNS]
    assert {c: str(evs[c].dtype) for c in C.EVENT_COLUMNS} == C.EVENT_COLUMNS
    assert evs["t_hi"].is_monotonic_increasing            # sorted by time
    change = np.zeros((3, len(t) - 1), dtype=int)
    k_of = {float(x): i for i, x in enumerate(t[:-1])}
    for e in evs.itertuples():
        sign = 1 if e.kind == "split" else -1
        k = k_of[e.t_lo]
        change[e.member, k] += sign * (len(e.parts) - 1)
        assert e.t_hi > e.t_lo and sum(e.sizes) == e.size == len(e.tokens) <= 24
        assert np.all(labels[e.member, k + 1][list(e.leaders)] == e.into)
        assert np.all(labels[e.member, k + 1][list(e.tokens)] == e.into)       # moved together
        assert (e.clusters_before, e.clusters_after) == tuple(sim.clusters[e.member, k:k + 2])
        assert (e.energy_before, e.energy_after) == tuple(sim.energy[e.member, k:k + 2])
    assert np.array_equal(change, np.diff(sim.clusters, axis=-1))
    # negative control: one event fewer no longer adds up
    first = evs.iloc[0]
    change[first.member, k_of[first.t_lo]] += len(first.parts) - 1
    assert not np.array_equal(change, np.diff(sim.clusters, axis=-1))


def test_a_split_and_a_merge_at_once_add_up():
    a = np.array([0, 0, 1, 1, 2])       # {0,1} {2,3} {4}
    b = np.array([0, 1, 1, 2, 2])       # {0} {1,2} {3,4}: 1 splits, 2 merges, ...
    evs = C.events(np.stack([a, b]), [0.0, 1.0])
    net = sum((len(p) - 1) * (1 if k == "split" else -1)
              for k, p in zip(evs.kind, evs.parts, strict=True))
    assert net == b.max() - a.max()
    assert set(zip(evs.kind, evs.parts, strict=True)) == {("merge", (0, 1)), ("merge", (1, 2)),
                                             ("split", (0, 1)), ("split", (1, 2))}
    assert "member" not in evs.columns                # unbatched: no member column
    merge = evs[(evs.kind == "merge") & (evs.into == 1)].iloc[0]
    assert merge.tokens == (1, 2)                      # token 1 of {0,1} and 2 of {2,3}


def test_plateaus_tile_the_output_times():
    counts = np.array([[3, 3, 2, 2, 2, 1], [4, 4, 4, 4, 4, 4]])
    t = np.arange(6.0)
    ps = C.plateaus(counts, t)
    # sorted by start; the count 1 seen at t = 5 only is no plateau
    assert list(ps[["member", "clusters", "t_start", "t_end"]].itertuples(index=False,
                                                                        name=None)) == [
        (0, 3, 0.0, 1.0), (1, 4, 0.0, 5.0), (0, 2, 2.0, 4.0)]
    assert {c: str(ps[c].dtype) for c in C.PLATEAU_COLUMNS} == C.PLATEAU_COLUMNS
    p = ps.iloc[2]
    assert p.length == 2.0 and p.start_after == 1.0 and p.end_before == 5.0
    assert (ps.length > 0).all()
    # control: with the transient held one more output time it is a plateau
    held = C.plateaus(np.array([[3, 3, 2, 2, 1, 1]]), t)
    assert list(held.clusters) == [3, 2, 1] and held.length.iloc[-1] == 1.0


def test_the_tables_travel_in_to_xarray():
    pytest.importorskip("xarray")
    X0 = sd.init.sphere(10, 2, batch=2, seed=4)
    sim = sd.simulate("post-ln", X0, beta=6.0, t=np.r_[0.0, np.geomspace(0.1, 1e5, 30)])
    ds = sim.to_xarray()
    evs, ps = sim.events, sim.plateaus
    assert ds.sizes["event"] == len(evs) > 3 and ds.sizes["plateau"] == len(ps) > 2
    np.testing.assert_array_equal(ds["events.t_hi"], evs.t_hi)
    np.testing.assert_array_equal(ds["plateaus.clusters"], ps.clusters)
    assert list(ds["events.tokens"].values) == [" ".join(map(str, x)) for x in evs.tokens]
    assert set(ds["events.kind"].values) == {"merge"}


def _brute_centres(theta, delta, strong):
    out = []
    for k in range(len(theta)):
        pool = range(k) if strong else out
        if all(np.arccos(np.clip(theta[j] @ theta[k], -1, 1)) > delta for j in pool):
            out.append(k)
    return out


@pytest.mark.parametrize("strong", [True, False])
def test_renyi_centres_are_the_definitions(strong):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, 40, 3))
    theta = X / np.linalg.norm(X, axis=-1, keepdims=True)
    mask = sd.renyi_centres(X, 0.6, strong=strong)
    for m in range(4):
        assert np.flatnonzero(mask[m]).tolist() == _brute_centres(theta[m], 0.6, strong)
    strong_mask = sd.renyi_centres(X, 0.6)
    assert np.all(mask >= strong_mask)          # a strong centre is a centre
    # strict inequality: a token exactly delta from token 0 is not a centre
    two = np.array([[1.0, 0.0], [np.cos(0.5), np.sin(0.5)]])
    assert sd.renyi_centres(two, 0.5 + 1e-12).tolist() == [True, False]
    assert sd.renyi_centres(two, 0.5 - 1e-12).tolist() == [True, True]


@pytest.mark.parametrize("n, delta", [(10, 0.3), (60, 0.3), (200, 0.05)])
def test_the_expected_number_of_renyi_centres_on_the_circle(n, delta):
    """E = sum_i (1-p)^(i-1) = (1 - (1-p)^n)/p, p = delta/pi: token i is a strong
    centre iff none of the i-1 earlier i.i.d. uniform tokens lies in its arc of
    length 2 delta (probability p each, independently given token i)."""
    S = 4000
    phi = np.random.default_rng(12345 + n).uniform(0, 2 * np.pi, size=(S, n))
    X = np.stack([np.cos(phi), np.sin(phi)], -1)
    counts = sd.renyi_centres(X, delta).sum(-1)
    mean, se = counts.mean(), counts.std(ddof=1) / np.sqrt(S)
    predicted = MS.expected_renyi_centres(n, delta)
    assert abs(mean - predicted) < 4 * se, (mean, se, predicted)
    # negative control: the arc taken as delta long (p = delta/(2 pi)) is refuted
    wrong = MS.expected_renyi_centres(n, delta / 2)
    assert abs(mean - wrong) > 4 * se


def test_energy_rises_under_the_unnormalized_kernel():
    """Post-LN with the unnormalized kernel, theta_k' = P_k A_k, A_k = (1/n) sum_j
    e^{beta<theta_k, theta_j>} theta_j = n grad_k E_beta: gradient ascent, so
    dE/dt = n sum_k |P_k grad_k E|^2 >= 0."""
    X0 = sd.init.sphere(16, 3, batch=3, seed=2)
    beta = np.array([1.0, 4.0, 9.0])
    t = np.geomspace(0.01, 1e4, 50)
    sim = sd.simulate("post-ln", X0, beta=beta, t=t, save_x=True, attention="unnormalized")
    E = sd.energy(sim.X, beta[:, None])
    assert np.all(np.diff(E, axis=-1) >= -1e-12 * E[:, 1:])
    assert np.all(E[:, -1] > E[:, 0])
    # the derivative at the start against the identity
    theta = X0 / np.linalg.norm(X0, axis=-1, keepdims=True)
    h = 1e-5
    s2 = sd.simulate("post-ln", X0, beta=beta, t=[0.0, h, 2 * h], save_x=True,
                     attention="unnormalized")
    n = 16
    grad = np.einsum("mij,mjd->mid", np.exp(beta[:, None, None] * theta @ np.swapaxes(
        theta, -1, -2)), theta) / n**2
    tangent = grad - np.einsum("mid,mid->mi", grad, theta)[..., None] * theta
    rate = n * np.einsum("mid,mid->m", tangent, tangent)
    E2 = sd.energy(s2.X, beta[:, None])
    slope = (-3 * E2[:, 0] + 4 * E2[:, 1] - E2[:, 2]) / (2 * h)     # second order in h
    assert np.allclose(slope, rate, rtol=1e-4)
    assert not np.allclose(slope, rate / n, rtol=1e-4)     # control: A_k's 1/n matters
    # negative control: the reversed run is caught by the same check
    assert not np.all(np.diff(E[:, ::-1], axis=-1) >= -1e-12 * E[:, :-1])


def test_energy_under_softmax_and_where_it_falls():
    """Softmax with Q = K = V = I is the same ascent with a per-token time change:
    theta_k' = (n^2 / Z_k) P_k grad_k E, Z_k = sum_j e^{beta<theta_k, theta_j>}, so
    E_beta rises there too (dE/dt = sum_k n^2/Z_k |P_k grad_k E|^2). It is no
    gradient flow under the causal mask: a start where E_beta falls (found by
    a search over random starts, seed 1)."""
    X0 = sd.init.sphere(12, 3, batch=2, seed=4)
    beta = np.array([2.0, 8.0])
    sim = sd.simulate("post-ln", X0, beta=beta, t=np.geomspace(0.01, 1e3, 40), save_x=True)
    E = sd.energy(sim.X, beta[:, None])
    assert np.all(np.diff(E, axis=-1) >= -1e-12 * E[:, 1:])
    X1 = np.array([[0.60262059, 0.05981994], [-1.19459758, -0.30305691],
                   [0.64822393, 1.87075194], [-1.14235399, 0.33853529],
                   [-0.25874828, 0.82551944]])
    b, t = 0.7708109350611178, np.linspace(0, 2, 21)
    causal = sd.energy(sd.simulate("post-ln", X1, beta=b, t=t, save_x=True, mask="causal").X, b)
    full = sd.energy(sd.simulate("post-ln", X1, beta=b, t=t, save_x=True).X, b)
    assert np.all(np.diff(full) >= 0)
    assert np.diff(causal).min() < -1e-4


def test_the_energy_and_its_normalization():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [-1.0, 0.0]])
    beta = 30.0
    assert np.isclose(sd.energy(X, beta, normalized=True), 0.5 * (1 + np.exp(-2 * beta)))
    direct = np.exp(beta * (X @ X.T)).sum() / (2 * beta * 16)
    assert np.isclose(sd.energy(X, beta), direct, rtol=1e-13)
    with pytest.raises(ValueError, match="beta"):
        sd.energy(X, 0.0)
    with pytest.raises(ValueError, match="threshold"):
        C.cluster_labels(X, 2.0)
    with pytest.raises(ValueError, match="delta"):
        sd.renyi_centres(X, -0.1)


def test_the_energy_plot_draws_the_normalized_energy_in_rescaled_time():
    import matplotlib
    matplotlib.use("Agg")
    X0 = sd.init.sphere(8, 3, batch=2, seed=1)
    beta = np.array([4.0, 9.0])
    sim = sd.simulate("post-ln", X0, beta=beta, t=np.geomspace(0.1, 1e6, 30), save_x=True)
    ax = sd.plot.energy(sim, beta)
    lines = [ln for ln in ax.get_lines() if ln.get_drawstyle() == "steps-post"]
    assert len(lines) == 2
    for i, ln in enumerate(lines):
        assert np.allclose(ln.get_xdata(), np.log1p(sim.t) / beta[i])
        assert np.allclose(ln.get_ydata(), sd.energy(sim.X[i], beta[i], normalized=True))
    assert np.isclose(lines[1].get_ydata()[-1], 1.0)           # one cluster at the end
    # the recorded energy draws the same lines without the tokens
    bare = sd.simulate("post-ln", X0, beta=beta, t=sim.t)
    again = [ln for ln in sd.plot.energy(bare, beta).get_lines()
             if ln.get_drawstyle() == "steps-post"]
    assert all(np.allclose(a.get_ydata(), b.get_ydata(), rtol=1e-10)
               for a, b in zip(lines, again, strict=True))
    # control: with neither there is nothing to draw from
    with pytest.raises(ValueError, match="save_x"):
        sd.plot.energy(dataclasses.replace(bare, energy=None), beta)


@pytest.mark.parametrize("step, mask", [(None, "full"), (0.1, "full"), (None, "causal")])
def test_the_run_records_labels_and_energy_without_save_x(step, mask):
    X0 = sd.init.sphere(20, 3, batch=2, seed=5)
    beta = np.array([5.0, 10.0])
    t = np.round(np.linspace(0.1, 40.0, 25), 1) if step else np.geomspace(0.1, 1e6, 25)
    sim = sd.simulate("post-ln", X0, beta=beta, t=t, step=step, mask=mask, save_x=True)
    assert np.array_equal(sim.labels, C.cluster_labels(sim.X, sim.cluster_threshold))
    assert np.array_equal(C.count(sim.labels), sim.clusters)
    assert np.allclose(sim.energy, sd.energy(sim.X, beta[:, None]), rtol=1e-12)
    assert sim.events.equals(C.events(C.cluster_labels(sim.X), sim.t, sim.energy))
    assert np.array_equal(sim.leaders, C.leaders(sim.labels))
    assert sim.plateaus.equals(C.plateaus(sim.clusters, sim.t, sim.energy))
    bare = sd.simulate("post-ln", X0, beta=beta, t=t, step=step, mask=mask)
    assert bare.X is None and np.array_equal(bare.labels, sim.labels)
    assert bare.events.equals(sim.events)
    # another threshold needs the tokens; with them it differs (control)
    with pytest.raises(ValueError, match="save_x"):
        bare.cluster_labels(0.5)
    assert not np.array_equal(sim.cluster_labels(0.0), sim.labels)


def test_a_merged_run_weighs_the_fields_row_sums_by_mass():
    """The energy a continuous run records comes from the field's softmax row
    sums, sum_k m_k Z_k over the representatives: after merging it is still the
    energy of every original token. Control: counting each representative once
    (no masses) is another number at these times."""
    X0 = sd.init.sphere(32, 8, batch=2, seed=0)
    t = [30.0, 1e3, 1e12]
    sim = sd.simulate("post-ln", X0, beta=9.0, t=t, save_x=True)
    assert sim.merged > 0
    assert np.allclose(sim.energy, sd.energy(sim.X, 9.0), rtol=1e-12)
    n = X0.shape[1]
    reps = [np.unique(x, axis=0) for x in sim.X[:, -1]]          # one row per state
    unweighted = [np.exp(9.0 * r @ r.T).sum() / (2 * 9.0 * n * n) for r in reps]
    assert min(len(r) for r in reps) < n
    assert not np.allclose(sim.energy[:, -1], unweighted, rtol=1e-6)


def test_merged_runs_report_every_token_label():
    X0 = sd.init.sphere(32, 8, batch=2, seed=0)
    sim = sd.simulate("post-ln", X0, beta=9.0, t=[1e3, 1e12], save_x=True)
    assert sim.merged > 0
    assert np.array_equal(sim.labels, C.cluster_labels(sim.X))
    assert sim.labels.shape == (2, 2, 32) and np.all(sim.labels[:, -1] == 0)


def test_the_cli_prints_the_event_table(capsys):
    from symdyn.cli import main
    argv = ["simulate", "post-ln", "--n", "12", "--d", "3", "--beta", "9", "--t-max", "1e4",
            "--points", "60", "--seeds", "2"]
    assert main(argv + ["--events"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "member,kind,t_before,t_after,parts,into,sizes,leaders"
    X0 = sd.init.sphere(12, 3, batch=2, seed=0)
    sim = sd.simulate("post-ln", X0, beta=9.0, t=np.linspace(0, 1e4, 60))
    net = np.zeros(2, dtype=int)
    for row in lines[1:]:
        member, kind, *_, parts, _into, _sizes, _leaders = row.split(",")
        net[int(member)] += (len(parts.split()) - 1) * (1 if kind == "split" else -1)
    assert len(lines) - 1 == len(sim.events)
    assert np.array_equal(net, sim.clusters[:, -1] - sim.clusters[:, 0])
    # control: without --events the same run prints the gamma table
    assert main(argv) == 0
    assert not capsys.readouterr().out.startswith("member,kind")


def test_the_cli_locates_the_events_with_locate(capsys):
    from symdyn.cli import main
    argv = ["simulate", "post-ln", "--n", "12", "--d", "2", "--beta", "4", "--t-max", "20",
            "--points", "11", "--seeds", "1", "--events"]
    assert main(argv + ["--locate", "1e-6"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    head = lines[0].split(",")
    assert head[:6] == ["member", "kind", "t_before", "t_after", "t_event", "t_event_error"]
    rows = [dict(zip(head, r.split(","), strict=True)) for r in lines[1:]]
    sim = sd.simulate("post-ln", sd.init.sphere(12, 2, batch=1, seed=0), beta=4.0,
                      t=np.linspace(0, 20, 11))
    want = sd.locate_events(sim, 1e-6)
    assert len(rows) == len(want) > 0
    for row, e in zip(rows, want.itertuples(), strict=True):
        t, err = float(row["t_event"]), float(row["t_event_error"])
        assert float(row["t_before"]) < t - err and t <= float(row["t_after"])
        assert err <= 1e-6 * t and t == pytest.approx(e.t_event, abs=2 * err)
    # control: without --locate the table has no located times
    assert main(argv) == 0
    assert "t_event" not in capsys.readouterr().out


@pytest.mark.parametrize("extra, flag", [(["--locate", "2"], "--locate must be"),
                                         (["--locate", "nan"], "--locate must be"),
                                         (["--step", "0.1"], "--locate: a layer run"),
                                         (["--kappa", "20", "--step", "0.1"], "--locate: a")])
def test_the_cli_refuses_a_locate_it_cannot_keep(capsys, extra, flag):
    from symdyn.cli import main
    argv = ["simulate", "post-ln", "--n", "8", "--d", "2", "--t-max", "5", "--events"]
    assert main(argv + ["--locate", "1e-6"] + extra if extra[0] != "--locate"
                else argv + extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and flag in err


def test_the_cli_says_locate_needs_events(capsys):
    from symdyn.cli import main
    assert main(["simulate", "post-ln", "--n", "8", "--d", "2", "--locate", "1e-6"]) == 2
    assert "add --events" in capsys.readouterr().err
