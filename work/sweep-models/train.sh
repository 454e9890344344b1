#!/usr/bin/env bash
# Train the four stride-sweep models without committed weights on the shared recipe (1 thread).
set -euo pipefail
cd "$(dirname "$0")/../.."
for v in mean-w4s2 mean-w6s3 mean-w12s6 mean-w16s8; do
  if [ -f work/sweep-models/$v/model.safetensors ]; then continue; fi
  /usr/bin/time -v phasebench reference train $v --out work/sweep-models --threads 1 > work/sweep-models/$v.log 2>&1
done
echo all-trained
