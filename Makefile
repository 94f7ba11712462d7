# Two commands a new user needs (README): `make demo` runs the main job, `make test` runs the tests.
# Both create the virtual environment .venv on first use (Python >= 3.10 with venv; PyPI reachable).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/mau play --config configs/play/scripted.yaml --seed 1

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/mau bench env

clean:
	rm -rf $(VENV) .pytest_cache
