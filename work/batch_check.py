import sys, time, torch
sys.path.insert(0, "tests")
torch.set_num_threads(1)
from pathlib import Path
from support.models import make_tiny_llama
from phasebench.kvpress.backend import KVPressLM
from phasebench.lmeval.data import resolve_split
GEN = {"until": ["\n"], "do_sample": False, "temperature": 0.0, "max_gen_toks": 16}
model = Path("work/tiny-llama2"); 
if not model.exists(): make_tiny_llama(model, layers=2, hidden=32)
args = {"pretrained": str(model), "dtype": "float32", "device": "cpu"}
rows = resolve_split("kv", **args, max_seq_lengths=[256], n_base=16).rows[:8]
for press in [dict(press=None), dict(press="knorm", compression_ratio=0.5), dict(press="chunkkv", inner="knorm", compression_ratio=0.25, chunk_length=6),
              dict(press="chunk", inner="knorm", compression_ratio=0.25, chunk_length=6), dict(press="snapkv", compression_ratio=0.5, window_size=8),
              dict(press="pyramidkv", compression_ratio=0.5, window_size=8), dict(press="streamingllm", compression_ratio=0.5)]:
    lm = KVPressLM(**args, **press)
    t=time.process_time(); one = [lm.answer(r["prompt"], dict(GEN), r) for r in rows]; t1=time.process_time()-t
    prepared = [lm.prepare(r["prompt"], dict(GEN), r) for r in rows]
    t=time.process_time(); many = lm.answer_prepared(prepared); t2=time.process_time()-t
    print(press, one == many, sum(a==b for a,b in zip(one,many)), round(t1,2), round(t2,2), [s.kept_min for s in lm.stats[-8:]][:4], [s.ragged for s in lm.stats[-8:]][:3], one[:2])
