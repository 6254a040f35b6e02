"""Every check passes on its quick grid, and fails when fed something wrong."""

import json

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
import symdyn.proofs_check as proofs_check
import symdyn.proofs_check.__main__ as pc_main
from symdyn.model.symbols import C, beta, gamma, n, t
from symdyn.proofs_check import (
    clustering,
    general_starts,
    initial_velocity,
    phase_transition,
    published,
    symmetric,
    terminal_velocity,
)
from symdyn.proofs_check.__main__ import main as proofs_main
from symdyn.proofs_check.result import Result

# --- initial-velocity's values, computed once per module ---------------------------
#
# initial_velocity.check evaluates the derived closed forms (sd.initial_velocity,
# sd.initial_token_speed: a sympy simplification per scheme, n and beta, most of
# its time), their leading orders in n, and finite-differences seeded particle runs
# (sd.init.equiangular, sd.simulate) on its grid; its passing run and both negative
# controls ask for the very same values. The memo hands a repeated call (same
# arguments) the result of the first, so each check judges exactly the numbers it
# would compute itself.

ONCE = ((sd, "initial_velocity"), (sd, "initial_token_speed"), (sd, "leading_order"),
        (sd.init, "equiangular"), (sd, "simulate"))


def _frozen(value):
    if isinstance(value, np.ndarray):
        return (value.shape, value.dtype.str, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _once(function, memo):
    def once(*args, **kwargs):
        key = (_frozen(args), _frozen(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:                   # an argument that is no key
            return function(*args, **kwargs)
        if key not in memo:
            memo[key] = function(*args, **kwargs)
        return memo[key]
    return once


@pytest.fixture(scope="module")
def computed():
    return {(owner.__name__, name): {} for owner, name in ONCE}


@pytest.fixture
def initial_velocity_once(monkeypatch, computed):
    for owner, name in ONCE:
        memo = computed[owner.__name__, name]
        monkeypatch.setattr(owner, name, _once(getattr(owner, name), memo))


@pytest.mark.parametrize("name", list(proofs_check.CHECKS))
def test_quick_check_passes(name, request):
    if name == "initial-velocity":
        request.getfixturevalue("initial_velocity_once")
    result = proofs_check.CHECKS[name].check(quick=True)
    assert result.verdict == "PASS", result.why()
    assert result.evidence and set(result.methods) <= {e["method"] for e in result.evidence}


# --- negative controls: each check returns FAIL when fed a wrong claim ---------

def test_published_fails_on_a_wrong_formula():
    wrong = dict(published.PUBLISHED)
    wrong["softmax"] = 3 * wrong["softmax"] / 2
    assert published.check(formulas=wrong).verdict == "FAIL"
    assert published.check(rates={"softmax": sp.Integer(1),
                                  "unnormalized": 2 * sp.exp(beta)}).verdict == "FAIL"
    assert published.check(scheme="pre-ln").verdict == "FAIL"


def test_phase_transition_fails_on_a_wrong_limit():
    def wrong(rho, c):
        return 3 * rho / (1 + 2 * rho) if c == 1 / (1 - rho) else \
            phase_transition.published_limit(rho, c)
    res = phase_transition.check(limit_formula=wrong)
    assert res.verdict == "FAIL"
    assert {f.split(":")[0] for f in res.failures} == {"sympy-limit", "finite-n"}


def test_symmetric_fails_against_the_wrong_ode():
    res = symmetric.check(schemes=["peri-ln"], reference=lambda s: "pre-ln")
    assert res.verdict == "FAIL"


def test_initial_velocity_fails_on_wrong_closed_forms_and_ordering(initial_velocity_once):
    def post_ln_for_all(name, n_, b):
        return (float(sd.initial_velocity("post-ln", n=n_, beta=b)),
                float(sd.initial_token_speed("post-ln", n=n_, beta=b)))
    assert initial_velocity.check(closed_form=post_ln_for_all).verdict == "FAIL"
    swapped = initial_velocity.check(fast=("post-ln", "pre-ln"), slow=("peri-ln", "ngpt"))
    assert swapped.verdict == "FAIL"
    assert all(f.startswith("ordering") for f in swapped.failures)


def test_terminal_fails_on_a_wrong_law():
    wrong = [("pre-ln claimed exponential", sd.scheme("pre-ln"), C * sp.exp(-2 * t),
              (1e3, 4e3)),
             ("post-ln claimed rate 3", sd.scheme("post-ln"), C * sp.exp(-3 * t),
              (15.0, 30.0))]
    res = terminal_velocity.check(claims=wrong)
    assert res.verdict == "FAIL"
    assert sum(f.startswith("decay-fit") for f in res.failures) == 2


def test_general_starts_fail_on_a_wrong_law():
    wrong = [("post-ln", "polynomial", 2.0, 400.0, "sphere"),
             ("pre-ln", "polynomial", 1.0, 1e30, "gaussian")]
    res = general_starts.check(claims=wrong)
    assert res.verdict == "FAIL"


def test_clustering_fails_for_a_scheme_that_stops_short():
    brake = sd.custom_scheme("brake", speed="exp(t)")        # law "no-collapse"
    res = clustering.check(schemes=[brake])
    assert res.verdict == "FAIL"


def test_no_vacuous_pass():
    assert clustering.check(schemes=[]).verdict == "FAIL"            # empty grid
    r = Result("x", "s", {}, "tol", ["a", "b"])
    assert r.verdict == "FAIL"                                       # no evidence
    r.row("a", True, value=1.0)
    assert r.verdict == "FAIL" and "b" in r.why()                    # a method skipped
    r.row("b", True, value=2.0)
    assert r.verdict == "PASS"


# --- the runner ------------------------------------------------------------------

def test_runner_json_and_exit_status(tmp_path, capsys):
    path = tmp_path / "out.json"
    assert proofs_main(["--quick", "--only", "published", "phase-transition",
                        "--json", str(path)]) == 0
    data = json.loads(path.read_text())
    assert [r["name"] for r in data["results"]] == ["published", "phase-transition"]
    assert all(r["verdict"] == "PASS" and r["evidence"] for r in data["results"])
    assert "published" in capsys.readouterr().out
    assert proofs_main(["--only", "nonsense"]) == 2


def test_runner_exit_1_on_fail(monkeypatch):
    monkeypatch.setattr(published, "PUBLISHED",
                        {"softmax": 2 * gamma * n, "unnormalized": gamma})
    monkeypatch.setattr(published.check, "__defaults__", (True, None, None, "post-ln"))
    assert proofs_main(["--quick", "--only", "published"]) == 1


def test_evidence_columns_in_order_of_first_appearance():
    r = Result("demo", "s", {}, "t", ["a", "b"])
    r.row("a", True, x=1.0)
    r.row("b", True, z=2.0, y=3.0)
    text = proofs_check.markdown([(r, 0.0)])
    assert "| method | ok | x | z | y |" in text      # not hash-set order
    assert "| b | True |  | 2 | 3 |" in text


# --- exit statuses: a failed claim, bad input and an internal error differ ------------

def _broken_check(quick=True, **kw):
    raise RuntimeError("a bug in the check")


def test_internal_error_exit_3_and_the_other_checks_still_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(published, "check", _broken_check)
    path = tmp_path / "out.json"
    assert proofs_main(["--quick", "--only", "published", "phase-transition",
                        "--json", str(path)]) == 3
    out, err = capsys.readouterr()
    assert ("proofs_check: internal error in published (RuntimeError): a bug in the check"
            in err.splitlines())
    assert "phase-transition  PASS" in out and "published" not in out
    data = json.loads(path.read_text())
    assert data["errors"] == [{"name": "published", "error": "RuntimeError: a bug in the check"}]
    assert [r["name"] for r in data["results"]] == ["phase-transition"]


def test_control_exit_statuses_of_pass_fail_and_bad_input(monkeypatch, capsys):
    assert proofs_main(["--quick", "--only", "published"]) == 0
    assert proofs_main(["--only", "nonsense"]) == 2
    assert "unknown check(s) ['nonsense']" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        proofs_main(["--no-such-option"])
    assert usage.value.code == 2
    monkeypatch.setattr(published, "check",
                        lambda quick=True: Result("published", "s", {}, "t", ["a"]))
    assert proofs_main(["--quick", "--only", "published"]) == 1    # FAIL: no evidence


def test_a_json_file_that_cannot_be_written_is_exit_2(tmp_path, monkeypatch, capsys):
    def full(path, mode="r", *args, **kw):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(pc_main, "open", full, raising=False)
    path = tmp_path / "out.json"
    assert proofs_main(["--quick", "--only", "published", "--json", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"proofs_check: error: cannot write {path} (No space left on device)")


def test_the_exit_statuses_are_in_the_help(capsys):
    with pytest.raises(SystemExit):
        proofs_main(["--help"])
    text = capsys.readouterr().out
    for line in ("0    every claim PASSed", "1    a claim FAILed", "2    bad usage",
                 "3    internal error", "130  interrupted"):
        assert line in text


# --- --certify: claims proved in ball arithmetic (python-flint) -----------------

def _certified():
    pytest.importorskip("flint")
    from symdyn.proofs_check import certified
    return certified


def test_numerical_checks_say_so_and_a_kind_is_one_of_two():
    assert published.check().kind == "checked numerically"
    with pytest.raises(ValueError, match="kind"):
        Result("x", "s", {}, "t", ["m"], kind="proved")


def test_figure2_order_is_certified_and_agrees_with_the_float_solver():
    certified = _certified()
    from symdyn.output.claims import PAPER_SIX, caption_checks, reach_times
    # flip=False: every assertion here is set before the t_switch bisection; the
    # default call, flip included, is test_fig2_model.py's fixture
    r = certified.fig2_order(flip=False)
    assert (r.verdict, r.kind) == ("PASS", "certified"), r.why()
    floats = reach_times(PAPER_SIX, n=32, beta=1.0)        # oracle: sd.solve's event
    assert [e["before"] for e in r.evidence] == sorted(floats, key=floats.get)[:-1]
    for e in r.evidence:                                  # each enclosure near the float
        mid = float(e["T_before"].split()[0].strip("["))
        assert abs(mid - floats[e["before"]]) < 1e-8 * mid
    # the caption's numerical verdict ("no": Mix-LN is after Peri-LN) is the certified one
    assert caption_checks({"n": 32, "beta": 1.0})["fig2-last"].verdict == "no"
    assert "converge last' is certified false here" in r.key_figures


def test_control_a_perturbed_ordering_is_not_certified():
    # flip=False: the verdict and the evidence are the enclosures' alone; the
    # t_switch bisection (flip) only adds to key_figures and parameters, and is
    # tested in test_fig2_model.py
    certified = _certified()
    order = ["ngpt", "post-ln", "sqrt-scaling", "peri-ln", "mix-ln", "pre-ln"]
    assert certified.fig2_order(claimed=order[::-1], flip=False).verdict == "FAIL"
    swapped = order[:3] + ["mix-ln", "peri-ln", "pre-ln"]            # one pair swapped
    r = certified.fig2_order(claimed=swapped, flip=False)
    assert r.verdict == "FAIL" and sum(not e["ok"] for e in r.evidence) == 1


def test_figure2_early_is_certified_and_the_reverse_fails():
    certified = _certified()
    r = certified.fig2_early()
    assert (r.verdict, r.kind) == ("PASS", "certified"), r.why()
    assert len(r.evidence) == 3
    assert certified.fig2_early(first=("pre-ln",), then=("post-ln",)).verdict == "FAIL"


def test_region_certificates_prove_and_a_reversed_claim_fails():
    certified = _certified()
    claim = ("post-ln before pre-ln", "0.9", (8, 9), (1, 1.25))
    r = certified.regions([claim])
    assert (r.verdict, r.kind) == ("PASS", "certified") and r.evidence[0]["proven"] > 0
    assert "pointwise dominance" in r.notes[0]
    bad = certified.regions([("pre-ln before post-ln",) + claim[1:]])
    assert bad.verdict == "FAIL" and bad.evidence[0]["disproven"] > 0


def test_certify_without_flint_is_exit_2_naming_the_extra(monkeypatch, capsys):
    import sys

    from symdyn.cli import main as symdyn_main
    monkeypatch.setitem(sys.modules, "flint", None)          # import flint now fails
    assert proofs_main(["--certify", "--only", "fig2-order"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "symdyn[certify]" in err
    assert symdyn_main(["verify", "--certify", "--only", "fig2-order"]) == 2
    assert "symdyn[certify]" in capsys.readouterr().err
    # control: the names of --certify are unknown without it (exit 2, not a crash)
    assert proofs_main(["--only", "fig2-order"]) == 2


def test_newcomer_reads_certified_or_checked_numerically_never_both(capsys, tmp_path):
    _certified()
    out = tmp_path / "r.json"
    assert proofs_main(["--certify", "--quick", "--only", "fig2-early", "published",
                        "--json", str(out)]) == 0
    text = capsys.readouterr().out
    rows = {line.split()[0]: line for line in text.splitlines()[1:] if line[:1] != " "}
    assert "certified" in rows["fig2-early"] and "numerically" not in rows["fig2-early"]
    assert "checked numerically" in rows["published"] and "certified" not in rows["published"]
    kinds = {r["name"]: r["kind"] for r in json.loads(out.read_text())["results"]}
    assert kinds == {"fig2-early": "certified", "published": "checked numerically"}


def test_the_report_verdicts_say_their_kind(monkeypatch, tmp_path, capsys):
    import sys

    from symdyn.cli import main as symdyn_main
    from symdyn.cli.commands import verdict_section
    cert = Result("fig2-x", "s", {}, "t", ["m"], kind="certified")
    cert.row("m", True, x=1)
    monkeypatch.setattr(proofs_check, "run", lambda **kw: [(published.check(), 0.1)])
    text = verdict_section(lambda m: None)
    assert "| **PASS** | checked numerically |" in text and "--certify" in text
    md = proofs_check.markdown([(cert, 0.1)])
    assert "### fig2-x: PASS (certified)" in md and "numerically" not in md
    monkeypatch.setitem(sys.modules, "flint", None)          # report --certify: exit 2
    assert symdyn_main(["report", "--certify", "--out", str(tmp_path)]) == 2
    assert "symdyn[certify]" in capsys.readouterr().err
