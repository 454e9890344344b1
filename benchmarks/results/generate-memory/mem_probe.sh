# peak RSS of `phasebench generate` by family and length (n_base 4, modulus 2), for the memory
# estimate in specs.py; run under nice on the shared 2-core machine
export PYTHONPATH=/work/wt-26 HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
for fam_len in "kv 65536" "kv 262144" "kv 1048576" "niah 262144" "niah 1048576" "code 262144" "code 1048576"; do
  set -- $fam_len
  rm -rf /tmp/memprobe-out
  /usr/bin/time -f "$1 $2 maxrss_kb=%M wall_s=%e" nice -n 10 /work/venv/bin/python -m phasebench generate $1 --length $2 --n-base 4 --modulus 2 --out /tmp/memprobe-out --quiet 2>&1 | tail -1
done
rm -rf /tmp/memprobe-out
