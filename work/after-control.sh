#!/bin/bash
# wait for the control's training, then its in-process profile at 512 and 320 tokens
cd /work/wt-27a
while kill -0 $(cat work/train-mean-w1s1.pid) 2>/dev/null; do sleep 10; done
for L in 512 320; do
  OMP_NUM_THREADS=1 PYTHONPATH=$PWD nice -n 10 /work/venv/bin/python -m phasebench reference evaluate work/models/mean-w1s1 --length $L --n-base 128 > work/eval-mean-w1s1-$L.json 2>>work/eval.err
done
