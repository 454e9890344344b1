"""Dataset repository folders that are damaged or hostile: ``publish`` refuses a folder it did not
make or a garbage manifest, the readers answer data or one line, bounded, for any index,
manifest or card header."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phasebench.build import MANIFEST
from phasebench.cli import main
from support.hostile import replaced
from support.repos import CONFIG, HOSTILE_REPOS, edit_index, parquet, refused_in_one_line


def test_publish_overwrite_refuses_a_folder_it_did_not_make(kv_split, tmp_path, capsys):
    out = tmp_path / "repo"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["publish", str(kv_split.parent), "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "phasebench.json" in err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    # an earlier repository folder is replaced
    fresh = tmp_path / "fresh"
    assert main(["publish", str(kv_split.parent), "--out", str(fresh)]) == 0
    assert main(["publish", str(kv_split.parent), "--out", str(fresh), "--overwrite"]) == 0


def test_publish_with_a_garbage_manifest_is_one_line(kv_split_copy, tmp_path, capsys):
    (kv_split_copy / MANIFEST).write_text('{"config": 1, "spec": 2, "tokenizer": 3, "rows": 4, '
                                   '"files": [5], "content_hash": 6, "balance": 7}')  # fmt: skip
    code = main(["publish", str(kv_split_copy.parent), "--out", str(tmp_path / "repo")])
    refused_in_one_line(code, capsys.readouterr().err.strip())


def _extra_column(kv_published_copy: Path) -> None:
    """A parquet file with one more column than the card declares, the index's size updated."""
    path = parquet(kv_published_copy / CONFIG)
    table = pq.read_table(path)
    table = table.append_column("extra", pa.array([1] * len(table)))
    pq.write_table(table.replace_schema_metadata(pq.read_schema(path).metadata), path)
    edit_index(kv_published_copy, lambda c: c["files"][0].update(size=path.stat().st_size))


@pytest.mark.parametrize("case", sorted(HOSTILE_REPOS))
def test_hostile_dataset_folders_are_refused_in_one_line(kv_published_copy, case):
    """``select_configs`` and ``load_split`` answer a damaged or lying ``phasebench.json`` with
    one :class:`HubError` line and never open a path outside the folder."""
    from phasebench.errors import HubError
    from phasebench.hub import load_split, select_configs

    damage, words = HOSTILE_REPOS[case]
    damage(kv_published_copy)
    name = f"../other/{CONFIG}" if case == "name-outside" else CONFIG
    for call in (
        lambda: select_configs(kv_published_copy),
        lambda: load_split(kv_published_copy, name),
    ):
        with pytest.raises(HubError, match=words) as info:
            call()
        assert len(str(info.value).splitlines()) == 1 and "root:" not in str(info.value)


@pytest.mark.parametrize(
    "damage",
    [lambda r: (r / "README.md").write_text("---\nconfigs: [\n  - a: b\n---\n"), _extra_column],
    ids=["card-yaml", "extra-column"],
)
def test_load_split_reports_what_datasets_cannot_load_in_one_line(kv_published_copy, damage):
    from phasebench.errors import HubError
    from phasebench.hub import load_split

    damage(kv_published_copy)
    with pytest.raises(HubError, match="does not load with datasets") as info:
        load_split(
            kv_published_copy, CONFIG, cache_dir=str(kv_published_copy.parent / "hf-datasets")
        )
    assert len(str(info.value).splitlines()) == 1


def _link_manifest(kv_published_copy: Path) -> None:
    (kv_published_copy / CONFIG / "manifest.json").unlink()
    (kv_published_copy / CONFIG / "manifest.json").symlink_to("/etc/passwd")


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
    "data-grown": (lambda r: parquet(r / CONFIG).open("ab").write(b"\0" * 8), "-byte file"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REPO_DAMAGE))
def test_repo_problems_reads_a_damaged_folder_bounded(kv_published_copy, case):
    """The files of a dataset folder are read with a size bound, never through a link, and a
    manifest that is not one is a listed problem, not a ``JSONDecodeError``."""
    from phasebench.hub import repo_problems

    damage, words = REPO_DAMAGE[case]
    damage(kv_published_copy)
    problems = repo_problems(kv_published_copy)
    assert problems and all("\n" not in p for p in problems), problems
    assert any(words in p for p in problems), problems


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
def test_any_index_gives_data_or_one_line(kv_published, tmp_path_factory, deepseek, path, value):
    repo = tmp_path_factory.mktemp("prop") / "repo"
    shutil.copytree(kv_published, repo)
    index = json.loads((repo / "phasebench.json").read_text())
    (repo / "phasebench.json").write_text(json.dumps(replaced(index, path, value)))
    _readers_answer_or_refuse(repo, deepseek)


@FEW
@given(path=st.sampled_from(MANIFEST_PATHS), value=PLAIN)
def test_any_manifest_gives_data_or_one_line(kv_published, tmp_path_factory, deepseek, path, value):
    repo = tmp_path_factory.mktemp("prop") / "repo"
    shutil.copytree(kv_published, repo)
    manifest = json.loads((repo / CONFIG / MANIFEST).read_text())
    (repo / CONFIG / MANIFEST).write_text(json.dumps(replaced(manifest, path, value)))
    _readers_answer_or_refuse(repo, deepseek)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(header=st.one_of(st.text(max_size=80), PLAIN.map(lambda v: yaml.safe_dump({"configs": v}))))
def test_any_card_header_gives_data_or_one_line(kv_published, tmp_path_factory, deepseek, header):
    repo = tmp_path_factory.mktemp("prop") / "repo"
    shutil.copytree(kv_published, repo)
    body = (repo / "README.md").read_text().split("\n---\n", 1)[-1]
    (repo / "README.md").write_text(f"---\n{header}\n---\n{body}")
    _readers_answer_or_refuse(repo, deepseek)
