#!/bin/bash
# Selection runs for the demo's defaults: seeds 10 and 11 (never reported), lengths 256/288, 256 base items.
cd /work/main && . /work/venv/bin/activate
export OMP_NUM_THREADS=1
for L in 288 256; do for S in 10 11; do
  /usr/bin/time -f "%e s wall %U user" phasebench demo --quiet --seed $S --length $L --n-base 256 --out work/demo-choice/L$L-s$S > work/demo-choice/L$L-s$S.log 2>&1
done; done
echo DONE >> work/demo-choice/L256-s11.log
