"""The tree is what the docs say it is, and data flows one way (tests/layout.py).

Layers (each subpackage's docstring names its own): base 0; model and ode 1;
reduced, particles and meanfield 2; studies and trained 3; output 4; cli on top. A module imports
only from a lower layer or its own subpackage.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import layout  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]


def test_no_arrow_goes_up_or_sideways_and_no_circle():
    edges = layout.graph()
    assert layout.wrong_way(edges) == []
    assert layout.floors(edges)[1] == []


def test_the_checker_sees_an_arrow_up_and_a_circle():
    # Negative control: an output module imported by a model module is caught,
    # and so is a circle between two modules.
    edges = {k: set(v) for k, v in layout.graph().items()}
    edges["symdyn.model.registry"].add("symdyn.output.plot")
    assert ("symdyn.model.registry", "symdyn.output.plot") in layout.wrong_way(edges)
    edges["symdyn.model.symbols"].add("symdyn.model.registry")
    assert layout.floors(edges)[1]


def test_every_module_says_its_layer():
    for name, f in layout.modules().items():
        doc = (f.read_text().split('"""')[1] if f.read_text().lstrip().startswith(('"""', 'r"""'))
               else "")
        assert doc.strip(), f"{name} has no docstring"
        rank, sub = layout.layer(name)
        if sub and f.name == "__init__.py":
            assert doc.startswith(f"Layer {rank}, {sub}"), name


def _named_in_docs():
    names = set()
    for f in DOCS:
        text = f.read_text()
        names |= {m.replace("/", ".")[:-3] for m in re.findall(r"\bsymdyn/[\w/]+\.py\b", text)}
        names |= set(re.findall(r"\bsymdyn(?:\.[a-z_][\w]*)+", text))
    return sorted(names)


@pytest.mark.parametrize("name", _named_in_docs())
def test_every_module_the_docs_name_exists(name):
    # A dotted name may end in an attribute (symdyn.reduced.solver.solve): the
    # longest importable prefix must hold the rest.
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)   # no old paths in docs
                obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            assert hasattr(obj, attr), f"{name}: {'.'.join(parts[:k])} has no {attr}"
            obj = getattr(obj, attr)
        return
    pytest.fail(f"{name} is named in the docs but does not exist")


def _readme_tree(text):
    """{subpackage: the module names its line of the README's tree lists}."""
    block = text[text.index("    symdyn/ "):text.index("    docs/ ")]
    rows, sub = {}, None
    for line in block.splitlines()[2:]:
        head = re.match(r"\s{6}(\w+)/\s+\d\s+(.*)", line)
        if head:
            sub, line = head.group(1), head.group(2)
        rows[sub] = rows.get(sub, "") + " " + line.strip()
    out = {}
    for sub, text in rows.items():
        while "(" in text:            # descriptions, some of them nested
            text = re.sub(r"\([^()]*\)", "", text)
        out[sub] = {item.split(";")[0].split()[-1].rstrip("/")
                    for item in text.split(",") if item.strip()}
    return out


def test_the_readme_tree_lists_every_module_and_only_modules():
    listed = _readme_tree((REPO / "README.md").read_text())
    present = {}
    for name in layout.modules():
        parts = name.split(".")
        if len(parts) >= 3:
            present.setdefault(parts[1], set()).add(parts[2])
    present["cli"].discard("__main__")
    assert listed == present


def test_the_tree_check_sees_a_missing_and_an_invented_module():
    # negative control of the test above
    text = (REPO / "README.md").read_text().replace("log_clock", "log_clocks")
    listed = _readme_tree(text)
    assert "log_clocks" in listed["model"] and "log_clock" not in listed["model"]


def test_a_name_that_does_not_exist_is_caught():
    # Negative control for the test above.
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("symdyn.reduced.schemes")


@pytest.mark.parametrize("old, new", [("registry", "symdyn.model.registry"),
                                      ("solver", "symdyn.reduced.solver"),
                                      ("integrate", "symdyn.ode.integrate"),
                                      ("sweeps", "symdyn.studies.sweeps")])
def test_old_import_paths_work_with_a_deprecation_warning(old, new):
    for name in [f"symdyn.{old}"]:
        sys.modules.pop(name, None)
    import symdyn
    symdyn.__dict__.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"symdyn.{old} moved to {new}; the old "
                                                 f"path is removed in symdyn 0.3.0"):
        module = importlib.import_module(f"symdyn.{old}")
    moved = importlib.import_module(new)
    assert all(getattr(module, k) is v for k, v in vars(moved).items() if not k.startswith("__"))
    symdyn.__dict__.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"symdyn.{old} moved"):
        assert getattr(symdyn, old) is module


@pytest.mark.parametrize("old, new, name, home", [
    ("registry", "model.registry", "LayerRule", "symdyn.model.scheme"),
    ("registry", "model.registry", "piecewise_breakpoints", "symdyn.model.piecewise"),
    ("expressions", "model.expressions", "lambdify", "symdyn.model.guards"),
    ("asymptotics", "reduced.asymptotics", "leading_order", "symdyn.reduced.initial"),
    ("sweeps", "studies.sweeps", "CacheWarning", "symdyn.studies.storage")])
def test_names_symdyn_0_1_held_in_an_old_module_are_found_in_their_home(old, new, name, home):
    """symdyn 0.1.0's ``from symdyn.registry import LayerRule`` (the name now
    lives in model.scheme, not in model.registry) still works until 0.3.0."""
    sys.modules.pop(f"symdyn.{old}", None)
    import symdyn
    symdyn.__dict__.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"symdyn.{old} moved"):
        module = importlib.import_module(f"symdyn.{old}")
    assert getattr(module, name) is getattr(importlib.import_module(home), name)
    assert not hasattr(importlib.import_module(f"symdyn.{new}"), name)    # not re-exported
    # control: a name no module of its homes holds is an AttributeError
    with pytest.raises(AttributeError, match=f"symdyn.{old}' has no attribute 'no_such_name'"):
        _ = module.no_such_name


def test_the_public_submodules_and_the_old_particles_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        import symdyn as sd
        from symdyn.particles import Simulation, simulate
        assert simulate is sd.simulate and Simulation is sd.Simulation
        assert sd.init.sphere and sd.weights and sd.plot.style and sd.symbols.t


def test_the_version_has_one_source():
    import symdyn
    from symdyn.base import version
    assert symdyn.__version__ == version.__version__
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{version.__version__}"' in pyproject


def test_every_subpackage_is_in_the_wheel():
    # pyproject lists the packages (proofs_check is mapped in): a folder left
    # out installs in editable mode and is missing from a wheel
    tomllib = pytest.importorskip("tomllib")        # Python >= 3.11

    listed = set(tomllib.loads((layout.ROOT.parent / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    folders = {".".join(f.parent.relative_to(layout.ROOT.parent).parts)
               for f in layout.ROOT.rglob("__init__.py")}
    assert folders - listed == set()
    assert "symdyn.proofs_check" in listed
    assert folders - (listed - {"symdyn.trained"}) == {"symdyn.trained"}   # control


#: Folders of tests/ that are not a subpackage of symdyn: the proofs_check
#: package, the suites named after a reader's story (hostile input, a
#: newcomer's walk, fuzzing), and the checks of the repository itself.
STORY_FOLDERS = {"proofs_check", "stories", "repo"}
TESTS = Path(__file__).resolve().parents[1]


def _test_folders(tests=TESTS):
    """{folder: its test modules} under tests/, and the test modules left at its top."""
    folders = {d.name: sorted(f.name for f in d.glob("test_*.py"))
               for d in tests.iterdir() if d.is_dir() and list(d.glob("test_*.py"))}
    return folders, sorted(f.name for f in tests.glob("test_*.py"))


def test_the_tests_mirror_the_package():
    subpackages = {name.split(".")[1] for name in layout.modules() if name.count(".") == 1
                   and (layout.ROOT / name.split(".")[1]).is_dir()}
    folders, loose = _test_folders()
    assert loose == []                                  # every test module has a folder
    assert set(folders) - STORY_FOLDERS == subpackages  # one folder per subpackage
    assert all(folders.values())


def test_control_a_loose_test_module_and_a_folder_of_no_subpackage_are_seen(tmp_path):
    (tmp_path / "test_loose.py").write_text("")
    (tmp_path / "widgets").mkdir()
    (tmp_path / "widgets" / "test_w.py").write_text("")
    folders, loose = _test_folders(tmp_path)
    assert loose == ["test_loose.py"] and set(folders) == {"widgets"}


#: Private names that symdyn overrides for another library, which calls them:
#: argparse's HelpFormatter hook (``cli.parser.Formatter``).
HOOKS = {"_get_help_string"}


def private_names(path: Path) -> list[str]:
    """``module._name`` and ``from module import _name`` of a symdyn module in
    ``path`` (dunder and IPython's ``_repr_*_`` protocol names excepted)."""
    tree = ast.parse(path.read_text())
    modules, found = set(), []

    def private(name):
        return (name.startswith("_") and not name.startswith("__") and name not in HOOKS
                and not (name.startswith("_repr_") and name.endswith("_")))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ("symdyn", "proofs_check"):
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] in ("symdyn", "proofs_check"):
            for a in node.names:
                if private(a.name):
                    found.append(f"{node.module}.{a.name}")
                elif importlib.util.find_spec(f"{node.module}.{a.name}") if \
                        _is_package(node.module) else False:
                    modules.add(a.asname or a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            base = ast.unparse(node.value)
            if base in modules or any(base.startswith(m + ".") for m in modules):
                found.append(f"{base}.{node.attr}")
    return found


def _is_package(name):
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.submodule_search_locations is not None


def test_no_test_reaches_for_a_private_name_outside_the_integrators_own():
    offenders = {str(f.relative_to(TESTS)): private_names(f)
                 for f in sorted(TESTS.rglob("test_*.py")) if f.parent.name != "ode"}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_control_a_private_name_is_seen(tmp_path):
    f = tmp_path / "test_x.py"
    f.write_text("import symdyn as sd\nfrom symdyn.ode import outputs\n"
                 "from symdyn.model.scheme import _law_of_t\n"
                 "outputs._edge\nsd.model.registry._built\nsd._repr_html_\nsd.__version__\n")
    assert private_names(f) == ["symdyn.model.scheme._law_of_t", "outputs._edge",
                                "sd.model.registry._built"]


def long_tuples(path: Path) -> list[str]:
    """``function:line`` of every ``return a, b, c, d, ...`` (a tuple literal of
    four or more items) in ``path``: such results are named records instead."""
    found = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [f"{fn.name}:{node.lineno}" for node in ast.walk(fn)
                      if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
                      and len(node.value.elts) >= 4]
    return found


def test_no_function_returns_a_tuple_of_four_or_more():
    offenders = {str(f.relative_to(REPO)): long_tuples(f)
                 for f in sorted((REPO / "symdyn").rglob("*.py"))}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_control_a_long_tuple_return_is_seen(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def a():\n    return 1, 2, 3\n\n"
                 "def b(x):\n    if x:\n        return 1, 2, 3, 4\n    return (x,) * 4\n")
    assert long_tuples(f) == ["b:6"]
