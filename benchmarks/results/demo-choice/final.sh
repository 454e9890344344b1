#!/bin/bash
# The reported runs: phasebench demo on its new defaults (256 tokens, 256 base items), seeds 0, 1, 2.
cd /work/main && . /work/venv/bin/activate
export OMP_NUM_THREADS=1
for S in 0 1 2; do
  /usr/bin/time -f "%e s wall %U user" phasebench demo --seed $S --out work/demo-choice/final-s$S > work/demo-choice/final-s$S.log 2>&1
done
python benchmarks/results/demo-choice/study.py mean-w8s1 256 10 64 > work/demo-choice/w8s1-check.log 2>&1
