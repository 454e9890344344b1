import json
rows=[json.loads(l) for l in open("work/batch_bench_1024.log") if l.startswith("{")]
out=["| press | batch 1 (CPU s/prompt) | batched, 8 at a time | kvpress pipeline | batch 1 / batched | answers equal to batch 1 (batched; pipeline) |","|---|---|---|---|---|---|"]
for r in rows:
    pipe = f"{r['pipeline_cpu_s']:.2f}" + (f" ({r['pipeline_failed']} of {r['prompts']} failed: `{r.get('pipeline_error','')[:60]}`)" if r['pipeline_failed'] else "")
    peq = f"{r['pipeline_equal_batch1']} of {r['prompts'] - r['pipeline_failed']}" if r['pipeline_failed'] < r['prompts'] else "-"
    out.append(f"| {r['press']} | {r['batch1_cpu_s']:.2f} | {r['batched_cpu_s']:.2f} | {pipe} | {r['speedup_batched_vs_batch1']:.2f}x | {r['batched_equal_batch1']} of {r['prompts']}; {peq} |")
s=open("docs/kvpress.md").read()
s=s.replace("BATCH_TABLE","\n".join(out))
open("docs/kvpress.md","w").write(s)
print("\n".join(out))
