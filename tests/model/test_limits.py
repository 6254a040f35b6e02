"""Expensive input is refused before the work, in well under a second, with the
limit in the message; each refusal has a negative control (the largest legal
input still runs, or the check switched off shows the failure it prevents).

Times are measured only as generous bounds on the CPU time of this process
(``< 5 s``, twenty times the slowest refusal's 0.3 s), never on the wall clock.
"""

import itertools
import math
import os
import re
import subprocess
import sys
import textwrap
import time

import mpmath
import numpy as np
import pytest

import symdyn as sd
from symdyn.base import checks
from symdyn.model import baseline, law_limits
from symdyn.particles import simulation as particles
from symdyn.reduced import solve_checks
from symdyn.studies import grid, inverse
from symdyn.studies.inverse import evaluate

BOUND = 5.0                      # CPU seconds: a refusal before work takes at most 0.3 s
EQUI = dict(n=8, beta=1.0, gamma0=0.0)
X0 = sd.init.equiangular(8, 8, 0.0, seed=1)


def refused(call, match, error=ValueError):
    """``call()`` raises ``error`` matching ``match`` within :data:`BOUND` CPU seconds."""
    start = time.process_time()
    with pytest.raises(error, match=match) as info:
        call()
    assert time.process_time() - start < BOUND
    return str(info.value)


# --- oscillating speed laws ------------------------------------------------------------

FAST = {"ngpt": (lambda: sd.scheme("ngpt", alpha="2 + sin(10**9*t)"), "alpha"),
        "custom": (lambda: sd.custom_scheme("osc", speed="A_norm/(2 + sin(10**9*t))"),
                   "speed")}


@pytest.mark.parametrize("kind", FAST)
@pytest.mark.parametrize("entry", ["solve", "simulate"])
def test_an_oscillating_speed_is_refused_before_work(kind, entry):
    make, name = FAST[kind]
    s = make()
    call = ((lambda: sd.solve(s, t=[0.0, 10.0], **EQUI)) if entry == "solve" else
            (lambda: sd.simulate(s, X0, beta=1.0, t=[0.0, 10.0])))
    msg = refused(call, rf"^{name}: sin\(1000000000\*t\) .* 1\.59e\+09 periods on \[0, 10\]"
                        rf".* at most 2,000")
    assert len(msg) < 300


def test_the_oscillation_limit_is_where_it_says(monkeypatch):
    monkeypatch.setattr(law_limits, "MAX_PERIODS", 20)
    slow = sd.solve(sd.scheme("ngpt", alpha="2 + sin(10*t)"), t=[0.0, 10.0], **EQUI)
    assert np.isfinite(slow.gamma).all()                    # 15.9 periods: runs
    refused(lambda: sd.solve(sd.scheme("ngpt", alpha="2 + sin(20*t)"), t=[0.0, 10.0],
                             **EQUI), r"31\.8 periods .* at most 20")


def test_control_each_period_costs_steps():
    # the premise of the limit: the integrator resolves every period (about 10
    # DOP853 steps, 110 evaluations each), so the cost grows with their count
    nfev = {w: sd.solve(sd.scheme("ngpt", alpha=f"2 + sin({w}*t)"), t=[0.0, 10.0],
                        **EQUI).nfev for w in (10, 100)}
    periods = 100 * 10 / (2 * math.pi)
    assert nfev[100] > 4 * nfev[10] and nfev[100] > 50 * periods


# --- speeds with a zero ------------------------------------------------------------------

@pytest.mark.parametrize("law", ["Abs(t - 1.2345)", "A_norm*Abs(t - 1.2345)"])
@pytest.mark.parametrize("entry", ["solve", "simulate"])
def test_a_speed_with_a_zero_is_refused_alike_by_solve_and_simulate(law, entry):
    s = sd.custom_scheme("notch", speed=law)
    call = ((lambda: sd.solve(s, t=[0.0, 3.0], **EQUI)) if entry == "solve" else
            (lambda: sd.simulate(s, X0, beta=1.0, t=[0.0, 3.0])))
    msg = refused(call, r"^speed: the speed law .* vanishes at t = 1\.2345\b")
    assert len(msg) < 300
    # simulate's faults along a trajectory are ArithmeticErrors: this one is both
    with pytest.raises(ArithmeticError):
        call()


def test_control_without_the_check_simulate_accepted_the_zero(monkeypatch):
    # the issue: simulate returned (merging the tokens through the pole) where
    # solve refused after 93 s
    monkeypatch.setattr(particles, "check_speed", lambda *a, **k: None)
    s = sd.custom_scheme("notch", speed="Abs(t - 1.2345)")
    sim = sd.simulate(s, X0, beta=1.0, t=[0.0, 3.0])
    assert np.isfinite(sim.gamma).all()


@pytest.mark.parametrize("s", [sd.scheme("ngpt", alpha="Abs(t - 1.2345)"),
                               sd.custom_scheme("dip", speed="A_norm*(Abs(t - 1.2345) + 0.1)")],
                         ids=["alpha-zero", "positive-dip"])
def test_control_a_velocity_zero_or_a_positive_dip_runs_and_agrees(s):
    # alpha = 0 at an instant is s = +inf: the velocity vanishes, harmless
    tr = sd.solve(s, t=[1.0, 3.0], **EQUI)
    sim = sd.simulate(s, X0, beta=1.0, t=[1.0, 3.0])
    assert np.abs(sim.gamma - tr.gamma).max() < 1e-7


# --- horizons beyond the integrator ------------------------------------------------------

@pytest.mark.parametrize("scheme, clock", [("pre-ln", "log"), ("post-ln", "t")])
def test_continuous_runs_beyond_1e150_are_refused(scheme, clock):
    X = sd.init.sphere(8, 8, seed=0)
    refused(lambda: sd.simulate(scheme, X, beta=1.0, t=[1e250], clock=clock),
            r"^t: the continuous dynamics runs to t <= 1e\+150 .* got 1e\+250")
    sim = sd.simulate(scheme, X, beta=1.0, t=[1e150], clock=clock)      # the largest
    assert sim.clusters[-1] == 1


# --- output times ----------------------------------------------------------------------

def _memory_limit():
    """Half of this machine's memory, as checks.memory allows."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2


@pytest.mark.parametrize("entry", ["solve", "simulate"])
def test_output_times_beyond_memory_are_refused_before_work(entry):
    # no cap on the count: only the recorded arrays against half of the memory,
    # counted before t is converted (a range this long could not be converted)
    count = 10**15
    t = range(count)
    call = ((lambda: sd.solve("post-ln", t=t, **EQUI)) if entry == "solve" else
            (lambda: sd.simulate("post-ln", X0, beta=1.0, t=t)))
    msg = refused(call, rf"^t: {count:,} output times x 1 member.* needs about [\d.e+]+ GiB, "
                        rf"more than half of")
    assert float(re.search(r"needs about ([\d.e+]+) GiB", msg)[1]) * 2**30 > _memory_limit()


def test_control_output_times_once_refused_by_count_run_and_the_rule_follows_memory(
        monkeypatch):
    # 20,001 and 100,001 were over the old caps (10,000 and 100,000): they run now
    t = np.linspace(0.0, 10.0, 20_001)
    assert sd.simulate("post-ln", X0, beta=1.0, t=t).gamma.shape == (20_001,)
    tr = sd.solve("post-ln", t=np.linspace(0.0, 10.0, 100_001), **EQUI)
    assert tr.gamma.shape == (100_001,)
    # the same request is refused on a machine 10,000 times smaller (the rule is
    # memory, not a count)
    pages = os.sysconf("SC_PHYS_PAGES") // 10_000
    real = os.sysconf
    monkeypatch.setattr(checks.os, "sysconf",
                        lambda name: pages if name == "SC_PHYS_PAGES" else real(name))
    refused(lambda: sd.simulate("post-ln", X0, beta=1.0, t=t),
            r"^t: 20,001 output times x 1 member\(s\) of 8 tokens .* more than half")


# --- sweep grids ---------------------------------------------------------------------

def _no_values(*args):
    raise AssertionError("a value was validated before the grid's size")


@pytest.mark.parametrize("axes, match", [
    ({"beta": np.linspace(0, 1, 2000), "n": range(2, 1002)},
     r"^grid: 2,000,000 grid points \(1,000 n x 2,000 beta\), more than the 1,000,000"),
    ({"beta": (float(b) for b in itertools.count())},
     r"^grid axis 'beta': more than 1,000,000 values"),
    ({"beta": np.broadcast_to(0.5, (10**9,))},          # a view: a billion values, no memory
     r"1,000,000,000 grid points"),
])
def test_a_grid_is_sized_before_its_values_are_checked(monkeypatch, axes, match):
    monkeypatch.setattr(grid, "_value", _no_values)
    refused(lambda: sd.sweep(axes, t=[0.0, 1.0], kind="solve", executor="serial"), match)


def test_control_without_the_size_check_every_value_is_checked_first(monkeypatch):
    seen = []
    monkeypatch.setattr(grid, "check_points", lambda axes: None)
    monkeypatch.setattr(grid, "_value", lambda kind, axis, v: seen.append(v) or v)
    grid.grid_axes("solve", {"beta": np.linspace(0, 1, 2000), "n": range(2, 1002)})
    assert len(seen) >= 3000


def test_control_the_largest_grid_is_accepted(monkeypatch):
    monkeypatch.setattr(grid, "MAX_POINTS", 6)
    axes = grid.grid_axes("solve", {"beta": [0.5, 1.0], "n": [4, 8, 16]})
    tasks = grid.tasks_of("solve", axes, [], np.array([1.0]), (), None)
    assert sum(len(task.points) for task in tasks) == 6
    refused(lambda: grid.grid_axes("solve", {"beta": [0.5, 1.0, 2.0], "n": [4, 8, 16]}),
            r"^grid: 9 grid points .* more than the 6")


# --- design ----------------------------------------------------------------------------

DESIGN = dict(depth=4.0, n=32, beta=1.0, gamma0=0.0)


def test_design_layers_beyond_the_limit_are_refused():
    refused(lambda: sd.design("affine", "speed", target=0.9, layers=10**9, check=False,
                              **DESIGN), r"^layers: 1,000,000,000 layers, more than the 10,000")
    refused(lambda: evaluate("post-ln", "speed", target=0.9, layers=10**9, **DESIGN),
            r"^layers: 1,000,000,000 layers")


def test_control_the_largest_layer_count_runs():
    z = evaluate("post-ln", "speed", target=0.9, layers=inverse.MAX_LAYERS, **DESIGN)
    assert 0 < z < 0.25


def test_design_with_partial_bounds_keeps_the_family_bounds():
    # README: a failure is res.success False with the reason, never a raise
    res = sd.design("affine", "target", target=0.9, bounds={"a0": (0.1, 10)}, check=False,
                    **DESIGN)
    assert res.success and 0.0 <= res.params["a1"] <= 1e3


def test_control_an_unbounded_search_onto_a_failing_law_is_reported_not_raised():
    # a1 unbounded: SLSQP steps to alpha < 0 on [0, L] (the raise of the issue)
    res = sd.design("affine", "target", target=0.9, check=False, **DESIGN,
                    bounds={"a0": (0.1, 10), "a1": (None, None)})
    assert not res.success and "law fails on [0, 4]" in res.message
    assert len(res.message) < 400 and np.isfinite(res.trajectory.gamma).all()


# --- a batch broadcast beyond memory; the address-space limit ---------------------------

def test_a_broadcast_batch_is_refused_with_its_shape():
    msg = refused(lambda: sd.solve("post-ln", n=np.full((10**5, 1), 8.0),
                                   beta=np.ones(10**5), gamma0=0.0, t=[1.0]),
                  r"^solve: n, beta, gamma0, r0 and the parameters broadcast to shape "
                  r"\(100000, 100000\) \(10,000,000,000 members\) x 1 times: needs about .*GiB")
    assert len(msg) < 300


CHILD = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import symdyn as sd
    from symdyn.base import checks
    from symdyn.reduced import solver
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (used + 2**30, hard))     # 1 GiB to spare
    if sys.argv[1] == "off":
        solver.memory = lambda *args: None
    def run(call):
        try:
            call()
            print("ran")
        except ValueError as e:
            print("ValueError", e)
        except MemoryError:
            print("MemoryError")
    if sys.argv[1] != "off":
        run(lambda: checks.memory(2**29 + 2**20, "half a GiB"))
        run(lambda: checks.memory(2**27, "128 MiB"))
    run(lambda: sd.solve("post-ln", n=np.full((2**14, 1), 8.0), beta=np.ones(2**14),
                         gamma0=0.0, t=[1.0]))
""")


def _child(mode):
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS, /proc")
def test_memory_checks_respect_the_address_space_limit():
    lines = _child("on")
    assert re.match(r"ValueError half a GiB: needs about .* GiB this process may still "
                    r"allocate \(its address-space limit RLIMIT_AS is", lines[0])
    assert lines[1] == "ran"                                  # 128 MiB fits
    assert re.match(r"ValueError solve: .* \(16384, 16384\) .*RLIMIT_AS", lines[2])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS, /proc")
def test_control_without_the_check_a_limited_process_gets_a_raw_memory_error():
    assert _child("off") == ["MemoryError"]


# --- messages stay short ---------------------------------------------------------------

BIG = np.random.default_rng(0).standard_normal((50, 50))
SWAPPED = {
    "scheme": lambda: sd.simulate(X0, "post-ln", beta=1.0, t=[1.0]),
    "beta": lambda: sd.simulate("post-ln", X0, beta=-np.abs(BIG), t=[1.0]),
    "attention": lambda: sd.simulate("post-ln", X0, 1.0, [1.0], attention=BIG),
    "dtype": lambda: sd.simulate("post-ln", X0, 1.0, [1.0], dtype=BIG),
    "clock": lambda: sd.simulate("post-ln", X0, 1.0, [1.0], clock=BIG),
    "method": lambda: sd.simulate("post-ln", X0, 1.0, [1.0], method=BIG),
    "dps": lambda: sd.solve("post-ln", t=[1.0], dps=BIG, **EQUI),
    "sensitivities": lambda: sd.solve("post-ln", t=[1.0], sensitivities=BIG, **EQUI),
    "family": lambda: sd.design(X0, target=0.9, check=False, **DESIGN),
    "layers": lambda: sd.design("affine", "speed", target=0.9, layers=BIG, check=False,
                                **DESIGN),
    "grid axis 'n'": lambda: sd.sweep({"n": [BIG]}, t=[1.0]),
}


@pytest.mark.parametrize("name", SWAPPED)
def test_array_arguments_give_short_messages_naming_them(name):
    msg = refused(SWAPPED[name], "^" + re.escape(name))
    assert len(msg) < 300, msg


def test_control_a_full_repr_was_a_page(monkeypatch):
    monkeypatch.setattr(baseline, "shown", repr)     # resolve's home: the scheme argument
    msg = refused(SWAPPED["scheme"], "^scheme")
    assert len(msg) > 300


# --- r that underflows ---------------------------------------------------------------

SHRINK = dict(radial="-20*r")              # r = exp(-20 t): below 1e-300 at t = 34.5


def test_solve_says_r_underflowed_by_the_output_time():
    s = sd.custom_scheme("shrink", speed="1", **SHRINK)
    with pytest.raises(ValueError, match=r"^radial: r underflowed by t = 40: the radial law "
                                         r"dr/dt = -20\*r .* earlier t"):
        sd.solve(s, t=[0.0, 40.0], **EQUI)
    tr = sd.solve(s, t=[0.0, 30.0], **EQUI)                 # control: before it, exact
    assert tr.r[-1] == pytest.approx(np.exp(-600.0), rel=1e-8)


def test_simulate_says_r_underflowed_with_the_time():
    s = sd.custom_scheme("shrink", speed="r", **SHRINK)
    with pytest.raises(ArithmeticError, match=r"^simulate: r underflowed at t = 3[45]\.\d+: "
                                              r"the radial law dr/dt = -20\*r"):
        sd.simulate(s, sd.init.sphere(4, 3, seed=0), beta=1.0, t=[0.0, 40.0])


def test_the_float_fault_names_underflow_not_the_law():
    system = sd.stable_system(sd.custom_scheme("shrink", speed="r", **SHRINK))
    assert "r underflowed at t = 35.3" in str(solve_checks.law_fault(system, "radial", 4.7e-307,
                                                                      35.3, 8, 1))
    # control: a law that drives r through 0 is still blamed
    assert "drives r to -0.03" in str(solve_checks.law_fault(system, "radial", -0.03, 1.0, 8, 1))


def _r_error_at_30(dps):
    s = sd.custom_scheme("shrink", speed="1", radial="-2*r")   # r = exp(-2 t)
    tr = sd.solve(s, t=[0.0, 30.0], dps=dps, **EQUI)
    with mpmath.workdps(dps + 10):
        return abs(tr.r[-1] / mpmath.exp(-60) - 1)


def test_dps_holds_a_vanishing_r_to_its_digits(monkeypatch):
    # r(30) = e^-60 ~ 1e-26, below 10^-dps: held relatively, not absolutely.
    assert _r_error_at_30(20) < mpmath.mpf(10) ** -18
    # control: held to an absolute 1e-23, as every component was in symdyn 0.5
    from symdyn.reduced import solve_mp
    absolute = solve_mp.integrate_mp
    monkeypatch.setattr(solve_mp, "integrate_mp", lambda *a, floors=None, **k: absolute(*a, **k))
    assert _r_error_at_30(20) > mpmath.mpf(10) ** -3


def test_dps_blames_a_law_through_zero():
    fall = sd.custom_scheme("fall", speed="1", radial="-1")
    with pytest.raises(ValueError, match=r"radial: the radial law dr/dt = -1 .* at t = 1\b"):
        sd.solve(fall, t=[0.5, 3.0], dps=20, **EQUI)
