"""Split folders under damage and lies (issue 12): ``verify`` reports unreadable parquet, broken
manifests, files outside the folder, partial configs and needles whose value was changed (exit 1,
no traceback); ``inspect`` answers one line; ``generate --overwrite`` and ``publish --overwrite``
never lose the previous complete output; the lm-eval cache checks itself and repairs."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phasebench.build import HASH_KEY, MANIFEST, content_hash, generate, iter_rows
from phasebench.cli import main
from phasebench.specs import SplitSpec
from support.hostile import replaced

SPEC = SplitSpec("kv", 256, n_base=16)


@pytest.fixture(scope="module")
def built(tmp_path_factory, deepseek) -> Path:
    out = tmp_path_factory.mktemp("built")
    generate([SPEC], out, progress=False, tokenizer=deepseek)
    return out / SPEC.config_name


@pytest.fixture
def config(built, tmp_path) -> Path:
    folder = tmp_path / "split" / built.name
    shutil.copytree(built, folder)
    return folder


def _parquet(folder: Path) -> Path:
    return next(folder.glob("*.parquet"))


def _verify(capsys, *paths: Path) -> tuple[int, str, str]:
    code = main(["verify", *map(str, paths), "--quiet"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, captured.out, captured.err


def _inspect(capsys, path: Path, *args: str) -> tuple[int, str]:
    code = main(["inspect", str(path), "--no-color", *args])
    err = capsys.readouterr().err.strip()
    return code, err


def _one_line(code: int, err: str) -> None:
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("phasebench"), err
    assert "Traceback" not in err


# -- 5. verify and inspect on damaged folders -----------------------------------------------------


def test_truncated_parquet(config, capsys):
    path = _parquet(config)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    code, out, _ = _verify(capsys, config)
    assert code == 1 and "FAILED" in out and path.name in out and "readable" in out
    _one_line(*_inspect(capsys, config))


def test_flipped_bytes(config, capsys):
    path = _parquet(config)
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 64):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    code, out, _ = _verify(capsys, config)
    assert code == 1 and "FAILED" in out
    _one_line(*_inspect(capsys, config))


@pytest.mark.parametrize(
    "text",
    ["", "\x00\xff garbage", "[]", '{"config": "kv_256"}', "null", '{"files": 3}'],
    ids=["empty", "bytes", "list", "keys", "null", "types"],
)
def test_garbage_manifest(config, capsys, text):
    (config / MANIFEST).write_text(text, encoding="latin-1")
    code, out, _ = _verify(capsys, config)
    assert code == 1 and "manifest" in out, out
    _one_line(*_inspect(capsys, config))


def _rewrite_manifest(folder: Path, edit) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    edit(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../../etc/passwd", "sub/x.parquet"])
def test_manifest_file_list_cannot_leave_the_folder(config, capsys, target):
    _rewrite_manifest(config, lambda m: m["files"][0].update(path=target))
    code, out, _ = _verify(capsys, config)
    assert code == 1 and "plain file name" in out, out
    code, err = _inspect(capsys, config)
    _one_line(code, err)
    assert "root:" not in err


def _recompute_hashes(folder: Path, rows: list[dict]) -> None:
    """Write ``rows`` back with every hash recomputed, as a careful forger would."""
    path = _parquet(folder)
    table = pq.read_table(path)
    digest = content_hash(rows)
    out = pa.Table.from_pylist(rows, schema=table.schema).replace_schema_metadata(
        {HASH_KEY: digest.encode()}
    )
    pq.write_table(out, path)

    def edit(manifest):
        manifest["files"][0]["content_sha256"] = digest
        hashes = [f["content_sha256"] for f in manifest["files"]]
        manifest["content_hash"] = (
            "sha256:" + hashlib.sha256("\n".join(hashes).encode()).hexdigest()
        )

    _rewrite_manifest(folder, edit)


def test_a_changed_needle_value_is_found_even_with_hashes_recomputed(config, capsys):
    rows = list(iter_rows(config))
    row = rows[3]
    needle = f"{row['needle_key']}: {row['answer']}\n"
    other = str((int(row["answer"]) + 1) % 90_000 + 10_000)
    assert row["prompt"].count(needle) == 1
    row["prompt"] = row["prompt"].replace(needle, f"{row['needle_key']}: {other}\n")
    _recompute_hashes(config, rows)
    code, out, _ = _verify(capsys, config)
    assert code == 1 and row["id"] in out and "needle" in out, out


def test_a_needle_key_repeated_in_the_haystack_is_found(config, capsys):
    rows = list(iter_rows(config))
    row = rows[5]
    # an earlier record is renamed to the needle's key (same length, same token count)
    body = row["prompt"][: row["key_char"]].splitlines(keepends=True)
    victim = next(i for i in range(3, len(body)) if body[i][:6].isalnum() and ": " in body[i])
    body[victim] = row["needle_key"] + body[victim][6:]
    row["prompt"] = "".join(body) + row["prompt"][row["key_char"] :]
    row["key_char"] = row["prompt"].find(row["needle_key"])
    _recompute_hashes(config, rows)
    code, out, _ = _verify(capsys, config)
    assert code == 1 and row["id"] in out, out


def test_verify_names_a_partial_config_it_skipped(built, tmp_path, capsys, deepseek):
    out = tmp_path / "split"
    shutil.copytree(built, out / built.name)
    generate([SPEC.replace(length=320)], out, overwrite=True, progress=False, tokenizer=deepseek)
    (out / "kv_320" / MANIFEST).unlink()
    code, stdout, _ = _verify(capsys, out)
    assert code == 1 and "kv_256: OK" in stdout and "kv_320" in stdout and "partial" in stdout


# -- 2. an interrupted --overwrite keeps the previous complete split ------------------------


def test_interrupted_overwrite_keeps_the_old_complete_split(built, tmp_path, deepseek, monkeypatch):
    import phasebench.build as build

    out = tmp_path / "split"
    shutil.copytree(built, out / built.name)
    before = {p.name: p.read_bytes() for p in (out / built.name).iterdir()}

    calls = []

    def interrupted(i):
        calls.append(i)
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "_write_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate([SPEC.replace(seed=1)], out, overwrite=True, progress=False, tokenizer=deepseek)
    assert calls
    assert {p.name: p.read_bytes() for p in (out / built.name).iterdir()} == before
    assert sorted(p.name for p in out.iterdir()) == [built.name]  # no staging folder left


def test_overwrite_replaces_only_configs_it_made(tmp_path, deepseek):
    out = tmp_path / "split"
    foreign = out / SPEC.config_name
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    from phasebench.errors import OutputError

    with pytest.raises(OutputError, match="not a phasebench config"):
        generate([SPEC], out, overwrite=True, progress=False, tokenizer=deepseek)
    assert (foreign / "notes.txt").read_text() == "mine"


def test_publish_overwrite_refuses_a_folder_it_did_not_make(built, tmp_path, capsys):
    out = tmp_path / "repo"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["publish", str(built.parent), "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "phasebench.json" in err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    # an earlier repository folder is replaced
    fresh = tmp_path / "fresh"
    assert main(["publish", str(built.parent), "--out", str(fresh)]) == 0
    assert main(["publish", str(built.parent), "--out", str(fresh), "--overwrite"]) == 0


def test_publish_with_a_garbage_manifest_is_one_line(config, tmp_path, capsys):
    (config / MANIFEST).write_text('{"config": 1, "spec": 2, "tokenizer": 3, "rows": 4, '
                                   '"files": [5], "content_hash": 6, "balance": 7}')  # fmt: skip
    code = main(["publish", str(config.parent), "--out", str(tmp_path / "repo")])
    _one_line(code, capsys.readouterr().err.strip())


# -- 5. the lm-eval cache checks what it serves and repairs itself -------------------------------


def test_lmeval_cache_rebuilds_an_edited_entry(tmp_path, deepseek, caplog):
    """... and says so on the ``phasebench`` logger (it was rebuilt silently)."""
    import logging

    from phasebench.lmeval.data import cached_config

    root = tmp_path / "cache"
    caplog.set_level(logging.INFO, logger="phasebench")
    folder = cached_config(SPEC, deepseek, root)
    assert [r.levelname for r in caplog.records] == ["INFO"]  # generated on first use
    caplog.clear()
    original = list(iter_rows(folder))
    path = _parquet(folder)
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["prompt"] = rows[0]["prompt"].replace("Question", "Question (edited)")
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)  # hashes kept
    again = cached_config(SPEC, deepseek, root)
    assert list(iter_rows(again)) == original
    (warning,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert warning.name.startswith("phasebench") and "does not check" in warning.getMessage()
    caplog.clear()
    cached_config(SPEC, deepseek, root)
    assert caplog.records == []  # a good entry is served without a word


def test_lmeval_cache_repairs_an_entry_that_lost_its_manifest(tmp_path, deepseek):
    from phasebench.lmeval.data import cached_config

    root = tmp_path / "cache"
    folder = cached_config(SPEC, deepseek, root)
    original = list(iter_rows(folder))
    (folder / MANIFEST).unlink()
    again = cached_config(SPEC, deepseek, root)
    assert list(iter_rows(again)) == original
    assert [p.name for p in (root / "splits").iterdir()] == [folder.parent.name]


# -- 3 (second round). hostile dataset repository folders ---------------------------------------

CONFIG = f"{SPEC.config_name}_deepseek_v4"


@pytest.fixture(scope="module")
def published(built, tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("published") / "repo"
    assert main(["publish", str(built.parent), "--out", str(repo)]) == 0
    return repo


@pytest.fixture
def repo(published, tmp_path) -> Path:
    folder = tmp_path / "repo"
    shutil.copytree(published, folder)
    return folder


def _edit_index(repo: Path, edit) -> None:
    index = json.loads((repo / "phasebench.json").read_text())
    edit(index["configs"][0])
    (repo / "phasebench.json").write_text(json.dumps(index))


def _outside(repo: Path) -> None:
    """A valid config beside the folder, which a config name ``../other/...`` would reach."""
    shutil.copytree(repo / CONFIG, repo.parent / "other" / CONFIG)
    _edit_index(repo, lambda c: c.update(name=f"../other/{CONFIG}",
                                         manifest=f"../other/{CONFIG}/manifest.json"))  # fmt: skip


def _extra_column(repo: Path) -> None:
    """A parquet file with one more column than the card declares, the index's size updated."""
    path = _parquet(repo / CONFIG)
    table = pq.read_table(path)
    table = table.append_column("extra", pa.array([1] * len(table)))
    pq.write_table(table.replace_schema_metadata(pq.read_schema(path).metadata), path)
    _edit_index(repo, lambda c: c["files"][0].update(size=path.stat().st_size))


def _linked_config(repo: Path) -> None:
    shutil.move(repo / CONFIG, repo.parent / "elsewhere")
    (repo / CONFIG).symlink_to(repo.parent / "elsewhere", target_is_directory=True)


HOSTILE_REPOS = {
    "name-outside": (_outside, "config name"),
    "manifest-passwd": (
        lambda r: _edit_index(r, lambda c: c.update(manifest="/etc/passwd")),
        "manifest",
    ),  # fmt: skip
    "file-passwd": (
        lambda r: _edit_index(r, lambda c: c["files"][0].update(path="/etc/passwd")),
        "data file",
    ),  # fmt: skip
    "index-not-json": (lambda r: (r / "phasebench.json").write_text("{not json"), "JSON"),
    "index-huge": (lambda r: (r / "phasebench.json").write_bytes(b" " * (17 << 20)), "larger"),
    "no-name": (lambda r: _edit_index(r, lambda c: c.pop("name")), "config name"),
    "linked-config": (_linked_config, "outside"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_REPOS))
def test_hostile_dataset_folders_are_refused_in_one_line(repo, case):
    """``select_configs`` and ``load_split`` answer a damaged or lying ``phasebench.json`` with
    one :class:`HubError` line and never open a path outside the folder."""
    from phasebench.errors import HubError
    from phasebench.hub import load_split, select_configs

    damage, words = HOSTILE_REPOS[case]
    damage(repo)
    name = f"../other/{CONFIG}" if case == "name-outside" else CONFIG
    for call in (lambda: select_configs(repo), lambda: load_split(repo, name)):
        with pytest.raises(HubError, match=words) as info:
            call()
        assert len(str(info.value).splitlines()) == 1 and "root:" not in str(info.value)


@pytest.mark.parametrize(
    "damage",
    [lambda r: (r / "README.md").write_text("---\nconfigs: [\n  - a: b\n---\n"), _extra_column],
    ids=["card-yaml", "extra-column"],
)
def test_load_split_reports_what_datasets_cannot_load_in_one_line(repo, damage):
    from phasebench.errors import HubError
    from phasebench.hub import load_split

    damage(repo)
    with pytest.raises(HubError, match="does not load with datasets") as info:
        load_split(repo, CONFIG, cache_dir=str(repo.parent / "hf-datasets"))
    assert len(str(info.value).splitlines()) == 1


@pytest.mark.parametrize("case", ["no-name", "name-outside", "manifest-passwd"])
def test_eval_with_a_hostile_dataset_path_is_one_line(repo, capsys, case):
    """``phasebench eval`` reads ``dataset_path`` through the same checks before lm-eval
    loads any model."""
    HOSTILE_REPOS[case][0](repo)
    metadata = json.dumps({"dataset_path": str(repo), "max_seq_lengths": [256]})
    code = main(["eval", "--model", "hf", "--model_args",
                 "pretrained=deepseek-v4,tokenizer=deepseek-v4,max_length=4096",
                 "--tasks", "phasebench_kv", "--metadata", metadata])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err and "phasebench.json" in err[-1], err
    assert not any("Traceback" in line for line in err)


# -- 5 (second round). null fields, hashes recomputed --------------------------------------------


@pytest.mark.parametrize("field", ["prompt", "anchor_index", "depth", "answer", "phase"])
def test_null_fields_are_named_by_verify_and_inspect(config, capsys, field):
    rows = list(iter_rows(config))
    rows[0][field] = None
    _recompute_hashes(config, rows)
    code, out, _ = _verify(capsys, config)
    assert code == 1 and f"{field} is null" in out and rows[0]["id"] in out, out
    assert "unsupported operand" not in out
    code, err = _inspect(capsys, config)
    _one_line(code, err)
    assert f"{field} is null" in err, err


# -- 9 (second round). inspect never sends a split's control characters to the terminal ----------


def test_inspect_escapes_control_and_bidi_characters(config, capsys):
    rows = list(iter_rows(config))
    row = rows[0]
    evil = "\x1b]0;owned\x07\x1b[2J\u202e\x9b"
    row["prompt"] = (
        row["prompt"][: row["key_char"]] + evil + row["prompt"][row["key_char"] + len(evil) :]
    )
    _recompute_hashes(config, rows)
    assert main(["inspect", str(config), "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x9b" not in out and "\x07" not in out
    assert "\\x1b]0;owned\\x07" in out and "\\u202e" in out


# -- 3 (second round). repo_problems, what a push checks, reads every file bounded -----------------


def _link_manifest(repo: Path) -> None:
    (repo / CONFIG / "manifest.json").unlink()
    (repo / CONFIG / "manifest.json").symlink_to("/etc/passwd")


REPO_DAMAGE = {
    "manifest-huge": (lambda r: (r / CONFIG / "manifest.json").write_bytes(b" " * (17 << 20)),
                      "larger than"),
    "manifest-garbage": (lambda r: (r / CONFIG / "manifest.json").write_text("{not json"),
                         "not a readable manifest"),
    "manifest-no-spec": (lambda r: (r / CONFIG / "manifest.json").write_text(json.dumps(
        {**json.loads((r / CONFIG / "manifest.json").read_text()), "spec": {}})),
                         "spec needs a family"),
    "manifest-passwd": (_link_manifest, "symbolic links"),
    "card-huge": (lambda r: (r / "README.md").write_bytes(b"-" * (17 << 20)), "larger than"),
    "card-not-utf8": (lambda r: (r / "README.md").write_bytes(b"---\n\xff\xfe\n---\n"), "utf-8"),
    "eval-huge": (lambda r: (r / "eval.yaml").write_bytes(b"#" * (17 << 20)), "larger than"),
    "data-grown": (lambda r: _parquet(r / CONFIG).open("ab").write(b"\0" * 8), "-byte file"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REPO_DAMAGE))
def test_repo_problems_reads_a_damaged_folder_bounded(repo, case):
    """The files of a dataset folder are read with a size bound, never through a link, and a
    manifest that is not one is a listed problem, not a ``JSONDecodeError``."""
    from phasebench.hub import repo_problems

    damage, words = REPO_DAMAGE[case]
    damage(repo)
    problems = repo_problems(repo)
    assert problems and all("\n" not in p for p in problems), problems
    assert any(words in p for p in problems), problems


# -- property-based: the dataset-folder readers (select_configs, load_split, dataset_path) --------

#: JSON-ish values of every kind, small.
PLAIN = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
              st.sampled_from(["..", "../other", "/etc/passwd", CONFIG, f"{CONFIG}/x.parquet",
                               "kv", "data-00000-of-00001.parquet"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)  # fmt: skip
FEW = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
INDEX_PATHS = [(), ("configs",), ("configs", 0), ("configs", 0, "name"), ("configs", 0, "family"),
               ("configs", 0, "length"), ("configs", 0, "rows"), ("configs", 0, "manifest"),
               ("configs", 0, "files"), ("configs", 0, "files", 0),
               ("configs", 0, "files", 0, "path"), ("configs", 0, "files", 0, "size"),
               ("configs", 0, "files", 0, "rows"), ("default_config",)]  # fmt: skip
MANIFEST_PATHS = [(), ("spec",), ("spec", "family"), ("spec", "length"), ("spec", "tokenizer"),
                  ("tokenizer",), ("tokenizer", "fingerprint"), ("files",), ("files", 0),
                  ("files", 0, "path"), ("files", 0, "rows"), ("rows",),
                  ("content_hash",)]  # fmt: skip


def _readers_answer_or_refuse(repo: Path, deepseek) -> None:
    """Every dataset-folder reader gives its result or one PhasebenchError line."""
    from phasebench.errors import PhasebenchError
    from phasebench.hub import load_split, repo_problems, select_configs
    from phasebench.lmeval.data import prebuilt_folders

    calls = [
        lambda: select_configs(repo),
        lambda: load_split(repo, CONFIG, cache_dir=str(repo.parent / "hf-datasets")),
        lambda: prebuilt_folders(str(repo), "kv", [256], deepseek),
        lambda: repo_problems(repo),
    ]
    for call in calls:
        try:
            result = call()
        except PhasebenchError as exc:
            assert str(exc) and "\n" not in str(exc), str(exc)
        else:
            if isinstance(result, list) and result and isinstance(result[0], str):
                assert all("\n" not in p for p in result), result


@FEW
@given(path=st.sampled_from(INDEX_PATHS), value=PLAIN)
def test_any_index_gives_data_or_one_line(published, tmp_path_factory, deepseek, path, value):
    repo = tmp_path_factory.mktemp("prop") / "repo"
    shutil.copytree(published, repo)
    index = json.loads((repo / "phasebench.json").read_text())
    (repo / "phasebench.json").write_text(json.dumps(replaced(index, path, value)))
    _readers_answer_or_refuse(repo, deepseek)


@FEW
@given(path=st.sampled_from(MANIFEST_PATHS), value=PLAIN)
def test_any_manifest_gives_data_or_one_line(published, tmp_path_factory, deepseek, path, value):
    repo = tmp_path_factory.mktemp("prop") / "repo"
    shutil.copytree(published, repo)
    manifest = json.loads((repo / CONFIG / MANIFEST).read_text())
    (repo / CONFIG / MANIFEST).write_text(json.dumps(replaced(manifest, path, value)))
    _readers_answer_or_refuse(repo, deepseek)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(header=st.one_of(st.text(max_size=80), PLAIN.map(lambda v: yaml.safe_dump({"configs": v}))))
def test_any_card_header_gives_data_or_one_line(published, tmp_path_factory, deepseek, header):
    repo = tmp_path_factory.mktemp("prop") / "repo"
    shutil.copytree(published, repo)
    body = (repo / "README.md").read_text().split("\n---\n", 1)[-1]
    (repo / "README.md").write_text(f"---\n{header}\n---\n{body}")
    _readers_answer_or_refuse(repo, deepseek)
