"""Rich display, the paper's notation in LaTeX, sd.table and Reduction.at."""

import dataclasses

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.model.display import latex, sparkline
from symdyn.model.symbols import beta, gamma, n


def balanced(text):
    depth = 0
    for ch in text.replace(r"\{", "").replace(r"\}", ""):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def test_symbols_print_as_the_paper_writes_them():
    text = latex(sd.scheme("peri-ln").speed / sd.symbols.a)
    assert r"\lvert A_k\rvert" in text and "a_k" in text and "A_{norm}" not in text
    assert "A_{norm}" in sp.latex(sd.scheme("peri-ln").speed)     # what sympy alone prints


@pytest.mark.parametrize("make", [
    lambda: sd.derive("peri-ln"), lambda: sd.reduce("mix-ln"), lambda: sd.terminal("pre-ln"),
    lambda: sd.leading_order(sd.initial_velocity("ngpt")),
    lambda: sd.scheme("ngpt", alpha="a0 + a1*t", params={"a0": 1, "a1": 0.5}),
    lambda: sd.custom_scheme("my_scheme", speed="r*A_norm**2"),
])
def test_results_render_as_latex(make):
    text = make()._repr_latex_()
    assert text.startswith("$") and text.endswith("$") and balanced(text)
    assert "A_{norm}" not in text and "Piecewise" not in text


def test_derivation_latex_holds_its_formulas():
    d = sd.derive("post-ln")
    text = d._repr_latex_()
    assert latex(d.reduction.gamma_dot) in text and r"\text{exponential}" in text


def test_trajectory_and_simulation_show_a_summary_with_a_sparkline():
    tr = sd.solve("post-ln", n=[8, 16], beta=1.0, gamma0=0.0, t=[0.5, 1, 2, 4, 8])
    html = tr._repr_html_()
    assert "(2,)" in html and "5 times in [0.5, 8]" in html
    points = html.split('points="')[1].split('"')[0].split()
    assert len(points) == 5                                   # one per output time
    ys = [float(p.split(",")[1]) for p in points]
    assert ys == sorted(ys, reverse=True)                     # gamma rises: y falls
    sim = sd.simulate("post-ln", sd.init.sphere(8, 3, batch=2, seed=0), beta=1.0,
                      t=[0.0, 1.0, 2.0])
    assert "Simulation" in sim._repr_html_() and "<svg" in sim._repr_html_()


def test_reduction_at_substitutes_numbers_safely():
    red = sd.reduce("post-ln")
    at = red.at(n=8, beta=1)
    assert sp.simplify(at.gamma_dot - red.gamma_dot.subs({n: 8, beta: 1})) == 0
    assert at.gamma_dot.free_symbols == {gamma}
    # the pitfall at.() avoids: a bare Symbol("n") is another symbol
    assert red.gamma_dot.subs({sp.Symbol("n"): 8}) == red.gamma_dot
    assert red.at(n="2*beta").gamma_dot.has(beta)            # text goes through the parser
    with pytest.raises(ValueError, match="not a symbol"):
        red.at(k=1)
    with pytest.raises(ValueError):
        red.at(n="__import__('os').getcwd()")


def test_table_of_schemes_against_the_derivations():
    df = sd.table()
    assert list(df.index) == sd.schemes()
    for name in sd.schemes():
        term = sd.terminal(name)
        assert df.loc[name, "terminal law"] == term.law
        assert df.loc[name, "1 - gamma"] == f"${latex(term.epsilon)}$"
    assert df.loc["peri-ln", "order in n"] == r"$\Theta(\frac{1}{\sqrt{n}})$"
    assert df.loc["post-ln", "order in n"] != df.loc["peri-ln", "order in n"]   # control
    tex = sd.table(["post-ln", "pre-ln"], format="latex")
    lines = tex.splitlines()
    assert lines[1] == r"\begin{tabular}{lllllll}"          # the paper's six columns
    assert [ln for ln in lines if ln.endswith(r"\\")].__len__() == 3        # head + 2 rows
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert balanced(tex)
    head, first = lines[3], lines[5]
    assert "~" not in head and r"$1-\gamma$" in head and r"$\dot\gamma(0)$" in head
    assert first.startswith("Post-LN & $1$ & $0$ &") and "reduced" not in head
    with pytest.raises(ValueError, match="format"):
        sd.table(format="html")


def test_table_columns_are_chosen_by_name_and_one_scheme_is_a_list_of_one():
    df = sd.table("ln-scaling", columns=["temperature", "terminal law"])
    assert list(df.columns) == ["temperature", "terminal law"] and list(df.index) == ["ln-scaling"]
    assert df.loc["ln-scaling", "temperature"] == f"${latex(sd.scheme('ln-scaling').temperature)}$"
    assert df.loc["ln-scaling", "terminal law"] == sd.terminal("ln-scaling").law
    assert len(sd.table().columns) == len(sd.reduced.summary.TABLE_COLUMNS)   # all by default
    with pytest.raises(ValueError, match="columns: unknown column 'gamma'.*terminal law"):
        sd.table(columns=["gamma"])


def test_sparkline_of_a_flat_or_short_curve():
    assert sparkline([0.0], [1.0]) == ""
    assert "polyline" in sparkline(np.arange(3.0), np.ones(3))


def _results():
    X = sd.init.sphere(8, 4, batch=3, seed=0)
    return {
        "trajectory": sd.solve("post-ln", n=[8, 16], beta=1, gamma0=0, t=np.linspace(0, 5, 51)),
        "simulation": sd.simulate("post-ln", X, beta=1, t=np.linspace(0, 4, 9)),
        "derivation": sd.derive("pre-ln"),
        "reduction": sd.reduce("post-ln"),
        "terminal": sd.terminal("sqrt-scaling"),
        "design": sd.design("constant", target=0.9, depth=4.0, n=32, beta=1.0, gamma0=0.0,
                            check=False),
    }


def test_print_of_every_result_is_a_short_table_of_what_it_found():
    res = _results()
    for name, r in res.items():
        text = str(r)
        assert len(text) < 1500 and "array(" not in text and "Scheme(" not in text, name
        assert len(text.splitlines()) >= 4, name
    tr, sim = res["trajectory"], res["simulation"]
    assert f"{tr.gamma[0, -1]:.10g}" in str(tr) and f"{sim.gamma[0, -1]:.10g}" in str(sim)
    assert "51 times in [0, 5]" in str(tr) and "0.999047 .. 0.999443" in str(tr)
    assert "terminal law                        polynomial" in str(res["derivation"])
    assert "C*exp(-4*sqrt(t))" in str(res["terminal"])
    assert "1 - gamma**2" in str(res["reduction"].at(n=2, beta=0))
    assert f"{res['design'].params['a0']:.10g}" in str(res["design"])


def test_control_the_dataclass_repr_print_showed_before_fails_that_test():
    res = _results()
    for r in (res["trajectory"], res["simulation"]):     # their own repr: one short line
        fields = ", ".join(f"{f.name}={getattr(r, f.name)!r}" for f in dataclasses.fields(r))
        assert "array(" in fields and "array(" not in repr(r)
        assert len(repr(r)) < 120 and "\n" not in repr(r)
    assert "Scheme(" in repr(res["derivation"]) and "Scheme(" in repr(res["reduction"])
