# probes for issue 26 findings 3 (dataset folders): prints exit code and the last 2 lines of stderr
cd /work/wt-26/work/probe
export PYTHONPATH=/work/wt-26 HF_HUB_OFFLINE=1
PY=/work/venv/bin/python
mk() { rm -rf "$1"; cp -r repo "$1"; }
ls_py() { $PY - "$@" <<'PYEOF'
import sys
from phasebench.hub import load_split, select_configs
from phasebench.errors import PhasebenchError
src, cfg = sys.argv[1], sys.argv[2]
for name, f in (("select", lambda: select_configs(src)), ("load", lambda: load_split(src, cfg))):
    try:
        r = f(); print(name, "OK", str(r)[:100])
    except PhasebenchError as e:
        print(name, "one-line:", str(e)[:150])
    except BaseException as e:
        print(name, "RAW", type(e).__name__, str(e)[:100])
PYEOF
}
C=kv_256_deepseek_v4
mk r_dotdot; mkdir -p other; cp -r repo/$C other/; $PY -c "
import json;p='r_dotdot/phasebench.json';d=json.load(open(p));d['configs'][0]['name']='../other/$C';d['configs'][0]['manifest']='../other/$C/manifest.json';json.dump(d,open(p,'w'))"
echo "== dotdot"; ls_py r_dotdot ../other/$C
mk r_passwd; $PY -c "
import json;p='r_passwd/phasebench.json';d=json.load(open(p));d['configs'][0]['manifest']='/etc/passwd';json.dump(d,open(p,'w'))"
echo "== passwd"; ls_py r_passwd $C
mk r_card; printf -- '---\nconfigs: [\n  - a: b\n---\n' > r_card/README.md
echo "== card"; ls_py r_card $C
mk r_index; echo 'not json' > r_index/phasebench.json
echo "== index"; ls_py r_index $C
mk r_noname; $PY -c "
import json;p='r_noname/phasebench.json';d=json.load(open(p));del d['configs'][0]['name'];json.dump(d,open(p,'w'))"
echo "== noname"; ls_py r_noname $C
mk r_extra; $PY -c "
import pyarrow.parquet as pq, pyarrow as pa, glob
p=glob.glob('r_extra/$C/*.parquet')[0]; t=pq.read_table(p); t=t.append_column('extra', pa.array([1]*len(t))); pq.write_table(t.replace_schema_metadata(pq.read_table(p).schema.metadata), p)"
echo "== extra"; ls_py r_extra $C
for r in r_dotdot r_passwd r_index r_noname r_card r_extra; do
  echo "== eval $r"; $PY -m phasebench eval --model hf --model_args pretrained=deepseek-v4,tokenizer=deepseek-v4,max_length=4096 --tasks phasebench_kv --metadata "{\"dataset_path\": \"$r\", \"max_seq_lengths\": [256]}" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"
done
