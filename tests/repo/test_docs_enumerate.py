"""The README and the docs enumerate exactly what the code has: the notebooks
(``notebooks/*.ipynb``), the claims of ``proofs_check.CHECKS``, the built-in
schemes (the registry) and the figures (``docs/**/*.png``, each shown by some
page). Each list is read from the code at test time, so a notebook, claim,
scheme or figure added without its mention fails here; each check has a
control that feeds it a list with an invented or a missing name."""

import re
from pathlib import Path

import pytest

import symdyn as sd
from symdyn import proofs_check
from symdyn.model.registry import entry

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def notebooks() -> set[str]:
    return {p.stem for p in (REPO / "notebooks").glob("*.ipynb")}


def paragraph(text: str, start: str) -> str:
    """The paragraph of ``text`` that begins with ``start`` (up to a blank line)."""
    i = text.index(start)
    end = text.find("\n\n", i)
    return text[i:end if end >= 0 else None]


def ticked(text: str) -> set[str]:
    """The names in backticks of ``text``."""
    return set(re.findall(r"`([^`\s]+)`", text))


def readme_notebooks(readme: str) -> set[str]:
    """The notebook-like names (lower case, underscores) in backticks in the
    README's paragraph on ``notebooks/``."""
    return {w for w in ticked(paragraph(readme, "`notebooks/` ("))
            if re.fullmatch(r"[a-z][a-z0-9_]*", w) and w != "make"}


def docs_notebooks(page: str) -> set[str]:
    return set(re.findall(r"^notebooks/(\w+)\s*$", page, flags=re.M))


def readme_checks(readme: str) -> set[str]:
    """The claim names (lower-case words joined by hyphens) in backticks in
    the paragraph that introduces ``proofs_check/``."""
    return {w for w in ticked(paragraph(readme, "`proofs_check/` (installed"))
            if re.fullmatch(r"[a-z]+(?:-[a-z]+)*", w)}


def claims_sections(page: str) -> set[str]:
    return set(re.findall(r"^## \d+\. .* — `([a-z-]+)`\s*$", page, flags=re.M))


def listed_schemes(text: str, start: str) -> set[str]:
    """The registry names of the schemes a sentence lists in parentheses after
    ``start`` (their legend names: Post-LN, nGPT, ...)."""
    text = " ".join(text.split())
    i = text.index(start) + len(start)
    inner = text[text.index("(", i) + 1:text.index(")", i)]
    names = [w.strip() for w in inner.replace(" and ", ", ").split(",") if w.strip()]
    return {entry(w).name for w in names}


def figures() -> set[Path]:
    return {p for p in DOCS.rglob("*.png") if "_build" not in p.parts}


def shown_figures() -> set[Path]:
    """Every image a page shows (Markdown ``![..](x.png)`` or a MyST
    ``{image}``/``{figure}`` directive), resolved from its page."""
    out = set()
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts] + [REPO / "README.md"]
    for page in pages:
        text = _read(page)
        found = re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", text)
        found += re.findall(r"```\{(?:image|figure)\}\s+(\S+\.png)", text)
        out |= {(page.parent / f).resolve() for f in found}
    return out


# --------------------------------------------------------------------------


def test_readme_names_every_notebook():
    assert readme_notebooks(_read(REPO / "README.md")) == notebooks()


def test_docs_list_every_notebook():
    assert docs_notebooks(_read(DOCS / "notebooks.md")) == notebooks()


def test_readme_lists_every_claim():
    assert readme_checks(_read(REPO / "README.md")) == set(proofs_check.CHECKS)


def test_claims_page_has_a_section_per_claim():
    assert claims_sections(_read(DOCS / "claims.md")) == set(proofs_check.CHECKS)


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_opening_lists_every_scheme(page):
    assert listed_schemes(_read(REPO / page), "where every normalization scheme") \
        == set(sd.schemes())


def test_every_figure_is_shown_by_a_page():
    assert {p.relative_to(REPO).as_posix() for p in figures() - shown_figures()} == set()


def test_every_figure_a_page_shows_exists():
    missing = {p for p in shown_figures() if DOCS in p.parents or p.parent == REPO}
    assert {str(p) for p in missing if not p.exists()} == set()


# ------------------------------------------------------------------ controls


def test_control_an_invented_or_missing_notebook_is_seen():
    readme = _read(REPO / "README.md")
    first = sorted(readme_notebooks(readme))[0]
    assert readme_notebooks(readme.replace(f"`{first}`", "`no_such_notebook`")) \
        == readme_notebooks(readme) - {first} | {"no_such_notebook"}
    page = _read(DOCS / "notebooks.md") + "notebooks/no_such_notebook\n"
    assert "no_such_notebook" in docs_notebooks(page) - notebooks()


def test_control_a_missing_claim_is_seen():
    readme = _read(REPO / "README.md")
    assert "clustering" in readme_checks(readme)
    assert "clustering" not in readme_checks(readme.replace("`clustering`", "clustering"))
    page = _read(DOCS / "claims.md").replace("— `clustering`", "— clustering")
    assert "clustering" not in claims_sections(page)


def test_control_a_scheme_list_missing_one_is_seen():
    text = "every normalization scheme (Post-LN, Pre-LN, nGPT) is"
    assert listed_schemes(text, "every normalization scheme") == {"post-ln", "pre-ln", "ngpt"}
    with pytest.raises(ValueError, match="unknown scheme"):
        listed_schemes("every normalization scheme (Post-LN, Hyper-LN)", "every normalization")


def test_control_an_unlinked_figure_is_seen(tmp_path, monkeypatch):
    fake = DOCS / "no_page_shows_this.png"
    monkeypatch.setattr(Path, "rglob", lambda self, pattern, _orig=Path.rglob: (
        [*_orig(self, pattern), fake] if pattern == "*.png" else _orig(self, pattern)))
    assert fake in figures() - shown_figures()


# ------------------------------------------------------------------ constants


def _one_step_mean(h, kappa):
    """m(h) = E<N(theta + s xi), theta> on S^2, s = sqrt(2h/kappa), by quadrature
    (the inner Gaussian integral in closed form: sign(a) sqrt(pi) c erfcx(c))."""
    import numpy as np
    from scipy import integrate, special

    s = np.sqrt(2 * h / kappa)

    def g(x):
        a = 1 + s * x
        c = abs(a) / (s * np.sqrt(2))
        return np.sign(a) * np.sqrt(np.pi) * c * special.erfcx(c) * np.exp(-x * x / 2)
    parts = [integrate.quad(g, lo, hi, epsabs=1e-14, limit=200)[0]
             for lo, hi in ((-np.inf, -1 / s), (-1 / s, np.inf))]
    return sum(parts) / np.sqrt(2 * np.pi)


def _bias_limit_in_model_md() -> float:
    text = " ".join(_read(DOCS / "model.md").split())
    found = re.search(r"\\to -\\frac\{2T\}\{\\kappa\^2\}e\^\{-2T/\\kappa\} = (-0\.\d+)\$", text)
    assert found, "docs/model.md section 7 no longer states the bias limit"
    return float(found.group(1))


def test_the_noisy_rules_bias_limit_in_model_md():
    import numpy as np

    kappa, T = 2.0, 1.0
    stated = _bias_limit_in_model_md()
    closed = -2 * T / kappa**2 * np.exp(-2 * T / kappa)
    gap = {h: (_one_step_mean(h, kappa) ** round(T / h) - np.exp(-2 * T / kappa)) / h
           for h in (1 / 64, 1 / 128)}
    richardson = 2 * gap[1 / 128] - gap[1 / 64]          # the O(h) term of the gap removed
    assert abs(richardson - closed) < 5e-5                # the quadrature agrees with the form
    assert abs(stated - closed) < 5e-6                    # the page states the limit
    # control: the old constant, the gap at h = 1/64, is told apart from the limit
    assert abs(round(gap[1 / 64], 3) - closed) > 1e-3


# --------------------------------------------------- certified claims (--certify)


def certified_marks(page: str) -> dict[str, str]:
    """``{check: mark}`` of the claims page's table of certified claims."""
    return dict(re.findall(r"^\| `([a-z0-9-]+)` \| \*\*([a-z ]+)\*\* \|", page, flags=re.M))


def test_claims_page_marks_exactly_what_certify_certifies():
    from symdyn.proofs_check import certified
    from symdyn.proofs_check.__main__ import CERTIFIED_NAMES

    page = _read(DOCS / "claims.md")
    assert tuple(certified.CERTIFIED) == CERTIFIED_NAMES
    assert certified_marks(page) == {name: "certified" for name in certified.CERTIFIED}
    assert not set(certified.CERTIFIED) & set(proofs_check.CHECKS)   # never both kinds
    text = " ".join(page.split())
    for claim, _, (n0, n1), (b0, b1) in certified.REGIONS:        # the boxes stated
        assert f"$n \\in [{n0}, {n1}]$, $\\beta \\in [{b0}, {b1}]$" in text, claim


def test_control_a_wrong_mark_is_seen():
    page = _read(DOCS / "claims.md")
    wrong = page.replace("| `fig2-early` | **certified** |",
                         "| `fig2-early` | **checked numerically** |")
    assert certified_marks(wrong)["fig2-early"] == "checked numerically"
    assert "regions" not in certified_marks(page.replace("| `regions` |", "| regions |"))
