"""The behaviour record: what the loaded tokenizer encodes, in every manifest, and the one
comparison that refuses a split wherever this install would encode its prompts differently."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
import tokenizers
import transformers
import yaml

from phasebench.build import generate, iter_rows, read_manifest
from phasebench.errors import TokenizerError
from phasebench.leaderboard.validate import validate_all
from phasebench.lmeval import data as lmeval
from phasebench.specs import SplitSpec
from phasebench.tokenization import TokenizerLoadWarning, encoding_difference, load_tokenizer
from phasebench.tokenizer_behaviour import PROBE_SHA256, PROBE_TEXT
from phasebench.verification import verify_config
from support.submissions import TASKS, make_submission, split_rows

ROOT = Path(__file__).resolve().parent.parent


def test_manifest_records_what_the_loaded_tokenizer_encodes(deepseek, tmp_path):
    spec = SplitSpec("kv", 256, n_base=16)
    (folder,) = generate([spec], tmp_path, progress=False, tokenizer=deepseek)
    recorded = read_manifest(folder)["tokenizer"]
    behaviour = recorded["behaviour"]
    assert behaviour["probe_ids"] == deepseek.encode(PROBE_TEXT)
    assert behaviour["probe_sha256"] == PROBE_SHA256
    assert behaviour["class"] == type(deepseek.hf).__name__
    assert behaviour["transformers"] == transformers.__version__
    assert behaviour["tokenizers"] == tokenizers.__version__
    assert behaviour["tokenizer_json"]["state"] == "agrees"
    assert recorded["piece_context"] == ""
    assert encoding_difference(recorded, deepseek) is None


def test_encoding_difference_names_what_differs(deepseek, deepseek_bos):
    recorded = deepseek.describe()
    assert encoding_difference(recorded, deepseek) is None
    assert "fingerprint" in encoding_difference(recorded, deepseek_bos)
    # the same files loaded by another install that encodes the probe text otherwise
    other = json.loads(json.dumps(recorded))
    other["behaviour"]["probe_ids"][5] += 1
    other["behaviour"]["transformers"] = "4.99.0"
    why = encoding_difference(other, deepseek)
    assert "encoded the probe text differently from token 5" in why
    assert "transformers 4.99.0" in why and f"transformers {transformers.__version__}" in why
    # another class or version alone is no difference: only what it encodes counts
    renamed = json.loads(json.dumps(recorded))
    renamed["behaviour"].update({"class": "SomethingElse", "transformers": "4.99.0"})
    assert encoding_difference(renamed, deepseek) is None
    # a manifest from before behaviour records can only be compared by fingerprint
    old = {k: v for k, v in recorded.items() if k != "behaviour"}
    assert encoding_difference(old, deepseek) is None
    junk = [
        None,
        {**recorded, "behaviour": "x"},
        {**recorded, "behaviour": {**recorded["behaviour"], "probe_ids": ["<b>"]}},
        {**recorded, "behaviour": {**recorded["behaviour"], "probe_sha256": "sha256:0"}},
    ]
    for record in junk:
        assert encoding_difference(record, deepseek)


def test_a_class_that_rewrites_its_file_is_reported(request, tokenizer_folder, tmp_path):
    """The config names GPT2Tokenizer: transformers rebuilds it with GPT-2's pre-tokenizer and
    drops the file's single-digit rule. phasebench follows the loaded tokenizer (what lm-eval
    feeds), warns, and records it; a split made with the file's own rules is refused."""
    folder = shutil.copytree(tokenizer_folder("gpt2_rewritten"), tmp_path / "copy")
    with pytest.warns(TokenizerLoadWarning, match="loads it as GPT2Tokenizer, which encodes text"):
        loaded = load_tokenizer(str(folder))  # a fresh path: loaded (and checked) anew
    assert loaded.fingerprint == request.getfixturevalue("gpt2_rewritten").fingerprint
    check = loaded.behaviour.file
    assert check.state == "differs" and not check.text_tokens_agree and check.special_tokens_agree
    spec = SplitSpec("kv", 1024, modulus=8, n_base=16, tokenizer=loaded.name)
    (built,) = generate([spec], tmp_path / "loaded", progress=False, tokenizer=loaded)
    record = read_manifest(built)["tokenizer"]["behaviour"]["tokenizer_json"]
    assert record["state"] == "differs"
    assert record["lm_eval_feeds"] == "the loaded tokenizer (GPT2Tokenizer)"

    with warnings.catch_warnings():
        warnings.simplefilter("error", TokenizerLoadWarning)
        from_file = load_tokenizer(str(folder / "tokenizer.json"))  # the file's own rules
    assert from_file.behaviour.file.state == "agrees"
    assert loaded.encode(": 67067") != from_file.encode(": 67067")  # digits joined vs single
    (other,) = generate([spec], tmp_path / "file", progress=False, tokenizer=from_file)
    with pytest.raises(TokenizerError, match="was built for tokenizer"):
        verify_config(other, progress=False, tokenizer=loaded)
    # rightly so: its labels are wrong for the sequence lm-eval feeds
    rows = list(iter_rows(other))
    wrong = [r for r in rows if len(loaded.encode(r["prompt"])) != r["length"]]
    assert len(wrong) == len(rows)


def test_a_requested_bos_is_no_surprise(deepseek_bos):
    check = deepseek_bos.behaviour.file
    assert check.state == "differs" and check.text_tokens_agree and not check.special_tokens_agree
    with warnings.catch_warnings():
        warnings.simplefilter("error", TokenizerLoadWarning)
        load_tokenizer("deepseek-v4", {"add_bos_token": "True", "revision": "main"})


@pytest.mark.slow
def test_a_loading_change_is_refused_wherever_a_split_is_reused(request, tmp_path, monkeypatch):
    """``add_bos_token=False`` changes what lm-eval feeds: the lm-eval cache builds anew, a
    ``dataset_path`` split made before is refused, and so is a leaderboard submission."""
    monkeypatch.setenv("PHASEBENCH_CACHE", str(tmp_path / "cache"))
    tok = request.getfixturevalue("llama2_style")
    kwargs = {"pretrained": tok.name, "max_seq_lengths": [256], "n_base": 16}
    first = lmeval.resolve_split("kv", **kwargs)
    assert lmeval.resolve_split("kv", **kwargs).folders == first.folders  # reused: no change
    changed = lmeval.resolve_split("kv", **kwargs, add_bos_token=False)
    assert changed.folders != first.folders
    nobos = load_tokenizer(tok.name, {"add_bos_token": False})
    assert nobos.prefix_ids == () and tok.prefix_ids != ()
    (old,), (new,) = first.manifests, changed.manifests
    assert encoding_difference(old["tokenizer"], nobos) and not encoding_difference(
        new["tokenizer"], nobos
    )
    with pytest.raises(TokenizerError, match="was built for tokenizer"):
        lmeval.resolve_split(
            "kv", **kwargs, add_bos_token=False, dataset_path=str(first.folders[0])
        )

    # the committed example submission, run with the DeepSeek-V4 tokenizer as lm-eval loads it
    example = "phasebench__tiny-random-llama"
    root = tmp_path / "submissions"
    shutil.copytree(ROOT / "leaderboard" / "submissions" / example, root / example)
    assert len(validate_all(root, cache=tmp_path / "regen").accepted) == 1  # as committed
    (meta_file,) = (root / example).glob("*/submission.yaml")
    meta = yaml.safe_load(meta_file.read_text())
    meta["tokenizer"]["args"] = {"add_bos_token": "True"}
    meta_file.write_text(yaml.safe_dump(meta))
    outcome = validate_all(root, cache=tmp_path / "regen")
    assert not outcome.accepted
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "tokenizer", problem


def test_leaderboard_compares_the_runs_behaviour_record(deepseek, tmp_path):
    """A run's results carry each config's behaviour record (lm-eval metadata); the validator
    accepts it when its own install encodes the probe text the same, and refuses it otherwise."""
    rows = split_rows(tmp_path / "split")
    recorded = read_manifest(tmp_path / "split" / "kv_128")["tokenizer"]

    def submit(root: Path, behaviour: dict) -> None:
        folder = make_submission(root, rows)
        (results_file,) = folder.glob("results_*.json")
        results = json.loads(results_file.read_text())
        results["configs"]["phasebench_kv"]["metadata"]["phasebench"] = [
            {"tokenizer_fingerprint": recorded["fingerprint"], "tokenizer_behaviour": behaviour}
        ]
        results_file.write_text(json.dumps(results))

    submit(tmp_path / "same", recorded["behaviour"])
    outcome = validate_all(tmp_path / "same", tasks=TASKS, cache=tmp_path / "regen")
    assert len(outcome.accepted) == 1, outcome.report_lines()

    other = json.loads(json.dumps(recorded["behaviour"]))
    other["probe_ids"][0] += 1
    submit(tmp_path / "other", other)
    outcome = validate_all(tmp_path / "other", tasks=TASKS, cache=tmp_path / "regen")
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "tokenizer" and "encoded the probe text differently" in problem.message
