#!/usr/bin/env bash
# Recipe pilot: the matched control and W8/S4 trained on 192-token prompts (6,000 steps, all else
# the shared recipe), then each profiled in-process at the demo's 320 tokens (128 base items).
set -euo pipefail
cd "$(dirname "$0")/../../.."
export OMP_NUM_THREADS=1
for v in mean-w1s1 mean-w8s4; do
  if [ ! -f work/recipe-pilot/$v/model.safetensors ]; then
    /usr/bin/time -v python - "$v" > work/recipe-pilot/train-$v.log 2>&1 <<'PY'
import dataclasses, sys, torch
from pathlib import Path
from phasebench.reference.train import settings_for, train
torch.set_num_threads(1)
v = sys.argv[1]
s = dataclasses.replace(settings_for(v), length=192)
train(v, Path("work/recipe-pilot") / v, s,
      on_loss=lambda step, loss, sec: print(v, step, loss, f"{sec:.0f}s", flush=True) if step % 500 == 0 else None)
PY
  fi
  python -m phasebench reference evaluate work/recipe-pilot/$v --length 320 --n-base 128 > work/recipe-pilot/eval-$v-320.json 2> work/recipe-pilot/eval-$v.err
done
echo pilot-done
