"""The particle simulator: loop baseline, right-hand-side overhead, memory.

Run: ``python benchmarks/simulate.py [--steps 10000]``. Prints, in one run:

(a) sd.simulate against a per-token Python loop (the style of research
    scripts) on the same Post-LN layer stack, n = 32, d = 16, 200 layers,
    for one run and for 16 seeds (the loop runs them one after another), and
    the floor of any numpy layer loop: the same layers fused into 13 numpy
    calls on preallocated buffers;
(b) at batch 8, n = 256, d = 512: one evaluation of the continuous vector
    field over the bare matrix products it needs (target <= 3);
(c) peak traced memory of ``--steps`` layers at that size with observables
    only (target < 1 GiB), and the time they took.
"""

import argparse
import time
import tracemalloc

import numpy as np

import symdyn as sd
from symdyn.particles.attention import attention
from symdyn.particles.simulation import _Field


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
        t_vec = best(lambda X0=X0: sd.simulate("post-ln", X0, beta=1.0, t=[layers * h],
                                               step=h, save_x=True))
        t_loop = best(lambda X0=X0, seeds=seeds: [loop_post_ln(X0[i], 1.0, h, layers)
                                                  for i in range(seeds)], repeat=1)
        sim = sd.simulate("post-ln", X0, beta=1.0, t=[layers * h], step=h, save_x=True)
        ref = np.array([loop_post_ln(X0[i], 1.0, h, layers) for i in range(1)])
        err = np.abs(sim.X[0, 0] - ref[0]).max()
        t_floor = best(lambda X0=X0: fused_post_ln(X0, 1.0, h, layers))
        floor_err = np.abs(fused_post_ln(X0[:1], 1.0, h, layers)[0] - ref[0]).max()
        print(f"(a) {seeds:>2} seed(s): loop {t_loop:8.3f} s   sd.simulate {t_vec:8.4f} s   "
              f"speed-up {t_loop / t_vec:6.0f} x  (target >= 100; max |diff| {err:.1e}); "
              f"fused numpy floor {t_floor:8.4f} s: {t_loop / t_floor:.0f} x "
              f"(max |diff| {floor_err:.1e})")


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
        field = _Field(sd.scheme("peri-ln"), w, "softmax", (), None)
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    args = parser.parse_args()
    part_a()
    part_a_continuous()
    part_b()
    part_c(args.steps)


if __name__ == "__main__":
    main()
