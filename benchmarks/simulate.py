"""The particle simulator: loop baseline, right-hand-side overhead, memory.

Run: ``python benchmarks/simulate.py [--steps 10000]``. Prints, in one run:

(a) sd.simulate against a per-token Python loop (the style of research
    scripts) on the same Post-LN layer stack, n = 32, d = 16, 200 layers,
    for one run and for 16 seeds (the loop runs them one after another), and
    the floor of any numpy layer loop: the same layers fused into 13 numpy
    calls on preallocated buffers;
    sd.simulate's time over that floor's is printed beside it (target <= 1.3);
(b) at batch 8, n = 256, d = 512: one evaluation of the continuous vector
    field over the bare matrix products it needs (target <= 3);
(c) peak traced memory of ``--steps`` layers at that size with observables
    only (target < 1 GiB), and the time they took;
(d) a small continuous run (n = 4, d = 3, Post-LN and Pre-LN to t = 2000,
    thousands of steps): the time per evaluation of sd.simulate against
    scipy's solve_ivp (DOP853) on the same field written in plain numpy
    (target <= 1.5), and one evaluation of the field alone, with and without
    token masses, against that plain field.
"""

import argparse
import time
import tracemalloc

import numpy as np

import symdyn as sd
from symdyn.particles.attention import attention
from symdyn.particles.field import Field


def loop_post_ln(X, beta, h, layers):
    """Post-LN layers written token by token, as research scripts do."""
    X = [x / np.linalg.norm(x) for x in X]
    n = len(X)
    for _ in range(layers):
        new = []
        for k in range(n):
            scores = np.array([beta * np.dot(X[k], X[j]) for j in range(n)])
            w = np.exp(scores - scores.max())
            A = sum(w[j] * X[j] for j in range(n)) / w.sum()
            y = X[k] + h * A
            new.append(y / np.linalg.norm(y))
        X = new
    return np.array(X)


def fused_post_ln(X, beta, h, layers):
    """The same layers as few numpy calls as they can be, in preallocated
    buffers (identity weights, softmax, one run): the floor of a numpy layer
    loop, to read sd.simulate's per-layer overhead against."""
    X = X / np.linalg.norm(X, axis=-1, keepdims=True)
    XT = np.swapaxes(X, -1, -2)
    S, A = np.empty(X.shape[:-1] + X.shape[-2:-1]), np.empty_like(X)
    top, Z, norm = (np.empty(X.shape[:-1] + (1,)) for _ in range(3))
    for _ in range(layers):
        np.matmul(X, XT, out=S)
        S *= beta
        np.max(S, axis=-1, keepdims=True, out=top)
        S -= top
        np.exp(S, out=S)
        np.sum(S, axis=-1, keepdims=True, out=Z)
        np.matmul(S, X, out=A)
        np.divide(h, Z, out=Z)
        A *= Z
        A += X
        np.einsum("...i,...i->...", A, A, out=norm[..., 0])
        np.sqrt(norm, out=norm)
        np.divide(A, norm, out=X)            # X (and XT, a view) updated in place
    return X


def best(f, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def part_a():
    n, d, h, layers = 32, 16, 0.05, 200
    for seeds in (1, 16):
        X0 = sd.init.sphere(n, d, batch=seeds, seed=0)
        t_loop = best(lambda X0=X0, seeds=seeds: [loop_post_ln(X0[i], 1.0, h, layers)
                                                  for i in range(seeds)], repeat=1)
        sim = sd.simulate("post-ln", X0, beta=1.0, t=[layers * h], step=h, save_x=True)
        ref = np.array([loop_post_ln(X0[i], 1.0, h, layers) for i in range(1)])
        err = np.abs(sim.X[0, 0] - ref[0]).max()
        floor_err = np.abs(fused_post_ln(X0[:1], 1.0, h, layers)[0] - ref[0]).max()
        # interleaved, best of 9 each: the machine's load hits both alike
        t_vec, t_floor = np.inf, np.inf
        for _ in range(9):
            t_vec = min(t_vec, best(lambda X0=X0: sd.simulate(
                "post-ln", X0, beta=1.0, t=[layers * h], step=h, save_x=True), repeat=1))
            t_floor = min(t_floor, best(lambda X0=X0: fused_post_ln(X0, 1.0, h, layers),
                                        repeat=1))
        print(f"(a) {seeds:>2} seed(s): loop {t_loop:8.3f} s   sd.simulate {t_vec:8.4f} s   "
              f"speed-up {t_loop / t_vec:6.0f} x  (target >= 100; max |diff| {err:.1e}); "
              f"fused numpy floor {t_floor:8.4f} s: {t_loop / t_floor:.0f} x "
              f"(max |diff| {floor_err:.1e})")
        print(f"    sd.simulate / floor {t_vec / t_floor:5.2f}  (target <= 1.3)")


def part_a_continuous():
    """The same comparison for the continuous dynamics: solve_ivp on a loop field."""
    from scipy.integrate import solve_ivp

    n, d, T = 32, 16, 10.0
    X0 = sd.init.sphere(n, d, seed=0)

    def loop_field(t, y):
        X = y.reshape(n, d)
        out = []
        for k in range(n):
            scores = np.array([np.dot(X[k], X[j]) for j in range(n)])
            w = np.exp(scores - scores.max())
            A = sum(w[j] * X[j] for j in range(n)) / w.sum()
            out.append(A - np.dot(A, X[k]) * X[k])
        return np.concatenate(out)

    t_loop = best(lambda: solve_ivp(loop_field, (0, T), X0.ravel(), method="DOP853",
                                    rtol=1e-10, atol=1e-12), repeat=1)
    t_vec = best(lambda: sd.simulate("post-ln", X0, beta=1.0, t=[T], rtol=1e-10, atol=1e-12))
    print(f"(a) continuous, 1 run: solve_ivp on a loop field {t_loop:8.3f} s   sd.simulate "
          f"{t_vec:8.4f} s   speed-up {t_loop / t_vec:6.0f} x")


def part_b():
    m, n, d = 8, 256, 512
    X = sd.init.sphere(n, d, batch=m, seed=0)
    beta = np.full(m, np.sqrt(d))
    r = np.ones((m, n))
    tm = np.zeros(m)
    for label, w in (("identity", sd.weights.identity(d)),
                     ("kaiming, 1 head", sd.weights.kaiming(d, seed=0))):
        field = Field(sd.scheme("peri-ln"), w, "softmax", (), None)
        field(tm, X, r, beta, 0)                          # warm-up
        t_field = best(lambda field=field: field(tm, X, r, beta, 0), repeat=5)
        if w.identity:
            def bare():
                S = X @ np.swapaxes(X, -1, -2)
                return S @ X
        else:
            Q, K, V = w.at(0)

            def bare(Q=Q, K=K, V=V):
                q, k, v = X @ Q[0].T, X @ K[0].T, X @ V[0].T
                return (q @ np.swapaxes(k, -1, -2)) @ v
        t_bare = best(bare, repeat=5)
        print(f"(b) {label:<16} field {t_field * 1e3:8.2f} ms   bare matmuls "
              f"{t_bare * 1e3:8.2f} ms   ratio {t_field / t_bare:5.2f}  (target <= 3)")
        # the attention alone, for reference
        qkv, ident = (None, True) if w.identity else (w.at(0), False)
        t_att = best(lambda qkv=qkv, ident=ident: attention(X, beta, qkv, "softmax", ident))
        print(f"    attention alone {t_att * 1e3:8.2f} ms")


def part_c(steps):
    m, n, d, h = 8, 256, 512, 0.01
    X0 = sd.init.gaussian(n, d, scale=1 / np.sqrt(d), batch=m, seed=0)
    outputs = np.linspace(0, steps * h, 11)
    tracemalloc.start()
    t0 = time.perf_counter()
    sim = sd.simulate("pre-ln", X0, beta=np.sqrt(d), t=outputs, step=h)
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    state = X0.nbytes
    print(f"(c) {steps} layers, batch {m}, n {n}, d {d}: {elapsed:.1f} s, peak traced "
          f"memory {peak / 2**20:.0f} MiB (state {state / 2**20:.0f} MiB; target < 1024 MiB);"
          f" final gamma {sim.gamma[:, -1].mean():.4f}")


def plain_field(beta):
    """The continuous Post-LN field d theta/dt = P_theta A of one run, plain numpy."""
    def f(t, y):
        X = y.reshape(-1, 3)
        S = beta * X @ X.T
        W = np.exp(S - S.max(axis=1, keepdims=True))
        A = (W @ X) / W.sum(axis=1, keepdims=True)
        return (A - np.sum(A * X, axis=1, keepdims=True) * X).ravel()
    return f


def plain_pre_ln(beta):
    """Pre-LN's (d theta/dt, dr/dt) = (P_theta A / r, a), plain numpy; y = (theta, r)."""
    def f(t, y):
        n = len(y) // 4
        X, r = y[:3 * n].reshape(n, 3), y[3 * n:]
        S = beta * X @ X.T
        W = np.exp(S - S.max(axis=1, keepdims=True))
        A = (W @ X) / W.sum(axis=1, keepdims=True)
        a = np.sum(A * X, axis=1)
        return np.concatenate([((A - a[:, None] * X) / r[:, None]).ravel(), a])
    return f


def part_d():
    from scipy.integrate import solve_ivp

    from symdyn.ode.integrate import integrate

    n, d, T, beta = 4, 3, 2000.0, 4.0
    X0 = sd.init.sphere(n, d, seed=3)
    for name, plain, y0 in (("post-ln", plain_field(beta), X0.ravel()),
                            ("pre-ln", plain_pre_ln(beta), np.concatenate([X0.ravel(),
                                                                           np.ones(n)]))):
        sim = sd.simulate(name, X0, beta=beta, t=[T], rtol=1e-10, atol=1e-12,
                          method="dop853", merge=0.0)
        ref = solve_ivp(plain, (0, T), y0, method="DOP853", rtol=1e-10, atol=1e-12)
        t_sim = best(lambda name=name: sd.simulate(name, X0, beta=beta, t=[T], rtol=1e-10,
                                                   atol=1e-12, method="dop853", merge=0.0))
        t_ref = best(lambda plain=plain, y0=y0: solve_ivp(plain, (0, T), y0, method="DOP853",
                                                        rtol=1e-10, atol=1e-12))
        per_sim, per_ref = t_sim / sim.nfev * 1e6, t_ref / ref.nfev * 1e6
        # the driver sd.simulate uses, on the plain field: its own share of the cost
        batched = plain_batched(plain)
        own = integrate(batched, np.array([T]), y0[None], rtol=1e-10, atol=1e-12)
        t_own = best(lambda batched=batched, y0=y0: integrate(
            batched, np.array([T]), y0[None], rtol=1e-10, atol=1e-12))
        per_own = t_own / own.nfev * 1e6
        print(f"(d) {name}, n {n}, d {d}, t = {T:g}: sd.simulate {sim.nfev} evaluations, "
              f"{per_sim:6.1f} us each; solve_ivp (DOP853, plain numpy) {ref.nfev}, "
              f"{per_ref:6.1f} us each; ratio {per_sim / per_ref:4.2f}  (target <= 1.5); "
              f"per run {t_sim:.3f} s against {t_ref:.3f} s ({t_sim / t_ref:4.2f})")
        print(f"    symdyn.ode.integrate on the plain field: {own.nfev} evaluations, "
              f"{per_own:6.1f} us each (ratio to solve_ivp {per_own / per_ref:4.2f}); "
              f"sd.simulate costs {per_sim - per_own:5.1f} us an evaluation more")
        t_mass, t_none, t_bare = field_costs(name, plain, y0, X0, beta)
        print(f"    the field alone {t_mass * 1e6:5.1f} us with token masses, "
              f"{t_none * 1e6:5.1f} us without; plain numpy {t_bare * 1e6:5.1f} us")


def plain_batched(plain):
    """``plain`` as symdyn.ode.integrate calls a field: ``f(t, y, phase)``, batch of one."""
    def f(t, y, phase):
        return plain(t[0], y[0])[None]
    return f


def field_costs(name, plain, y0, X0, beta, k=20000):
    """Seconds per call of the continuous field (with masses, without) and of ``plain``."""
    n, d = X0.shape
    field = Field(sd.scheme(name), sd.weights.identity(d), "softmax", (), None)
    theta, r = X0[None], np.ones((1, n))
    tm, b, mass = np.zeros(1), np.full(1, beta), np.ones((1, n))
    t_mass = best(lambda: [field(tm, theta, r, b, 0, mass=mass) for _ in range(k)]) / k
    t_none = best(lambda: [field(tm, theta, r, b, 0) for _ in range(k)]) / k
    t_bare = best(lambda: [plain(0.0, y0) for _ in range(k)]) / k
    return t_mass, t_none, t_bare


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--parts", default="abcd", help="which parts to run (default abcd)")
    args = parser.parse_args()
    if "a" in args.parts:
        part_a()
        part_a_continuous()
    if "b" in args.parts:
        part_b()
    if "c" in args.parts:
        part_c(args.steps)
    if "d" in args.parts:
        part_d()


if __name__ == "__main__":
    main()
