"""The noisy layers (``kappa=``, ``seed=``, ``step=h``) against known laws.

The rule (symdyn.particles.noise): the scheme's layer, then
theta <- N(theta + sqrt(2h/kappa) xi), the Euler-Maruyama step of
d theta = ... dt + sqrt(2/kappa) dW on the sphere (generator Laplacian/kappa).

Witnesses, each with a control:
* pure spherical Brownian motion (V = 0: no drift): E<theta(T), theta(0)> =
  exp(-(d-1) T/kappa); the rule's own discrete law m(h)^(T/h) by quadrature
  (d = 3: one erfcx integral), whose gap to the exact law is O(h): weak order 1;
* the same Brownian path rebuilt from the documented streams (d = 2: the angle
  is sqrt(2/kappa) W exactly): strong error O(h^(1/2));
* beta = 0 (noisy Kuramoto): the order parameter r of a long run against the
  mean-field self-consistency r = I_{d/2}(kappa r) / I_{d/2-1}(kappa r), d = 2, 3.
Statistical checks: fixed seeds, k = 4 standard errors; the 20-seed check is
``python benchmarks/noise.py --seeds 20``.
"""

import numpy as np
import pytest
from scipy import integrate, optimize, special

import symdyn as sd

K_SE = 4.0          # statistical tolerance, standard errors


# --- oracles --------------------------------------------------------------------------

def one_step_mean(h, kappa):
    """m(h) = E<N(theta + s xi), theta>, s = sqrt(2h/kappa), on S^2 (d = 3): with
    a = 1 + s xi_1 and |xi_perp|^2 ~ Exp(1/2) the inner expectation is
    sign(a) sqrt(pi) c erfcx(c), c = |a| / (s sqrt 2)."""
    s = np.sqrt(2 * h / kappa)

    def g(x):
        a = 1 + s * x
        c = abs(a) / (s * np.sqrt(2))
        return np.sign(a) * np.sqrt(np.pi) * c * special.erfcx(c) * np.exp(-x * x / 2)
    kink = -1 / s
    parts = [integrate.quad(g, lo, hi, epsabs=1e-14, limit=200)[0]
             for lo, hi in ((-np.inf, kink), (kink, np.inf))]
    return sum(parts) / np.sqrt(2 * np.pi)


def kuramoto_r(kappa, d):
    """The non-zero root of r = I_{d/2}(kappa r) / I_{d/2-1}(kappa r) (kappa > d)."""
    return optimize.brentq(lambda r: special.ive(d / 2, kappa * r)
                           / special.ive(d / 2 - 1, kappa * r) - r, 1e-6, 1 - 1e-12)


def no_drift(d):
    """Weights with V = 0: A = 0, every token a Brownian motion on the sphere."""
    eye = np.eye(d)[None]
    return (eye, eye, np.zeros((1, d, d)))


# --- Brownian motion: the law, weak and strong order ---------------------------------

def bm_cosine(h, kappa, T, seed, M=120, n=400):
    """Mean and standard error of <theta(T), theta(0)> over M n Brownian tokens (d = 3)."""
    X0 = sd.init.sphere(n, 3, batch=M, seed=seed)
    sim = sd.simulate("post-ln", X0, 1.0, [0.0, T], weights=no_drift(3), step=h,
                      kappa=kappa, seed=seed, save_x=True)
    c = np.einsum("mnd,mnd->mn", sim.X[:, 0], sim.X[:, -1]).ravel()
    return c.mean(), c.std(ddof=1) / np.sqrt(c.size)


def test_the_rule_has_weak_order_one():
    """The rule's exact discrete law (no sampling): (m(h)^(T/h) - e^{-(d-1)T/kappa})/h
    tends to a constant (weak order 1), and not to 0 (not order 2)."""
    kappa, T = 2.0, 1.0
    exact = np.exp(-2 * T / kappa)
    gap = [(one_step_mean(h, kappa) ** round(T / h) - exact) / h for h in (1 / 32, 1 / 64,
                                                                           1 / 128)]
    assert abs(gap[1] / gap[0] - 1) < 0.02 and abs(gap[2] / gap[1] - 1) < 0.01
    assert abs(gap[2]) > 0.1        # control: a real O(h) gap (order 2 would shrink it)


@pytest.mark.parametrize("h", [0.25, 0.125])
def test_brownian_mean_matches_the_discrete_law(h):
    kappa, T = 2.0, 1.0
    mean, se = bm_cosine(h, kappa, T, seed=3)
    law = one_step_mean(h, kappa) ** round(T / h)
    assert abs(mean - law) < K_SE * se
    # control: the test resolves the rule's O(h) gap to the exact law (20 seeds: |z| >= 5.86)
    assert abs(mean - np.exp(-2 * T / kappa)) > K_SE * se


def _rebuilt_angle_error(h, kappa, T, seed, shift=0):
    """Mean |theta_h(T) - exact(T)| on the circle, the exact path driven by the same
    Brownian increments (the tangential parts of the documented normals);
    ``shift``: the normals of another member (control)."""
    M, n, d = 2, 300, 2
    L = round(T / h)
    X0 = sd.init.sphere(n, d, batch=M, seed=seed)
    sim = sd.simulate("post-ln", X0, 1.0, h * np.arange(L + 1), weights=no_drift(d),
                      step=h, kappa=kappa, seed=seed, save_x=True)
    streams = np.random.SeedSequence(seed).spawn(M)
    errors = []
    for m in range(M):
        xi = np.random.Generator(np.random.SFC64(streams[(m + shift) % M])).standard_normal(
            (L, n, d))
        th = sim.X[m]                                       # (L + 1, n, 2)
        tangent = np.stack([-th[:-1, :, 1], th[:-1, :, 0]], axis=-1)
        dW = np.sqrt(h) * np.einsum("knd,knd->kn", xi, tangent)
        phi = np.arctan2(th[0, :, 1], th[0, :, 0]) + np.sqrt(2 / kappa) * dW.sum(axis=0)
        exact = np.stack([np.cos(phi), np.sin(phi)], axis=-1)
        errors.append(np.linalg.norm(th[-1] - exact, axis=-1).mean())
        if shift == 0 and m == 0:        # the first layer is the documented rule
            y = th[0] + np.sqrt(2 * h / kappa) * xi[0]
            assert np.allclose(th[1], y / np.linalg.norm(y, axis=-1, keepdims=True),
                               rtol=1e-13, atol=1e-14)
    return float(np.mean(errors))


def test_strong_order_one_half():
    kappa, T = 2.0, 1.0
    hs = (1 / 16, 1 / 64, 1 / 256)
    err = [_rebuilt_angle_error(h, kappa, T, seed=5) for h in hs]
    slope = np.polyfit(np.log(hs), np.log(err), 1)[0]      # 20 seeds: 0.49 .. 0.56
    assert abs(slope - 0.5) < 0.1, slope
    # control: against a path driven by other increments the error does not shrink
    other = _rebuilt_angle_error(hs[-1], kappa, T, seed=5, shift=1)
    assert other > 0.5


# --- reproducibility and streams ---------------------------------------------------------

def test_same_seed_same_run_and_independent_members():
    X = sd.init.sphere(5, 3, seed=1)
    X0 = np.stack([X, X])                       # two identical members
    runs = [sd.simulate("pre-ln", X0, 1.0, [0.0, 1.0], step=0.1, kappa=3.0, seed=s,
                        save_x=True).X for s in (7, 7, 8)]
    assert np.array_equal(runs[0], runs[1])     # one code path, same seed
    assert not np.allclose(runs[0], runs[2])    # another seed
    assert not np.allclose(runs[0][0], runs[0][1])     # members: independent streams
    # the norms of a radial scheme are untouched by the kicks: Pre-LN's r as without noise
    # only through the directions (same first layer: r_1 = |x + h A(N(x))|)
    quiet = sd.simulate("pre-ln", X0, 1.0, [0.0, 0.1], step=0.1, save_x=True)
    noisy = sd.simulate("pre-ln", X0, 1.0, [0.0, 0.1], step=0.1, kappa=3.0, seed=7)
    assert np.allclose(noisy.r, quiet.r, rtol=1e-13)
    unit = quiet.X / np.linalg.norm(quiet.X, axis=-1, keepdims=True)
    kicked = sd.simulate("pre-ln", X0, 1.0, [0.0, 0.1], step=0.1, kappa=3.0, seed=7,
                         save_x=True).X
    assert not np.allclose(kicked / np.linalg.norm(kicked, axis=-1, keepdims=True), unit)


def test_draws_follow_the_documented_streams_and_stop_at_the_last_layer():
    """Layer k's kicks are sqrt(2h/kappa) times member m's normals k n d ..
    (k+1) n d - 1, however the blocks are cut; limit(L) draws L layers only."""
    from symdyn.particles.noise import Noise
    M, n, d, L, h, kappa = 3, 4, 5, 7, 0.1, 2.0
    streams = np.random.SeedSequence(9).spawn(M)
    xi = np.stack([np.random.Generator(np.random.SFC64(s)).standard_normal((L, n, d))
                   for s in streams], axis=1)                      # (L, M, n, d)
    cut = Noise(kappa, 9, h, (M, n, d), np.float64)
    cut.block = 3                                      # blocks of 3, 3 and 1 layers
    cut.limit(L)
    kicks = np.stack([cut.draw().copy() for _ in range(L)])
    assert np.allclose(kicks, np.sqrt(2 * h / kappa) * xi, rtol=1e-15, atol=0)
    assert cut.buffer.shape[1] == 3 and cut.filled == 1      # no normals past layer L
    whole = Noise(kappa, 9, h, (M, n, d), np.float64)
    assert np.array_equal(np.stack([whole.draw().copy() for _ in range(L)]), kicks)


# --- beta = 0: the noisy Kuramoto self-consistency ------------------------------------------

def kuramoto_run(d, kappa, seed, n=128, M=16, h=0.01, burn=5.0, T=25.0):
    """Order parameter r = |mean theta|: each member's average over [burn, T]
    (outputs every 0.5), and the standard error over the M members."""
    rng = np.random.default_rng(seed)
    X0 = np.zeros((M, n, d))
    X0[..., 0] = 1.0
    X0 += 0.5 * rng.standard_normal((M, n, d))      # concentrated: no slow escape
    t = np.arange(0.0, T + 0.25, 0.5)
    sim = sd.simulate("post-ln", X0, 0.0, t, step=h, kappa=kappa, seed=seed, save_x=True)
    r = np.linalg.norm(sim.X.mean(axis=2), axis=-1)[:, t >= burn].mean(axis=1)
    return r.mean(), r.std(ddof=1) / np.sqrt(M)


@pytest.mark.parametrize("d,kappa", [(2, 4.0), (3, 6.0)])
def test_kuramoto_self_consistency(d, kappa):
    mean, se = kuramoto_run(d, kappa, seed=11)
    assert abs(mean - kuramoto_r(kappa, d)) < K_SE * se
    # control: the self-consistency at 0.8 kappa is rejected
    assert abs(mean - kuramoto_r(0.8 * kappa, d)) > K_SE * se


# --- arguments ----------------------------------------------------------------------------

def test_bad_noise_arguments():
    X0 = sd.init.sphere(3, 2, seed=0)
    for kappa in (0, -1.0, -float("inf"), float("nan")):           # +inf: no noise
        with pytest.raises(ValueError, match="kappa must be a number > 0, or None or inf"):
            sd.simulate("post-ln", X0, 1.0, [0.0, 1.0], step=0.1, kappa=kappa)
    with pytest.raises(ValueError, match="noisy path needs a step"):
        sd.simulate("post-ln", X0, 1.0, [0.0, 1.0], kappa=2.0)
    with pytest.raises(ValueError, match="seed must be None or an integer >= 0"):
        sd.simulate("post-ln", X0, 1.0, [0.0, 1.0], step=0.1, kappa=2.0, seed=-1)
    with pytest.raises(ValueError, match="seed: only the noisy dynamics"):
        sd.simulate("post-ln", X0, 1.0, [0.0, 1.0], step=0.1, seed=1)
