# lit_rl: `make test` sets everything up and runs the tests; `make train` runs the main job.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# On a machine without an NVIDIA GPU, install torch's CPU build first (this machine
# kind has its wheel on disk); pyproject keeps `torch>=2.4` so GPU machines get CUDA.
TORCH_CPU ?= torch==2.13.0
ARGS ?=
# e.g. make bench BENCH_ARGS="--compare bench/before.json"
BENCH_ARGS ?=
# e.g. make parity PARITY_PRESETS=hopper PARITY_ARGS="--seeds 8"
PARITY_ARGS ?=
# e.g. make reproduce REPRODUCE_ARGS="--smoke" or REPRODUCE_ARGS="--jobs 4"
REPRODUCE_ARGS ?=
# e.g. make sb3-suite SB3_SUITE_ARGS="-k her --rebaseline"
SB3_SUITE_ARGS ?=
# The editable install's import hook is invisible to type checkers: a path entry for this checkout (a .pth file, as
# setuptools' deprecated compat mode wrote) lets mypy, pyright and IDEs follow lit_rl's types in user scripts.
SITE_PATH_ENTRY = $(BIN)/python -c "import pathlib, sysconfig; \
	pathlib.Path(sysconfig.get_paths()['purelib'], 'lit_rl_checkout.pth').write_text(str(pathlib.Path.cwd()) + '\n')"

.PHONY: install doctor test test-fast test-all train smoke chaos lint docs docs-serve bench bench-quick parity lockstep clean sb3-suite reproduce

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	if ! command -v nvidia-smi >/dev/null 2>&1; then $(BIN)/pip install -q "$(TORCH_CPU)"; fi
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[dev,reference,postgres,docs,envs]'  # no build-backend notices
	$(SITE_PATH_ENTRY)
	touch $@

# What this machine offers lit_rl (GPU, bf16, MuJoCo rendering, env families, SLURM, PostgreSQL) and the fix for
# what is missing: a few seconds.
doctor: install
	$(BIN)/python -m lit_rl.doctor

# Tests run in parallel processes (pytest-xdist), one torch thread each (the 25 slowest are listed): most tests are launcher
# subprocesses and small networks, which gain more from two processes than from two threads. A crashed worker is
# replaced at most 4 times and its test is not run again (tests/crashes.py): the run ends failed, naming it. Each test
# has 10 minutes (pyproject's `timeout`; longer ones say so).
JOBS ?= auto
PYTEST := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/pytest -q -n $(JOBS) --dist loadgroup --max-worker-restart=4 --durations=25

# CI's suite: everything but the long runs, and a representative few of those (marked `ci`); about 15 min on 2 cores.
test: install
	$(PYTEST) -m "not slow or ci"

# Without any long run.
test-fast: install
	$(PYTEST) -m "not slow"

# Every test, the long runs included (every learning seed, both SLURM requeues, all storage kinds): about 30 min.
test-all: install
	$(PYTEST)

train: install
	$(BIN)/python -m lit_rl.train $(ARGS)

smoke: install
	$(BIN)/python -m lit_rl.train trainer=smoke $(ARGS)

# Injected faults on scripts/slurm.sh's cluster (needs root). scripts/chaos.py: a 100-job sweep, 200 faults, 10 jobs
# compared bitwise with their uncut runs (CHAOS_ARGS="--lrs 5 --seeds 1 --faults 12": 10 jobs), about 20 min.
# scripts/chaos_tune.py: one Optuna study on 8 workers, on PostgreSQL and on a journal file, about 15 min.
CHAOS_ARGS ?=
CHAOS_TUNE_ARGS ?=
chaos: install
	$(BIN)/python scripts/chaos.py $(CHAOS_ARGS)
	$(BIN)/python scripts/chaos_tune.py $(CHAOS_TUNE_ARGS)

# Training speed (scripts/bench.py): CrossQ/SAC/TD3 on HalfCheetah-v4 vs Stable-Baselines3;
# eager, compiled, bf16 and SBX rows; table on stdout, JSON in bench/latest.json. About 50 minutes on 2 cores.
# Then scripts/bench_atari.py: DQN on Breakout with rl-baselines3-zoo's values against SB3, fp32 and bf16, with
# peak memory (JSON in bench/atari.json); about 10 minutes.
# Then scripts/bench_packed.py: packed SAC/TD3 gradient steps (1-16 members, eager and compiled) against as many
# separate processes on the same cores (JSON in bench/packed.json); about 15 minutes.
BENCH_ATARI_ARGS ?=
BENCH_PACKED_ARGS ?=
bench: $(VENV)/.bench-installed
	$(BIN)/python scripts/bench.py $(BENCH_ARGS)
	$(BIN)/python scripts/bench_atari.py $(BENCH_ATARI_ARGS)
	$(BIN)/python scripts/bench_packed.py $(BENCH_PACKED_ARGS)

bench-quick: $(VENV)/.bench-installed
	$(BIN)/python scripts/bench.py --quick --out bench/quick.json $(BENCH_ARGS)
	$(BIN)/python scripts/bench_atari.py --quick --out bench/atari_quick.json $(BENCH_ATARI_ARGS)
	$(BIN)/python scripts/bench_packed.py --sizes 1,2 --algos sac --seconds 1 --no-compiled --out bench/packed_quick.json

# Learning parity (scripts/parity.py) against SB3 / sb3-contrib, same hyperparameters and seeds, one report per
# preset (tables, per-seed JSON and a plot in bench/parity*; resumable: a rerun keeps the finished runs). CPU time
# on a 2-core machine: pendulum (CrossQ, SAC; 16 seeds) 1 h; hopper (SAC, TD3, rl-zoo settings, 6 seeds, 30k) 1 h;
# hopper_crossq (compiled, 6 seeds, 10k) 1 h; hopper_bf16 (SAC in bf16 against fp32 and SB3) 25 min;
# pendulum_bf16 1 h; fetchreach_her (SAC + HER, success rate, 4 seeds) 15 min; dmc_sac (cheetah-run, 6 seeds) 40 min;
# hopper_crossq_15k (12 eager seeds, eval every 1k) 4-5 h; hopper_crossq_15k_compiled (6 seeds) 1.5 h;
# halfcheetah_crossq (compiled, 6 seeds, 20k) 3-4 h; breakout_dqn (DQN against SB3, 3 seeds, 500k agent steps, rl-zoo's
# Atari values) and breakout_qrdqn (QR-DQN against sb3-contrib, 5 seeds) about 1 h per run on 2 threads, 6 and 10
# runs. Then scripts/pixel_learning.py: SAC + DrQ from pixels on cartpole-swingup, 3 seeds of 5000 agent steps
# against a random policy, about 1.5 h. PARITY_PRESETS=hopper_bf16 runs one.
PARITY_PRESETS ?= pendulum hopper hopper_crossq hopper_bf16 pendulum_bf16 fetchreach_her dmc_sac \
	hopper_crossq_15k hopper_crossq_15k_compiled halfcheetah_crossq breakout_dqn breakout_qrdqn
parity: $(VENV)/.bench-installed
	for preset in $(PARITY_PRESETS); do $(BIN)/python scripts/parity.py --preset $$preset --resume $(PARITY_ARGS) || exit 1; done
	$(BIN)/python scripts/pixel_learning.py

# Lockstep runs (scripts/lockstep.py): lit_rl and SB3 / sb3-contrib from the same weights through the same batches
# and RNG state, per-update differences of parameters, BatchRenorm statistics, Adam moments and losses, free-running
# and resynchronised. CrossQ in the parity regime: about 30 min per run on one core.
# LOCKSTEP_ENVS="Walker2d-v4 HalfCheetah-v4 Ant-v4" for the other tasks.
LOCKSTEP_ALGOS ?= crossq sac
LOCKSTEP_ENVS ?= Hopper-v4
LOCKSTEP_ARGS ?= --updates 2500
lockstep: $(VENV)/.installed
	for env in $(LOCKSTEP_ENVS); do for algo in $(LOCKSTEP_ALGOS); do for mode in "" --resync; do \
	    $(BIN)/python scripts/lockstep.py --env $$env --algo $$algo $$mode $(LOCKSTEP_ARGS) || exit 1; done; done; done

# Published CrossQ results (scripts/reproduce.py): HalfCheetah/Walker2d/Hopper/Ant-v4, 1M steps, 10 seeds, eval
# every 10k steps, as one Hydra multirun; plot and table beside the published figures in outputs/reproduce/<time>/.
# For a GPU machine (days on a CPU); REPRODUCE_ARGS=--smoke checks it on a CPU in a few minutes.
reproduce: install
	$(BIN)/python scripts/reproduce.py $(REPRODUCE_ARGS)

# SB3's and sb3-contrib's own tests with the imports swapped to lit_rl (scripts/sb3_suite.py; not part of `make test`):
# downloads their source packages into outputs/sb3_suite/, runs SB3 once as the baseline (cached) and then lit_rl;
# counts and failure reasons on stdout and in bench/sb3_suite.md / .json.
sb3-suite: $(VENV)/.installed
	$(BIN)/pip install -q rich  # SB3's progress-bar tests need it (stable-baselines3[extra]); lit_rl does not
	OMP_NUM_THREADS=1 $(BIN)/python scripts/sb3_suite.py $(SB3_SUITE_ARGS)

$(VENV)/.bench-installed: $(VENV)/.installed
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[dev,bench]'
	touch $@

lint: install
	$(BIN)/ruff check lit_rl hydra_plugins tests scripts examples
	$(BIN)/mypy lit_rl hydra_plugins

# The documentation site (mkdocs.yml, docs/) into site/; --strict: a broken link, anchor or API reference fails.
# Its tables of config groups, keys and defaults are generated at build time (scripts/docs_hooks.py).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info site
