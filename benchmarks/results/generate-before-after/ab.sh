#!/bin/bash
# Before and after the generation-speed work of issue #42 (item 3), on one machine, alternating:
# `phasebench generate FAMILY --length 131072 --n-base 256 --num-proc 2` with the package of
# commit 1e4a11a (before) and of the working tree (after), three rounds. Both write the same
# bytes (same_bytes.sh: the sha256 of every file, --num-proc 1 and 2).
# Run from the repository root; the old package is exported to the ignored folder work/.
set -e
BEFORE=1e4a11a
rm -rf work/before-tree && mkdir -p work/before-tree
git archive "$BEFORE" phasebench | tar -x -C work/before-tree
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for rep in 1 2 3; do for fam in kv niah; do for side in base new; do
  if [ $side = base ]; then T=$PWD/work/before-tree; else T=$PWD; fi
  rm -rf work/ab-out
  (cd work && PYTHONPATH=$T /usr/bin/time -f "$fam $side wall %e user %U sys %S" \
    python -m phasebench generate $fam --length 131072 --n-base 256 --num-proc 2 \
    --out ab-out --quiet 2>&1 | grep wall)
done; done; done
rm -rf work/ab-out work/before-tree
