# lit_rl: `make test` sets everything up and runs the tests; `make train` runs the main job.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# On a machine without an NVIDIA GPU, install torch's CPU build first (this machine
# kind has its wheel on disk); pyproject keeps `torch>=2.4` so GPU machines get CUDA.
TORCH_CPU ?= torch==2.13.0
ARGS ?=

.PHONY: install test test-fast train smoke lint clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	if ! command -v nvidia-smi >/dev/null 2>&1; then $(BIN)/pip install -q "$(TORCH_CPU)"; fi
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# Tests run in parallel processes (pytest-xdist), one torch thread each: most tests are launcher
# subprocesses and small networks, which gain more from two processes than from two threads.
JOBS ?= auto
PYTEST := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/pytest -q -n $(JOBS) --dist loadgroup

test: install
	$(PYTEST)

test-fast: install
	$(PYTEST) -m "not slow"

train: install
	$(BIN)/python -m lit_rl.train $(ARGS)

smoke: install
	$(BIN)/python -m lit_rl.train trainer=smoke $(ARGS)

lint: install
	$(BIN)/ruff check lit_rl tests

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
