# The two commands: `make report` (the main job) and `make test` (the suite).
# Each creates .venv with python3 -m venv if missing and installs symdyn into it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: report test lint verify bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

report: $(STAMP)
	$(BIN)/symdyn report --out report/

lint: $(STAMP)
	$(BIN)/ruff check symdyn proofs_check tests benchmarks

test: lint
	$(BIN)/python -m pytest

verify: $(STAMP)
	$(BIN)/python -m proofs_check

bench: $(STAMP)
	$(BIN)/python benchmarks/derive.py
	$(BIN)/python benchmarks/solve.py
	$(BIN)/python benchmarks/simulate.py
	$(BIN)/python benchmarks/sweep.py

clean:
	rm -rf $(VENV) report .pytest_cache .hypothesis
