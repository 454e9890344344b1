#!/bin/bash
# The same bytes before and after: kv and niah at 131,072 tokens (256 base items) generated with
# the package of commit 1e4a11a (--num-proc 2) and with the working tree's (--num-proc 2 and 1);
# the sha256 of every parquet file and manifest.json must agree. Run from the repository root.
set -e
BEFORE=1e4a11a
rm -rf work/before-tree work/same-bytes && mkdir -p work/before-tree work/same-bytes
git archive "$BEFORE" phasebench | tar -x -C work/before-tree
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for run in "before 2 $PWD/work/before-tree" "after 2 $PWD" "after 1 $PWD"; do
  set -- $run
  for fam in kv niah; do
    (cd work && PYTHONPATH=$3 python -m phasebench generate $fam --length 131072 --n-base 256 \
      --num-proc $2 --out same-bytes/$1-$2/$fam --quiet > /dev/null)
    (cd work/same-bytes/$1-$2 && find $fam -type f \( -name '*.parquet' -o -name manifest.json \) \
      | sort | xargs sha256sum) > work/same-bytes/$1-$2.$fam.sha256
  done
  cat work/same-bytes/$1-$2.kv.sha256 work/same-bytes/$1-$2.niah.sha256 > work/same-bytes/$1-$2.sha256
  echo "$1 --num-proc $2: $(wc -l < work/same-bytes/$1-$2.sha256) files, sha256 of the list $(sha256sum < work/same-bytes/$1-$2.sha256 | cut -c1-16)"
done
for other in after-2 after-1; do
  if cmp -s work/same-bytes/before-2.sha256 work/same-bytes/$other.sha256; then
    echo "before --num-proc 2 and ${other/-/ --num-proc }: the same bytes"
  else
    echo "before --num-proc 2 and ${other/-/ --num-proc }: DIFFERENT"; exit 1
  fi
done
rm -rf work/before-tree work/same-bytes
