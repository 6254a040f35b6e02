"""Region maps (symdyn.certify.region): budgets, the counterexample search,
witnesses with their certified times, the strip where the order may change,
progress; order() under a budget. Oracles: sd.solve's float crossing times
and crossing_time's enclosures; controls: a true claim is not disproven, a
sign-flipped radial law is found false, an unbounded run completes.

Work is bounded by max_boxes / max_depth and CPU-time budgets, never by the clock."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("flint")

import symdyn as sd  # noqa: E402
import symdyn.certify as C  # noqa: E402
from symdyn.base.checks import BadInput  # noqa: E402
from symdyn.certify import compare, dominance  # noqa: E402
from symdyn.reduced.solve_crossing import crossing_time as float_crossing  # noqa: E402


def _float(scheme, n, beta, level=0.99, **params):
    return float(float_crossing(scheme, n=n, beta=beta, level=level, rtol=1e-11, atol=1e-12,
                                params=params or None))


def _area(reg, boxes):
    """Share of the area in (log n, beta), computed here (not by the Region)."""
    total = math.log(reg.n[1] / reg.n[0]) * (reg.beta[1] - reg.beta[0])
    return sum(math.log(n1 / n0) * (b1 - b0) for (n0, n1), (b0, b1) in boxes) / total


def _tiles(reg):
    """The map's boxes: proven, disproven, undecided (each box once)."""
    return reg.proven_boxes + [b for b, _ in reg.disproven] + reg.undecided


def test_the_issue_case_is_disproven_within_a_3_second_budget():
    # "pre-ln before peri-ln" is false on this box (time ratio e^0.142)
    reg = C.region("pre-ln before peri-ln", level="0.99", n=(30, 32), beta=(0.5, 0.6),
                   seconds=3)
    assert reg.disproven and not reg.proven and "DISPROVEN" in str(reg)
    box, w = reg.disproven[0]
    assert box[0][0] <= w.n <= box[0][1] and box[1][0] <= w.beta <= box[1][1]
    assert w.T_B.hi < w.T_A.lo                                  # the certificate itself
    ta, tb = _float("pre-ln", w.n, w.beta), _float("peri-ln", w.n, w.beta)
    for x, enc in ((ta, w.T_A), (tb, w.T_B)):                   # the floats (rtol 1e-11) inside
        assert abs(x - enc.mid) <= enc.rad + 1e-9 * x
    assert 0.12 < math.log(ta / tb) < 0.16                      # e^0.142 at the box's centre
    exact = C.crossing_time("pre-ln", "0.99", n=w.n, beta=w.beta)
    assert exact.lo <= w.T_A.hi and w.T_A.lo <= exact.hi        # another certified path
    # the tiles cover the box once
    assert math.isclose(sum(_area(reg, [b]) for b in _tiles(reg)), 1.0, rel_tol=1e-12)


def test_control_the_true_claim_on_that_box_has_no_witness():
    reg = C.region("peri-ln before pre-ln", level="0.99", n=(30, 32), beta=(0.5, 0.6),
                   seconds=3)
    assert not reg.disproven and not reg.reversed_boxes


def test_a_sign_flipped_radial_law_is_found_false_and_the_right_one_proven():
    shrink = sd.custom_scheme("shrink", speed="r", radial="-c*a", params={"c": 0.25})
    grow = sd.custom_scheme("grow", speed="r", radial="c*a", params={"c": 0.25})
    box = {"level": "0.99", "n": (8, 9), "beta": (1, 1.25)}
    false = C.region(("post-ln", shrink), **box)
    assert false.disproven and false.reversed_boxes and not false.proven
    (_, w), = false.disproven
    assert _float(shrink, w.n, w.beta, c=0.25) < _float("post-ln", w.n, w.beta)   # floats agree
    assert C.region(("post-ln", grow), **box).proven                  # control: r grows
    assert C.region((shrink, "post-ln"), **box).proven


def test_a_map_across_the_boundary_locates_it_in_a_strip():
    # level 0.5, beta = 2: Peri-LN overtakes Post-LN near n = 8 (floats below)
    assert _float("post-ln", 2, 2.0, 0.5) < _float("peri-ln", 2, 2.0, 0.5)
    assert _float("post-ln", 64, 2.0, 0.5) > _float("peri-ln", 64, 2.0, 0.5)
    reg = C.region("post-ln before peri-ln", level="0.5", n=(2, 64), beta=(1.75, 2.25),
                   max_depth=4, max_boxes=40)
    assert reg.proven_boxes and reg.reversed_boxes and reg.complete
    for (nb, bb) in reg.proven_boxes:                            # floats at each centre
        n, b = math.sqrt(nb[0] * nb[1]), sum(bb) / 2
        assert _float("post-ln", n, b, 0.5) < _float("peri-ln", n, b, 0.5)
    for _, w in reg.disproven:
        assert w.T_B.hi < w.T_A.lo
        assert _float("peri-ln", w.n, w.beta, 0.5) < _float("post-ln", w.n, w.beta, 0.5)
    ratio, width = reg.strip_width
    for (nb, bb) in reg.strip:
        assert nb[1] / nb[0] <= ratio * (1 + 1e-12) and bb[1] - bb[0] <= width
    assert 0 < reg.strip_fraction < 1 and "strip" in str(reg)         # located: not everywhere
    assert math.isclose(sum(_area(reg, [b]) for b in _tiles(reg)), 1.0, rel_tol=1e-12)


def test_a_budget_returns_the_map_so_far_and_says_so():
    seen = []
    reg = C.region("post-ln before peri-ln", level="0.99", n=(2, 64), beta=(0, 4),
                   seconds=0.5, progress=lambda done, total: seen.append((done, total)))
    assert not reg.complete and "budget" in reg.note and "budget" in str(reg)
    assert reg.undecided and math.isclose(sum(_area(reg, [b]) for b in _tiles(reg)), 1.0,
                                          rel_tol=1e-12)
    assert all(t == 1000 for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    # control: no budget on a box decided at once completes, and the bar reaches the end
    seen.clear()
    full = C.region("post-ln before pre-ln", level="0.9", n=(8, 9), beta=(1, 1.25),
                    progress=lambda done, total: seen.append(done))
    assert full.complete and not full.note and full.proven and seen[-1] == 1000


def test_the_budget_counts_work_not_the_clock(monkeypatch):
    # a fake CPU clock advancing 0.5 s a reading: a budget of 4 s stops the
    # splitting after 3/4 of it, some 6 readings, whatever the machine's speed
    ticks = [0.0]

    def fake():
        ticks[0] += 0.5
        return ticks[0]
    monkeypatch.setattr(compare, "CLOCK", fake)
    reg = C.region("post-ln before peri-ln", level="0.99", n=(2, 64), beta=(0, 4), seconds=4)
    assert not reg.complete and 2 <= reg.boxes <= 7 and "budget" in reg.note


def test_order_under_a_budget_returns_what_was_ranked():
    schemes = ["post-ln", "ngpt", "peri-ln"]
    seen = []
    full = C.order(schemes, "0.99", n=8, beta=1, progress=lambda d, t: seen.append((d, t)))
    assert full.complete and full.proven and str(full) == "ngpt < post-ln < peri-ln"
    assert seen[-1] == (5, 5)
    part = C.order(schemes, "0.99", n=8, beta=1, seconds=1e-9)
    assert not part.complete and not part.proven and "budget" in part.note
    assert part.unranked and set(part.names) | set(part.unranked) == set(schemes)
    assert "not ranked" in str(part)


@pytest.mark.parametrize("kw, word", [({"seconds": -1}, "seconds"), ({"seconds": "3"}, "seconds"),
                                      ({"max_depth": 1.5}, "max_depth"),
                                      ({"max_boxes": 0}, "max_boxes"), ({"n": (2, math.inf)}, "n")])
def test_region_bad_input_names_the_argument(kw, word):
    with pytest.raises(BadInput, match=word):
        C.region("post-ln before pre-ln", **{"n": (8, 9), "beta": (1, 2), **kw})


def test_the_certificate_is_a_record_not_a_long_tuple():
    cert = dominance.certificate(sd.scheme("post-ln"), sd.scheme("pre-ln"))
    assert isinstance(cert, dominance.Certificate) and cert.zero is True
    with pytest.raises(AttributeError):
        cert.zero = False


def test_the_trapezoid_and_short_pieces_tighten_a_point():
    # oracle: the float difference; control: first-order pieces alone are wider
    true = _float("peri-ln", 64, 4.0) - _float("post-ln", 64, 4.0)
    d = dominance.difference("post-ln", "peri-ln", "0.99", n=64, beta=4)
    assert d.lo < true < d.hi and float(d.hi - d.lo) < 0.01 * true
    crude = dominance.difference("post-ln", "peri-ln", "0.99", n=64, beta=4, trapezoid=False)
    assert crude.lo < true < crude.hi and float(crude.hi - crude.lo) > 5 * float(d.hi - d.lo)


def test_the_mean_value_form_decides_a_box_the_direct_form_cannot():
    box = {"n": (62.4, 65.6), "beta": (0, 0.05)}        # level 0.9: Peri-LN first here
    direct = dominance.difference("post-ln", "peri-ln", "0.9", centred=False, **box)
    centred = dominance.difference("post-ln", "peri-ln", "0.9", **box)
    assert direct.lo < 0 < direct.hi                       # control: undecided without it
    assert centred.hi < 0 and direct.lo <= centred.lo and centred.hi <= direct.hi
    for n in (62.4, 64, 65.6):
        assert _float("peri-ln", n, 0.0, 0.9) < _float("post-ln", n, 0.0, 0.9)


def test_the_map_is_drawn_inside_its_figure(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    reg = C.region("post-ln before peri-ln", level="0.5", n=(2, 64), beta=(1.75, 2.25),
                   max_depth=3, max_boxes=20)
    ax = reg.plot()
    fig = ax.figure
    fig.savefig(tmp_path / "map.png", dpi=100)
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    shown = [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1] + \
        [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
    assert len(shown) >= 4
    for artist in [ax.title, ax.xaxis.label, ax.yaxis.label, ax.get_legend(), *shown]:
        if artist is None or not artist.get_visible() or not getattr(artist, "get_text",
                                                                      lambda: "x")():
            continue
        box = artist.get_window_extent(renderer)
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1, artist
        assert frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1, artist
    plt.close(fig)
