#!/bin/bash
# Second ChunkKV driver (c = 2, 12) beside run.sh chunkkv (which is stopped after c = 6), so the
# two cores share the sweep; separate work folder, joined by `table --work A B`.
cd /work/main && . /work/venv-kvpress/bin/activate
exec python benchmarks/kvpress_stride_sweep.py run --tokenizer work/kvpress-probe/tokenizer \
  --work work/kvpress-sweep2/chunkkv-b --submissions ${SUBMISSIONS:-leaderboard/submissions} --length 512 \
  --chunks 2,12 --presses chunkkv --ratio 0.25 --n-base 32 --max-modulus 12 --batch 8
