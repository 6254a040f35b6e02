"""Figure 2's certified verdict states its model: the t_switch used, every
scheme parameter, and the certified t_switch at which the caption's verdict
flips. Oracles: the float solver's crossing times on either side; controls:
the verdicts on the two sides of the flip differ, a range without a flip
gives none."""

from __future__ import annotations

from fractions import Fraction

import pytest

pytest.importorskip("flint")

import symdyn as sd  # noqa: E402
from symdyn.output.claims import reach_times  # noqa: E402
from symdyn.proofs_check import certified  # noqa: E402


@pytest.fixture(scope="module")
def fig2():
    return certified.fig2_order()


def test_the_verdict_names_t_switch_and_the_flip(fig2):
    assert (fig2.verdict, fig2.kind) == ("PASS", "certified"), fig2.why()
    text = fig2.key_figures
    assert "t_switch = 1" in text and "alpha = 1" in text
    assert "converge last' is certified false here" in text
    assert "flips at t_switch in [" in text
    lo, hi = (Fraction(x) for x in fig2.parameters["t_switch flip"])
    assert 1 < lo < hi and hi - lo <= certified.T_SWITCH_WIDTH
    assert fig2.parameters["t_switch"] == "1"


def test_the_verdicts_on_either_side_of_the_flip_differ(fig2):
    lo, hi = (Fraction(x) for x in fig2.parameters["t_switch flip"])
    assert certified.mix_before_peri(lo) is False and certified.mix_before_peri(hi) is True
    below = certified.fig2_order(t_switch=lo, flip=False)
    above = certified.fig2_order(t_switch=hi, flip=False)
    assert "certified false here" in below.key_figures
    assert "certified true here" in above.key_figures
    assert f"t_switch = {float(hi):.10g}" in above.key_figures
    # the float solver agrees on both sides (an independent path)
    for ts, mix_first in ((lo, False), (hi, True)):
        T = reach_times([sd.scheme("mix-ln", t_switch=ts), "peri-ln"], n=32, beta=1.0,
                        level=0.99)
        t_mix, t_peri = T.values()
        assert (t_mix < t_peri) is mix_first


def test_the_issue_example_t_switch_2_makes_the_caption_true():
    # with t_switch = 2 Mix-LN reaches 0.99 at 7.87, before Peri-LN at 10.65
    assert certified.mix_before_peri(2) is True
    assert certified.mix_before_peri(1) is False


def test_no_flip_is_claimed_where_the_ends_agree():
    assert certified.switch_flip(lo=2, hi=4) is None            # both sides true


def test_the_model_text_names_every_parameter():
    text = certified.model_text(["deepnorm", "ngpt", sd.scheme("mix-ln", t_switch=3)])
    assert "N = 12" in text and "alpha = 1" in text and "t_switch = 3" in text
    assert certified.model_text(["post-ln", "pre-ln"]) == "no parameters"
