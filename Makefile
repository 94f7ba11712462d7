# Two commands a new user needs (README): `make demo` runs the main job, `make test` runs the tests.
# Both create the virtual environment .venv on first use (Python >= 3.10 with venv; PyPI reachable).
# The demo needs only the game side; the tests also install the model stack (extra `ml`, ~6 GB, torch from
# the local disk where pip is set up that way).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench install clean

$(BIN)/pip:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed-core: pyproject.toml | $(BIN)/pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@ $(VENV)/.installed-core

install: $(VENV)/.installed-dev

demo: $(VENV)/.installed-core
	$(BIN)/mau play --config configs/play/scripted.yaml --seed 1

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-core
	$(BIN)/mau bench env

clean:
	rm -rf $(VENV) .pytest_cache
