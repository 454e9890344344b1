"""Recompute a probe's statistics and verdict from its probe.json with the current analysis
(the answers are read back, the model is not run again):

    python benchmarks/probe_reanalyse.py OLD/probe.json [NEW_DIR]
"""

import json
import sys
from types import SimpleNamespace as NS

from phasebench.probe.analysis import analyse, terminal_plot
from phasebench.probe.run import Answer
from phasebench.probe.shifts import Rendering

d = json.load(open(sys.argv[1]))
ans = []
for e in d["shifts"]:
    r = Rendering(
        e["style"],
        e["shift"],
        e["round"],
        "",
        "",
        e["n_tokens"],
        e["anchor"],
        e["phase"],
        tuple(e["pad_tokens"]),
        -1,
        -1,
    )
    ans.append(Answer(r, e.get("response"), tuple(e.get("logprobs", ())), None, None))

pr = d["probe"]
plan = NS(
    modulus=pr["modulus"],
    rounds=pr["rounds"],
    styles=tuple(pr["styles"]),
    prompt=NS(plain="", paired=pr["design"] == "paired"),
    n_shifts=pr["shifts_per_style"],
    refused={},
    frame=NS(chat=False),
    choices=tuple(pr["choices"]),
    ref=NS(ids=[0] * pr["reference_tokens"], tokens={"{{shift}}": pr["shift_marker_token"]}),
)
res = analyse(plan, ans, expect=pr["expect"], provenance={})
print(terminal_plot(res)[-600:])
print(res.verdict)
if len(sys.argv) > 2:
    from phasebench.probe.output import write_outputs

    res.data["probe"] |= {
        k: v
        for k, v in pr.items()
        if k not in res.data["probe"]
        or k in ("prompt_sha256", "design", "styles_refused", "chat_template", "reference_tokens")
    }
    res.data["verdict"] = res.verdict
    for p in write_outputs(res, sys.argv[2]):
        print("wrote", p)
