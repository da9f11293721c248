#!/usr/bin/env bash
# Every GPU check of the project in one call (for the device machine; about 8 minutes on an H200):
# install with the CUDA build of torch, confirm the GPU, run the compile-equivalence tests on it, time one
# compiled run with CUDA graphs, then the GPU bench (CrossQ/SAC/TD3 on HalfCheetah-v4, 1 env and 16 envs,
# against the targets of the speed issue). Output: the bench table on stdout, JSON under $OUT (or bench/).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-bench}"
mkdir -p "$OUT"
python3 -m venv .venv-gpu
. .venv-gpu/bin/activate
pip install -q --upgrade pip
pip install -q -e '.[dev,bench]'           # torch>=2.4 resolves to its CUDA build where nvidia-smi exists
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA'; print('torch', torch.__version__, torch.cuda.get_device_name())"
export WANDB_MODE=offline
timeout 180 python -m lit_rl.train trainer=gpu trainer.compile=reduce-overhead algo=sac env=HalfCheetah-v4 \
    total_timesteps=3000 eval.freq=3000 eval.episodes=1 hydra.run.dir="$OUT/gpu_compiled_sac" || echo "compiled run FAILED"
grep -h "compiled update" "$OUT/gpu_compiled_sac/train.log" || true
python scripts/bench.py --devices cuda --nets "" --steps 3000 --crossq-steps 2000 --repeats 2 \
    --out "$OUT/gpu_bench.json" | tee "$OUT/gpu_bench.txt"
