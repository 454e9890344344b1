"""The checks of phasebench's API path against a real server (:mod:`support.openai_server`),
shared by ``tests/lmeval/test_api_server.py`` (transformers serve, in CI) and
``benchmarks/check_api_server.py`` (either server, by hand), so both make the same claims.

The claim: phasebench labels phases for exactly the token ids the server feeds the model. For
every logged prompt of a ``phasebench eval`` run through the server, the ids the server fed the
model (:meth:`Served.ids_fed`) must be phasebench's ids, the server must report that many prompt
tokens, and the token at the logged ``anchor_index`` must hold the needle's first character.
With ``local-chat-completions --apply_chat_template`` the server applies the chat template
itself; the logged ``anchor_index`` must then be the anchor's index in the templated sequence.

Each check raises ``AssertionError`` naming the prompt and what differs, or returns lines that
say what it verified.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phasebench.tokenization import PhaseTokenizer, load_tokenizer
from support.lmeval import lm_eval, outputs
from support.openai_server import Exchange, Served, post

MODULUS = 4
N_BASE = 8
METADATA = {"max_seq_lengths": [256], "n_base": N_BASE, "phase_modulus": MODULUS}


def require(condition: bool, message: str) -> None:
    """An assertion that also holds under ``python -O`` (the check script is run by hand)."""
    if not condition:
        raise AssertionError(message)


@dataclass
class Run:
    results: dict
    samples: list[dict]
    sent: list[Exchange]
    fed_before: int
    output: str


def run_eval(
    served: Served,
    work: Path,
    backend: str,
    task: str,
    *extra: str,
    tokenizer: Path | None = None,
    returncode: int = 0,
    metadata: dict | None = None,
    n: int = N_BASE * MODULUS,
) -> Run:
    """``phasebench eval --model BACKEND`` on ``task`` through the proxy, 8 base items x 4
    phases at 256 tokens, 8 tokens generated per prompt, one request at a time; the split is
    labelled with ``tokenizer`` (default: the served model's own)."""
    path = "/v1/chat/completions" if "chat" in backend else "/v1/completions"
    args = (
        f"model={served.model},base_url={served.url}{path},"
        f"tokenizer={tokenizer or served.tokenizer},max_length=2048"
    )
    if backend == "local-completions":
        # neither server takes a token-id prompt (transformers serve answers 400 "prompt must be
        # a string"), so lm-eval sends the split's text and the server tokenizes it: the ids
        # checked below
        args += ",tokenizer_backend=huggingface,tokenized_requests=False"
    work.mkdir(parents=True, exist_ok=True)
    seen, fed_before = len(served.recorder.on(path)), served.fed_count()
    proc = lm_eval(work, args, task, metadata or METADATA, wrapper=True, model=backend,
                   batch_size=1, extra=["--gen_kwargs", "max_gen_toks=8", *extra],
                   timeout=1800)  # fmt: skip
    require(
        proc.returncode == returncode,
        f"phasebench eval exited {proc.returncode}, not {returncode}: {proc.stderr[-3000:]}",
    )
    if returncode == 0:
        require("phasebench summary of this run" in proc.stdout, "no phasebench summary printed")
    results, samples = outputs(work / "out")
    sent = served.recorder.on(path)[seen:]
    logged = samples[task]
    require(len(logged) == len(sent) == n, f"{len(logged)} samples, {len(sent)} requests, not {n}")
    return Run(results, logged, sent, fed_before, proc.stdout + proc.stderr)


def _pair(served: Served, run: Run, texts: list[str]) -> list[tuple[dict, list[int]]]:
    """(response, ids fed) for each request of ``run``, whose server read ``texts``."""
    fed = served.ids_fed(run.fed_before, texts)
    require(len(fed) == len(run.sent), f"{len(fed)} sequences fed for {len(run.sent)} requests")
    return [(e.response, ids) for e, ids in zip(run.sent, fed, strict=True)]


def _covers(
    served: Served, tok: PhaseTokenizer, text: str, ids: list[int], index: int, char: int
) -> bool:
    """Whether token ``index`` of ``ids`` (the encoding of ``text``) spans character ``char``.

    llama-cpp: by the server's own detokenizer. transformers serve has none; its ids were just
    shown equal to the tokenizer's, so the tokenizer's offsets mapping answers for them."""
    if served.fed is None:
        before = post(f"{served.base}/extras/detokenize", {"tokens": ids[:index]})["text"]
        through = post(f"{served.base}/extras/detokenize", {"tokens": ids[: index + 1]})["text"]
        return len(before) <= char < len(through)
    enc = tok.hf(text, add_special_tokens=False, return_offsets_mapping=True)
    start, end = enc["offset_mapping"][index]
    return enc["input_ids"] == ids and start <= char < end


def check_completions(served: Served, work: Path, family: str) -> list[str]:
    """kv or niah through ``local-completions``: the server tokenizes the split's prompt text."""
    task = f"phasebench_{family}"
    run = run_eval(served, work, "local-completions", task)
    prompts = []
    for exchange in run.sent:
        prompt = exchange.request["prompt"]
        prompts.append(prompt[0] if isinstance(prompt, list) else prompt)
    by_prompt = dict(zip(prompts, _pair(served, run, prompts), strict=True))
    tok = load_tokenizer(str(served.tokenizer))
    for sample in run.samples:
        doc = sample["doc"]
        name = doc["id"]
        require(doc["prompt"] in by_prompt, f"{name}: lm-eval did not send the split's text")
        response, ids = by_prompt[doc["prompt"]]
        require(ids == tok.encode(doc["prompt"]), f"{name}: the server fed other ids")
        counted = response["usage"]["prompt_tokens"]
        lengths = f"server counted {counted}, fed {len(ids)}, split {doc['length']}"
        require(counted == len(ids) == doc["length"], f"{name}: {lengths}")
        logged = sample["served_verified"]
        require(logged == [doc["length"], counted], f"{name}: served_verified logged {logged}")
        covered = _covers(served, tok, doc["prompt"], ids, doc["anchor_index"], doc["key_char"])
        require(covered, f"{name}: token {doc['anchor_index']} does not hold the needle")
        require(doc["phase"] == doc["anchor_index"] % MODULUS, f"{name}: phase != anchor mod P")
    table = run.results["results"][task]
    worst, acc = table["acc_lowest_phase,none"], table["acc,none"]
    require(0.0 <= worst <= acc <= 1.0, f"{task}: worst phase {worst}, acc {acc}")
    require(table["served_verified,none"] == 1.0, f"{task}: served_verified {table}")
    n = len(run.samples)
    require(f"server      {n}/{n} agree with the label" in run.output, "no witness line printed")
    return [
        f"{task} local-completions: {n} prompts sent as text",
        f"  {served.witness} == phasebench's ids of the split's prompt: {n}/{n}",
        f"  usage.prompt_tokens == their count == split length ({doc['length']}): {n}/{n}",
        f"  served_verified logged [length, usage.prompt_tokens], agreeing: {n}/{n}",
        f"  token at anchor_index holds the needle's first character: {n}/{n}",
        f"  acc {acc:.3f}, worst phase {worst:.3f}",
    ]


def check_chat(served: Served, work: Path) -> list[str]:
    """niah through ``local-chat-completions --apply_chat_template``: the server renders its
    chat template around the prompt; the tasks relabel by the measured template offset."""
    task = "phasebench_niah"
    run = run_eval(served, work, "local-chat-completions", task, "--apply_chat_template")
    tok = load_tokenizer(str(served.tokenizer))
    contents, templated = [], []
    for exchange in run.sent:
        (message,) = exchange.request["messages"]  # no system prompt was given
        require(message["role"] == "user", f"a {message['role']!r} message was sent")
        contents.append(message["content"])
        templated.append(_template(tok, message["content"]))
    fed = zip(templated, _pair(served, run, templated), strict=True)
    by_content = dict(zip(contents, fed, strict=True))
    offsets = set()
    for sample in run.samples:
        doc = sample["doc"]
        name = doc["id"]
        require(doc["prompt"] in by_content, f"{name}: lm-eval did not send the split's text")
        text, (response, ids) = by_content[doc["prompt"]]
        enc = tok.hf(text, add_special_tokens=False, return_offsets_mapping=True)
        require(ids == enc["input_ids"], f"{name}: the server fed other ids than the template's")
        counted = response["usage"]["prompt_tokens"]
        require(counted == len(ids), f"{name}: server counted {counted}, fed {len(ids)}")
        label = doc["served_length"]
        require(sample["served_verified"] == [label, counted], f"{name}: templated length {label}")
        anchor_char = text.index(doc["prompt"]) + doc["key_char"]
        start, end = enc["offset_mapping"][doc["anchor_index"]]
        require(start <= anchor_char < end, f"{name}: relabelled anchor misses the needle")
        require(doc["phase"] == doc["anchor_index"] % MODULUS, f"{name}: phase != anchor mod P")
        split_phase = (doc["anchor_index"] - doc["anchor_offset"]) % MODULUS
        require(doc["split_phase"] == split_phase, f"{name}: split_phase is not the row's phase")
        offsets.add(doc["anchor_offset"])
    # one constant template prefix, measured (SmolLM2's template adds a default system turn)
    require(len(offsets) == 1 and min(offsets) > 0, f"template offsets {sorted(offsets)}")
    acc = run.results["results"][task]["acc,none"]
    n = len(run.samples)
    return [
        f"{task} local-chat-completions --apply_chat_template: {n} prompts sent as messages",
        f"  {served.witness} == the tokenizer's chat template encoded whole: {n}/{n}",
        f"  usage.prompt_tokens == their count == the templated length phasebench labelled: "
        f"{n}/{n}",
        f"  relabelled anchor_index (offset {offsets.pop()}) holds the needle: {n}/{n}",
        f"  acc {acc:.3f}",
    ]


def check_witness_catches_retokenizing(served: Served, work: Path, other: Path) -> list[str]:
    """kv through ``local-completions``, the split labelled with another real tokenizer
    (``other``) than the server's: the server re-tokenizes the text and feeds the model other
    positions. Every sample whose server count differs from its label must be logged as such
    and left out (no ``acc``); since none agrees here, ``phasebench eval`` ends with one line
    saying so (exit 2) after lm-eval's own run."""
    task = "phasebench_kv"
    # 4 base items x 2 phases: the witness reads each prompt on its own, so 8 prompts show it
    metadata = {"max_seq_lengths": [256], "n_base": 4, "phase_modulus": 2}
    run = run_eval(served, work, "local-completions", task, tokenizer=other, returncode=2,
                   metadata=metadata, n=8)  # fmt: skip
    marked = 0
    reported = sorted(e.response["usage"]["prompt_tokens"] for e in run.sent)
    for sample in run.samples:
        doc = sample["doc"]
        label, counted = sample["served_verified"]
        require(label == doc["length"], f"{doc['id']}: labelled {label}, row {doc['length']}")
        if counted != label:
            marked += 1
            require("acc" not in sample, f"{doc['id']}: a disagreeing sample was scored")
    n = len(run.samples)
    logged = sorted(s["served_verified"][1] for s in run.samples)
    require(logged == reported, f"logged counts {logged}, the server answered {reported}")
    require(marked == n, f"{marked}/{n} marked; server counts {sorted(reported)}")
    line = "not a measurement: "  # more than a small share fed off its labels (here all 8)
    require(
        line in run.output and "disagrees with the label for 8 of 8" in run.output,
        f"no witness refusal printed: {run.output[-2000:]}",
    )
    return [
        f"{task} local-completions, labelled with {other.name}'s tokenizer, served by SmolLM2's:",
        f"  server counts {min(reported)}..{max(reported)} for {n} prompts labelled "
        f"{run.samples[0]['doc']['length']}: {marked}/{n} marked and left out",
        "  phasebench eval: exit 2, one line (no sample's server count agrees)",
    ]


def check_length_axis(served: Served, work: Path) -> list[str]:
    """niah with both axes crossed (4 base items x 2 needle phases x 2 length phases at 256
    and 257 tokens) through ``local-completions``: every sample's server count equals its own
    length, and the summary prints the needle and the length profile and the 2-D table."""
    task = "phasebench_niah"
    metadata = {"max_seq_lengths": [256], "n_base": 4, "phase_modulus": 2,
                "length_phases": "crossed"}  # fmt: skip
    run = run_eval(served, work, "local-completions", task, metadata=metadata, n=16)
    for sample in run.samples:
        doc = sample["doc"]
        label, counted = sample["served_verified"]
        require(label == counted == doc["length"], f"{doc['id']}: {label}, {counted}")
    lengths = sorted({s["doc"]["length"] for s in run.samples})
    require(lengths == [256, 257], f"prompt lengths {lengths}")
    for line in ("needle phase (anchor index mod P; each length phase paired)",
                 "length phase (total prompt length mod P; anchor fixed)",
                 "accuracy per needle phase (rows) x length phase (columns)",
                 "16/16 agree with the label"):  # fmt: skip
        require(line in run.output, f"summary lacks {line!r}")
    table = run.results["results"][task]
    require("length_phase_gap,none" in table, f"no length-phase aggregates: {sorted(table)}")
    return [
        f"{task} local-completions, needle x length phases crossed: 16 prompts of 256-257 tokens",
        "  usage.prompt_tokens == each prompt's own length: 16/16",
        "  summary: both profiles and the 2-D table",
    ]


def _template(tok: PhaseTokenizer, content: str) -> str:
    return tok.hf.apply_chat_template(
        [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
    )


def check_repeat(served: Served, work: Path) -> list[str]:
    """kv with ``"prefix_cache": "repeat"`` through ``local-completions``: every prompt sent
    twice in a row (the second read right after the first, as the proxy recorded them), and
    ``phasebench report --json`` pairs the two reads; on a server whose cache (if any) never
    changes an answer the warm-vs-cold test is not significant."""
    import json

    from support.lmeval import phasebench

    task = "phasebench_kv"
    metadata = {**METADATA, "prefix_cache": "repeat"}
    n = N_BASE * MODULUS
    run = run_eval(served, work, "local-completions", task, metadata=metadata, n=2 * n)
    prompts = [e.request["prompt"] for e in run.sent]
    prompts = [p[0] if isinstance(p, list) else p for p in prompts]
    require(prompts[0::2] == prompts[1::2], "a warm read did not follow its cold read")
    reads = [s["doc"]["read"] for s in run.samples]
    require(sorted(reads) == ["cold"] * n + ["warm"] * n, f"reads logged: {reads}")
    proc = phasebench(work, "report", "out", "--json", "report.json")
    require(proc.returncode == 0, f"phasebench report failed: {proc.stderr[-2000:]}")
    report = json.loads((work / "report.json").read_text())
    (entry,) = [e for b in report["runs"].values() for e in b["tasks"][task].values()]
    cache = entry["prefix_cache"]
    require(cache["n"] == n, f"{cache['n']} prompts paired, not {n}")
    require(cache["p"] >= 0.05, f"warm vs cold significant on a correct server: {cache}")
    return [
        f"{task} local-completions, prefix_cache repeat: {n} prompts, each read twice in a row",
        f"  warm vs cold: {cache['agree']}/{n} agree, right only cold {cache['first_only']}, "
        f"only warm {cache['second_only']}, McNemar p {cache['p']:.3g}",
    ]
