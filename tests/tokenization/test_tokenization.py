from __future__ import annotations

import json

import pytest

from phasebench.errors import AssemblyError, TokenizerError
from phasebench.tokenization import (
    build_filler_table,
    builtin_path,
    check_seams,
    load_tokenizer,
)


def test_builtin_alias_is_the_deepseek_v4_tokenizer_json(deepseek):
    assert (builtin_path("deepseek-v4") / "tokenizer.json").exists()
    assert deepseek.prefix_ids == () and deepseek.suffix_ids == ()  # V4 adds no BOS by default
    assert deepseek.encode("key: value") == deepseek.hf("key: value")["input_ids"]


def test_local_file_and_folder_load_the_same_tokenizer(deepseek):
    folder = builtin_path("deepseek-v4")
    by_folder = load_tokenizer(str(folder))
    by_file = load_tokenizer(str(folder / "tokenizer.json"))
    assert by_folder.fingerprint == deepseek.fingerprint
    # the bare tokenizer.json knows nothing of tokenizer_config.json, but V4 adds no specials
    assert by_file.encode("abc123: 45678\n") == deepseek.encode("abc123: 45678\n")


def test_fingerprint_follows_special_token_behaviour(deepseek, deepseek_bos):
    assert deepseek_bos.prefix_ids == (deepseek.hf.bos_token_id,)
    assert deepseek_bos.fingerprint != deepseek.fingerprint
    assert load_tokenizer("deepseek-v4").fingerprint == deepseek.fingerprint


def test_wordpiece_special_tokens_on_both_sides(wordpiece):
    assert len(wordpiece.prefix_ids) == 1 and len(wordpiece.suffix_ids) == 1
    assert wordpiece.n_special == 2


@pytest.mark.parametrize("name", ["/no/such/tokenizer.json", "./missing-folder"])
def test_missing_local_tokenizer_is_a_clear_error(name):
    with pytest.raises(TokenizerError, match="does not exist"):
        load_tokenizer(name)


def test_unknown_hub_id_is_a_clear_error_offline():
    with pytest.raises(TokenizerError, match="not in the Hugging Face cache"):
        load_tokenizer("phasebench-test/no-such-model")


def test_folder_without_tokenizer_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(TokenizerError, match="no tokenizer.json"):
        load_tokenizer(str(tmp_path))


def test_check_seams_accepts_line_seams_and_catches_a_merge(deepseek):
    check_seams(deepseek, [["abc123: 45678\n", "xyz001: 12345\n", ". .\n"]], "record")
    # digits are grouped in threes over the whole text: "12" + "34" encodes as "123" "4"
    with pytest.raises(AssemblyError, match="merges tokens across"):
        check_seams(deepseek, [["value 12", "34 more"]], "number")


@pytest.mark.parametrize("fixture", ["deepseek", "wordpiece"])
def test_filler_lines_have_exact_token_counts(fixture, request):
    tok = request.getfixturevalue(fixture)
    table = build_filler_table(tok, 40)
    ks = list(range(table.min_tokens, table.max_tokens + 1))
    assert list(tok.count([table.line(k) for k in ks])) == ks
    with pytest.raises(AssemblyError):
        table.line(table.max_tokens + 1)


def test_tokenizer_json_on_disk_is_hashed_in_full(deepseek, tmp_path):
    data = json.loads((builtin_path("deepseek-v4") / "tokenizer.json").read_text())
    data["model"]["vocab"]["zzphasebenchzz"] = len(data["model"]["vocab"]) + 10
    changed = tmp_path / "tokenizer.json"
    changed.write_text(json.dumps(data))
    assert load_tokenizer(str(changed)).fingerprint != deepseek.fingerprint


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set"),
        ({"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:9"}, "cannot be reached"),
    ],
)
def test_an_uncached_hub_tokenizer_offline_fails_at_once_with_the_reason(tmp_path, env, reason):
    """Before, the Hub client retried five times with backoff (71 s against a closed port)
    and then said only that it could not connect."""
    import os
    import subprocess
    import sys

    environ = dict(os.environ, HF_HOME=str(tmp_path / "hf"), **env)
    done = subprocess.run(
        [sys.executable, "-m", "phasebench", "generate", "kv", "--tokenizer",
         "nosuchorg/nosuchmodel", "--length", "256", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=environ, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "'nosuchorg/nosuchmodel' is not a local file or folder" in line and reason in line
    assert not (tmp_path / "out").exists()


#: Texts whose characters fall in every kind of token span: multi-byte characters split into
#: byte tokens, runs of spaces, tabs and newlines, leading and trailing spaces.
SPAN_TEXTS = (
    "key: tkd241 value 67067\nQuestion: what is tkd241?",
    " naïve café \u2014 \U0001f642 emoji  double  spaces\tand\ttabs\n\n end ",
)


@pytest.mark.parametrize(
    "fixture", ["deepseek", "deepseek_bos", "wordpiece", "unigram", "smollm2", "mistral_v1"]
)
def test_token_index_at_is_the_first_token_whose_span_holds_the_char(fixture, request):
    """The exact path reads positions from the encoding's own spans; on every character (and
    outside the text) it names the first token of the offset mapping that holds it, or -1."""
    tok = request.getfixturevalue(fixture)
    for text in SPAN_TEXTS:
        ids, offsets = tok.encode_with_offsets(text)
        positions = [-3, -1, *range(len(text)), len(text), len(text) + 7, 2**70]
        n, found = tok.token_index_at(text, positions)
        assert n == len(ids) == len(tok.encode(text))
        for c, got in zip(positions, found, strict=True):
            hits = [i for i, (start, end) in enumerate(offsets) if start <= c < end]
            assert got == (hits[0] if hits else -1), (fixture, text, c)


def test_a_python_name_must_stay_inside_its_package(tmp_path):
    """``python:PKG/REST`` is published in manifests and loaded again by ``verify``: a REST
    that climbs out (``..``) would be a machine path in disguise, and a way to load a tokenizer
    from anywhere."""
    import os
    import shutil

    import phasebench
    from phasebench.tokenization import builtin_path, load_tokenizer, portable_name

    outside = tmp_path / "tok"
    outside.mkdir()
    shutil.copy(builtin_path("deepseek-v4") / "tokenizer.json", outside / "tokenizer.json")
    package = os.path.dirname(phasebench.__file__)
    climb = "../" * len(os.path.abspath(package).strip("/").split("/"))
    name = f"python:phasebench/{climb}{str(outside).lstrip('/')}"
    for use in (load_tokenizer, portable_name):
        with pytest.raises(TokenizerError, match="climbs out of the package 'phasebench'"):
            use(name)
    # a link inside the package that leads out is refused where the name is looked up
    link = tmp_path / "pkg" / "phasebench_linkpkg"
    link.mkdir(parents=True)
    (link / "__init__.py").write_text("")
    (link / "tok").symlink_to(outside)
    import sys

    sys.path.insert(0, str(tmp_path / "pkg"))
    try:
        with pytest.raises(TokenizerError, match="leads out of the package"):
            load_tokenizer("python:phasebench_linkpkg/tok")
    finally:
        sys.path.remove(str(tmp_path / "pkg"))
