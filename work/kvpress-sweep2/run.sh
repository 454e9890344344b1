#!/bin/bash
# kvpress stride sweep on SmolLM2-135M: niah@512, ChunkPress(Knorm) at ratio 0.1 (driver "chunk",
# with the press-less baseline first) and ChunkKV(Knorm) at ratio 0.25 (driver "chunkkv").
# Modulus 2c, capped at 12 (c = 12 at modulus 12). One thread per driver.
# Usage: run.sh chunk|chunkkv [WORK-SUFFIX CHUNKS]; e.g. `run.sh chunkkv -b 2,12` is a second
# driver in work/kvpress-sweep2/chunkkv-b (the table joins both folders). SUBMISSIONS=DIR packs
# elsewhere than leaderboard/submissions.
cd /work/main && . /work/venv-kvpress/bin/activate
press=$1; suffix=${2:-}; chunks=${3:-8,4,6,12,2}; ratio=0.1; extra="--baseline 4"
[ "$press" = chunkkv ] && ratio=0.25 && extra=""
[ -n "$suffix" ] && extra=""
exec python benchmarks/kvpress_stride_sweep.py run --tokenizer work/kvpress-probe/tokenizer \
  --work work/kvpress-sweep2/$press$suffix --submissions ${SUBMISSIONS:-leaderboard/submissions} \
  --length 512 --chunks $chunks --presses $press --ratio $ratio --n-base 32 --max-modulus 12 \
  --batch 8 $extra
