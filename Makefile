# Two commands for a newcomer: `make demo` and `make test`. Everything they need is installed here.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_PIN := torch==2.13.0
DEMO_PROBLEM ?= examples/rmsnorm/problem.py
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test install lint typecheck pytest editor-client-test system-deps clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# The pinned torch first: a local CPU build here; an unpinned torch would pull a CUDA build.
	$(BIN)/pip install -q $(TORCH_PIN)
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(STAMP)

# History goes to .kernelevolve/history.db; the best kernel, its dispatcher and its regression
# test to .kernelevolve/demo/ (the bundled examples stay untouched).
demo: $(STAMP)
	$(BIN)/kernelevolve evolve $(DEMO_PROBLEM) --max-steps 8 --out .kernelevolve/demo/$(notdir $(patsubst %/,%,$(dir $(DEMO_PROBLEM))))_evolved.py
	@echo "See the search: $(BIN)/kernelevolve history, or $(BIN)/kernelevolve report RUN"

system-deps:
	@command -v nvim >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check search knowledge server tests

# mypy cannot follow setuptools' package-dir mapping, so it checks a tree of links that mirrors
# the installed layout (kernelevolve/{search,knowledge,server}).
typecheck: $(STAMP)
	rm -rf build/typecheck && mkdir -p build/typecheck/kernelevolve
	for d in search knowledge server; do ln -s ../../../$$d build/typecheck/kernelevolve/$$d; done
	# A regular (not namespace) top package, or mypy takes knowledge/hardware/ (TOML files) for
	# the module knowledge/hardware.py.
	touch build/typecheck/kernelevolve/__init__.py
	cd build/typecheck && ../../$(BIN)/mypy --config-file ../../pyproject.toml -p kernelevolve

pytest: $(STAMP) system-deps
	$(BIN)/pytest -q -ra

editor-client-test:
	@if [ -f editor-client/package.json ]; then $(MAKE) -C editor-client test; fi

test: lint typecheck pytest editor-client-test

clean:
	rm -rf $(VENV) build .kernelevolve .mypy_cache .ruff_cache .pytest_cache
