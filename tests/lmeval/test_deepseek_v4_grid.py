"""phasebench's phase labels against DeepSeek-V4's own compression grid.

transformers ships DeepSeek-V4 (``DeepseekV4ForCausalLM``). Its CSA compressor closes a window
every ``compress_rate`` (m = 4) tokens of the sequence the model is fed and pools each entry over
``2m`` tokens (the previous window's Ca series and the current window's Cb series), each token
weighted by a gate plus a learned bias per *slot* of the window (``position_bias``); its HCA
compressor pools blocks of 128. A token's slot is its position in the fed sequence modulo the
stride, so the phase phasebench labels (``anchor_index mod P``) is the architecture's phase only
if ``anchor_index`` counts exactly the tokens the model is fed, from the first one.

Here a tiny random ``DeepseekV4ForCausalLM`` (one CSA layer, one HCA layer, the DeepSeek-V4
tokenizer) answers phasebench niah and kv rows through the real ``phasebench eval --model hf``
(lm-eval's ``hf`` backend, in this process), without BOS, with ``add_bos_token=True``, and with
``--apply_chat_template`` (a DeepSeek-style template saved with the tokenizer). Forward hooks
record, for every prompt, the ids the model received and each compressor's input and output in
the prefill. Then, from the compressor's own computation: the entries that change when the
anchor's input is perturbed are the ones whose windows hold it, and the tokens that feed each of
those entries (the nonzero rows of its gradient) are its window. Every row's anchor must sit at
offset ``anchor_index mod m`` of its CSA windows (and ``anchor_index mod 128`` of its HCA block).

The same holds for every row of a batch: at batch sizes that straddle prompt lengths (two
``max_seq_lengths`` on the needle axis, both axes crossed), where lm-eval would pad the shorter
prompts on the left and the compressors would count the pads (phasebench's tasks keep each
generation batch to one prompt length, :mod:`phasebench.lmeval.batching`); for log-likelihood
batches (the code family), padded on the right; and for ``phasebench probe``'s shifts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.lmeval import offline_env

LENGTH = 256
MODULUS = 4
N_BASE = 8
CSA = "compressed_sparse_attention"
HCA = "heavily_compressed_attention"
#: DeepSeek's chat layout (BOS, user turn, assistant turn); the tokenizer.json has no template.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}"
    "{% elif m['role'] == 'user' %}<｜User｜>{{ m['content'] }}{% else %}<｜Assistant｜>"
    "{{ m['content'] }}{% endif %}{% endfor %}{% if add_generation_prompt %}<｜Assistant｜>"
    "{% endif %}"
)
RUNS = {
    "plain": {"model_args": "", "extra": []},
    "bos": {"model_args": ",add_bos_token=True", "extra": []},
    "chat": {"model_args": "", "extra": ["--apply_chat_template"]},
}


def make_tiny_deepseek_v4(folder: Path) -> None:
    """A 2-layer DeepseekV4ForCausalLM (CSA then HCA, hidden size 32) with random weights from a
    derived stream, random ``position_bias`` (transformers initialises it to zero), and the
    DeepSeek-V4 tokenizer with :data:`CHAT_TEMPLATE`, saved into ``folder``."""
    import torch
    from transformers import DeepseekV4Config, DeepseekV4ForCausalLM

    from phasebench.rng import derive_rng
    from phasebench.tokenization import load_tokenizer

    tok = load_tokenizer("deepseek-v4").hf
    config = DeepseekV4Config(
        vocab_size=len(tok),
        hidden_size=32,
        moe_intermediate_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        head_dim=16,
        partial_rotary_factor=0.5,
        q_lora_rank=16,
        o_groups=1,
        o_lora_rank=8,
        n_routed_experts=2,
        num_experts_per_tok=1,
        n_shared_experts=1,
        layer_types=[CSA, HCA],
        mlp_layer_types=["moe", "moe"],
        hc_mult=2,
        sliding_window=16,
        index_n_heads=2,
        index_head_dim=16,
        index_topk=8,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    model = DeepseekV4ForCausalLM(config)
    rng = derive_rng(0, "tests", "deepseek-v4-grid")
    with torch.no_grad():
        for _, param in sorted(model.named_parameters()):
            if param.dtype.is_floating_point:
                param.copy_(torch.from_numpy(rng.normal(0.0, 0.05, tuple(param.shape))))
    model.save_pretrained(folder)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(folder)


class Recorder:
    """Global forward hooks: per prefill (a forward over more than one token), the input ids
    and every compressor's inputs, output and cache position before the call."""

    def __init__(self) -> None:
        self.prefills: list[dict] = []

    def __enter__(self) -> Recorder:
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )

        self._handles = [
            register_module_forward_pre_hook(self._pre),
            register_module_forward_hook(self._post),
        ]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()

    @staticmethod
    def _is_compressor(module) -> bool:
        return type(module).__name__ in ("DeepseekV4CSACompressor", "DeepseekV4HCACompressor")

    def _pre(self, module, args) -> None:
        name = type(module).__name__
        if name == "DeepseekV4Model":
            return
        if name == "Embedding" and args and args[0].dim() == 2 and args[0].shape[1] > 1:
            rows = args[0].tolist()  # every row of the batch, pads included
            self.prefills.append({"ids": rows[0], "rows": rows, "compressors": {}})
        elif self._is_compressor(module) and args[0].shape[1] > 1:
            hidden, q_residual, position_ids, cache, layer_idx = args
            layer = cache.layers[layer_idx]
            self.prefills[-1]["compressors"][layer_idx] = {
                "module": module,
                "rate": module.compress_rate,
                "kind": name,
                "entries_before": layer.entry_count["compressor"],
                "args": (hidden.detach().clone(), q_residual.detach().clone(), position_ids),
            }

    def _post(self, module, args, output) -> None:
        if self._is_compressor(module) and args[0].shape[1] > 1:
            record = self.prefills[-1]["compressors"][args[4]]
            record["output"] = output[0].detach().clone()


def compressed(module, hidden, q_residual, position_ids, layer_idx):
    """The compressor's entries for ``hidden`` on a fresh sequence (no cache: windows from 0)."""
    return module(hidden, q_residual, position_ids, None, layer_idx)[0][0, 0]


def row_args(record: dict, row: int) -> tuple:
    """The compressor's inputs of one row of a recorded batch (rows are computed apart)."""
    hidden, q_residual, position_ids = record["args"]
    if position_ids is not None and position_ids.dim() > 1 and position_ids.shape[0] > 1:
        position_ids = position_ids[row : row + 1]
    return hidden[row : row + 1], q_residual[row : row + 1], position_ids


def window_offsets(
    record: dict, layer_idx: int, anchor: int, row: int = 0
) -> list[tuple[int, ...]]:
    """``(entry, window start, width, anchor's offset in the window)`` for every compressed
    entry the anchor (an index into the fed row ``row``) feeds, found from the compressor's own
    computation: perturbing the anchor's input changes exactly these entries, and the nonzero
    rows of an entry's gradient with respect to the input are the tokens of its window."""
    import torch

    hidden, q_residual, position_ids = row_args(record, row)
    module = record["module"]
    with torch.no_grad():
        base = compressed(module, hidden, q_residual, position_ids, layer_idx)
        moved = hidden.clone()
        moved[0, anchor] += 1.0
        changed = compressed(module, moved, q_residual, position_ids, layer_idx)
    entries = [int(e) for e in torch.nonzero((changed - base).abs().amax(dim=-1) > 1e-6).flatten()]
    found = []
    for entry in entries:
        source = hidden.clone().requires_grad_(True)
        compressed(module, source, q_residual, position_ids, layer_idx)[entry].sum().backward()
        window = torch.nonzero(source.grad[0].abs().amax(dim=-1) > 0).flatten().tolist()
        assert window == list(range(window[0], window[-1] + 1)), window  # contiguous
        found.append((entry, window[0], len(window), anchor - window[0]))
    return found


@pytest.fixture(scope="module")
def model(tmp_path_factory, monkeypatch_module) -> Path:
    """The tiny DeepSeek-V4's folder; the module runs offline with its own split cache."""
    work = tmp_path_factory.mktemp("dsv4")
    folder = work / "model"
    make_tiny_deepseek_v4(folder)
    for key, value in offline_env(work / "cache").items():
        monkeypatch_module.setenv(key, value)
    return folder


def evaluate(
    folder: Path,
    out: Path,
    tasks: str,
    metadata: dict,
    batch_size: int,
    model_args: str = "",
    extra: tuple[str, ...] = (),
) -> tuple[list[dict], list[dict]]:
    """``phasebench eval --model hf`` through the tiny DeepSeek-V4 with the prefills recorded
    (one generated token: the grid is the prompt's, set in the prefill); returns the prefills
    and the logged samples."""
    from phasebench.lmeval.harness import run_eval

    metadata = {"phase_modulus": MODULUS} | metadata
    argv = [
        "--model", "hf", "--model_args", f"pretrained={folder},dtype=float32" + model_args,
        "--tasks", tasks, "--device", "cpu", "--batch_size", str(batch_size),
        "--metadata", json.dumps(metadata), "--log_samples", "--output_path", str(out),
        "--seed", "0", "--gen_kwargs", "max_gen_toks=1", *extra,
    ]  # fmt: skip
    with Recorder() as recorder:
        result = run_eval(argv)
    samples = [
        json.loads(line) for f in result.samples_files for line in f.read_text().splitlines()
    ]
    return recorder.prefills, samples


@pytest.fixture(scope="module")
def runs(model, tmp_path_factory):
    """niah and kv, one prompt at a time, once per setting of :data:`RUNS`."""
    work = tmp_path_factory.mktemp("dsv4-runs")
    metadata = {"max_seq_lengths": [LENGTH], "n_base": N_BASE}
    found = {}
    for name, setting in RUNS.items():
        prefills, samples = evaluate(
            model, work / name, "phasebench_niah,phasebench_kv", metadata, 1,
            setting["model_args"], tuple(setting["extra"])
        )  # fmt: skip
        found[name] = (model, prefills, samples)
    return found


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def match(prefills: list[dict], samples: list[dict], tok) -> list[tuple[dict, dict]]:
    """Pair each logged sample with the one prefill whose decoded ids hold its prompt."""
    texts = [tok.decode(p["ids"], skip_special_tokens=False) for p in prefills]
    pairs = []
    for sample in samples:
        hits = [i for i, text in enumerate(texts) if sample["doc"]["prompt"] in text]
        assert len(hits) == 1, (sample["doc"]["id"], hits)
        pairs.append((sample, prefills[hits[0]]))
    assert len({id(p) for _, p in pairs}) == len(pairs) == len(prefills)
    return pairs


@pytest.mark.slow
@pytest.mark.parametrize("setting", sorted(RUNS))
def test_every_anchor_sits_at_its_labelled_slot_of_the_compression_windows(runs, setting):
    from transformers import AutoTokenizer

    folder, prefills, samples = runs[setting]
    tok = AutoTokenizer.from_pretrained(folder)
    pairs = match(prefills, samples, tok)
    families = {s["doc"]["family"] for s, _ in pairs}
    assert families == {"niah", "kv"} and len(pairs) == 2 * N_BASE * MODULUS
    for sample, prefill in pairs:
        doc, ids = sample["doc"], prefill["ids"]
        anchor = int(doc["anchor_index"])
        # the setting did what it says to the fed sequence
        assert (ids[0] == tok.bos_token_id) == (setting != "plain"), setting
        assert (int(doc.get("anchor_offset") or 0) > 1) == (setting == "chat")
        # the labelled anchor is the first token of the needle's key in the fed ids
        key = str(doc["needle_key"])
        assert tok.decode(ids[anchor:]).lstrip().startswith(key), doc["id"]
        assert not tok.decode(ids[anchor + 1 :]).lstrip().startswith(key), doc["id"]
        assert doc["phase"] == anchor % MODULUS
        for layer_idx, record in prefill["compressors"].items():
            m = record["rate"]
            assert record["entries_before"] == 0  # the prompt's windows count from its first id
            hidden, q_residual, position_ids = record["args"]
            again = compressed(record["module"], hidden, q_residual, position_ids, layer_idx)
            assert again.shape == record["output"][0, 0].shape
            assert (again - record["output"][0, 0]).abs().max() < 1e-5  # same computation
            offsets = window_offsets(record, layer_idx, anchor)
            width = 2 * m if record["kind"] == "DeepseekV4CSACompressor" else m
            # CSA: two overlapping windows (unless the anchor is in the last, unfilled one)
            assert 1 <= len(offsets) <= (2 if width == 2 * m else 1), offsets
            for _entry, start, seen_width, offset in offsets:
                # CSA's first entry has no previous window: its width is m
                assert seen_width == (m if start == 0 else width), offsets
                assert offset % m == anchor % m, (doc["id"], layer_idx, offsets, anchor)


# -- batches of prompts of several lengths ------------------------------------------------------
#
# lm-eval's ``hf`` backend sorts generation requests by length and pads each batch on the left;
# the compressors above lay their windows from index 0 of the padded tensor. A batch size that
# does not divide the number of prompts of each length puts prompts of two lengths into one
# batch. Both runs below mix lengths that differ mod MODULUS: the needle axis at two
# max_seq_lengths 6 tokens apart (niah and kv answered together), and both axes crossed (the
# length phase adds 0..3 tokens after the needle).

BATCHED = {
    "needle axis, lengths 256 and 262, batch 5": {
        "tasks": "phasebench_niah,phasebench_kv",
        "metadata": {"max_seq_lengths": [LENGTH, LENGTH + 6], "n_base": N_BASE},
        "batch_size": 5,
    },
    "both axes crossed, batch 6": {
        "tasks": "phasebench_niah",
        "metadata": {"max_seq_lengths": [LENGTH], "n_base": N_BASE, "length_phases": "crossed"},
        "batch_size": 6,
    },
}


@pytest.fixture(scope="module")
def batched(model, tmp_path_factory):
    work = tmp_path_factory.mktemp("dsv4-batched")
    return {
        name: evaluate(model, work / str(i), s["tasks"], s["metadata"], s["batch_size"])
        for i, (name, s) in enumerate(BATCHED.items())
    }


def fed_rows(prefills: list[dict], samples: list[dict], tok) -> list[tuple[dict, dict, int, int]]:
    """Each logged sample with the batch row it was fed: ``(sample, prefill, row, left pads)``;
    the pads are the row's leading pad ids (lm-eval pads generation batches on the left)."""
    rows = []
    for prefill in prefills:
        for b, ids in enumerate(prefill["rows"]):
            pads = next((i for i, t in enumerate(ids) if t != tok.pad_token_id), len(ids))
            rows.append((prefill, b, pads, tok.decode(ids[pads:], skip_special_tokens=False)))
    pairs = []
    for sample in samples:
        hits = [r for r in rows if sample["doc"]["prompt"] in r[3]]
        assert len(hits) == 1, (sample["doc"]["id"], len(hits))
        prefill, b, pads, _ = hits[0]
        pairs.append((sample, prefill, b, pads))
    assert len(pairs) == len(rows)  # every fed row is one logged sample
    return pairs


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(BATCHED))
def test_no_row_of_a_batch_is_fed_off_its_labelled_slot(model, batched, setting):
    """Every row of every batch, its anchor's slot read from the compressors' own windows over
    the row as fed (pads included), is the slot phasebench labels; and no row is padded."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    prefills, samples = batched[setting]
    pairs = fed_rows(prefills, samples, tok)
    size = BATCHED[setting]["batch_size"]
    per_length: dict[int, int] = {}
    for sample, *_ in pairs:
        length = int(sample["doc"]["length"])
        per_length[length] = per_length.get(length, 0) + 1
    # the run is one that a batch could straddle: lengths that differ mod P, and a batch size
    # that does not fill whole batches with the prompts of one length
    assert len({length % MODULUS for length in per_length}) > 1, per_length
    assert any(n % size for n in per_length.values()), per_length
    assert max(len(p["rows"]) for p in prefills) == size  # batches were formed
    off, padded = [], []
    for sample, prefill, row, pads in pairs:
        doc, ids = sample["doc"], prefill["rows"][row]
        anchor = int(doc["anchor_index"])
        assert len(ids) - pads == int(doc["length"])  # the row is the labelled sequence
        assert tok.decode(ids[pads + anchor :]).lstrip().startswith(str(doc["needle_key"]))
        slots = {}
        for layer_idx, record in prefill["compressors"].items():
            m = record["rate"]
            # where the anchor sits in the compressor's windows over the fed row, pads included
            offsets = window_offsets(record, layer_idx, pads + anchor, row)
            assert offsets, (doc["id"], layer_idx)
            assert len({offset % m for *_, offset in offsets}) == 1, offsets
            slots[record["kind"]] = (offsets[0][3] % m, anchor % m)
        if any(slot != label for slot, label in slots.values()):
            off.append((doc["id"], pads, slots))
        if pads:
            padded.append((doc["id"], pads))
    assert not off, (
        f"{len(off)} of {len(pairs)} rows fed off their labelled grid slot at batch size {size} "
        f"((id, left pads, {{compressor: (slot, label)}}), first 3: {off[:3]})"
    )
    assert not padded, f"{len(padded)} rows padded on the left: {padded[:5]}"


# -- log-likelihood: padded on the right ---------------------------------------------------------


@pytest.fixture(scope="module")
def code_run(model, tmp_path_factory):
    """The code family (log-likelihood of the answer), 8 prompts at a time: the first 16
    prompts of the split are one item at 16 padding lengths, so both batches mix lengths. (Every
    position's logits over the whole vocabulary make each prompt cost about a second here.)"""
    work = tmp_path_factory.mktemp("dsv4-code")
    metadata = {"max_seq_lengths": [LENGTH], "n_base": 2}
    return evaluate(model, work, "phasebench_code", metadata, 8, extra=("--limit", "16"))


@pytest.mark.slow
def test_right_padding_keeps_every_position(model, code_run):
    """lm-eval pads log-likelihood batches on the right: every row starts with its prompt at
    index 0, so the answer's first token (the anchor) is at its labelled index, and each
    margin is the one the prompt gets alone (the model called here on the prompt by itself)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
    prefills, samples = code_run
    rows = [row for p in prefills for row in p["rows"]]
    assert len(samples) == 16 and [len(p["rows"]) for p in prefills] == [8, 8]
    assert len({int(s["doc"]["length"]) for s in samples}) == 16
    right_padded = 0
    for sample in samples:
        doc = sample["doc"]
        ids = tok(doc["prompt"], add_special_tokens=False)["input_ids"]
        anchor = int(doc["anchor_index"])
        assert len(ids) == anchor  # the first answer token follows the prompt
        (fed,) = [row for row in rows if row[:anchor] == ids]  # from index 0: nothing before
        right_padded += len(fed) > anchor
        choices = [tok(doc["prompt"] + c, add_special_tokens=False)["input_ids"][anchor:]
                   for c in doc["choices"]]  # fmt: skip
        assert all(len(c) == 1 for c in choices)  # one token each: one row answers both
        with torch.no_grad():
            logits = lm(torch.tensor([ids]), logits_to_keep=1).logits[0, -1].log_softmax(-1)
        gold = list(doc["choices"]).index(doc["answer"])
        alone = float(logits[choices[gold][0]] - logits[choices[1 - gold][0]])
        assert sample["margin"] == pytest.approx(alone, abs=1e-4), doc["id"]
    assert right_padded == 14  # in each batch all rows but the longest were padded


# -- phasebench probe: every shift asked alone --------------------------------------------------

FILLER_LINE = "The afternoon was quiet and nothing else happened.\n"
#: No {{balance}}: each shift makes the prompt one token longer, so the lengths differ mod P.
PROBE = (
    "Read the notes below, then answer the question.\n" + FILLER_LINE * 14
    + "{{shift}}The special magic number for velmorax is 48213.\n" + FILLER_LINE * 14
    + "Question: what is the special magic number for velmorax?\nAnswer:"
)  # fmt: skip


@pytest.mark.slow
def test_probe_feeds_every_shift_alone_at_its_labelled_slot(model):
    """``phasebench probe`` sends each shifted prompt as a request of its own (one row, never
    padded), however long the shifts make it: the anchor sits at its labelled slot."""
    from phasebench.probe import parse_prompt, plan_for_model
    from phasebench.probe.run import ask

    args = f"pretrained={model},dtype=float32"
    plan, tok = plan_for_model(parse_prompt(PROBE), "hf", args, modulus=MODULUS, rounds=1,
                               styles=("filler",), max_gen_toks=1)  # fmt: skip
    with Recorder() as recorder:
        answers = ask(plan, tok, "hf", args, device="cpu", max_gen_toks=1)
    assert len({a.rendering.n_tokens % MODULUS for a in answers}) == MODULUS
    assert len(recorder.prefills) == len(answers) == MODULUS
    for answer, prefill in zip(answers, recorder.prefills, strict=True):
        r = answer.rendering
        assert len(prefill["rows"]) == 1 and len(prefill["ids"]) == r.n_tokens  # alone, unpadded
        assert tok.hf.decode(prefill["ids"][r.anchor :]).startswith("The special magic")
        assert r.phase == r.anchor % MODULUS
        for layer_idx, record in prefill["compressors"].items():
            m = record["rate"]
            offsets = window_offsets(record, layer_idx, r.anchor)
            assert offsets and {offset % m for *_, offset in offsets} == {r.anchor % m}
