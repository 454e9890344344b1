"""Where `phasebench generate FAMILY --length 131072 --n-base 256` spends its time, step by step,
in one process (wall and CPU seconds of each step; run once per family):

    python benchmarks/results/generate-steps/steps.py kv
    python benchmarks/results/generate-steps/steps.py niah

First the start-up, which runs on one core before the workers fork (imports, loading the tokenizer,
the family's content, the plan, the seam checks, one prompt on the exact path); then the work of
one parquet file as build._write_chunk does it (render its 64 rows, re-encode one whole prompt on
the exact path, build the table, hash the rows, write the parquet file to memory), averaged over
the first FILES files and multiplied by the config's 32.
"""

import io
import sys
import time

t0, c0 = time.perf_counter(), time.process_time()


def mark(what: str) -> None:
    global t0, c0
    t, c = time.perf_counter(), time.process_time()
    print(f"  {what:34s} {t - t0:6.2f} s wall {c - c0:6.2f} s CPU", flush=True)
    t0, c0 = t, c


family_name = sys.argv[1]
files = int(sys.argv[2]) if len(sys.argv) > 2 else 4
print(f"{family_name}_131072, start-up (one core):")
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from phasebench import build  # noqa: E402
from phasebench.families import get_family  # noqa: E402
from phasebench.families import needle as engine  # noqa: E402
from phasebench.specs import SplitSpec  # noqa: E402
from phasebench.tokenization import check_seams, load_tokenizer  # noqa: E402

mark("import phasebench, pyarrow")
import transformers  # noqa: E402

transformers.AutoTokenizer  # noqa: B018 (the lazy import is the cost)
mark("import transformers.AutoTokenizer")
tok = load_tokenizer("deepseek-v4")
mark("load the tokenizer")
spec = SplitSpec(family=family_name, length=131072, n_base=256)
family = get_family(spec)
module = sys.modules[family.prepare.__module__]
content = module.content(spec) if family_name == "kv" else module.content(spec, tok)
mark("content (pool of body pieces)")
plan = engine.plan(spec, tok, content)
mark("plan")
check_seams(tok, engine.seam_samples(plan), spec.family, opening=engine.opening_samples(plan))
mark("seam checks")
engine.exact_check(plan, next(plan.render([0])))
mark("one prompt on the exact path")
family.describe(plan), plan.balance()
mark("manifest facts (describe, balance)")

job = build._Job(spec, plan, family, None)
steps: dict[str, list[float]] = {}
last = [0.0, 0.0]


def step(name: str) -> None:
    now = [time.perf_counter(), time.process_time()]
    total = steps.setdefault(name, [0.0, 0.0])
    total[0] += now[0] - last[0]
    total[1] += now[1] - last[1]
    last[:] = now


for i in range(files):
    last[:] = [time.perf_counter(), time.process_time()]
    rows = list(plan.render(job.chunk_units(i)))
    step("render 64 rows")
    family.exact_check(plan, rows[i % job.plan.rows_per_unit])
    step("one whole prompt on the exact path")
    table = pa.Table.from_pylist(rows, schema=job.schema())
    step("build the table")
    digest = build.content_hash(rows)
    step("content hash")
    table = table.replace_schema_metadata({build.HASH_KEY: digest.encode()})
    pq.write_table(table, io.BytesIO(), **build.parquet_options(table))
    step("write the parquet file (to memory)")
print(f"one parquet file of {job.n_chunks} (mean of the first {files}), x {job.n_chunks}:")
for name, (wall, cpu) in steps.items():
    print(f"  {name:34s} {wall / files:6.3f} s wall {cpu / files:6.3f} s CPU   x {job.n_chunks}: "
          f"{cpu / files * job.n_chunks:5.2f} s CPU")  # fmt: skip
